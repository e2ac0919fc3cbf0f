//===- Dataset.h - Labelled grey-image datasets in idx files ----*- C++ -*-===//
//
// MNIST and Fashion-MNIST: a directory holding, for each split, an images
// file and a labels file in the idx format (Idx.h), gzipped or plain:
//
//   train-images-idx3-ubyte[.gz]  train-labels-idx1-ubyte[.gz]
//   t10k-images-idx3-ubyte[.gz]   t10k-labels-idx1-ubyte[.gz]
//
// Pixels are kept as bytes (a quarter of the memory of floats) and converted
// when a micro-batch is assembled: x = p / 255, a float in [0, 1], as
// torchvision's ToTensor() (which divides by 255 in float32, bit for bit the
// same values), then optionally standardised with the training images' mean
// and standard deviation, as torchvision's Normalize((mean,), (std,)).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_DATASET_H
#define CLEAVE_DATA_DATASET_H

#include "Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::data {

/// The normalisation every consumer of an ImageDataset applies.
inline float pixelToFloat(uint8_t pixel) { return float(pixel) / 255.0f; }

/// The affine map from a pixel to a model input: x = (p / 255 - mean) / std.
/// The identity map (mean 0, std 1) gives the pixel in [0, 1].
struct PixelNormalization {
  float mean = 0.0f, std = 1.0f;
  float apply(uint8_t pixel) const {
    return (pixelToFloat(pixel) - mean) / std;
  }
};

/// Grey images with one class label each.
struct ImageDataset {
  /// The files the data was read from (for messages).
  std::string imagesPath, labelsPath;
  int64_t rows = 0, cols = 0;
  int64_t numClasses = 0;
  /// size() * rows * cols bytes, image after image, row-major.
  std::vector<uint8_t> pixels;
  /// One class index in [0, numClasses) per image.
  std::vector<uint8_t> labels;

  int64_t size() const { return int64_t(labels.size()); }
  int64_t pixelsPerImage() const { return rows * cols; }
};

/// The mean and standard deviation of `dataset`'s pixels (as p / 255),
/// accumulated in double: the standardisation fitted to a training split.
PixelNormalization standardization(const ImageDataset &dataset);

/// The two splits of an MNIST-style directory.
enum class Split { Train, Test };

/// "train" or "test".
const char *splitName(Split split);

struct DatasetOptions {
  /// Labels must lie in [0, numClasses): MNIST and Fashion-MNIST have 10.
  int64_t numClasses = 10;
  /// Keep only the first `limit` samples of the split (0: all). The whole
  /// files are still validated.
  int64_t limit = 0;
};

/// The path of `<dir>/<stem>`: the plain file if present, else
/// `<dir>/<stem>.gz`; an error naming both if neither exists.
rt::Status findIdxFile(const std::string &dir, const std::string &stem,
                       std::string &path);

/// Loads one split of the MNIST-style directory `dir`. Validates both files
/// (Idx.h), that they hold the same number of samples, and that every label
/// is in range; errors name the file and what was expected.
rt::Status loadIdxDataset(const std::string &dir, Split split,
                          const DatasetOptions &options, ImageDataset &out);

} // namespace cleave::data

#endif // CLEAVE_DATA_DATASET_H

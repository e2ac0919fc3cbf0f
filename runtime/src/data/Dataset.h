//===- Dataset.h - Labelled datasets the trainer reads ----------*- C++ -*-===//
//
// A dataset split is two arrays with one row per sample: the inputs (bytes
// or float32, of any per-sample shape) and the targets (integer class labels
// or float32 regression targets). Four formats, told apart by what
// `--data=PATH` names (detectFormat):
//
//   idx       MNIST and Fashion-MNIST: a directory with
//             train-images-idx3-ubyte[.gz] train-labels-idx1-ubyte[.gz]
//             t10k-images-idx3-ubyte[.gz]  t10k-labels-idx1-ubyte[.gz]
//             (Idx.h); grey images [rows, cols], labels 0..9.
//   cifar-10  the CIFAR-10 binary version: a directory with data_batch_1.bin
//             .. data_batch_5.bin and test_batch.bin (Cifar.h); images
//             [3, 32, 32], labels 0..9.
//   npz       NumPy archives (Npy.h, Zip.h): a file `PATH.npz` holding
//             x_train, y_train, x_test, y_test (Keras's layout), or a
//             directory with train.npz and test.npz, each holding x and y.
//   npy       NumPy arrays: a directory with x_train.npy, y_train.npy,
//             x_test.npy and y_test.npy.
//
// NumPy files are memory-mapped, not read: the rows of a micro-batch are
// paged in as it is gathered (a compressed .npz member is the exception: it
// is inflated into memory). idx and CIFAR files are small and read whole.
//
// Byte inputs become x = p / 255, a float in [0, 1], as torchvision's
// ToTensor() (which divides by 255 in float32: bit for bit the same
// values); float inputs are used as they are. Either may then be
// standardised per channel (Normalization).
//
// A token dataset (NumPy layouts only, asked for with
// DatasetOptions::tokens) holds integer token ids x [N, T] and either, for
// a language model, the integer label of the token that follows each, y
// [N, T], or the ignore index where nothing is to be predicted (padding);
// or, for a sequence classifier, one class label per sequence, y [N]. Ids
// are fed as int64, never converted to floats nor standardised.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_DATASET_H
#define CLEAVE_DATA_DATASET_H

#include "ElementType.h"
#include "Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cleave::data {

/// The value a byte input becomes before any standardisation.
inline float pixelToFloat(uint8_t pixel) { return float(pixel) / 255.0f; }

/// `count` rows of `sampleShape` elements of `type`, back to back, in C
/// order. The bytes belong to a Dataset's storage.
struct SampleArray {
  /// Where the rows come from, for messages: a path, or "archive:member".
  std::string source;
  ElementType type = ElementType::U8;
  /// The shape of one row (the array's shape without its first dimension).
  std::vector<int64_t> sampleShape;
  int64_t count = 0;
  /// Little-endian, not necessarily aligned for `type` (read with memcpy).
  const uint8_t *data = nullptr;

  int64_t sampleElements() const;
  size_t sampleBytes() const {
    return size_t(sampleElements()) * elementSize(type);
  }
  const uint8_t *row(int64_t i) const {
    return data + size_t(i) * sampleBytes();
  }
  /// [count, sampleShape...].
  std::vector<int64_t> shape() const;
};

/// One split of a dataset.
struct Dataset {
  /// "idx", "cifar-10", "npz" or "npy".
  std::string format;
  /// uint8 (pixels) or float32; integer token ids for a token dataset.
  SampleArray inputs;
  /// Class labels (uint8, int32 or int64 with an empty sample shape, each in
  /// [0, numClasses)) or regression targets (float32, any sample shape).
  SampleArray targets;
  /// The class labels' bound (0 for regression targets); for a token
  /// dataset, the vocabulary the labels index.
  int64_t numClasses = 0;
  /// A token dataset: integer ids [N, T] and labels [N, T] (see above), or
  /// labels [N] when labelPerToken is false.
  bool tokens = false;
  bool labelPerToken = true;
  /// For a token dataset, the label of tokens nothing is predicted for.
  int64_t ignoreIndex = -100;
  /// Keeps `inputs.data` and `targets.data` alive: mapped files, inflated
  /// members, decoded buffers.
  std::vector<std::shared_ptr<const void>> storage;

  int64_t size() const { return inputs.count; }
  /// One integer class label per sample (not a language model's labels).
  bool hasClassLabels() const {
    return (!tokens || !labelPerToken) && targets.type != ElementType::F32;
  }
};

/// Whether `type` is an integer type (ids and labels may be).
inline bool isInteger(ElementType type) { return type != ElementType::F32; }

/// The integer at `p` (unaligned, little-endian) of integer `type`, widened.
int64_t integerAt(const uint8_t *p, ElementType type);

/// The two splits of a dataset.
enum class Split { Train, Test };

/// "train" or "test".
const char *splitName(Split split);

/// What a token dataset must hold for the model it feeds.
struct TokenOptions {
  /// T: every sequence has exactly this many tokens.
  int64_t sequenceLength = 0;
  /// Ids must lie in [0, idBound) (the rows of the model's embedding); 0:
  /// only non-negative.
  int64_t idBound = 0;
  /// Labels must lie in [0, DatasetOptions::numClasses) or equal this.
  int64_t ignoreIndex = -100;
  /// False: a sequence classifier's data, one label per sequence (y [N], in
  /// [0, numClasses), no ignore index).
  bool labelPerToken = true;
};

struct DatasetOptions {
  /// Class labels must lie in [0, numClasses). idx and CIFAR-10 datasets
  /// have 10 classes; for NumPy labels the caller gives the model's count
  /// (for token labels: its vocabulary).
  int64_t numClasses = 10;
  /// Set: the dataset must be a token dataset of this kind.
  std::optional<TokenOptions> tokens;
  /// Keep only the first `limit` samples of the split (0: all). The whole
  /// files are still validated.
  int64_t limit = 0;
};

enum class DataFormat { Idx, Cifar10, NpzFile, NpzDir, NpyDir };

/// "idx", "cifar-10", "npz" (both layouts) or "npy".
const char *formatName(DataFormat format);

/// Which format `path` holds (see above); an error naming `path` and listing
/// the layouts read if it is none of them.
rt::Status detectFormat(const std::string &path, DataFormat &out);

/// Loads one split of the dataset at `path`, whatever its format. Every
/// file is validated (format, shapes, types, one target per input, labels
/// in range); errors name the file, the member and what was expected.
rt::Status loadDataset(const std::string &path, Split split,
                       const DatasetOptions &options, Dataset &out);

/// The path of `<dir>/<stem>`: the plain file if present, else
/// `<dir>/<stem>.gz`; an error naming both if neither exists.
rt::Status findIdxFile(const std::string &dir, const std::string &stem,
                       std::string &path);

/// Loads one split of the MNIST-style directory `dir`. Validates both files
/// (Idx.h), that they hold the same number of samples, and that every label
/// is in range.
rt::Status loadIdxDataset(const std::string &dir, Split split,
                          const DatasetOptions &options, Dataset &out);

/// Loads one split of a CIFAR-10 binary directory (Cifar.h).
rt::Status loadCifar10Dataset(const std::string &dir, Split split,
                              const DatasetOptions &options, Dataset &out);

/// Loads one split of a NumPy dataset in the layout `format` (NpzFile,
/// NpzDir or NpyDir) at `path`.
rt::Status loadNumpyDataset(const std::string &path, DataFormat format,
                            Split split, const DatasetOptions &options,
                            Dataset &out);

/// Checks that `targets` holds one row per input of `inputs`, and, for
/// class labels, that each is in [0, numClasses); for a token dataset, that
/// ids and labels are integer [N, T] arrays of the same shape, every id
/// and label in range and at least one label not the ignore index; then
/// applies `options.limit`, and checks that the float inputs and targets
/// of the samples left are finite. The loaders' common last step.
rt::Status finishDataset(const DatasetOptions &options, Dataset &dataset);

/// The number of channels of inputs of `sampleShape`: the first dimension of
/// a [C, H, W] sample, 1 for any other rank.
int64_t channelsOf(const std::vector<int64_t> &sampleShape);

/// The map from an input value v (p / 255 for bytes, the value for floats)
/// to a model input, per channel: x = (v - mean[c]) / std[c]. Empty: the
/// identity.
struct Normalization {
  std::vector<float> mean, std;
  bool isIdentity() const { return mean.empty(); }
};

/// The mean and standard deviation of each channel of `dataset`'s inputs,
/// accumulated in double: the standardisation fitted to a training split.
/// A channel whose values are all equal keeps std 1. Float inputs must be
/// finite (an error names the sample otherwise). Token ids are refused.
rt::Status standardization(const Dataset &dataset, Normalization &out);

} // namespace cleave::data

#endif // CLEAVE_DATA_DATASET_H

//===- Dataset.cpp - Labelled grey-image datasets in idx files ------------===//

#include "Dataset.h"

#include "Idx.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace cleave::data {

using rt::makeError;
using rt::Status;

namespace {

bool isRegularFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

} // namespace

const char *splitName(Split split) {
  return split == Split::Train ? "train" : "test";
}

Status findIdxFile(const std::string &dir, const std::string &stem,
                   std::string &path) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return makeError(CLEAVE_IO_ERROR, dir, ": cannot open the data directory (",
                     std::strerror(errno), ")");
  if (!S_ISDIR(st.st_mode))
    return makeError(CLEAVE_IO_ERROR, dir,
                     ": not a directory (expected a directory of MNIST-style "
                     "idx files)");
  // The plain file first: it is read without inflating.
  for (const std::string &name : {stem, stem + ".gz"}) {
    std::string candidate = joinPath(dir, name);
    if (isRegularFile(candidate)) {
      path = candidate;
      return Status::success();
    }
  }
  return makeError(CLEAVE_IO_ERROR, joinPath(dir, stem),
                   "[.gz]: no such file (expected the idx files of MNIST or "
                   "Fashion-MNIST in ",
                   dir, ")");
}

Status loadIdxDataset(const std::string &dir, Split split,
                      const DatasetOptions &options, ImageDataset &out) {
  if (options.numClasses < 1 || options.numClasses > 256)
    return makeError(CLEAVE_INVALID_ARGUMENT, "dataset: ", options.numClasses,
                     " classes, expected 1 to 256 (labels are bytes)");
  if (options.limit < 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, "dataset: sample limit ",
                     options.limit, " is negative");
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  ImageDataset result;
  CLEAVE_RETURN_IF_ERROR(
      findIdxFile(dir, prefix + "-images-idx3-ubyte", result.imagesPath));
  CLEAVE_RETURN_IF_ERROR(
      findIdxFile(dir, prefix + "-labels-idx1-ubyte", result.labelsPath));

  IdxArray images, labels;
  CLEAVE_RETURN_IF_ERROR(readIdx(result.imagesPath, kIdxImagesMagic, images));
  CLEAVE_RETURN_IF_ERROR(readIdx(result.labelsPath, kIdxLabelsMagic, labels));
  if (images.dims[0] != labels.dims[0])
    return makeError(CLEAVE_INVALID_ARGUMENT, result.labelsPath, ": ",
                     labels.dims[0], " labels for the ", images.dims[0],
                     " images of ", result.imagesPath,
                     " (expected one label per image)");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= options.numClasses)
      return makeError(CLEAVE_INVALID_ARGUMENT, result.labelsPath, ": label ",
                       int(labels.data[i]), " of sample ", i,
                       " is out of range (expected 0 to ",
                       options.numClasses - 1, ")");

  result.rows = images.dims[1];
  result.cols = images.dims[2];
  result.numClasses = options.numClasses;
  result.pixels = std::move(images.data);
  result.labels = std::move(labels.data);
  if (options.limit > 0 && options.limit < result.size()) {
    result.labels.resize(size_t(options.limit));
    result.pixels.resize(size_t(options.limit * result.pixelsPerImage()));
    result.pixels.shrink_to_fit();
    result.labels.shrink_to_fit();
  }
  out = std::move(result);
  return Status::success();
}

PixelNormalization standardization(const ImageDataset &dataset) {
  // Sums over byte values are exact in 64-bit integers.
  uint64_t sum = 0, squares = 0;
  for (uint8_t p : dataset.pixels) {
    sum += p;
    squares += uint64_t(p) * p;
  }
  PixelNormalization norm;
  if (dataset.pixels.empty())
    return norm;
  double n = double(dataset.pixels.size());
  double mean = double(sum) / n / 255.0;
  double var = double(squares) / n / (255.0 * 255.0) - mean * mean;
  norm.mean = float(mean);
  norm.std = var > 0 ? float(std::sqrt(var)) : 1.0f;
  return norm;
}

} // namespace cleave::data

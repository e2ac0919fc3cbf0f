//===- Dataset.cpp - Labelled datasets the trainer reads ------------------===//

#include "Dataset.h"

#include "Idx.h"
#include "Npy.h"

#include <sys/stat.h>

#include <algorithm>
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

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// What --data may name, for the error that says none was found.
constexpr const char *kLayouts =
    "expected an .npz file holding x_train, y_train, x_test, y_test, or a "
    "directory holding train.npz and test.npz (each with x and y), "
    "x_train.npy, y_train.npy, x_test.npy and y_test.npy, the CIFAR-10 "
    "binary files data_batch_1.bin .. data_batch_5.bin and test_batch.bin, "
    "or the MNIST idx files train-images-idx3-ubyte[.gz] ...";

/// The label of row `i` of integer class labels, widened.
int64_t labelAt(const SampleArray &labels, int64_t i) {
  return integerAt(labels.row(i), labels.type);
}

/// The checks of a token dataset (finishDataset): integer ids and labels of
/// one shape [N, T], T the model's, each id and label in range.
Status checkTokens(const DatasetOptions &options, const TokenOptions &tokens,
                   Dataset &d) {
  const SampleArray &x = d.inputs, &y = d.targets;
  const int64_t t = tokens.sequenceLength;
  if (!isInteger(x.type) || x.sampleShape.size() != 1)
    return makeError(CLEAVE_INVALID_ARGUMENT, x.source, ": ",
                     elementTypeName(x.type), " inputs of shape ",
                     shapeString(x.shape()),
                     " (expected token ids of shape [N, ", t,
                     "], int64, int32, uint16 or uint8)");
  if (x.sampleShape[0] != t)
    return makeError(CLEAVE_INVALID_ARGUMENT, x.source, ": sequences of ",
                     x.sampleShape[0], " tokens, shape ",
                     shapeString(x.shape()), " (expected [N, ", t,
                     "]: the model's sequence length is ", t, ")");
  if (!tokens.labelPerToken &&
      (!isInteger(y.type) || !y.sampleShape.empty()))
    return makeError(CLEAVE_INVALID_ARGUMENT, y.source, ": ",
                     elementTypeName(y.type), " labels of shape ",
                     shapeString(y.shape()),
                     " (expected one integer class label per sequence of ",
                     x.source, ", shape [", x.count, "])");
  if (tokens.labelPerToken &&
      (!isInteger(y.type) || y.sampleShape != x.sampleShape))
    return makeError(CLEAVE_INVALID_ARGUMENT, y.source, ": ",
                     elementTypeName(y.type), " labels of shape ",
                     shapeString(y.shape()),
                     " (expected one integer label per token of ", x.source,
                     ", shape ", shapeString(x.shape()), ")");
  if (options.numClasses < 1)
    return makeError(CLEAVE_INVALID_ARGUMENT, "dataset: a vocabulary of ",
                     options.numClasses, " tokens, expected at least 1");
  // Every id and label is read once: an id outside the embedding would
  // silently train on another row (the generated code clamps it), a label
  // outside the vocabulary on another class.
  const size_t xSize = elementSize(x.type), ySize = elementSize(y.type);
  int64_t real = 0;
  for (int64_t r = 0; r < x.count; ++r) {
    const uint8_t *ids = x.row(r), *labels = y.row(r);
    if (!tokens.labelPerToken) {
      const int64_t label = integerAt(labels, y.type);
      if (label < 0 || label >= options.numClasses)
        return makeError(CLEAVE_INVALID_ARGUMENT, y.source, ": label ", label,
                         " of sequence ", r, " is out of range (expected 0 to ",
                         options.numClasses - 1, ")");
      ++real;
    }
    for (int64_t i = 0; i < t; ++i) {
      const int64_t id = integerAt(ids + size_t(i) * xSize, x.type);
      if (id < 0 || (tokens.idBound > 0 && id >= tokens.idBound))
        return makeError(
            CLEAVE_INVALID_ARGUMENT, x.source, ": token id ", id,
            " of sequence ", r, ", position ", i, " is out of range (expected ",
            tokens.idBound > 0 ? "0 to " + std::to_string(tokens.idBound - 1) +
                                     ": the model's embedding has " +
                                     std::to_string(tokens.idBound) + " rows"
                               : std::string("a non-negative id"),
            ")");
      if (!tokens.labelPerToken)
        continue;
      const int64_t label = integerAt(labels + size_t(i) * ySize, y.type);
      if (label == tokens.ignoreIndex)
        continue;
      if (label < 0 || label >= options.numClasses)
        return makeError(CLEAVE_INVALID_ARGUMENT, y.source, ": label ", label,
                         " of sequence ", r, ", position ", i,
                         " is out of range (expected 0 to ",
                         options.numClasses - 1, " or the ignore index ",
                         tokens.ignoreIndex, ")");
      // Only the sequences kept (options.limit) count: the loss and the
      // test metrics are means over them.
      if (options.limit == 0 || r < options.limit)
        ++real;
    }
  }
  if (real == 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, y.source,
                     ": every label", options.limit > 0 &&
                                              options.limit < x.count
                                          ? " of the first " +
                                                std::to_string(options.limit) +
                                                " sequences"
                                          : std::string(),
                     " is the ignore index ", tokens.ignoreIndex,
                     " (expected at least one token to predict)");
  d.tokens = true;
  d.labelPerToken = tokens.labelPerToken;
  d.ignoreIndex = tokens.ignoreIndex;
  d.numClasses = options.numClasses;
  return Status::success();
}

} // namespace

int64_t integerAt(const uint8_t *p, ElementType type) {
  switch (type) {
  case ElementType::U8:
    return *p;
  case ElementType::U16: {
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  case ElementType::I32: {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  case ElementType::I64: {
    int64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  case ElementType::F32:
    break;
  }
  return -1;
}

int64_t SampleArray::sampleElements() const {
  int64_t n = 1;
  for (int64_t d : sampleShape)
    n *= d;
  return n;
}

std::vector<int64_t> SampleArray::shape() const {
  std::vector<int64_t> s = {count};
  s.insert(s.end(), sampleShape.begin(), sampleShape.end());
  return s;
}

const char *splitName(Split split) {
  return split == Split::Train ? "train" : "test";
}

const char *formatName(DataFormat format) {
  switch (format) {
  case DataFormat::Idx:
    return "idx";
  case DataFormat::Cifar10:
    return "cifar-10";
  case DataFormat::NpzFile:
  case DataFormat::NpzDir:
    return "npz";
  case DataFormat::NpyDir:
    return "npy";
  }
  return "?";
}

Status detectFormat(const std::string &path, DataFormat &out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot open the dataset (",
                     std::strerror(errno), ")");
  if (S_ISREG(st.st_mode)) {
    if (!endsWith(path, ".npz"))
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ": not a dataset (",
                       kLayouts, ")");
    out = DataFormat::NpzFile;
    return Status::success();
  }
  if (!S_ISDIR(st.st_mode))
    return makeError(CLEAVE_INVALID_ARGUMENT, path,
                     ": not a file or directory (", kLayouts, ")");
  auto has = [&](const char *name) {
    return isRegularFile(joinPath(path, name));
  };
  if (has("data_batch_1.bin") || has("test_batch.bin"))
    out = DataFormat::Cifar10;
  else if (has("train.npz") || has("test.npz"))
    out = DataFormat::NpzDir;
  else if (has("x_train.npy") || has("x_test.npy"))
    out = DataFormat::NpyDir;
  else if (has("train-images-idx3-ubyte") ||
           has("train-images-idx3-ubyte.gz") || has("t10k-images-idx3-ubyte") ||
           has("t10k-images-idx3-ubyte.gz"))
    out = DataFormat::Idx;
  else
    return makeError(CLEAVE_INVALID_ARGUMENT, path,
                     ": no dataset found in the directory (", kLayouts, ")");
  return Status::success();
}

Status loadDataset(const std::string &path, Split split,
                   const DatasetOptions &options, Dataset &out) {
  DataFormat format;
  CLEAVE_RETURN_IF_ERROR(detectFormat(path, format));
  if (options.tokens &&
      (format == DataFormat::Idx || format == DataFormat::Cifar10))
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": a ", formatName(format),
                     " dataset of images (expected token sequences: an .npz "
                     "or .npy dataset whose x and y are integer [N, ",
                     options.tokens->sequenceLength, "])");
  switch (format) {
  case DataFormat::Idx:
    return loadIdxDataset(path, split, options, out);
  case DataFormat::Cifar10:
    return loadCifar10Dataset(path, split, options, out);
  case DataFormat::NpzFile:
  case DataFormat::NpzDir:
  case DataFormat::NpyDir:
    return loadNumpyDataset(path, format, split, options, out);
  }
  return makeError(CLEAVE_INTERNAL, path, ": unknown data format");
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

/// Float rows must hold finite values, whatever the normalisation: a NaN
/// or an infinity in a sample makes its loss and gradients non-finite (or,
/// through a max or a ReLU in a kernel that drops NaN, silently wrong).
static Status checkFinite(const SampleArray &a, const char *what) {
  if (a.type != ElementType::F32)
    return Status::success();
  const int64_t elements = a.sampleElements();
  for (int64_t r = 0; r < a.count; ++r) {
    const uint8_t *row = a.row(r);
    for (int64_t i = 0; i < elements; ++i) {
      float v;
      std::memcpy(&v, row + sizeof(float) * size_t(i), sizeof(v));
      if (!std::isfinite(v))
        return makeError(CLEAVE_INVALID_ARGUMENT, a.source, ": ", what,
                         " value ", i, " of sample ", r, " is ", v,
                         " (expected finite values)");
    }
  }
  return Status::success();
}

Status finishDataset(const DatasetOptions &options, Dataset &d) {
  if (options.limit < 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, "dataset: sample limit ",
                     options.limit, " is negative");
  const bool labels = d.hasClassLabels();
  const char *what = labels ? "labels" : "targets";
  if (d.inputs.count == 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, d.inputs.source,
                     ": no samples (expected at least one)");
  if (d.inputs.sampleElements() == 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, d.inputs.source,
                     ": samples of shape ", shapeString(d.inputs.sampleShape),
                     " have no elements");
  if (d.targets.count != d.inputs.count)
    return makeError(CLEAVE_INVALID_ARGUMENT, d.targets.source, ": ",
                     d.targets.count, " ", what, " for the ", d.inputs.count,
                     " samples of ", d.inputs.source, " (expected one per ",
                     "sample)");
  if (options.tokens) {
    CLEAVE_RETURN_IF_ERROR(checkTokens(options, *options.tokens, d));
  } else if (labels) {
    if (options.numClasses < 1)
      return makeError(CLEAVE_INVALID_ARGUMENT, "dataset: ", options.numClasses,
                       " classes, expected at least 1");
    if (d.targets.sampleElements() != 1)
      return makeError(CLEAVE_INVALID_ARGUMENT, d.targets.source, ": ",
                       elementTypeName(d.targets.type), " labels of shape ",
                       shapeString(d.targets.shape()),
                       " (expected one class index per sample, shape [N])");
    for (int64_t i = 0; i < d.targets.count; ++i) {
      const int64_t label = labelAt(d.targets, i);
      if (label < 0 || label >= options.numClasses)
        return makeError(CLEAVE_INVALID_ARGUMENT, d.targets.source, ": label ",
                         label, " of sample ", i,
                         " is out of range (expected 0 to ",
                         options.numClasses - 1, ")");
    }
    d.numClasses = options.numClasses;
  } else {
    d.numClasses = 0;
  }
  if (options.limit > 0 && options.limit < d.size()) {
    d.inputs.count = options.limit;
    d.targets.count = options.limit;
  }
  // The samples training reads, in every normalisation mode.
  CLEAVE_RETURN_IF_ERROR(checkFinite(d.inputs, "input"));
  CLEAVE_RETURN_IF_ERROR(checkFinite(d.targets, "target"));
  return Status::success();
}

Status loadIdxDataset(const std::string &dir, Split split,
                      const DatasetOptions &options, Dataset &out) {
  if (options.numClasses < 1 || options.numClasses > 256)
    return makeError(CLEAVE_INVALID_ARGUMENT, "dataset: ", options.numClasses,
                     " classes, expected 1 to 256 (labels are bytes)");
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  std::string imagesPath, labelsPath;
  CLEAVE_RETURN_IF_ERROR(
      findIdxFile(dir, prefix + "-images-idx3-ubyte", imagesPath));
  CLEAVE_RETURN_IF_ERROR(
      findIdxFile(dir, prefix + "-labels-idx1-ubyte", labelsPath));

  auto images = std::make_shared<IdxArray>();
  auto labels = std::make_shared<IdxArray>();
  CLEAVE_RETURN_IF_ERROR(readIdx(imagesPath, kIdxImagesMagic, *images));
  CLEAVE_RETURN_IF_ERROR(readIdx(labelsPath, kIdxLabelsMagic, *labels));

  Dataset d;
  d.format = "idx";
  d.inputs.source = imagesPath;
  d.inputs.type = ElementType::U8;
  d.inputs.sampleShape = {int64_t(images->dims[1]), int64_t(images->dims[2])};
  d.inputs.count = images->dims[0];
  d.inputs.data = images->data.data();
  d.targets.source = labelsPath;
  d.targets.type = ElementType::U8;
  d.targets.count = labels->dims[0];
  d.targets.data = labels->data.data();
  d.storage = {images, labels};
  CLEAVE_RETURN_IF_ERROR(finishDataset(options, d));
  out = std::move(d);
  return Status::success();
}

int64_t channelsOf(const std::vector<int64_t> &sampleShape) {
  return sampleShape.size() == 3 ? sampleShape[0] : 1;
}

Status standardization(const Dataset &dataset, Normalization &out) {
  const SampleArray &x = dataset.inputs;
  if (dataset.tokens)
    return makeError(CLEAVE_INVALID_ARGUMENT, x.source,
                     ": token ids are not standardised (they index an "
                     "embedding)");
  const int64_t channels = std::max<int64_t>(channelsOf(x.sampleShape), 1);
  const int64_t plane = x.sampleElements() / channels;
  std::vector<double> mean(size_t(channels), 0.0), var(size_t(channels), 0.0);
  const double n = double(x.count) * double(plane);
  if (x.type == ElementType::U8) {
    // Sums over byte values are exact in 64-bit integers.
    std::vector<uint64_t> sum(size_t(channels), 0),
        squares(size_t(channels), 0);
    for (int64_t r = 0; r < x.count; ++r) {
      const uint8_t *row = x.row(r);
      for (int64_t c = 0; c < channels; ++c) {
        uint64_t s = 0, q = 0;
        for (int64_t i = 0; i < plane; ++i) {
          const uint64_t p = row[c * plane + i];
          s += p;
          q += p * p;
        }
        sum[size_t(c)] += s;
        squares[size_t(c)] += q;
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      mean[size_t(c)] = double(sum[size_t(c)]) / n / 255.0;
      var[size_t(c)] = double(squares[size_t(c)]) / n / (255.0 * 255.0) -
                       mean[size_t(c)] * mean[size_t(c)];
    }
  } else if (x.type == ElementType::F32) {
    // Sums of the values shifted by each channel's first value: the
    // variance does not cancel away when the mean is large.
    std::vector<double> shift(size_t(channels), 0.0),
        sum(size_t(channels), 0.0), squares(size_t(channels), 0.0);
    for (int64_t r = 0; r < x.count; ++r) {
      const uint8_t *row = x.row(r);
      for (int64_t c = 0; c < channels; ++c) {
        double s = 0, q = 0;
        for (int64_t i = 0; i < plane; ++i) {
          float v;
          std::memcpy(&v, row + sizeof(float) * size_t(c * plane + i),
                      sizeof(v));
          if (!std::isfinite(v))
            return makeError(CLEAVE_INVALID_ARGUMENT, x.source,
                             ": input value ", c * plane + i, " of sample ", r,
                             " is ", v, " (expected finite values)");
          if (r == 0 && i == 0)
            shift[size_t(c)] = v;
          const double d = double(v) - shift[size_t(c)];
          s += d;
          q += d * d;
        }
        sum[size_t(c)] += s;
        squares[size_t(c)] += q;
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      const double m = sum[size_t(c)] / n;
      mean[size_t(c)] = shift[size_t(c)] + m;
      var[size_t(c)] = squares[size_t(c)] / n - m * m;
    }
  } else {
    return makeError(CLEAVE_INVALID_ARGUMENT, x.source, ": ",
                     elementTypeName(x.type),
                     " inputs (expected uint8 or float32)");
  }
  Normalization norm;
  for (int64_t c = 0; c < channels; ++c) {
    norm.mean.push_back(float(mean[size_t(c)]));
    norm.std.push_back(var[size_t(c)] > 0 ? float(std::sqrt(var[size_t(c)]))
                                          : 1.0f);
  }
  out = std::move(norm);
  return Status::success();
}

} // namespace cleave::data

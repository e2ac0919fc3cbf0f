//===- MicroBatcher.cpp - Micro-batches of a dataset ----------------------===//

#include "MicroBatcher.h"

#include <algorithm>
#include <cstring>

namespace cleave::data {

using rt::makeError;
using rt::Status;

namespace {

constexpr size_t kAlignment = 64;

void *alignedZeroed(size_t bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
  if (p)
    std::memset(p, 0, rounded);
  return p;
}

} // namespace

Status MicroBatcher::create(const Dataset &dataset, int64_t capacity,
                            std::unique_ptr<MicroBatcher> &out,
                            Normalization normalization) {
  if (capacity < 1)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro-batch size ", capacity,
                     " is not positive");
  const SampleArray &x = dataset.inputs;
  if (dataset.tokens && !normalization.isIdentity())
    return makeError(CLEAVE_INVALID_ARGUMENT, x.source,
                     ": token ids are not normalised (they index an "
                     "embedding)");
  if (!dataset.tokens && x.type != ElementType::U8 &&
      x.type != ElementType::F32)
    return makeError(CLEAVE_INVALID_ARGUMENT, x.source, ": ",
                     elementTypeName(x.type),
                     " inputs (expected uint8 or float32)");
  const int64_t channels = std::max<int64_t>(channelsOf(x.sampleShape), 1);
  if (!normalization.isIdentity() &&
      (int64_t(normalization.mean.size()) != channels ||
       normalization.std.size() != normalization.mean.size()))
    return makeError(CLEAVE_INVALID_ARGUMENT, "a normalisation of ",
                     normalization.mean.size(), " channels for inputs of ",
                     channels, " (", x.source, ")");
  // Token ids and labels are fed as i64, one per token. The sizes are
  // bounded so that the buffers below (rounded up to the alignment) cannot
  // overflow.
  const size_t rowBytes = size_t(x.sampleElements()) *
                          (dataset.tokens ? sizeof(int64_t) : sizeof(float));
  const size_t targetRowBytes =
      dataset.tokens
          ? size_t(dataset.targets.sampleElements()) * sizeof(int64_t)
      : dataset.hasClassLabels()
          ? sizeof(int64_t)
          : size_t(dataset.targets.sampleElements()) * sizeof(float);
  const size_t widest = std::max({rowBytes, targetRowBytes, size_t(8)});
  if (uint64_t(capacity) > (uint64_t(1) << 48) / widest)
    return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate a micro-batch of ",
                     capacity, " samples of ", rowBytes, " bytes");
  std::unique_ptr<MicroBatcher> b(new MicroBatcher(dataset, capacity));
  b->plane_ = x.sampleElements() / channels;
  b->inputRowBytes_ = rowBytes;
  b->targetRowBytes_ = targetRowBytes;
  for (int64_t c = 0; c < channels; ++c) {
    const float mean =
        normalization.isIdentity() ? 0.0f : normalization.mean[c];
    const float std = normalization.isIdentity() ? 1.0f : normalization.std[c];
    b->mean_.push_back(mean);
    b->std_.push_back(std);
    // The same expression for every byte as for the value it stands for,
    // so that a table lookup is bit for bit the computation.
    if (x.type == ElementType::U8)
      for (int p = 0; p < 256; ++p)
        b->byteTable_.push_back((pixelToFloat(uint8_t(p)) - mean) / std);
  }
  b->inputs_.reset(alignedZeroed(size_t(capacity) * rowBytes));
  b->targets_.reset(alignedZeroed(size_t(capacity) * targetRowBytes));
  if (!b->inputs_ || !b->targets_)
    return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate a micro-batch of ",
                     capacity, " samples");
  out = std::move(b);
  return Status::success();
}

void MicroBatcher::copySample(int64_t row, int64_t index) {
  const SampleArray &x = dataset_.inputs;
  const int64_t elements = x.sampleElements();
  const uint8_t *src = x.row(index);
  if (dataset_.tokens) {
    // Labels per token, or one per sequence (targetRowBytes_ is either).
    const SampleArray &y = dataset_.targets;
    const int64_t perRow = y.sampleElements();
    int64_t *ids = static_cast<int64_t *>(inputs_.get()) + row * elements;
    int64_t *labels = static_cast<int64_t *>(targets_.get()) + row * perRow;
    const uint8_t *labelSrc = y.row(index);
    for (int64_t i = 0; i < elements; ++i)
      ids[i] = integerAt(src + size_t(i) * elementSize(x.type), x.type);
    for (int64_t i = 0; i < perRow; ++i)
      labels[i] = integerAt(labelSrc + size_t(i) * elementSize(y.type), y.type);
    return;
  }
  float *dst = static_cast<float *>(inputs_.get()) + row * elements;
  const int64_t channels = int64_t(mean_.size());
  if (x.type == ElementType::U8) {
    for (int64_t c = 0; c < channels; ++c) {
      const float *table = byteTable_.data() + 256 * c;
      for (int64_t i = c * plane_; i < (c + 1) * plane_; ++i)
        dst[i] = table[src[i]];
    }
  } else {
    // Rows of a mapped .npy need not be aligned for float: copied as bytes.
    std::memcpy(dst, src, size_t(elements) * sizeof(float));
    for (int64_t c = 0; c < channels; ++c) {
      if (mean_[c] == 0.0f && std_[c] == 1.0f)
        continue;
      for (int64_t i = c * plane_; i < (c + 1) * plane_; ++i)
        dst[i] = (dst[i] - mean_[c]) / std_[c];
    }
  }

  const SampleArray &y = dataset_.targets;
  const uint8_t *label = y.row(index);
  uint8_t *target =
      static_cast<uint8_t *>(targets_.get()) + size_t(row) * targetRowBytes_;
  if (y.type == ElementType::F32) {
    std::memcpy(target, label, targetRowBytes_);
    return;
  }
  const int64_t value = integerAt(label, y.type);
  std::memcpy(target, &value, sizeof(value));
}

Status MicroBatcher::gather(const uint32_t *indices, int64_t k) {
  if (k < 1 || k > capacity_)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro-batch of ", k,
                     " samples, expected 1 to ", capacity_);
  for (int64_t i = 0; i < k; ++i)
    if (int64_t(indices[i]) >= dataset_.size())
      return makeError(CLEAVE_INVALID_ARGUMENT, "sample index ", indices[i],
                       " is out of range (the dataset has ", dataset_.size(),
                       " samples)");
  for (int64_t i = 0; i < k; ++i)
    copySample(i, indices[i]);
  samples_ = k;
  return Status::success();
}

Status MicroBatcher::gatherRange(int64_t first, int64_t k) {
  if (k < 1 || k > capacity_)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro-batch of ", k,
                     " samples, expected 1 to ", capacity_);
  if (first < 0 || first + k > dataset_.size())
    return makeError(CLEAVE_INVALID_ARGUMENT, "samples [", first, ", ",
                     first + k, ") are out of range (the dataset has ",
                     dataset_.size(), " samples)");
  for (int64_t i = 0; i < k; ++i)
    copySample(i, first + i);
  samples_ = k;
  return Status::success();
}

} // namespace cleave::data

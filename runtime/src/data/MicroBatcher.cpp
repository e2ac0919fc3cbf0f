//===- MicroBatcher.cpp - Micro-batches of an image dataset ---------------===//

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

Status MicroBatcher::create(const ImageDataset &dataset, int64_t capacity,
                            std::unique_ptr<MicroBatcher> &out,
                            PixelNormalization normalization) {
  if (capacity < 1)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro-batch size ", capacity,
                     " is not positive");
  // Bounded so that the buffer sizes below (rounded up to the alignment)
  // cannot overflow.
  const size_t rowBytes = size_t(dataset.pixelsPerImage()) * sizeof(float);
  if (uint64_t(capacity) > (uint64_t(1) << 48) / std::max<size_t>(rowBytes, 8))
    return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate a micro-batch of ",
                     capacity, " images of ", rowBytes, " bytes");
  std::unique_ptr<MicroBatcher> batcher(
      new MicroBatcher(dataset, capacity, normalization));
  batcher->images_.reset(
      static_cast<float *>(alignedZeroed(size_t(capacity) * rowBytes)));
  batcher->labels_.reset(static_cast<int64_t *>(
      alignedZeroed(size_t(capacity) * sizeof(int64_t))));
  if (!batcher->images_ || !batcher->labels_)
    return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate a micro-batch of ",
                     capacity, " images");
  out = std::move(batcher);
  return Status::success();
}

void MicroBatcher::copySample(int64_t row, uint32_t index) {
  const int64_t pixels = dataset_.pixelsPerImage();
  const uint8_t *src = dataset_.pixels.data() + int64_t(index) * pixels;
  float *dst = images_.get() + row * pixels;
  for (int64_t i = 0; i < pixels; ++i)
    dst[i] = normalization_.apply(src[i]);
  labels_.get()[row] = dataset_.labels[index];
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
    copySample(i, uint32_t(first + i));
  samples_ = k;
  return Status::success();
}

} // namespace cleave::data

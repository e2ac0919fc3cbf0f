//===- MicroBatcher.h - Micro-batches of an image dataset -------*- C++ -*-===//
//
// Gathers the samples of one micro-batch, in any order, into two contiguous
// 64-byte aligned buffers in the layout of a Cleave artifact's inputs:
// images as f32 (PixelNormalization: p / 255, optionally standardised;
// [k, rows * cols], which is also the byte layout of [k, 1, rows, cols]) and
// labels as i64 [k]. A full micro-batch in these buffers is read by the
// runtime without a copy; a short one (k < B) is padded by the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_MICROBATCHER_H
#define CLEAVE_DATA_MICROBATCHER_H

#include "Dataset.h"
#include "Status.h"

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace cleave::data {

class MicroBatcher {
public:
  /// A batcher of up to `capacity` samples of `dataset`, which must outlive
  /// it; pixels become inputs through `normalization`.
  static rt::Status create(const ImageDataset &dataset, int64_t capacity,
                           std::unique_ptr<MicroBatcher> &out,
                           PixelNormalization normalization = {});

  /// Gathers samples `indices[0..k)` (1 <= k <= capacity, each index below
  /// dataset.size()) into rows 0..k-1.
  rt::Status gather(const uint32_t *indices, int64_t k);
  /// Gathers the consecutive samples [first, first + k).
  rt::Status gatherRange(int64_t first, int64_t k);

  int64_t capacity() const { return capacity_; }
  /// The number of samples of the last gather.
  int64_t samples() const { return samples_; }
  const float *images() const { return images_.get(); }
  const int64_t *labels() const { return labels_.get(); }
  size_t imageBytes() const {
    return size_t(samples_) * size_t(dataset_.pixelsPerImage()) * sizeof(float);
  }
  size_t labelBytes() const { return size_t(samples_) * sizeof(int64_t); }

private:
  MicroBatcher(const ImageDataset &dataset, int64_t capacity,
               PixelNormalization normalization)
      : dataset_(dataset), capacity_(capacity), normalization_(normalization) {}
  void copySample(int64_t row, uint32_t index);

  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  const ImageDataset &dataset_;
  int64_t capacity_;
  PixelNormalization normalization_;
  int64_t samples_ = 0;
  std::unique_ptr<float, Free> images_;
  std::unique_ptr<int64_t, Free> labels_;
};

} // namespace cleave::data

#endif // CLEAVE_DATA_MICROBATCHER_H

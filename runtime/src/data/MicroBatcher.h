//===- MicroBatcher.h - Micro-batches of a dataset --------------*- C++ -*-===//
//
// Gathers the samples of one micro-batch, in any order, into two contiguous
// 64-byte aligned buffers in the layout of a Cleave artifact's inputs: the
// inputs as f32 [k, elements per sample] (Normalization applied; also the
// byte layout of any per-sample shape of that many elements), and the
// targets as i64 [k] (class labels) or f32 [k, elements per target]. A token
// dataset's ids and labels both become i64 [k, T]. A full micro-batch in
// these buffers is read by the runtime without a copy; a short one (k < B)
// is padded by the runtime.
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
  /// it; inputs are mapped through `normalization` (one mean and std per
  /// channel of the inputs, or none; none for token ids).
  static rt::Status create(const Dataset &dataset, int64_t capacity,
                           std::unique_ptr<MicroBatcher> &out,
                           Normalization normalization = {});

  /// Gathers samples `indices[0..k)` (1 <= k <= capacity, each index below
  /// dataset.size()) into rows 0..k-1.
  rt::Status gather(const uint32_t *indices, int64_t k);
  /// Gathers the consecutive samples [first, first + k).
  rt::Status gatherRange(int64_t first, int64_t k);

  int64_t capacity() const { return capacity_; }
  /// The number of samples of the last gather.
  int64_t samples() const { return samples_; }
  /// The f32 inputs (not for a token dataset).
  const float *inputs() const {
    return static_cast<const float *>(inputData());
  }
  /// The i64 token ids (only for a token dataset).
  const int64_t *tokenIds() const {
    return static_cast<const int64_t *>(inputData());
  }
  /// The inputs, whichever their type.
  const void *inputData() const { return inputs_.get(); }
  size_t inputBytes() const { return size_t(samples_) * inputRowBytes_; }
  /// i64 class labels or f32 targets.
  const void *targets() const { return targets_.get(); }
  size_t targetBytes() const { return size_t(samples_) * targetRowBytes_; }
  /// The targets as class labels or token labels (not for f32 targets).
  const int64_t *labels() const {
    return static_cast<const int64_t *>(targets());
  }

private:
  MicroBatcher(const Dataset &dataset, int64_t capacity)
      : dataset_(dataset), capacity_(capacity) {}
  void copySample(int64_t row, int64_t index);

  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  const Dataset &dataset_;
  int64_t capacity_;
  /// Per channel: the float of every byte value (normalised), for byte
  /// inputs; the scale and shift of each channel for float inputs.
  std::vector<float> byteTable_;
  std::vector<float> mean_, std_;
  int64_t plane_ = 0;
  size_t inputRowBytes_ = 0, targetRowBytes_ = 0;
  int64_t samples_ = 0;
  std::unique_ptr<void, Free> inputs_;
  std::unique_ptr<void, Free> targets_;
};

} // namespace cleave::data

#endif // CLEAVE_DATA_MICROBATCHER_H

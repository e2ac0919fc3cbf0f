//===- Collectives.h - The collectives of generated code --------*- C++ -*-===//
//
// The data plane of a data-parallel job: what cleave_cross_rank_reduce,
// cleave_reduce_scatter and cleave_all_gather (kernel_abi.h) run on the
// session's buffers, wherever they live. MpiCollectives
// (collectives/MpiCollectives.h) runs them on host buffers with the
// session's Communicator; NcclCollectives (device/cuda/Nccl.h) on device
// buffers with NCCL; LocalCollectives is a job of one rank. The host's own
// traffic (the initial broadcast, agreement, checkpoints) stays on the
// Communicator. Header only, naming no MPI or vendor type, so that the
// kernel library depends on neither.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_COLLECTIVES_H
#define CLEAVE_RUNTIME_COLLECTIVES_COLLECTIVES_H

#include "Status.h"

#include <cstdint>

namespace cleave::rt {

/// How a cross-rank reduction combines the ranks' values. The numbers are the
/// `kind` argument of cleave_cross_rank_reduce in the kernel ABI.
enum class ReduceKind : int32_t {
  Sum = 0,    ///< Elementwise sum.
  Mean = 1,   ///< Elementwise sum divided by the number of ranks.
  Adasum = 2, ///< Adaptive summation, per buffer (docs/design/adasum.md).
};

class Collectives {
public:
  virtual ~Collectives() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Combines `count` buffers (`buffers[i]` holds `sizes[i]` floats, checked
  /// by the caller) across the ranks, in place.
  virtual Status reduce(ReduceKind kind, int64_t count, float *const *buffers,
                        const int64_t *sizes) = 0;
  /// ZeRO-1, in the layout of kernel_abi.h (tensor i cut into size() shards
  /// of ceil(sizes[i] / size()) floats, zero-padded), with more than one
  /// rank (with one, a shard is the tensor: the caller copies it).
  /// outputs[i] (a shard) = this rank's shard of the sum of inputs[i].
  virtual Status reduceScatterShards(int64_t count, const float *const *inputs,
                                     const int64_t *sizes,
                                     float *const *outputs) = 0;
  /// outputs[i] (whole) = every rank's shard inputs[i].
  virtual Status allGatherShards(int64_t count, const float *const *inputs,
                                 const int64_t *sizes,
                                 float *const *outputs) = 0;

  /// Whether the ZeRO-1 pair is implemented (else an error saying so, which
  /// every rank gets alike).
  virtual Status supportsSharding() const { return Status::success(); }

  /// Bytes this rank has sent so far, by the count of the bandwidth-optimal
  /// schedule of each collective (Communicator.h), whatever the library ran.
  virtual uint64_t bytesSent() const = 0;
};

/// A job of one rank: every reduction is the identity, nothing is sent.
class LocalCollectives final : public Collectives {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status reduce(ReduceKind, int64_t, float *const *, const int64_t *) override {
    return Status::success();
  }
  Status reduceScatterShards(int64_t, const float *const *, const int64_t *,
                             float *const *) override {
    return oneRank();
  }
  Status allGatherShards(int64_t, const float *const *, const int64_t *,
                         float *const *) override {
    return oneRank();
  }
  uint64_t bytesSent() const override { return 0; }

private:
  static Status oneRank() {
    return Status(CLEAVE_INTERNAL,
                  "a single rank has no shards to exchange (its shard is the "
                  "whole tensor)");
  }
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_COLLECTIVES_H

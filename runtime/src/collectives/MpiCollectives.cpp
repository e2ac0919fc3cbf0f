//===- MpiCollectives.cpp - The collectives of a CPU job ------------------===//
//
// See MpiCollectives.h.
//
//===----------------------------------------------------------------------===//

#include "collectives/MpiCollectives.h"

#include "collectives/Communicator.h"

namespace cleave::rt {

int MpiCollectives::rank() const { return comm_.rank(); }
int MpiCollectives::size() const { return comm_.size(); }

Status MpiCollectives::reduce(ReduceKind kind, int64_t count,
                              float *const *buffers, const int64_t *sizes) {
  comm_.reduceInPlace(kind, count, buffers, sizes);
  return Status::success();
}

Status MpiCollectives::reduceScatterShards(int64_t count,
                                           const float *const *inputs,
                                           const int64_t *sizes,
                                           float *const *outputs) {
  comm_.reduceScatterShards(count, inputs, sizes, outputs);
  return Status::success();
}

Status MpiCollectives::allGatherShards(int64_t count,
                                       const float *const *inputs,
                                       const int64_t *sizes,
                                       float *const *outputs) {
  comm_.allGatherShards(count, inputs, sizes, outputs);
  return Status::success();
}

uint64_t MpiCollectives::bytesSent() const { return comm_.bytesSent(); }

} // namespace cleave::rt

//===- MpiCollectives.h - The collectives of a CPU job ----------*- C++ -*-===//
//
// The Collectives (collectives/Collectives.h) of a session whose buffers are
// host memory: the Communicator's own reductions and ZeRO-1 pair. A failed
// collective ends the job, as the Communicator's do (a peer was lost).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_MPICOLLECTIVES_H
#define CLEAVE_RUNTIME_COLLECTIVES_MPICOLLECTIVES_H

#include "collectives/Collectives.h"

namespace cleave::rt {

class Communicator;

class MpiCollectives final : public Collectives {
public:
  /// Runs on `comm` (not owned), whose byte count it reports.
  explicit MpiCollectives(Communicator &comm) : comm_(comm) {}

  int rank() const override;
  int size() const override;
  Status reduce(ReduceKind kind, int64_t count, float *const *buffers,
                const int64_t *sizes) override;
  Status reduceScatterShards(int64_t count, const float *const *inputs,
                             const int64_t *sizes,
                             float *const *outputs) override;
  Status allGatherShards(int64_t count, const float *const *inputs,
                         const int64_t *sizes, float *const *outputs) override;
  uint64_t bytesSent() const override;

private:
  Communicator &comm_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_MPICOLLECTIVES_H

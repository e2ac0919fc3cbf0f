//===- FakeCommunicator.cpp - crossRankReduce for kernel tests ------------===//
//
// The test-local definition of the function the collectives library provides
// to the kernel library.
//
//===----------------------------------------------------------------------===//

#include "FakeCommunicator.h"

#include "kernels/KernelContext.h"

namespace cleave::rt {

void crossRankReduce(Communicator *comm, int32_t kind, int64_t count,
                     float **buffers, const int64_t *sizes) {
  comm->calls.push_back({kind, count, buffers, sizes});
  if (kind != 0)
    return;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < sizes[i]; ++j)
      buffers[i][j] *= static_cast<float>(comm->ranks);
}

} // namespace cleave::rt

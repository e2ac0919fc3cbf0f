//===- Nccl.h - Cross-rank reduction of device buffers ----------*- C++ -*-===//
//
// A GPU session of a data-parallel job reduces its window's buffers with
// NCCL, on the session's stream, so that the apply step stays a sequence of
// enqueued work (and is captured into its CUDA graph with the rest). NCCL is
// loaded at run time (libnccl.so.2), like the driver. docs/design/gpu.md,
// "Data parallel", describes the design.
//
// Only compiled when the CUDA headers are available (CLEAVE_HAVE_CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_CUDA_NCCL_H
#define CLEAVE_RUNTIME_DEVICE_CUDA_NCCL_H

#include "Status.h"

#include <memory>

namespace cleave::rt {

class Communicator;
struct CudaDriver;
class Collectives;
class Device;

/// The reduction of cleave_cross_rank_reduce for a session on `gpu`, one
/// rank of `comm`'s job (more than one rank). Collective: every rank of the
/// job calls it, and all of them succeed or all fail (a rank that failed
/// names its reason; the others say which ranks failed), so none is left
/// waiting in a collective.
///
/// Sum and mean are NCCL all-reduces (ncclSum, ncclAvg) of each buffer in
/// place, enqueued on the session's stream in one NCCL group. Adasum, which
/// NCCL does not have, stages the buffers through host memory and reduces
/// them with `comm` (the CPU path's Adasum): it waits for the GPU, so an
/// apply step that uses it is not captured into a CUDA graph.
Status createNcclCollectives(const CudaDriver &driver, Device &gpu,
                             Communicator &comm,
                             std::unique_ptr<Collectives> &out);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_CUDA_NCCL_H

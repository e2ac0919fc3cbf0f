//===- NoCuda.cpp - The GPU layer of a runtime built without CUDA ---------===//
//
// Built instead of the CUDA files when the CUDA headers were not found: the
// runtime then refuses every cuda artifact with one line.
//
//===----------------------------------------------------------------------===//

#include "device/Gpu.h"

namespace cleave::rt {

bool runtimeHasCuda() { return false; }

Status Gpu::open(int, const std::vector<GpuArch> &,
                 const std::optional<GpuArch> &, std::unique_ptr<Gpu> &) {
  return makeError(CLEAVE_FAILED_PRECONDITION, kNoCudaSupport);
}

} // namespace cleave::rt

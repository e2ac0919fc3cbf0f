//===- NoCuda.cpp - The CUDA device of a runtime built without CUDA -------===//
//
// Built instead of the CUDA files when the CUDA headers were not found: the
// runtime then refuses every cuda artifact with one line.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"
#include "device/GpuArch.h"

namespace cleave::rt {

bool runtimeHasCuda() { return false; }

namespace {
Status refuse(int, const Manifest &, std::unique_ptr<Device> &) {
  return makeError(CLEAVE_FAILED_PRECONDITION, kNoCudaSupport);
}
} // namespace

const DeviceDriver &cudaDriver() {
  static const DeviceDriver driver{
      DeviceKind::cuda,
      /*exclusivePerRank=*/true, describeCudaCode,   kCudaWhere,
      kCudaHowToChoose,          kCudaCompileOption, refuse};
  return driver;
}

} // namespace cleave::rt

//===- GpuArch.cpp - Which GPU code of an artifact a device runs ----------===//

#include "device/GpuArch.h"

namespace cleave::rt {

namespace {
bool atLeast(const GpuArch &a, const GpuArch &b) {
  return a.major > b.major || (a.major == b.major && a.minor >= b.minor);
}

bool cubinRuns(const GpuArch &cubin, const GpuArch &device) {
  if (cubin.specific)
    return cubin.major == device.major && cubin.minor == device.minor;
  return cubin.major == device.major && device.minor >= cubin.minor;
}
} // namespace

std::string describeCudaCode(const Manifest &m) {
  return "CUDA GPUs (" + describeGpuCode(m.gpuArches, m.ptxArch) + ")";
}

std::string describeGpuCode(const std::vector<GpuArch> &cubins,
                            const std::optional<GpuArch> &ptx) {
  std::string out;
  for (const GpuArch &a : cubins)
    out += (out.empty() ? "" : ", ") + a.name();
  if (ptx)
    out += (out.empty() ? "PTX for " : " and PTX for ") + ptx->name();
  return out;
}

Status checkGpuCode(const GpuArch &device, const std::vector<GpuArch> &cubins,
                    const std::optional<GpuArch> &ptx) {
  for (const GpuArch &cubin : cubins)
    if (cubinRuns(cubin, device))
      return Status::success();
  if (ptx && atLeast(device, *ptx))
    return Status::success();
  return makeError(CLEAVE_FAILED_PRECONDITION, "the GPU is ", device.name(),
                   " but the artifact has ", describeGpuCode(cubins, ptx),
                   " only");
}

static std::string cudaVersionName(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

Status checkDriverVersion(int driverVersion, int headersVersion) {
  if (driverVersion / 1000 >= headersVersion / 1000)
    return Status::success();
  return makeError(CLEAVE_FAILED_PRECONDITION, "the CUDA driver supports CUDA ",
                   cudaVersionName(driverVersion), ", this runtime needs CUDA ",
                   headersVersion / 1000, ".x (built with ",
                   cudaVersionName(headersVersion),
                   "); update the NVIDIA driver");
}

} // namespace cleave::rt

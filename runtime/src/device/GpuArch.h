//===- GpuArch.h - Which GPU code of an artifact a device runs --*- C++ -*-===//
//
// A `cuda` artifact embeds one cubin per architecture of `gpu_arches` and,
// optionally, the PTX of `ptx_arch`; cuModuleLoadData picks what the device
// can run. This decides the same question up front, without a driver, so
// that a session refuses a GPU the artifact has no code for with one line
// instead of failing inside the first kernel launch.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_GPUARCH_H
#define CLEAVE_RUNTIME_DEVICE_GPUARCH_H

#include "Manifest.h"
#include "Status.h"

#include <optional>
#include <string>
#include <vector>

namespace cleave::rt {

/// Whether a GPU of compute capability `device` can run an artifact with
/// cubins for `cubins` and PTX for `ptx`, following CUDA's compatibility
/// rules: a cubin for sm_XY runs on sm_XZ with Z >= Y (same major version),
/// one for sm_XYa on sm_XY only, and PTX for sm_XY is compiled by the driver
/// for any GPU of compute capability X.Y or higher. The error is one line:
/// "the GPU is sm_75 but the artifact has sm_80, sm_90 and PTX for sm_80
/// only".
Status checkGpuCode(const GpuArch &device, const std::vector<GpuArch> &cubins,
                    const std::optional<GpuArch> &ptx);

/// "sm_80, sm_90 and PTX for sm_80": what an artifact's GPU code is, for
/// messages.
/// How the CUDA driver (with or without CUDA support) names the kind in
/// messages (DeviceDriver).
std::string describeCudaCode(const Manifest &manifest);
inline constexpr const char *kCudaWhere = "on a CUDA GPU";
inline constexpr const char *kCudaHowToChoose =
    "a cuda device (cleave-train --device=cuda)";
inline constexpr const char *kCudaCompileOption = "--target=cuda";

std::string describeGpuCode(const std::vector<GpuArch> &cubins,
                            const std::optional<GpuArch> &ptx);

/// Whether a driver for CUDA `driverVersion` (as cuDriverGetVersion reports
/// it: 1000 * major + 10 * minor) runs this runtime, built against the
/// headers of CUDA `headersVersion`. CUDA's minor-version compatibility:
/// a driver runs what any toolkit of its major version built. The calls the
/// runtime makes are those of 13.0 (none newer is used); should a driver
/// lack one, loading it refuses the driver naming the call (the real guard,
/// CudaDriver.cpp). So a 13.0 driver runs a runtime built with 13.1
/// headers; a 12.x driver does not.
/// The error is one line naming both versions.
Status checkDriverVersion(int driverVersion, int headersVersion);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_GPUARCH_H

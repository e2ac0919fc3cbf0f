//===- KernelModules.h - A device's loader of artifact GPU code -*- C++ -*-===//
//
// The GPU code of an artifact reaches the runtime through the mgpu*
// functions (device/Modules.h): a module is registered when the artifact is
// loaded, and the artifact looks up and launches its kernels while an entry
// point runs. What a module is on a device (a CUmodule in a CUDA context)
// and how a kernel is launched belong to the device; those functions know
// only this interface, so they compile without any vendor header.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_KERNELMODULES_H
#define CLEAVE_RUNTIME_DEVICE_KERNELMODULES_H

#include "Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace cleave::rt {

/// What one device made of a KernelModule (a module loaded into one CUDA
/// context, say); destroying it releases that.
class LoadedKernelModule {
public:
  virtual ~LoadedKernelModule() = default;
  /// Which device (or context) it was made for: modules are loaded once per
  /// key, whichever session asks first.
  virtual const void *key() const = 0;
};

/// A GPU code module an artifact registered (mgpuModuleLoad or
/// mgpuModuleLoadJIT). The blob is the artifact's, which outlives the module:
/// the artifact's destructor unregisters it. Devices load it on first use and
/// keep what they made in `loaded`, under `mutex` (sessions on other threads
/// may share the module).
struct KernelModule {
  const void *data = nullptr;
  size_t size = 0;
  /// PTX to compile at `optLevel`, rather than a fatbin.
  bool jit = false;
  int optLevel = 0;
  std::mutex mutex;
  std::vector<std::unique_ptr<LoadedKernelModule>> loaded;
};

/// A launch's grid and block sizes and dynamic shared memory, as the
/// artifact passes them to mgpuLaunchKernel.
struct LaunchDims {
  intptr_t grid[3] = {1, 1, 1};
  intptr_t block[3] = {1, 1, 1};
  int32_t sharedMemory = 0;
};

/// A device's side of the mgpu* functions, handed to the kernel context of
/// the sessions on it (KernelContext::modules).
class KernelModules {
public:
  virtual ~KernelModules() = default;
  /// The kernel `name` of `module` on this device, loading the module the
  /// first time this device looks into it. Errors name the kernel.
  virtual Status function(KernelModule &module, const char *name,
                          void *&out) = 0;
  /// Enqueues `function` (from `function`) on `stream` with the artifact's
  /// kernel parameters.
  virtual Status launch(void *function, const LaunchDims &dims, void *stream,
                        void **params, void **extra) = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_KERNELMODULES_H

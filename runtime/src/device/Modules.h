//===- Modules.h - The mgpu* functions of cuda artifacts --------*- C++ -*-===//
//
// A cuda artifact's host code is MLIR's own lowering of gpu.launch_func: a
// global constructor hands its fatbin to mgpuModuleLoad when the artifact is
// dlopened, and every launch calls mgpuModuleGetFunction and
// mgpuLaunchKernel (signatures of upstream MLIR's CudaRuntimeWrappers.cpp).
// libcleave_runtime defines them (device/Modules.cpp) without any vendor
// header: loading only records the blob, since no driver may be touched at
// dlopen time (there may be none); looking up and launching a kernel go to
// the KernelModules of the device the running entry point is on
// (device/KernelModules.h), which loads the module there the first time.
//
// Those functions take no kernel context, so they find the entry point
// running on the calling thread through the EntryScope its caller opens
// around it, and record their errors in its context; like the kernels'
// errors these are sticky (later launches do nothing).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_MODULES_H
#define CLEAVE_RUNTIME_DEVICE_MODULES_H

#include <cstddef>
#include <cstdint>

namespace cleave::rt {

class KernelContext;

/// While alive, the mgpu* functions called on this thread belong to the
/// entry point running on `context`, and use its KernelModules.
class EntryScope {
public:
  explicit EntryScope(KernelContext *context);
  ~EntryScope();
  EntryScope(const EntryScope &) = delete;
  EntryScope &operator=(const EntryScope &) = delete;

private:
  KernelContext *previous_;
};

} // namespace cleave::rt

// Exported from libcleave_runtime.so (its objects are otherwise built with
// hidden visibility; the version script lists them too).
#define CLEAVE_MGPU_EXPORT __attribute__((visibility("default")))

extern "C" {
// The exports of upstream MLIR's CudaRuntimeWrappers.cpp a cuda artifact
// calls (docs/design/gpu-runtime.md lists the contract).
CLEAVE_MGPU_EXPORT void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
CLEAVE_MGPU_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel);
CLEAVE_MGPU_EXPORT void mgpuModuleUnload(void *module);
CLEAVE_MGPU_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);
CLEAVE_MGPU_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX,
                                         intptr_t gridY, intptr_t gridZ,
                                         intptr_t blockX, intptr_t blockY,
                                         intptr_t blockZ, int32_t smem,
                                         void *stream, void **params,
                                         void **extra, size_t paramsCount);
}

#endif // CLEAVE_RUNTIME_DEVICE_MODULES_H

//===- CudaModules.h - Artifact GPU modules in a CUDA context ---*- C++ -*-===//
//
// The KernelModules of a CUDA device (device/KernelModules.h): modules are
// loaded into a context with cuModuleLoadData (the driver picks the cubin
// for the GPU, or JIT-compiles the PTX) the first time one of their kernels
// is looked up there, functions are cached per context and name (MLIR's
// lowering looks a kernel up before every launch), and launches are
// cuLaunchKernel on the stream the artifact passes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_CUDA_CUDAMODULES_H
#define CLEAVE_RUNTIME_DEVICE_CUDA_CUDAMODULES_H

#include "device/cuda/CudaDriver.h"

#include <memory>

namespace cleave::rt {

class KernelModules;

/// The modules of `context`, a primary context the runtime never releases:
/// sessions on one device share what is loaded into it, and a module stays
/// loaded until its artifact unregisters it.
std::unique_ptr<KernelModules> createCudaModules(const CudaDriver &driver,
                                                 CUcontext context);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_CUDA_CUDAMODULES_H

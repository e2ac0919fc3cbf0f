//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime never links libcuda: it dlopens libcuda.so.1 the first time a
// cuda session is created and resolves the entry points below. cuda.h
// renames many of them to their current ABI version by macro (cuMemAlloc is
// cuMemAlloc_v2); the member of each function is declared with the same
// macro-expanded name and type, and looked up by the expanded name, so the
// table always holds the version the headers describe.
//
// Only compiled when the CUDA headers are available (CLEAVE_HAVE_CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_CUDA_CUDADRIVER_H
#define CLEAVE_RUNTIME_DEVICE_CUDA_CUDADRIVER_H

#include "Status.h"

#include <cuda.h>

#include <string>

namespace cleave::rt {

// The driver functions the runtime calls; X(name) for each.
#define CLEAVE_CUDA_DRIVER_FUNCTIONS(X)                                        \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetName)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuMemGetInfo)                                                              \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemHostAlloc)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8Async)                                                           \
  X(cuPointerGetAttribute)                                                     \
  X(cuMemsetD32Async)                                                          \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventDestroy)                                                            \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuStreamIsCapturing)                                                       \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphExecDestroy)

/// The entry points of libcuda.so.1. Loaded once per process and never
/// unloaded (CUDA objects of every session refer into it).
struct CudaDriver {
#define CLEAVE_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  CLEAVE_CUDA_DRIVER_FUNCTIONS(CLEAVE_CUDA_MEMBER)
#undef CLEAVE_CUDA_MEMBER
  /// Optional (CUDA 12.3 and later): names kernels in launch errors.
  decltype(&::cuFuncGetName) cuFuncGetName = nullptr;
  int version = 0;

  /// The process's driver: loads libcuda.so.1 and runs cuInit(0) the first
  /// time. Null with `error` set to one line ("no CUDA driver (libcuda.so.1
  /// not found)", or what cuInit answered) when there is none.
  static const CudaDriver *get(std::string &error);
  /// The driver if it was loaded successfully before, else null. For the
  /// mgpu* functions, which only run in sessions that loaded it.
  static const CudaDriver *loaded();

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(CUresult result) const;
  /// An error "<what>: <describe(result)>", or success for CUDA_SUCCESS.
  Status check(CUresult result, const std::string &what) const;
};

/// The name of a driver entry point as the library exports it ("cuMemAlloc"
/// gives "cuMemAlloc_v2"): the macro-expanded spelling.
#define CLEAVE_CUDA_SYMBOL(name) CLEAVE_CUDA_SYMBOL_(name)
#define CLEAVE_CUDA_SYMBOL_(name) #name

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_CUDA_CUDADRIVER_H

//===- CudaKernels.h - The kernel library on cuBLASLt and cuDNN -*- C++ -*-===//
//
// The kernels of a manifest's `kernels` array for a session on a GPU: matmul
// entries on cuBLASLt, convolutions and pooling on cuDNN's legacy API and
// fused attention on its backend graph API (libcudnn.so.9). Both libraries
// are loaded with dlopen when a session first needs them. Every descriptor,
// algorithm and workspace is chosen when the session is created; a call
// binds pointers and enqueues on the session's stream. The semantics are
// those of the oneDNN kernels (runtime/src/kernels/,
// docs/design/runtime-abi.md); an entry whose meaning cuDNN cannot reproduce
// exactly is refused at creation, naming the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_CUDA_CUDAKERNELS_H
#define CLEAVE_RUNTIME_DEVICE_CUDA_CUDAKERNELS_H

#include "Status.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>

namespace cleave::rt {

struct CudaDriver;
class KernelLibrary;
class Device;

/// Builds the kernels of `kernels` (the manifest array) on `device`, whose
/// context is current. Device memory (the shared workspace) comes from
/// `device` and lives as long as it does.
Status createCudaKernels(const CudaDriver &driver, Device &device,
                         const nlohmann::json &kernels,
                         std::unique_ptr<KernelLibrary> &out);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_CUDA_CUDAKERNELS_H

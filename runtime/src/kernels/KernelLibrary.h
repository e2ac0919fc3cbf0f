//===- KernelLibrary.h - The kernel table of one device ---------*- C++ -*-===//
//
// The manifest's `kernels` array, built once per session for the device it
// runs on: oneDNN on the CPU (kernels/OneDnnKernels.h), cuBLASLt and cuDNN on
// a CUDA GPU (device/cuda/CudaKernels.h). Each cleave_kernel_* entry point of
// kernel_abi.h is one call of it (kernels/Kernels.cpp), whatever the device.
// A library checks the id and kind of every call itself and returns what went
// wrong; the entry point records that in the kernel context. Operands are
// pointers the device addresses; on a device with a queue the call enqueues
// there, else it has run when it returns.
//
// The layout-cache hooks let a library keep derived copies of parameters and
// hold back gradient sums between calls (oneDNN's blocked layouts,
// kernels/LayoutCache.h); they do nothing in a library that keeps none.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_KERNELLIBRARY_H
#define CLEAVE_RUNTIME_KERNELS_KERNELLIBRARY_H

#include "Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cleave::rt {

/// The entry point family a kernel belongs to: a call through the wrong
/// family (e.g. cleave_kernel_matmul with the id of a convolution) is caught
/// by comparing kinds.
enum class KernelKind {
  Matmul,
  ConvolutionForward,
  ConvolutionBackwardData,
  ConvolutionBackwardWeights,
  PoolingForward,
  PoolingBackward,
  AttentionForward,
  AttentionBackward,
};

/// The manifest ops of a kind, for messages ("max_pool2d_fwd or
/// avg_pool2d_fwd").
const char *kernelKindName(KernelKind kind);

/// The Status of the exception being handled, raised while `where` ran (out
/// of memory, or the exception's message). Call only from a catch block.
Status currentException(const std::string &where);

/// The operands of cleave_kernel_sdpa_bwd, in its order. Tensors are bf16
/// or f32 as the entry's `io_type` says; `lse` is always f32.
struct AttentionGradients {
  const void *q, *k, *v, *mask, *keep, *o;
  const float *lse;
  const void *dO;
  void *dq, *dk, *dv;
};

/// `bytes` bytes at `data`: one of a session's buffers.
struct BufferRange {
  const void *data = nullptr;
  size_t bytes = 0;
};

class KernelLibrary {
public:
  virtual ~KernelLibrary() = default;

  /// The queue every call enqueues on (a CUstream: cleave_gpu_stream), or
  /// null where calls run before they return.
  virtual void *queue() const { return nullptr; }

  /// The kernels of kernel_abi.h, on kernel `id` of the manifest. Errors
  /// start with the kernel ("kernel 3 (matmul): ..."), or say that there is
  /// no such kernel or that it is of another kind (CLEAVE_INTERNAL: the
  /// generated code does not match its manifest).
  virtual Status matmul(int64_t id, const void *a, const void *b,
                        const float *bias, float *c) = 0;
  /// One of the three convolution kinds; the operands are in the entry
  /// point's order (src, weights or diff_dst, weights or src, diff_dst).
  /// Operands the entry says are stored in bf16 are bf16, the rest (and
  /// the bias) f32.
  virtual Status convolution(KernelKind kind, int64_t id, const void *in0,
                             const void *in1, const float *bias, void *out) = 0;
  virtual Status poolForward(int64_t id, const float *src, float *dst) = 0;
  virtual Status poolBackward(int64_t id, const float *src,
                              const float *diffDst, float *diffSrc) = 0;
  /// Fused attention and its gradient (kernel_abi.h's sdpa functions).
  virtual Status attentionForward(int64_t id, const void *q, const void *k,
                                  const void *v, const void *mask,
                                  const void *keep, void *o, float *lse) = 0;
  virtual Status attentionBackward(int64_t id,
                                   const AttentionGradients &operands) = 0;
  /// Copy and zero fill of `floats` floats on the device, for the ZeRO-1
  /// calls (cleave_shard and, with one rank, its collectives).
  virtual Status copy(float *dst, const float *src, int64_t floats) = 0;
  virtual Status zero(float *dst, int64_t floats) = 0;

  /// How many kernels the table has, and one line for logs on kernel `id`
  /// (its op and implementation; empty if unknown or undescribed).
  virtual size_t numKernels() const = 0;
  virtual std::string describeKernel(int64_t) const { return {}; }
  /// What the library chose, when it was built, that its user should hear
  /// of (a session's notes): one line each, e.g. a kernel that runs on a
  /// non-deterministic engine for want of a deterministic one.
  virtual std::vector<std::string> notes() const { return {}; }
  /// Bytes of host memory the kernels share for their transient data.
  virtual size_t arenaBytes() const { return 0; }

  /// The layout cache (see KernelContext::enableLayoutCache for the rules
  /// the caller keeps).
  virtual void enableLayoutCache(std::vector<BufferRange> /*parameters*/,
                                 std::vector<BufferRange> /*accumulators*/) {}
  virtual void parametersChanged() {}
  virtual Status beginUpdate() { return Status::success(); }
  virtual void endUpdate() {}
  virtual Status settle() { return Status::success(); }
  virtual void globalsReplaced() {}
  virtual size_t layoutCacheBytes() const { return 0; }
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_KERNELLIBRARY_H

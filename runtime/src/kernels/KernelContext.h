//===- KernelContext.h - The `ctx` of generated code ------------*- C++ -*-===//
//
// KernelContext owns every oneDNN primitive of one session (one per entry of
// the manifest's `kernels` array), the stream they run on, the arena that
// holds their transient memory, and the session's communicator. Generated
// code receives it as the opaque `void *ctx` of runtime/include/cleave/
// kernel_abi.h and passes it to every kernel call. Kernel calls return
// nothing, so the context also holds the first error one of them hit, for
// the caller of the entry point to report.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_KERNELCONTEXT_H
#define CLEAVE_RUNTIME_KERNELS_KERNELCONTEXT_H

#include "Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dnnl {
struct stream;
} // namespace dnnl

namespace cleave::rt {

class Communicator;
class Kernel;
class KernelModules;

/// `bytes` bytes at `data`: one of a session's buffers.
struct BufferRange {
  const void *data = nullptr;
  size_t bytes = 0;
};

/// Combines `count` buffers (`buffers[i]` holds `sizes[i]` floats) across the
/// ranks of `comm`, in place; `kind` is a CLEAVE_REDUCE_* value of
/// kernel_abi.h. Defined by the collectives library (runtime/src/collectives),
/// which forwards to `Communicator::reduceInPlace`: the kernel library only
/// declares it so that it does not depend on MPI. Any program linking
/// cleave_kernels must therefore also link the collectives library (the
/// runtime library does), or define this function itself (unit tests do).
void crossRankReduce(Communicator *comm, int32_t kind, int64_t count,
                     float **buffers, const int64_t *sizes);

/// The collectives of ZeRO-1 sharded optimizer state that the kernel ABI's
/// cleave_reduce_scatter and cleave_all_gather run, in the layout of
/// kernel_abi.h (tensor i cut into size() shards of ceil(sizes[i] / size())
/// floats, zero-padded). The session implements it over its communicator.
/// Unlike crossRankReduce this is an interface rather than a function the
/// collectives library defines, so that programs linking the kernel library
/// without MPI (the kernel tests) need not provide anything for it.
class ShardedCollectives {
public:
  virtual ~ShardedCollectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// outputs[i] (a shard) = this rank's shard of the sum of inputs[i].
  virtual void reduceScatter(int64_t count, const float *const *inputs,
                             const int64_t *sizes, float *const *outputs) = 0;
  /// outputs[i] (whole) = every rank's shard inputs[i], in place.
  virtual void allGather(int64_t count, const float *const *inputs,
                         const int64_t *sizes, float *const *outputs) = 0;
};

/// cleave_cross_rank_reduce of a GPU session with several ranks: `buffers`
/// are device pointers, and the reduction is enqueued on the session's
/// stream like the kernels around it. The GPU layer implements it with NCCL
/// (device/cuda/Nccl.cpp). `kind` is a CLEAVE_REDUCE_* value of kernel_abi.h, checked
/// by the caller. Returns what went wrong (the caller records it).
class DeviceCollectives {
public:
  virtual ~DeviceCollectives() = default;
  virtual Status reduce(int32_t kind, int64_t count, float *const *buffers,
                        const int64_t *sizes) = 0;
};

/// The kernel library of a session whose entry points run on a GPU
/// (`"device": "cuda"`): the same kernel table and semantics as the oneDNN
/// kernels, on device pointers, enqueued on the session's stream. Created
/// by the GPU layer (device/Gpu.h), which checks every entry when the session
/// is created; a call returns what went wrong instead of recording it, and
/// the C entry points record it in the context as they do for oneDNN.
class DeviceKernels {
public:
  virtual ~DeviceKernels() = default;
  /// The CUstream every call enqueues on (cleave_gpu_stream).
  virtual void *stream() const = 0;
  virtual Status matmul(int64_t id, const float *a, const float *b,
                        const float *bias, float *c) = 0;
  /// `kind` is one of the three convolution kinds (Kernel.h); the operands
  /// are in the entry point's order, as for ConvolutionKernel::run.
  virtual Status convolution(int kind, int64_t id, const float *in0,
                             const float *in1, const float *bias,
                             float *out) = 0;
  virtual Status poolForward(int64_t id, const float *src, float *dst) = 0;
  virtual Status poolBackward(int64_t id, const float *src,
                              const float *diffDst, float *diffSrc) = 0;
  /// Device-to-device copy and zero fill of `floats` floats, for the
  /// single-rank ZeRO-1 calls (cleave_shard and friends copy).
  virtual Status copy(float *dst, const float *src, int64_t floats) = 0;
  virtual Status zero(float *dst, int64_t floats) = 0;
};

/// All oneDNN state of one session. Creating it creates every primitive;
/// afterwards a kernel call binds the caller's pointers, executes and waits,
/// and allocates nothing (but for the layout cache's copies, made by the
/// first call that needs each one).
///
/// A kernel call cannot return an error (kernel_abi.h), and generated code
/// runs on past a failed one to the end of its entry point. So a call that
/// fails (a oneDNN error, or a call that breaks the ABI) records its error in
/// the context, and from then on every kernel call on the context does
/// nothing, reading no primitive and writing no tensor, until the error is
/// cleared. The caller of the entry point checks `error()` when it returns.
///
/// Not thread-safe: a context runs one kernel at a time (kernels share one
/// arena of transient memory). Sessions that run concurrently each need their
/// own context. oneDNN parallelises inside a kernel with OpenMP; the context
/// never sets thread counts (OMP_NUM_THREADS governs).
class KernelContext {
public:
  /// Creates every primitive described by the manifest's "kernels" array.
  /// Returns nullptr and sets `error` (one clear line: kernel id, op, what is
  /// wrong) on bad input. Entries may come in any order, but their ids must
  /// be exactly 0 .. size-1.
  static std::unique_ptr<KernelContext> create(const nlohmann::json &kernels,
                                               std::string &error);
  /// A context whose kernels run on a GPU: no oneDNN primitive is created,
  /// every kernel call goes to `kernels`, and the artifact's own GPU code is
  /// looked up and launched through `modules` (not owned).
  static std::unique_ptr<KernelContext>
  createForDevice(std::unique_ptr<DeviceKernels> kernels,
                  KernelModules *modules);
  ~KernelContext();
  KernelContext(const KernelContext &) = delete;
  KernelContext &operator=(const KernelContext &) = delete;

  /// Attaches the communicator cleave_cross_rank_reduce uses; nullptr (the
  /// default) means a single rank. The context does not own it.
  void setCommunicator(Communicator *comm);
  Communicator *communicator() const;
  /// Attaches the collectives cleave_reduce_scatter, cleave_all_gather and
  /// cleave_shard use; nullptr (the default) means a single rank. The
  /// context does not own them.
  void setShardedCollectives(ShardedCollectives *collectives);
  ShardedCollectives *shardedCollectives() const;
  /// Attaches the device reduction a GPU context's cleave_cross_rank_reduce
  /// uses; nullptr (the default) means a single rank. Not owned.
  void setDeviceCollectives(DeviceCollectives *collectives);
  DeviceCollectives *deviceCollectives() const;

  size_t numKernels() const;
  /// The kernel with manifest id `id`, or nullptr if there is none.
  Kernel *kernel(int64_t id) const;
  /// One line for logs: the kernel's op, oneDNN implementation and layouts.
  /// Empty for an unknown id.
  std::string describeKernel(int64_t id) const;
  /// Bytes of transient memory (staging copies, workspaces, scratchpads)
  /// shared by all kernels, allocated once by `create`.
  size_t arenaBytes() const;

  /// The GPU kernels of a context made by createForDevice, else null.
  DeviceKernels *device() const { return device_.get(); }
  /// What the mgpu* functions use on the context's device
  /// (device/KernelModules.h); null on the CPU.
  KernelModules *modules() const { return modules_; }

  /// The in-order CPU stream every kernel of this context executes on.
  dnnl::stream &stream();

  /// Lets convolutions keep the blocked copies of parameters read as
  /// weights, and the window's weight gradients in the blocked layout, from
  /// one call to the next (LayoutCache.h). In exchange the caller keeps
  /// these rules:
  /// * `parameters` change only between beginParameterUpdate and
  ///   endParameterUpdate, or followed by parametersChanged;
  /// * kernel calls outside such a pair only add into `accumulators`, and
  ///   settleAccumulators runs before anything else reads or writes them.
  /// Nothing is cached in a context where this was never called.
  void enableLayoutCache(std::vector<BufferRange> parameters,
                         std::vector<BufferRange> accumulators);
  /// The parameters were written (outside an update): the blocked copies
  /// made before are stale.
  void parametersChanged();
  /// Settles the accumulators, then until endParameterUpdate parameters may
  /// change under any kernel call (nothing is cached) and accumulators may
  /// be read: brackets an apply step.
  Status beginParameterUpdate();
  void endParameterUpdate();
  /// Adds the window's blocked weight gradients held back so far into their
  /// accumulators, which then hold every gradient of the window.
  Status settleAccumulators();
  /// Every parameter and accumulator was overwritten (a checkpoint was
  /// loaded): the blocked copies are stale and the gradients held back
  /// belong to no window any more.
  void globalsReplaced();
  /// Bytes the layout cache holds.
  size_t layoutCacheBytes() const;

  /// The first error a kernel call recorded since the context was created or
  /// last cleared; ok() if none.
  const Status &error() const { return error_; }
  bool failed() const { return !error_.ok(); }
  /// Records `error` unless an error is already recorded: the first one is
  /// the cause, later ones would be its consequences.
  void fail(Status error);
  void clearError() { error_ = Status(); }

  /// Kernel calls made with a NULL `ctx` have no context to record their
  /// error in: they record it for the calling thread instead (entry points
  /// run on their caller's thread), first error first, like `fail`.
  static void failWithoutContext(Status error);
  /// Returns the calling thread's error of kernel calls with a NULL context
  /// (ok() if none) and clears it.
  static Status takeErrorWithoutContext();

private:
  struct Impl;
  explicit KernelContext(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::unique_ptr<DeviceKernels> device_;
  KernelModules *modules_ = nullptr;
  Status error_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_KERNELCONTEXT_H

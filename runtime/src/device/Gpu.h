//===- Gpu.h - The runtime's view of one CUDA device ------------*- C++ -*-===//
//
// Everything a session of a `cuda` artifact needs from the GPU, behind an
// interface that names no CUDA type, so that the session (and every file but
// the few in device/cuda/ that include cuda.h) compiles without the CUDA
// headers. The runtime never links CUDA: the driver (libcuda.so.1), cuBLASLt
// and cuDNN are loaded with dlopen when the first cuda session is created, so a
// runtime built with CUDA support still runs on machines without it, and
// refuses a cuda artifact there with one line. docs/design/gpu-runtime.md
// describes the design.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_GPU_H
#define CLEAVE_RUNTIME_DEVICE_GPU_H

#include "Manifest.h"
#include "Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cleave::rt {

class Communicator;
class Collectives;
class KernelLibrary;
class KernelModules;

/// Whether this runtime was built with the CUDA headers (it can then run
/// cuda artifacts where a driver and a GPU are present).
bool runtimeHasCuda();

/// The one line a runtime built without CUDA support answers a cuda
/// artifact with.
inline constexpr const char *kNoCudaSupport =
    "this runtime was built without CUDA support";

/// Alignment of every device buffer an entry point receives: cuMemAlloc
/// returns 256-byte aligned memory, and buffers carved out of one
/// allocation (hyperparameter slots, scratch areas) keep that alignment.
inline constexpr size_t kDeviceAlignment = 256;

inline constexpr size_t deviceAlignedSize(uint64_t bytes) {
  return size_t((bytes + kDeviceAlignment - 1) / kDeviceAlignment *
                kDeviceAlignment);
}

/// One session's hold on a GPU: its context (the device's primary context,
/// shared by every session on that device), one stream on which all of the
/// session's work is enqueued in order, the device and pinned host memory
/// the session allocated (freed with the Gpu), and events that tell when a
/// pinned staging buffer may be refilled.
///
/// Every member makes the context current on the calling thread first, so a
/// session may be called from any thread (one at a time). Copies are
/// asynchronous: they are ordered on the stream with the entry points'
/// work, and a host buffer handed to one must stay unchanged until a later
/// `synchronize` or `waitEvent` says the copy has been done, unless it is
/// pageable memory (the driver then copies it before returning).
class Gpu {
public:
  /// Opens GPU `ordinal` for a session of an artifact whose GPU code is
  /// `cubins` and `ptx`. The errors are the one-line refusals of
  /// docs/design/gpu-runtime.md: no driver, no device, no such device, no code
  /// for this GPU, or kNoCudaSupport.
  static Status open(int ordinal, const std::vector<GpuArch> &cubins,
                     const std::optional<GpuArch> &ptx,
                     std::unique_ptr<Gpu> &out);
  virtual ~Gpu() = default;

  /// "GPU 0 (NVIDIA H100 80GB HBM3, sm_90)", for messages.
  virtual const std::string &description() const = 0;
  /// The session's CUstream, what cleave_gpu_stream returns.
  virtual void *stream() const = 0;
  /// Makes the device's context current on the calling thread: before an
  /// entry point runs, whose launches and library calls use the current
  /// context (other sessions, on other GPUs, may have changed it).
  virtual Status makeCurrent() = 0;

  /// The device's free and total memory, as the driver reports them now
  /// (other processes' allocations included).
  virtual Status memoryInfo(size_t &free, size_t &total) = 0;
  /// Zero-initialised device memory, aligned to kDeviceAlignment (at least
  /// one alignment unit, so that empty tensors get a distinct pointer).
  virtual Status allocate(size_t bytes, const std::string &what,
                          void *&out) = 0;
  /// Page-locked host memory, for copies that overlap the GPU's work.
  virtual Status allocatePinned(size_t bytes, const std::string &what,
                                void *&out) = 0;
  /// Enqueues a copy of `bytes` bytes from host `src` to device `dst`.
  virtual Status upload(void *dst, const void *src, size_t bytes) = 0;
  /// Enqueues a copy of `bytes` bytes from device `src` to host `dst`.
  virtual Status download(void *dst, const void *src, size_t bytes) = 0;
  /// Enqueues a copy between two device buffers.
  virtual Status copy(void *dst, const void *src, size_t bytes) = 0;
  /// Enqueues writing `count` copies of the 32-bit `value` at `dst`.
  virtual Status fill32(void *dst, uint32_t value, size_t count) = 0;
  /// Waits until everything enqueued so far (on both streams) has run;
  /// returns the first error the GPU hit (an illegal address in a kernel,
  /// say), which is then sticky: the device context is unusable after it.
  virtual Status synchronize() = 0;

  /// Input copies overlap the kernels of the step before: they run on a
  /// second stream, the copy stream, into one of two sets of device input
  /// buffers, which alternate (set 0, 1, 0, ...). For a batch in set `s`:
  /// beginInputCopy(s) makes the copy stream wait (on the GPU, not the
  /// host) until the compute work that last read set s is done;
  /// uploadInput enqueues each copy on the copy stream; endInputCopy(s)
  /// records event s after them. useInputs(s) makes the compute stream wait
  /// for event s before the entry that reads the set, and doneWithInputs(s)
  /// marks, after that entry, when the set may be overwritten.
  virtual Status beginInputCopy(int set) = 0;
  virtual Status uploadInput(void *dst, const void *src, size_t bytes) = 0;
  virtual Status endInputCopy(int set) = 0;
  virtual Status useInputs(int set) = 0;
  virtual Status doneWithInputs(int set) = 0;
  /// Waits on the host for the copies of set `set` (the last endInputCopy
  /// of it; at once if none): its pinned source buffers may then be
  /// refilled.
  virtual Status waitEvent(int set) = 0;

  /// CUDA graphs: the work enqueued between beginCapture and endCapture
  /// is recorded instead of run, and becomes a graph that launchGraph
  /// replays with one call (the Gpu owns it). Capture is "relaxed", so the
  /// libraries may do what they need to on the side. endCapture fails, and
  /// discards what was recorded, if anything enqueued could not be
  /// captured.
  virtual Status beginCapture() = 0;
  virtual Status endCapture(void *&graph) = 0;
  virtual Status launchGraph(void *graph) = 0;

  /// The kernel library of the manifest's `kernels` array on this GPU
  /// (cuBLASLt matmuls, cuDNN convolutions and pooling, each with its
  /// algorithm and workspace chosen here, once), or an error naming the
  /// kernel this runtime cannot run on a GPU.
  virtual Status createKernels(const nlohmann::json &kernels,
                               std::unique_ptr<KernelLibrary> &out) = 0;

  /// What the mgpu* functions of the artifact's GPU code do on this device
  /// (device/KernelModules.h); owned by the Gpu.
  virtual KernelModules *modules() = 0;

  /// The reduction of cleave_cross_rank_reduce when the session is one of
  /// `comm`'s ranks (more than one): NCCL on this GPU's stream
  /// (device/cuda/Nccl.h). Collective: every rank of the job calls it, and they all
  /// succeed or all fail.
  virtual Status createCollectives(Communicator &comm,
                                   std::unique_ptr<Collectives> &out) = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_GPU_H

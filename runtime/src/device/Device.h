//===- Device.h - What runs a session's entry points ------------*- C++ -*-===//
//
// One interface for every device a session or executable runs on, with the
// CPU (device/cpu/) and CUDA GPUs (device/cuda/) as peers, after IREE's HAL
// but without command buffers: generated code enqueues directly, and CUDA
// captures what it enqueued into graphs. It names no vendor type, so that
// everything outside device/<vendor>/ compiles without vendor headers. The
// runtime never links a vendor library: the CUDA driver, cuBLASLt, cuDNN and
// NCCL are loaded with dlopen when a device first needs them, so a runtime
// built with CUDA support still runs on machines without it and refuses a
// cuda artifact there with one line. docs/design/devices.md describes the
// design, docs/design/gpu-runtime.md the CUDA device.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_DEVICE_H
#define CLEAVE_RUNTIME_DEVICE_DEVICE_H

#include "Manifest.h"
#include "Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace cleave::rt {

class Collectives;
class Communicator;
class KernelLibrary;
class KernelModules;

/// Whether this runtime was built with the CUDA headers (it can then run
/// cuda artifacts where a driver and a GPU are present).
bool runtimeHasCuda();

/// The one line a runtime built without CUDA support answers a cuda
/// artifact with.
inline constexpr const char *kNoCudaSupport =
    "this runtime was built without CUDA support";

/// Alignment of every CUDA buffer an entry point receives: cuMemAlloc
/// returns 256-byte aligned memory, and buffers carved out of one
/// allocation (hyperparameter slots, scratch areas) keep that alignment.
inline constexpr size_t kDeviceAlignment = 256;

inline constexpr size_t deviceAlignedSize(uint64_t bytes) {
  return size_t((bytes + kDeviceAlignment - 1) / kDeviceAlignment *
                kDeviceAlignment);
}

/// How the host uses a buffer, which decides whether it has a host mirror.
enum class Usage {
  /// Only entry points read and write it (scratch, hyperparameter slots).
  DeviceOnly,
  /// The host reads and writes it between entries (globals, outputs): a
  /// pageable mirror where the device does not address host memory.
  Mirrored,
  /// The host fills it for the device to read (input sets): a page-locked
  /// mirror, so that the copy is asynchronous.
  Staged,
};

/// Where a caller's batch is (CLEAVE_MEMORY_*): pageable or page-locked
/// host memory, or the device's own.
enum class BatchMemory { host, pinned, device };

/// A buffer a device allocated. `data` is what entries receive; `host` the
/// host's view of it: `data` itself where the device addresses host memory,
/// else a mirror (null for Usage::DeviceOnly there).
struct Buffer {
  void *data = nullptr;
  unsigned char *host = nullptr;
  size_t bytes = 0;
};

/// What a device can do, which the session reads as capabilities rather
/// than as a choice of device.
struct DeviceProperties {
  /// Of every buffer it allocates, and of the slots carved out of one.
  size_t alignment = 64;
  /// Sets of input buffers: 2 where a batch's copy overlaps the step before.
  int inputSets = 1;
  /// Work is done when the call that enqueued it returns.
  bool synchronous = true;
  /// Queue::beginCapture can succeed.
  bool capture = false;
  /// Entries read host memory: a batch can be used where the caller has it.
  bool hostMemory = true;
};

/// A point in a queue's work, which the host or another queue waits for.
/// An event never recorded is complete.
class Event {
public:
  virtual ~Event() = default;
  /// The host waits for the work recorded before it; returns the first
  /// error the device hit.
  virtual Status synchronize() = 0;
};

/// Work captured from a queue, replayed with one call (Queue::launch).
class Graph {
public:
  virtual ~Graph() = default;
};

/// An in-order queue of a device's work. Copies are asynchronous where the
/// device is: a host buffer handed to one stays unchanged until an event
/// recorded after it completes, unless it is pageable memory (the copy is
/// then made before the call returns).
class Queue {
public:
  virtual ~Queue() = default;
  /// Host `src` to device `dst`, and back; nothing when `dst == src`.
  virtual Status upload(void *dst, const void *src, size_t bytes) = 0;
  virtual Status download(void *dst, const void *src, size_t bytes) = 0;
  /// Between two device buffers.
  virtual Status copy(void *dst, const void *src, size_t bytes) = 0;
  /// `count` copies of the 32-bit `value` at `dst`.
  virtual Status fill32(void *dst, uint32_t value, size_t count) = 0;
  /// `event` completes once the work enqueued so far has run.
  virtual Status record(Event &event) = 0;
  /// Work enqueued later waits for `event`, on the device (the host goes
  /// on).
  virtual Status wait(Event &event) = 0;
  /// The work enqueued between beginCapture and endCapture is recorded
  /// instead of run ("relaxed": libraries may do what they need on the
  /// side) and becomes a graph the device owns. endCapture fails, and
  /// discards what was recorded, if anything enqueued could not be captured.
  virtual Status beginCapture() = 0;
  virtual Status endCapture(Graph *&out) = 0;
  virtual Status launch(Graph &graph) = 0;
  /// The vendor's handle (a CUstream), what cleave_gpu_stream returns; null
  /// on the CPU.
  virtual void *native() const = 0;
};

/// One session's (or executable's) hold on a device. It owns what it makes
/// (buffers, events, graphs, host memory) and frees it when destroyed,
/// never earlier; callers hold plain pointers. Every member may be called
/// from any thread, one at a time (makeCurrent first where the device has a
/// thread-local context).
class Device {
public:
  virtual ~Device() = default;

  /// "the CPU", "GPU 0 (NVIDIA H100 80GB HBM3, sm_90)", for messages.
  virtual const std::string &description() const = 0;
  virtual const DeviceProperties &properties() const = 0;
  /// Binds the device to the calling thread, before an entry point runs
  /// (other sessions, on other devices, may have changed it).
  virtual Status makeCurrent() = 0;
  /// The host waits for every queue; returns the first error the device
  /// hit, which is then sticky (the device is unusable after it).
  virtual Status synchronize() = 0;
  /// Before anything is allocated: refuses a model that cannot fit (the
  /// manifest's memory report against the device's free memory), or notes
  /// how much of the device it takes.
  virtual Status admit(const Manifest &manifest,
                       std::deque<std::string> &notes) = 0;

  /// A zero-initialised buffer of `bytes` bytes (at least one alignment
  /// unit, so that empty tensors get a distinct pointer); `what` names it in
  /// errors.
  virtual Status allocate(size_t bytes, Usage usage, const std::string &what,
                          Buffer &out) = 0;
  /// Host memory copies to and from the device can be asynchronous from
  /// (page-locked where that matters).
  virtual Status allocateHost(size_t bytes, const std::string &what,
                              void *&out) = 0;
  /// Refuses (CLEAVE_INVALID_ARGUMENT, naming `what`) `bytes` at `ptr` that
  /// are not the kind of memory `memory` says, where the device can tell
  /// and copies from the wrong kind would fail.
  virtual Status checkBatchMemory(const void *ptr, size_t bytes,
                                  BatchMemory memory,
                                  const std::string &what) = 0;
  virtual Status createEvent(Event *&out) = 0;
  /// Where entry points run, and where input copies go (the same queue
  /// where they cannot overlap).
  virtual Queue &compute() = 0;
  virtual Queue &transfer() = 0;

  /// The kernel table of the manifest's `kernels` array on this device,
  /// or an error naming the kernel it cannot run (CLEAVE_INVALID_ARTIFACT
  /// for a bad table).
  virtual Status createKernelLibrary(const nlohmann::json &kernels,
                                     std::unique_ptr<KernelLibrary> &out) = 0;
  /// What the mgpu* functions of the artifact's own GPU code do here; null
  /// where artifacts carry none.
  virtual KernelModules *modules() = 0;
  /// The data plane of `comm`'s job (more than one rank) on this device's
  /// buffers. Collective: every rank calls it, and all succeed or all fail.
  virtual Status createCollectives(Communicator &comm,
                                   std::unique_ptr<Collectives> &out) = 0;
};

/// A kind of device before one is opened (IREE: a HAL driver).
struct DeviceDriver {
  DeviceKind kind;
  /// Each rank of a job on one machine opens a device of its own (GPUs:
  /// NCCL needs one per rank), and opening may fail on some ranks only.
  /// Such devices are numbered (Session::Options::deviceOrdinal).
  bool exclusivePerRank;
  /// For messages: what an artifact for this kind was compiled for ("CUDA
  /// GPUs (sm_80 and sm_90)"), where a session of this kind runs ("on a
  /// CUDA GPU"), how to ask for one ("a cuda device (cleave-train
  /// --device=cuda)"), and the compiler option that targets it (null: the
  /// default target).
  std::string (*describeCode)(const Manifest &manifest);
  const char *where;
  const char *howToChoose;
  const char *compileOption;
  /// Opens device `ordinal` for an artifact of `manifest`. Errors are one
  /// line: no driver, no such device, no code for it, or kNoCudaSupport.
  Status (*open)(int ordinal, const Manifest &manifest,
                 std::unique_ptr<Device> &out);
};

/// The driver of `kind` (device/Drivers.cpp).
const DeviceDriver &deviceDriver(DeviceKind kind);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_DEVICE_H

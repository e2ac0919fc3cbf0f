//===- CudaDevice.cpp - A session's hold on a CUDA device -----------------===//
//
// The Device of device/Device.h on the CUDA driver API. Each GPU is used
// through its primary context, retained once per process and never
// released: sessions on one GPU share it (as the CUDA runtime API would),
// and the modules the mgpu* functions load into it (device/cuda/
// CudaModules.cpp) stay valid for as long as the artifact that owns them.
// Two streams: entry points run on the compute stream; input copies go on
// the transfer stream, so that they overlap the step before.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"
#include "device/GpuArch.h"
#include "device/KernelModules.h"
#include "device/cuda/CudaDriver.h"
#include "device/cuda/CudaKernels.h"
#include "device/cuda/CudaModules.h"
#include "device/cuda/Nccl.h"
#include "kernels/KernelLibrary.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace cleave::rt {

bool runtimeHasCuda() { return true; }

namespace {

/// A device as the process sees it, opened once.
struct DeviceInfo {
  CUdevice device = 0;
  CUcontext context = nullptr;
  GpuArch arch;
  std::string name;
};

Status openDevice(const CudaDriver &d, int ordinal, DeviceInfo &out) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> devices;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = devices.find(ordinal); it != devices.end()) {
    out = it->second;
    return Status::success();
  }
  int count = 0;
  CLEAVE_RETURN_IF_ERROR(
      d.check(d.cuDeviceGetCount(&count), "cannot count the CUDA devices"));
  if (count == 0)
    return makeError(CLEAVE_FAILED_PRECONDITION, "no CUDA device");
  if (ordinal < 0 || ordinal >= count)
    return makeError(CLEAVE_FAILED_PRECONDITION, "no CUDA device ", ordinal,
                     " (this machine has ", count, ": 0 to ", count - 1, ")");
  DeviceInfo info;
  CLEAVE_RETURN_IF_ERROR(
      d.check(d.cuDeviceGet(&info.device, ordinal),
              "cannot open CUDA device " + std::to_string(ordinal)));
  CLEAVE_RETURN_IF_ERROR(d.check(
      d.cuDeviceGetAttribute(&info.arch.major,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                             info.device),
      "cannot read the compute capability of CUDA device " +
          std::to_string(ordinal)));
  CLEAVE_RETURN_IF_ERROR(d.check(
      d.cuDeviceGetAttribute(&info.arch.minor,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                             info.device),
      "cannot read the compute capability of CUDA device " +
          std::to_string(ordinal)));
  char name[256] = {};
  if (d.cuDeviceGetName(name, sizeof(name) - 1, info.device) == CUDA_SUCCESS)
    info.name = name;
  CLEAVE_RETURN_IF_ERROR(d.check(
      d.cuDevicePrimaryCtxRetain(&info.context, info.device),
      "cannot create a context on CUDA device " + std::to_string(ordinal)));
  devices.emplace(ordinal, info);
  out = info;
  return Status::success();
}

class CudaDevice;

/// A CUDA event; `recorded` says whether it was ever recorded (one that was
/// not is complete).
class CudaEvent final : public Event {
public:
  CudaEvent(CudaDevice &device, CUevent e) : device_(device), event(e) {}
  ~CudaEvent() override;
  Status synchronize() override;

  CudaDevice &device_;
  CUevent event;
  bool recorded = false;
};

class CudaGraph final : public Graph {
public:
  CudaGraph(const CudaDriver &d, CUgraphExec exec) : d_(d), exec(exec) {}
  ~CudaGraph() override { d_.cuGraphExecDestroy(exec); }
  const CudaDriver &d_;
  CUgraphExec exec;
};

/// A CUstream of the device. `makeCurrent` is the device's: every call
/// makes the context current on the calling thread first.
class CudaQueue final : public Queue {
public:
  CudaQueue(CudaDevice &device, const char *copyWhat)
      : device_(device), copyWhat_(copyWhat) {}
  ~CudaQueue() override;
  Status init();

  Status upload(void *dst, const void *src, size_t bytes) override;
  Status download(void *dst, const void *src, size_t bytes) override;
  Status copy(void *dst, const void *src, size_t bytes) override;
  Status fill32(void *dst, uint32_t value, size_t count) override;
  Status record(Event &event) override;
  Status wait(Event &event) override;
  Status beginCapture() override;
  Status endCapture(Graph *&out) override;
  Status launch(Graph &graph) override;
  void *native() const override { return stream_; }

  /// Waits on the host for the stream's work.
  Status synchronize();

private:
  CudaDevice &device_;
  /// How errors of an upload name it ("copy to the GPU", "copy of an input
  /// to the GPU").
  const char *copyWhat_;
  CUstream stream_ = nullptr;
};

class CudaDevice final : public Device {
public:
  CudaDevice(const CudaDriver &d, DeviceInfo info, int ordinal)
      : d_(d), info_(std::move(info)), compute_(*this, "copy to the GPU"),
        transfer_(*this, "copy of an input to the GPU") {
    description_ = "GPU " + std::to_string(ordinal) + " (" +
                   (info_.name.empty() ? "unnamed" : info_.name) + ", " +
                   info_.arch.name() + ")";
    properties_.alignment = kDeviceAlignment;
    properties_.inputSets = 2;
    properties_.synchronous = false;
    properties_.capture = true;
    properties_.hostMemory = false;
  }

  ~CudaDevice() override {
    // Nothing to report an error to: free what can be freed, after the
    // work that may use it (the queues synchronize when destroyed).
    if (d_.cuCtxSetCurrent(info_.context) != CUDA_SUCCESS)
      return;
    (void)compute_.synchronize();
    graphs_.clear();
    (void)transfer_.synchronize();
    events_.clear();
    for (CUdeviceptr p : device_)
      d_.cuMemFree(p);
    for (void *p : pinned_)
      d_.cuMemFreeHost(p);
    for (void *p : mirrors_)
      std::free(p);
  }

  Status init() {
    CLEAVE_RETURN_IF_ERROR(current());
    CLEAVE_RETURN_IF_ERROR(compute_.init());
    CLEAVE_RETURN_IF_ERROR(transfer_.init());
    modules_ = createCudaModules(d_, info_.context);
    return Status::success();
  }

  const CudaDriver &driver() const { return d_; }
  const std::string &description() const override { return description_; }
  const DeviceProperties &properties() const override { return properties_; }
  Status makeCurrent() override { return current(); }

  Status synchronize() override {
    CLEAVE_RETURN_IF_ERROR(current());
    CLEAVE_RETURN_IF_ERROR(transfer_.synchronize());
    return compute_.synchronize();
  }

  /// The memory budget is the device's free memory when the session is
  /// created (docs/design/memory.md).
  Status admit(const Manifest &m, std::deque<std::string> &notes) override {
    // Hand-written artifacts (tests) have no report to check.
    if (!m.memoryTotal)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    size_t free = 0, total = 0;
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuMemGetInfo(&free, &total),
                 description_ + ": cannot read the free memory"));
    auto mib = [](uint64_t bytes) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / (1 << 20));
      return std::string(text);
    };
    const std::string available =
        mib(free) + " free of " + mib(total) + " on " + description_;
    const uint64_t need = uint64_t(*m.memoryTotal);
    if (need > free)
      return makeError(
          CLEAVE_OUT_OF_MEMORY, "a session needs ", mib(need),
          " of device memory (the artifact's memory report), more than the ",
          available,
          "; compile it to fit: cleave-compile --target=cuda "
          "--global-batch=G --memory-budget=",
          free >> 20, "MiB chooses the micro-batch and what to recompute");
    notes.push_back("device memory: the session needs " + mib(need) +
                    " (the artifact's memory report, without the kernel "
                    "modules and the libraries' workspaces) of the " +
                    available + " when it was created");
    return Status::success();
  }

  Status allocate(size_t bytes, Usage usage, const std::string &what,
                  Buffer &out) override {
    CLEAVE_RETURN_IF_ERROR(current());
    size_t rounded = deviceAlignedSize(bytes == 0 ? 1 : bytes);
    CUdeviceptr p = 0;
    CUresult r = d_.cuMemAlloc(&p, rounded);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      size_t free = 0, total = 0;
      d_.cuMemGetInfo(&free, &total);
      return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate ", rounded,
                       " bytes on ", description_, " for ", what, " (",
                       free >> 20, " of ", total >> 20,
                       " MiB free); compile with a smaller --micro-batch");
    }
    CLEAVE_RETURN_IF_ERROR(d_.check(r, description_ + ": cannot allocate " +
                                           std::to_string(rounded) +
                                           " bytes for " + what));
    device_.push_back(p);
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuMemsetD8Async(p, 0, rounded, stream(compute_)),
                 description_ + ": cannot clear " + what));
    out = Buffer();
    out.data = reinterpret_cast<void *>(p);
    out.bytes = bytes;
    if (usage == Usage::Staged) {
      void *host = nullptr;
      CLEAVE_RETURN_IF_ERROR(allocateHost(bytes, what, host));
      out.host = static_cast<unsigned char *>(host);
    } else if (usage == Usage::Mirrored) {
      void *host = std::aligned_alloc(64, (rounded + 63) / 64 * 64);
      if (!host)
        return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate ", rounded,
                         " bytes of host memory for the copy of ", what);
      mirrors_.push_back(host);
      std::memset(host, 0, rounded);
      out.host = static_cast<unsigned char *>(host);
    }
    return Status::success();
  }

  Status allocateHost(size_t bytes, const std::string &what,
                      void *&out) override {
    CLEAVE_RETURN_IF_ERROR(current());
    void *p = nullptr;
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuMemHostAlloc(&p, bytes == 0 ? 1 : bytes, 0),
                 "cannot allocate " + std::to_string(bytes) +
                     " bytes of page-locked host memory for " + what));
    pinned_.push_back(p);
    out = p;
    return Status::success();
  }

  Status checkBatchMemory(const void *ptr, size_t bytes, BatchMemory memory,
                          const std::string &what) override {
    if (memory == BatchMemory::host || bytes == 0)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    auto p = reinterpret_cast<CUdeviceptr>(ptr);
    unsigned type = 0;
    // Memory the driver does not know is pageable host memory.
    const bool known =
        d_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ==
        CUDA_SUCCESS;
    const char *is = !known                         ? "pageable host memory"
                     : type == CU_MEMORYTYPE_HOST   ? "page-locked host memory"
                     : type == CU_MEMORYTYPE_DEVICE ? "GPU memory"
                                                    : "unknown memory";
    if (memory == BatchMemory::pinned) {
      if (known && type == CU_MEMORYTYPE_HOST)
        return Status::success();
      return makeError(CLEAVE_INVALID_ARGUMENT, what, " is ", is,
                       ", not page-locked host memory (CLEAVE_MEMORY_PINNED)");
    }
    if (!known || type != CU_MEMORYTYPE_DEVICE)
      return makeError(CLEAVE_INVALID_ARGUMENT, what, " is ", is,
                       ", not memory of ", description_,
                       " (CLEAVE_MEMORY_DEVICE)");
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuPointerGetAttribute(
                     &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
                 what + ": cannot ask the driver which GPU it is on"));
    if (ordinal != int(info_.device))
      return makeError(CLEAVE_INVALID_ARGUMENT, what, " is memory of GPU ",
                       ordinal, ", not of ", description_,
                       " (CLEAVE_MEMORY_DEVICE)");
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuPointerGetAttribute(
                     &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p),
                 what + ": cannot ask the driver for its allocation"));
    CLEAVE_RETURN_IF_ERROR(d_.check(
        d_.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p),
        what + ": cannot ask the driver for its allocation"));
    if (p - start > size || bytes > size - (p - start))
      return makeError(CLEAVE_INVALID_ARGUMENT, what, ": its ", bytes,
                       " bytes run past the end of their allocation (",
                       size - std::min<size_t>(size, p - start),
                       " bytes from the pointer)");
    return Status::success();
  }

  Status createEvent(Event *&out) override {
    CLEAVE_RETURN_IF_ERROR(current());
    CUevent e = nullptr;
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING),
                 description_ + ": cannot create an event"));
    events_.push_back(std::make_unique<CudaEvent>(*this, e));
    out = events_.back().get();
    return Status::success();
  }

  Queue &compute() override { return compute_; }
  Queue &transfer() override { return transfer_; }

  Status createKernelLibrary(const nlohmann::json &kernels,
                             std::unique_ptr<KernelLibrary> &out) override {
    CLEAVE_RETURN_IF_ERROR(current());
    return createCudaKernels(d_, *this, kernels, out);
  }

  KernelModules *modules() override { return modules_.get(); }

  Status createCollectives(Communicator &comm,
                           std::unique_ptr<Collectives> &out) override {
    return createNcclCollectives(d_, *this, comm, out);
  }

  /// Makes the device's context current on the calling thread.
  Status current() {
    return d_.check(d_.cuCtxSetCurrent(info_.context),
                    description_ + ": cannot make its context current");
  }
  /// Owns `graph` from now on.
  CudaGraph *adopt(std::unique_ptr<CudaGraph> graph) {
    graphs_.push_back(std::move(graph));
    return graphs_.back().get();
  }

private:
  static CUstream stream(const CudaQueue &q) {
    return static_cast<CUstream>(q.native());
  }

  const CudaDriver &d_;
  DeviceInfo info_;
  std::string description_;
  DeviceProperties properties_;
  // Declared before what is enqueued on them, so that they are destroyed
  // after it.
  CudaQueue compute_;
  CudaQueue transfer_;
  std::vector<std::unique_ptr<CudaEvent>> events_;
  std::vector<std::unique_ptr<CudaGraph>> graphs_;
  std::vector<CUdeviceptr> device_;
  std::vector<void *> pinned_;
  std::vector<void *> mirrors_;
  std::unique_ptr<KernelModules> modules_;
};

CUdeviceptr ptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

CudaEvent::~CudaEvent() { device_.driver().cuEventDestroy(event); }

Status CudaEvent::synchronize() {
  if (!recorded)
    return Status::success();
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(d.cuEventSynchronize(event),
                 device_.description() + ": the GPU failed");
}

CudaQueue::~CudaQueue() {
  if (!stream_)
    return;
  const CudaDriver &d = device_.driver();
  d.cuStreamSynchronize(stream_);
  d.cuStreamDestroy(stream_);
}

Status CudaQueue::init() {
  const CudaDriver &d = device_.driver();
  return d.check(d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
                 device_.description() + ": cannot create a stream");
}

Status CudaQueue::synchronize() {
  const CudaDriver &d = device_.driver();
  return d.check(d.cuStreamSynchronize(stream_),
                 device_.description() + ": the GPU failed");
}

Status CudaQueue::upload(void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src)
    return Status::success();
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(d.cuMemcpyHtoDAsync(ptr(dst), src, bytes, stream_),
                 device_.description() + ": " + copyWhat_);
}

Status CudaQueue::download(void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src)
    return Status::success();
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(d.cuMemcpyDtoHAsync(dst, ptr(src), bytes, stream_),
                 device_.description() + ": copy from the GPU");
}

Status CudaQueue::copy(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::success();
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(d.cuMemcpyDtoDAsync(ptr(dst), ptr(src), bytes, stream_),
                 device_.description() + ": copy on the GPU");
}

Status CudaQueue::fill32(void *dst, uint32_t value, size_t count) {
  if (count == 0)
    return Status::success();
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(d.cuMemsetD32Async(ptr(dst), value, count, stream_),
                 device_.description() + ": fill on the GPU");
}

Status CudaQueue::record(Event &event) {
  CLEAVE_RETURN_IF_ERROR(device_.current());
  auto &e = static_cast<CudaEvent &>(event);
  e.recorded = true;
  const CudaDriver &d = device_.driver();
  return d.check(d.cuEventRecord(e.event, stream_),
                 device_.description() + ": cannot record an event");
}

Status CudaQueue::wait(Event &event) {
  auto &e = static_cast<CudaEvent &>(event);
  CLEAVE_RETURN_IF_ERROR(device_.current());
  if (!e.recorded)
    return Status::success();
  const CudaDriver &d = device_.driver();
  return d.check(d.cuStreamWaitEvent(stream_, e.event, 0),
                 device_.description() + ": cannot order work after an event");
}

Status CudaQueue::beginCapture() {
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(
      d.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
      device_.description() + ": cannot capture a CUDA graph");
}

Status CudaQueue::endCapture(Graph *&out) {
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  CUgraph captured = nullptr;
  CLEAVE_RETURN_IF_ERROR(
      d.check(d.cuStreamEndCapture(stream_, &captured),
              device_.description() + ": capturing a CUDA graph failed"));
  CUgraphExec exec = nullptr;
  CUresult r = d.cuGraphInstantiate(&exec, captured, 0);
  d.cuGraphDestroy(captured);
  CLEAVE_RETURN_IF_ERROR(d.check(
      r, device_.description() + ": cannot instantiate a captured CUDA graph"));
  out = device_.adopt(std::make_unique<CudaGraph>(d, exec));
  return Status::success();
}

Status CudaQueue::launch(Graph &graph) {
  CLEAVE_RETURN_IF_ERROR(device_.current());
  const CudaDriver &d = device_.driver();
  return d.check(d.cuGraphLaunch(static_cast<CudaGraph &>(graph).exec, stream_),
                 device_.description() + ": cannot launch a CUDA graph");
}

Status openCuda(int ordinal, const Manifest &m, std::unique_ptr<Device> &out) {
  std::string error;
  const CudaDriver *d = CudaDriver::get(error);
  if (!d)
    return makeError(CLEAVE_FAILED_PRECONDITION, error);
  DeviceInfo info;
  CLEAVE_RETURN_IF_ERROR(openDevice(*d, ordinal, info));
  CLEAVE_RETURN_IF_ERROR(checkGpuCode(info.arch, m.gpuArches, m.ptxArch));
  auto device = std::make_unique<CudaDevice>(*d, std::move(info), ordinal);
  CLEAVE_RETURN_IF_ERROR(device->init());
  out = std::move(device);
  return Status::success();
}

} // namespace

const DeviceDriver &cudaDriver() {
  static const DeviceDriver driver{
      DeviceKind::cuda,
      /*exclusivePerRank=*/true, describeCudaCode,   kCudaWhere,
      kCudaHowToChoose,          kCudaCompileOption, openCuda};
  return driver;
}

} // namespace cleave::rt

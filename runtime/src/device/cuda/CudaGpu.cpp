//===- CudaGpu.cpp - A session's hold on a CUDA device --------------------===//
//
// The Gpu of device/Gpu.h on the CUDA driver API. Each device is used through
// its primary context, retained once per process and never released:
// sessions on one GPU share it (as the CUDA runtime API would), and the
// modules the mgpu* functions load into it (device/Modules.cpp) stay valid for
// as long as the artifact that owns them.
//
//===----------------------------------------------------------------------===//

#include "device/Gpu.h"
#include "device/GpuArch.h"
#include "device/KernelModules.h"
#include "device/cuda/CudaDriver.h"
#include "device/cuda/CudaKernels.h"
#include "device/cuda/CudaModules.h"
#include "device/cuda/Nccl.h"

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

class CudaGpu final : public Gpu {
public:
  CudaGpu(const CudaDriver &d, DeviceInfo info, int ordinal)
      : d_(d), info_(std::move(info)) {
    description_ = "GPU " + std::to_string(ordinal) + " (" +
                   (info_.name.empty() ? "unnamed" : info_.name) + ", " +
                   info_.arch.name() + ")";
  }

  ~CudaGpu() override {
    // Nothing to report an error to: free what can be freed.
    if (d_.cuCtxSetCurrent(info_.context) != CUDA_SUCCESS)
      return;
    if (stream_)
      d_.cuStreamSynchronize(stream_);
    for (CUgraphExec g : graphs_)
      d_.cuGraphExecDestroy(g);
    if (copyStream_)
      d_.cuStreamSynchronize(copyStream_);
    for (CUevent &e : events_)
      if (e)
        d_.cuEventDestroy(e);
    for (CUevent &e : consumed_)
      if (e)
        d_.cuEventDestroy(e);
    if (copyStream_)
      d_.cuStreamDestroy(copyStream_);
    if (stream_)
      d_.cuStreamDestroy(stream_);
    for (CUdeviceptr p : device_)
      d_.cuMemFree(p);
    for (void *p : pinned_)
      d_.cuMemFreeHost(p);
  }

  Status init() {
    CLEAVE_RETURN_IF_ERROR(current());
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
                 description_ + ": cannot create a stream"));
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuStreamCreate(&copyStream_, CU_STREAM_NON_BLOCKING),
                 description_ + ": cannot create a stream"));
    for (CUevent *events : {events_, consumed_})
      for (int i = 0; i < 2; ++i)
        CLEAVE_RETURN_IF_ERROR(
            d_.check(d_.cuEventCreate(&events[i], CU_EVENT_DISABLE_TIMING),
                     description_ + ": cannot create an event"));
    modules_ = createCudaModules(d_, info_.context);
    return Status::success();
  }

  const std::string &description() const override { return description_; }
  void *stream() const override { return stream_; }
  Status makeCurrent() override { return current(); }

  Status memoryInfo(size_t &free, size_t &total) override {
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuMemGetInfo(&free, &total),
                    description_ + ": cannot read the free memory");
  }

  Status allocate(size_t bytes, const std::string &what, void *&out) override {
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
    CLEAVE_RETURN_IF_ERROR(d_.check(d_.cuMemsetD8Async(p, 0, rounded, stream_),
                                    description_ + ": cannot clear " + what));
    out = reinterpret_cast<void *>(p);
    return Status::success();
  }

  Status allocatePinned(size_t bytes, const std::string &what,
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

  Status upload(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuMemcpyHtoDAsync(ptr(dst), src, bytes, stream_),
                    description_ + ": copy to the GPU");
  }

  Status download(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuMemcpyDtoHAsync(dst, ptr(src), bytes, stream_),
                    description_ + ": copy from the GPU");
  }

  Status copy(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuMemcpyDtoDAsync(ptr(dst), ptr(src), bytes, stream_),
                    description_ + ": copy on the GPU");
  }

  Status fill32(void *dst, uint32_t value, size_t count) override {
    if (count == 0)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuMemsetD32Async(ptr(dst), value, count, stream_),
                    description_ + ": fill on the GPU");
  }

  Status synchronize() override {
    CLEAVE_RETURN_IF_ERROR(current());
    CLEAVE_RETURN_IF_ERROR(d_.check(d_.cuStreamSynchronize(copyStream_),
                                    description_ + ": the GPU failed"));
    return d_.check(d_.cuStreamSynchronize(stream_),
                    description_ + ": the GPU failed");
  }

  Status beginInputCopy(int set) override {
    CLEAVE_RETURN_IF_ERROR(current());
    if (!consumedRecorded_[set])
      return Status::success();
    return d_.check(d_.cuStreamWaitEvent(copyStream_, consumed_[set], 0),
                    description_ + ": cannot order an input copy");
  }

  Status uploadInput(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0)
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuMemcpyHtoDAsync(ptr(dst), src, bytes, copyStream_),
                    description_ + ": copy of an input to the GPU");
  }

  Status endInputCopy(int set) override {
    CLEAVE_RETURN_IF_ERROR(current());
    recorded_[set] = true;
    return d_.check(d_.cuEventRecord(events_[set], copyStream_),
                    description_ + ": cannot record an event");
  }

  Status useInputs(int set) override {
    CLEAVE_RETURN_IF_ERROR(current());
    if (!recorded_[set])
      return Status::success();
    return d_.check(d_.cuStreamWaitEvent(stream_, events_[set], 0),
                    description_ + ": cannot wait for the input copies");
  }

  Status doneWithInputs(int set) override {
    CLEAVE_RETURN_IF_ERROR(current());
    consumedRecorded_[set] = true;
    return d_.check(d_.cuEventRecord(consumed_[set], stream_),
                    description_ + ": cannot record an event");
  }

  Status waitEvent(int slot) override {
    if (!recorded_[slot])
      return Status::success();
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuEventSynchronize(events_[slot]),
                    description_ + ": the GPU failed");
  }

  Status beginCapture() override {
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(
        d_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
        description_ + ": cannot capture a CUDA graph");
  }

  Status endCapture(void *&graph) override {
    CLEAVE_RETURN_IF_ERROR(current());
    CUgraph captured = nullptr;
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuStreamEndCapture(stream_, &captured),
                 description_ + ": capturing a CUDA graph failed"));
    CUgraphExec exec = nullptr;
    CUresult r = d_.cuGraphInstantiate(&exec, captured, 0);
    d_.cuGraphDestroy(captured);
    CLEAVE_RETURN_IF_ERROR(d_.check(
        r, description_ + ": cannot instantiate a captured CUDA graph"));
    graphs_.push_back(exec);
    graph = exec;
    return Status::success();
  }

  Status launchGraph(void *graph) override {
    CLEAVE_RETURN_IF_ERROR(current());
    return d_.check(d_.cuGraphLaunch(static_cast<CUgraphExec>(graph), stream_),
                    description_ + ": cannot launch a CUDA graph");
  }

  Status createKernels(const nlohmann::json &kernels,
                       std::unique_ptr<KernelLibrary> &out) override {
    CLEAVE_RETURN_IF_ERROR(current());
    return createCudaKernels(d_, *this, kernels, out);
  }

  KernelModules *modules() override { return modules_.get(); }

  Status createCollectives(Communicator &comm,
                           std::unique_ptr<Collectives> &out) override {
    return createNcclCollectives(d_, *this, comm, out);
  }

private:
  static CUdeviceptr ptr(const void *p) {
    return reinterpret_cast<CUdeviceptr>(p);
  }
  /// Makes the device's context current on the calling thread.
  Status current() {
    return d_.check(d_.cuCtxSetCurrent(info_.context),
                    description_ + ": cannot make its context current");
  }

  const CudaDriver &d_;
  DeviceInfo info_;
  std::string description_;
  CUstream stream_ = nullptr;
  /// Input copies (see beginInputCopy).
  CUstream copyStream_ = nullptr;
  /// Per input set: the copies into it are done (recorded on copyStream_),
  /// and the entry that read it is done (recorded on stream_).
  CUevent events_[2] = {nullptr, nullptr};
  bool recorded_[2] = {false, false};
  CUevent consumed_[2] = {nullptr, nullptr};
  bool consumedRecorded_[2] = {false, false};
  std::vector<CUgraphExec> graphs_;
  std::vector<CUdeviceptr> device_;
  std::vector<void *> pinned_;
  std::unique_ptr<KernelModules> modules_;
};

} // namespace

Status Gpu::open(int ordinal, const std::vector<GpuArch> &cubins,
                 const std::optional<GpuArch> &ptx, std::unique_ptr<Gpu> &out) {
  std::string error;
  const CudaDriver *d = CudaDriver::get(error);
  if (!d)
    return makeError(CLEAVE_FAILED_PRECONDITION, error);
  DeviceInfo info;
  CLEAVE_RETURN_IF_ERROR(openDevice(*d, ordinal, info));
  CLEAVE_RETURN_IF_ERROR(checkGpuCode(info.arch, cubins, ptx));
  auto gpu = std::make_unique<CudaGpu>(*d, std::move(info), ordinal);
  CLEAVE_RETURN_IF_ERROR(gpu->init());
  out = std::move(gpu);
  return Status::success();
}

} // namespace cleave::rt

//===- CpuDevice.cpp - The host CPU as a device ---------------------------===//
//
// The Device of device/Device.h on the host: buffers are host memory the
// entry points address directly (so a buffer's host view is itself, and
// uploads and downloads between a buffer and its view cost nothing), work
// is done when the call that enqueued it returns (events are always
// complete), nothing is captured, and the kernels are oneDNN's.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include "collectives/MpiCollectives.h"
#include "kernels/OneDnnKernels.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace cleave::rt {

namespace {

class CpuEvent final : public Event {
public:
  Status synchronize() override { return Status::success(); }
};

class CpuQueue final : public Queue {
public:
  Status upload(void *dst, const void *src, size_t bytes) override {
    return move(dst, src, bytes);
  }
  Status download(void *dst, const void *src, size_t bytes) override {
    return move(dst, src, bytes);
  }
  Status copy(void *dst, const void *src, size_t bytes) override {
    return move(dst, src, bytes);
  }
  Status fill32(void *dst, uint32_t value, size_t count) override {
    auto *words = static_cast<uint32_t *>(dst);
    for (size_t i = 0; i < count; ++i)
      words[i] = value;
    return Status::success();
  }
  Status record(Event &) override { return Status::success(); }
  Status wait(Event &) override { return Status::success(); }
  Status beginCapture() override {
    return Status(CLEAVE_FAILED_PRECONDITION,
                  "the CPU runs work as it is enqueued and captures none");
  }
  Status endCapture(Graph *&) override { return beginCapture(); }
  Status launch(Graph &) override { return beginCapture(); }
  void *native() const override { return nullptr; }

private:
  static Status move(void *dst, const void *src, size_t bytes) {
    if (bytes != 0 && dst != src)
      std::memmove(dst, src, bytes);
    return Status::success();
  }
};

class CpuDevice final : public Device {
public:
  CpuDevice() {
    properties_.alignment = kBufferAlignment;
    properties_.inputSets = 1;
    properties_.synchronous = true;
    properties_.capture = false;
    properties_.hostMemory = true;
  }
  ~CpuDevice() override {
    for (void *p : memory_)
      std::free(p);
  }

  const std::string &description() const override { return description_; }
  const DeviceProperties &properties() const override { return properties_; }
  Status makeCurrent() override { return Status::success(); }
  Status synchronize() override { return Status::success(); }
  /// Host memory is checked by the session (its buffers live on the host
  /// whatever the device).
  Status admit(const Manifest &, std::deque<std::string> &) override {
    return Status::success();
  }

  Status allocate(size_t bytes, Usage, const std::string &what,
                  Buffer &out) override {
    void *p = nullptr;
    CLEAVE_RETURN_IF_ERROR(allocateHost(bytes, what, p));
    out = Buffer();
    out.data = p;
    out.host = static_cast<unsigned char *>(p);
    out.bytes = bytes;
    return Status::success();
  }

  /// Zeroed, aligned to kBufferAlignment (the ABI's), at least one
  /// alignment unit.
  Status allocateHost(size_t bytes, const std::string &what,
                      void *&out) override {
    const size_t rounded = bytes == 0 ? kBufferAlignment : alignedSize(bytes);
    void *p = std::aligned_alloc(kBufferAlignment, rounded);
    if (!p)
      return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate ", bytes,
                       " bytes for ", what);
    std::memset(p, 0, rounded);
    memory_.push_back(p);
    out = p;
    return Status::success();
  }

  /// Every kind is host memory here.
  Status checkBatchMemory(const void *, size_t, BatchMemory,
                          const std::string &) override {
    return Status::success();
  }

  Status createEvent(Event *&out) override {
    events_.push_back(std::make_unique<CpuEvent>());
    out = events_.back().get();
    return Status::success();
  }

  Queue &compute() override { return queue_; }
  Queue &transfer() override { return queue_; }

  Status createKernelLibrary(const nlohmann::json &kernels,
                             std::unique_ptr<KernelLibrary> &out) override {
    std::string error;
    std::unique_ptr<OneDnnKernels> library =
        OneDnnKernels::create(kernels, error);
    if (!library)
      return Status(CLEAVE_INVALID_ARTIFACT, error);
    out = std::move(library);
    return Status::success();
  }

  KernelModules *modules() override { return nullptr; }

  Status createCollectives(Communicator &comm,
                           std::unique_ptr<Collectives> &out) override {
    out = std::make_unique<MpiCollectives>(comm);
    return Status::success();
  }

private:
  std::string description_ = "the CPU";
  DeviceProperties properties_;
  CpuQueue queue_;
  std::vector<std::unique_ptr<CpuEvent>> events_;
  std::vector<void *> memory_;
};

Status openCpu(int, const Manifest &, std::unique_ptr<Device> &out) {
  out = std::make_unique<CpuDevice>();
  return Status::success();
}

} // namespace

const DeviceDriver &cpuDriver() {
  static const DeviceDriver driver{
      DeviceKind::cpu,
      /*exclusivePerRank=*/false,
      [](const Manifest &) { return std::string("the CPU"); },
      "on the CPU",
      "the cpu device (cleave-train --device=cpu)",
      /*compileOption=*/nullptr,
      openCpu};
  return driver;
}

} // namespace cleave::rt

//===- DeviceTest.cpp - The CPU as a device -------------------------------===//
//
// The CPU device (device/cpu/CpuDevice.cpp) is the Device interface where
// everything is host memory and done on return: a buffer is its own host
// view, copies between a buffer and its view are free, events are always
// complete, nothing is captured. The CUDA device is tested through sessions
// on the fake driver (FakeGpuTest).
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"
#include "kernels/KernelLibrary.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

using namespace cleave::rt;

namespace {

std::unique_ptr<Device> openCpu() {
  Manifest m;
  std::unique_ptr<Device> device;
  Status opened = deviceDriver(DeviceKind::cpu).open(0, m, device);
  EXPECT_TRUE(opened.ok()) << opened.message();
  return device;
}

TEST(CpuDevice, IsSynchronousHostMemory) {
  std::unique_ptr<Device> cpu = openCpu();
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->description(), "the CPU");
  const DeviceProperties &p = cpu->properties();
  EXPECT_EQ(p.alignment, kBufferAlignment);
  EXPECT_EQ(p.inputSets, 1);
  EXPECT_TRUE(p.synchronous);
  EXPECT_FALSE(p.capture);
  EXPECT_TRUE(p.hostMemory);
  EXPECT_FALSE(deviceDriver(DeviceKind::cpu).exclusivePerRank);
  EXPECT_EQ(cpu->modules(), nullptr);
  EXPECT_EQ(cpu->compute().native(), nullptr);
  EXPECT_EQ(&cpu->transfer(), &cpu->compute());
  std::deque<std::string> notes;
  EXPECT_TRUE(cpu->admit(Manifest(), notes).ok());
  EXPECT_TRUE(notes.empty());
}

TEST(CpuDevice, BuffersAreTheirOwnHostViewZeroedAndAligned) {
  std::unique_ptr<Device> cpu = openCpu();
  for (Usage usage : {Usage::DeviceOnly, Usage::Mirrored, Usage::Staged}) {
    Buffer a, empty, other;
    ASSERT_TRUE(cpu->allocate(100, usage, "a", a).ok());
    ASSERT_TRUE(cpu->allocate(0, usage, "empty", empty).ok());
    ASSERT_TRUE(cpu->allocate(0, usage, "other", other).ok());
    EXPECT_EQ(a.host, a.data);
    EXPECT_EQ(a.bytes, 100u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % kBufferAlignment, 0u);
    EXPECT_EQ(std::vector<unsigned char>(a.host, a.host + 100),
              std::vector<unsigned char>(100, 0));
    // Empty tensors still get distinct pointers.
    EXPECT_NE(empty.data, nullptr);
    EXPECT_NE(empty.data, other.data);
  }
}

TEST(CpuDevice, QueuesRunBeforeReturning) {
  std::unique_ptr<Device> cpu = openCpu();
  Buffer b;
  ASSERT_TRUE(cpu->allocate(4 * sizeof(float), Usage::Mirrored, "b", b).ok());
  Queue &q = cpu->compute();
  const float values[4] = {1.f, 2.f, 3.f, 4.f};
  ASSERT_TRUE(q.upload(b.data, values, sizeof(values)).ok());
  // A buffer and its host view are one: nothing to copy.
  ASSERT_TRUE(q.download(b.host, b.data, sizeof(values)).ok());
  EXPECT_EQ(std::vector<float>(static_cast<float *>(b.data),
                               static_cast<float *>(b.data) + 4),
            std::vector<float>(values, values + 4));
  const float half = 0.5f;
  uint32_t bits;
  std::memcpy(&bits, &half, 4);
  ASSERT_TRUE(q.fill32(static_cast<float *>(b.data) + 1, bits, 2).ok());
  float out[4];
  ASSERT_TRUE(q.download(out, b.data, sizeof(out)).ok());
  EXPECT_EQ(std::vector<float>(out, out + 4),
            (std::vector<float>{1.f, .5f, .5f, 4.f}));
  Event *e = nullptr;
  ASSERT_TRUE(cpu->createEvent(e).ok());
  EXPECT_TRUE(e->synchronize().ok()) << "an event never recorded is done";
  EXPECT_TRUE(q.record(*e).ok());
  EXPECT_TRUE(q.wait(*e).ok());
  EXPECT_TRUE(e->synchronize().ok());
  EXPECT_TRUE(cpu->synchronize().ok());
}

TEST(CpuDevice, CapturesNothing) {
  std::unique_ptr<Device> cpu = openCpu();
  Status began = cpu->compute().beginCapture();
  EXPECT_EQ(began.code(), CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(began.message(),
            "the CPU runs work as it is enqueued and captures none");
}

TEST(CpuDevice, KernelLibraryIsOneDnns) {
  std::unique_ptr<Device> cpu = openCpu();
  std::unique_ptr<KernelLibrary> library;
  ASSERT_TRUE(cpu->createKernelLibrary(nlohmann::json::array(), library).ok());
  EXPECT_EQ(library->numKernels(), 0u);
  EXPECT_EQ(library->queue(), nullptr);
  Status bad = cpu->createKernelLibrary(nlohmann::json::object(), library);
  EXPECT_EQ(bad.code(), CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(bad.message(),
            "manifest field 'kernels' must be an array, got object");
}

} // namespace

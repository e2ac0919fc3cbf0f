//===- KernelModulesTest.cpp - The mgpu* functions reach the device -------===//
//
// A cuda artifact's host code calls mgpuModuleLoad, mgpuModuleGetFunction
// and mgpuLaunchKernel (device/Modules.h). They take no context: lookups and
// launches must reach the KernelModules of the entry point running on the
// calling thread (its EntryScope), errors must land in that entry's context
// and stay there, and unloading a module must release what devices made of
// it. A recording KernelModules stands in for the CUDA one.
//
//===----------------------------------------------------------------------===//

#include "device/KernelModules.h"
#include "device/Device.h"
#include "device/Modules.h"
#include "kernels/KernelContext.h"

#include <gtest/gtest.h>

#include <list>
#include <string>
#include <vector>

using namespace cleave::rt;

namespace {

int liveLoads = 0;

struct RecordedLoad final : LoadedKernelModule {
  explicit RecordedLoad(const void *k) : k(k) { ++liveLoads; }
  ~RecordedLoad() override { --liveLoads; }
  const void *key() const override { return k; }
  const void *k;
};

/// Loads a module once per key, answers every name but "missing" with the
/// address of a name it keeps, and records launches.
struct RecordingModules final : KernelModules {
  explicit RecordingModules(const void *key) : key(key) {}

  Status function(KernelModule &m, const char *name, void *&out) override {
    lookups.push_back(name);
    bool loaded = false;
    for (auto &l : m.loaded)
      loaded |= l->key() == key;
    if (!loaded)
      m.loaded.push_back(std::make_unique<RecordedLoad>(key));
    if (std::string(name) == "missing")
      return makeError(CLEAVE_INTERNAL, "no kernel 'missing'");
    names.push_back(name);
    out = &names.back();
    return Status::success();
  }

  Status launch(void *function, const LaunchDims &dims, void *stream,
                void **params, void **) override {
    launched.push_back(*static_cast<std::string *>(function));
    lastDims = dims;
    lastStream = stream;
    lastParams = params;
    return Status::success();
  }

  const void *key;
  std::vector<std::string> lookups, launched;
  std::list<std::string> names;
  LaunchDims lastDims;
  void *lastStream = nullptr;
  void **lastParams = nullptr;
};

std::unique_ptr<KernelContext> contextOn(KernelModules *modules) {
  return KernelContext::create(nullptr, modules);
}

const char kBlob[] = "a fatbin";

TEST(KernelModules, LookupsAndLaunchesGoToTheRunningEntrysDevice) {
  void *module = mgpuModuleLoad(const_cast<char *>(kBlob), sizeof(kBlob));
  ASSERT_NE(module, nullptr);
  int deviceA = 0, deviceB = 0;
  RecordingModules a(&deviceA), b(&deviceB);
  auto onA = contextOn(&a), onB = contextOn(&b);
  int stream = 0;
  void *params[1] = {nullptr};
  {
    EntryScope scope(onA.get());
    void *f = mgpuModuleGetFunction(module, "step_kernel");
    ASSERT_NE(f, nullptr);
    mgpuLaunchKernel(f, 4, 2, 1, 128, 1, 1, 512, &stream, params, nullptr, 1);
    {
      // A nested entry (on another device) takes over, and gives back.
      EntryScope nested(onB.get());
      mgpuModuleGetFunction(module, "other_kernel");
    }
    mgpuModuleGetFunction(module, "third_kernel");
  }
  EXPECT_TRUE(onA->error().ok()) << onA->error().message();
  EXPECT_TRUE(onB->error().ok()) << onB->error().message();
  EXPECT_EQ(a.lookups,
            (std::vector<std::string>{"step_kernel", "third_kernel"}));
  EXPECT_EQ(b.lookups, (std::vector<std::string>{"other_kernel"}));
  EXPECT_EQ(a.launched, (std::vector<std::string>{"step_kernel"}));
  EXPECT_EQ(a.lastDims.grid[0], 4);
  EXPECT_EQ(a.lastDims.grid[1], 2);
  EXPECT_EQ(a.lastDims.block[0], 128);
  EXPECT_EQ(a.lastDims.sharedMemory, 512);
  EXPECT_EQ(a.lastStream, &stream);
  EXPECT_EQ(a.lastParams, params);
  // One load per device, released with the module.
  EXPECT_EQ(liveLoads, 2);
  mgpuModuleUnload(module);
  EXPECT_EQ(liveLoads, 0);
}

TEST(KernelModules, AFailedLookupStopsTheEntrysLaterLaunches) {
  void *module = mgpuModuleLoad(const_cast<char *>(kBlob), sizeof(kBlob));
  int device = 0;
  RecordingModules modules(&device);
  auto context = contextOn(&modules);
  {
    EntryScope scope(context.get());
    void *f = mgpuModuleGetFunction(module, "missing");
    EXPECT_EQ(f, nullptr);
    mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr, 0);
    EXPECT_EQ(mgpuModuleGetFunction(module, "step_kernel"), nullptr);
  }
  EXPECT_EQ(context->error().message(), "no kernel 'missing'");
  EXPECT_EQ(modules.lookups, (std::vector<std::string>{"missing"}));
  EXPECT_TRUE(modules.launched.empty());
  mgpuModuleUnload(module);
}

TEST(KernelModules, AnEntryOnTheCpuHasNoGpuModules) {
  void *module = mgpuModuleLoad(const_cast<char *>(kBlob), sizeof(kBlob));
  auto cpu = contextOn(nullptr);
  {
    EntryScope scope(cpu.get());
    EXPECT_EQ(mgpuModuleGetFunction(module, "step_kernel"), nullptr);
  }
  EXPECT_EQ(cpu->error().code(), CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(cpu->error().message(),
            std::string("mgpuModuleGetFunction(step_kernel): ") +
                (runtimeHasCuda()
                     ? "the calling entry point does not run on a GPU"
                     : kNoCudaSupport));
  mgpuModuleUnload(module);
}

TEST(KernelModules, OutsideAnyEntryErrorsGoToTheThread) {
  void *module = mgpuModuleLoad(const_cast<char *>(kBlob), sizeof(kBlob));
  EXPECT_EQ(mgpuModuleGetFunction(module, nullptr), nullptr);
  Status error = KernelContext::takeErrorWithoutContext();
  EXPECT_EQ(error.message(), "mgpuModuleGetFunction: NULL module or name");
  mgpuModuleUnload(module);
  mgpuModuleUnload(nullptr);
}

} // namespace

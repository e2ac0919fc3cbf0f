//===- Modules.cpp - The mgpu* functions of cuda artifacts ----------------===//
//
// See Modules.h. No vendor header: an artifact's constructor calls
// mgpuModuleLoad when it is loaded, which must succeed on any runtime so that
// the artifact can be inspected and refused with a clear line instead of
// failing to dlopen; lookups and launches go to the running entry point's
// KernelModules.
//
//===----------------------------------------------------------------------===//

#include "device/Modules.h"

#include "Status.h"
#include "device/Device.h"
#include "device/KernelModules.h"
#include "kernels/KernelContext.h"

#include <cstring>
#include <new>
#include <string>

namespace cleave::rt {

namespace {

thread_local KernelContext *launchContext = nullptr;

/// Records `error` in the calling thread's entry point (see Modules.h).
void fail(Status error) {
  if (launchContext)
    launchContext->fail(std::move(error));
  else
    KernelContext::failWithoutContext(std::move(error));
}

/// Whether an earlier call of the running entry point failed: every later
/// launch then does nothing, as every later kernel call does.
bool failedBefore() { return launchContext && launchContext->failed(); }

/// The running entry point's device side of the mgpu* functions, or null
/// after recording why there is none.
KernelModules *modulesFor(const std::string &call) {
  if (KernelModules *modules =
          launchContext ? launchContext->modules() : nullptr)
    return modules;
  if (!runtimeHasCuda())
    fail(Status(CLEAVE_FAILED_PRECONDITION, call + ": " + kNoCudaSupport));
  else
    fail(Status(CLEAVE_FAILED_PRECONDITION,
                call + ": the calling entry point does not run on a GPU"));
  return nullptr;
}

KernelModule *newModule(const void *data, size_t size) {
  // No exception may leave a C function; a null module makes every later
  // lookup fail with a clear error.
  KernelModule *m = new (std::nothrow) KernelModule();
  if (!m) {
    fail(Status(CLEAVE_OUT_OF_MEMORY, "mgpuModuleLoad: out of memory"));
    return nullptr;
  }
  m->data = data;
  m->size = size;
  return m;
}

} // namespace

EntryScope::EntryScope(KernelContext *context) : previous_(launchContext) {
  launchContext = context;
}

EntryScope::~EntryScope() { launchContext = previous_; }

} // namespace cleave::rt

using namespace cleave::rt;

extern "C" {

void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  return newModule(data, gpuBlobSize);
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  KernelModule *m =
      newModule(data, data ? std::strlen(static_cast<char *>(data)) : 0);
  if (m) {
    m->jit = true;
    m->optLevel = optLevel;
  }
  return m;
}

void mgpuModuleUnload(void *module) {
  // What devices loaded is released with it (errors here, the driver shut
  // down at process exit, have no one to go to).
  delete static_cast<KernelModule *>(module);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (failedBefore())
    return nullptr;
  auto *m = static_cast<KernelModule *>(module);
  if (!m || !name) {
    fail(Status(CLEAVE_INTERNAL, "mgpuModuleGetFunction: NULL module or name"));
    return nullptr;
  }
  KernelModules *modules =
      modulesFor(std::string("mgpuModuleGetFunction(") + name + ")");
  if (!modules)
    return nullptr;
  void *function = nullptr;
  Status found = modules->function(*m, name, function);
  if (!found.ok()) {
    fail(std::move(found));
    return nullptr;
  }
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  if (failedBefore())
    return;
  if (!function) {
    // mgpuModuleGetFunction failed and recorded why, unless the artifact
    // passed something else.
    fail(Status(CLEAVE_INTERNAL, "mgpuLaunchKernel: NULL function"));
    return;
  }
  KernelModules *modules = modulesFor("mgpuLaunchKernel");
  if (!modules)
    return;
  LaunchDims dims;
  dims.grid[0] = gridX, dims.grid[1] = gridY, dims.grid[2] = gridZ;
  dims.block[0] = blockX, dims.block[1] = blockY, dims.block[2] = blockZ;
  dims.sharedMemory = smem;
  Status launched = modules->launch(function, dims, stream, params, extra);
  if (!launched.ok())
    fail(std::move(launched));
}

} // extern "C"

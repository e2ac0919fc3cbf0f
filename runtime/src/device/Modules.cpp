//===- Modules.cpp - The mgpu* functions of cuda artifacts ----------------===//
//
// See Modules.h. Compiled with or without the CUDA headers: an artifact's
// constructor calls mgpuModuleLoad when it is loaded, which must succeed on
// any runtime so that the artifact can be inspected and refused with a
// clear line instead of failing to dlopen.
//
//===----------------------------------------------------------------------===//

#include "device/Modules.h"

#include "Status.h"
#include "device/Gpu.h"
#include "kernels/KernelContext.h"

#ifdef CLEAVE_HAVE_CUDA
#include "device/cuda/CudaDriver.h"
#endif

#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

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

/// A module of an artifact: its blob (owned by the artifact, which outlives
/// the module: the artifact's destructor unloads it) and where it has been
/// loaded.
struct Module {
  const void *data = nullptr;
  size_t size = 0;
  /// PTX from mgpuModuleLoadJIT, compiled at this optimisation level.
  bool jit = false;
  int optLevel = 0;
#ifdef CLEAVE_HAVE_CUDA
  struct Loaded {
    CUcontext context = nullptr;
    CUmodule module = nullptr;
    std::map<std::string, CUfunction, std::less<>> functions;
  };
  std::mutex mutex;
  std::vector<Loaded> loaded;
#endif
};

Module *newModule(const void *data, size_t size) {
  // No exception may leave a C function; a null module makes every later
  // lookup fail with a clear error.
  Module *m = new (std::nothrow) Module();
  if (!m) {
    fail(Status(CLEAVE_OUT_OF_MEMORY, "mgpuModuleLoad: out of memory"));
    return nullptr;
  }
  m->data = data;
  m->size = size;
  return m;
}

} // namespace

GpuLaunchScope::GpuLaunchScope(KernelContext *context)
    : previous_(launchContext) {
  launchContext = context;
}

GpuLaunchScope::~GpuLaunchScope() { launchContext = previous_; }

} // namespace cleave::rt

using namespace cleave::rt;

extern "C" {

void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  return newModule(data, gpuBlobSize);
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  Module *m =
      newModule(data, data ? std::strlen(static_cast<char *>(data)) : 0);
  if (m) {
    m->jit = true;
    m->optLevel = optLevel;
  }
  return m;
}

void mgpuModuleUnload(void *module) {
  auto *m = static_cast<Module *>(module);
  if (!m)
    return;
#ifdef CLEAVE_HAVE_CUDA
  // Contexts are primary contexts the runtime never releases, so each
  // module can still be unloaded from its own. Errors here (the driver shut
  // down at process exit) have no one to go to.
  if (const CudaDriver *d =
          m->loaded.empty() ? nullptr : CudaDriver::loaded()) {
    CUcontext previous = nullptr;
    d->cuCtxGetCurrent(&previous);
    for (Module::Loaded &l : m->loaded)
      if (d->cuCtxSetCurrent(l.context) == CUDA_SUCCESS)
        d->cuModuleUnload(l.module);
    d->cuCtxSetCurrent(previous);
  }
#endif
  delete m;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (failedBefore())
    return nullptr;
  auto *m = static_cast<Module *>(module);
  if (!m || !name) {
    fail(Status(CLEAVE_INTERNAL, "mgpuModuleGetFunction: NULL module or name"));
    return nullptr;
  }
#ifndef CLEAVE_HAVE_CUDA
  fail(Status(CLEAVE_FAILED_PRECONDITION,
              std::string("mgpuModuleGetFunction: ") + kNoCudaSupport));
  return nullptr;
#else
  const CudaDriver *d = CudaDriver::loaded();
  if (!d) {
    fail(Status(CLEAVE_FAILED_PRECONDITION,
                "mgpuModuleGetFunction: the CUDA driver is not loaded"));
    return nullptr;
  }
  CUcontext context = nullptr;
  if (d->cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context) {
    fail(Status(CLEAVE_INTERNAL,
                std::string("mgpuModuleGetFunction(") + name +
                    "): no CUDA context is current on this thread"));
    return nullptr;
  }
  try {
    std::lock_guard<std::mutex> lock(m->mutex);
    Module::Loaded *loaded = nullptr;
    for (Module::Loaded &l : m->loaded)
      if (l.context == context)
        loaded = &l;
    if (!loaded) {
      CUmodule cu = nullptr;
      CUresult r;
      if (m->jit) {
        CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
        void *values[] = {reinterpret_cast<void *>(intptr_t(m->optLevel))};
        r = d->cuModuleLoadDataEx(&cu, m->data, 1, options, values);
      } else {
        r = d->cuModuleLoadData(&cu, m->data);
      }
      if (r != CUDA_SUCCESS) {
        fail(Status(CLEAVE_INTERNAL,
                    std::string("mgpuModuleGetFunction(") + name +
                        "): cannot load the artifact's GPU module (" +
                        std::to_string(m->size) +
                        " bytes): " + d->describe(r)));
        return nullptr;
      }
      m->loaded.push_back({context, cu, {}});
      loaded = &m->loaded.back();
    }
    auto it = loaded->functions.find(std::string_view(name));
    if (it != loaded->functions.end())
      return it->second;
    CUfunction f = nullptr;
    CUresult r = d->cuModuleGetFunction(&f, loaded->module, name);
    if (r != CUDA_SUCCESS) {
      fail(Status(CLEAVE_INTERNAL, std::string("mgpuModuleGetFunction: no "
                                               "kernel '") +
                                       name +
                                       "' in the artifact's GPU "
                                       "module: " +
                                       d->describe(r)));
      return nullptr;
    }
    loaded->functions.emplace(name, f);
    return f;
  } catch (const std::bad_alloc &) {
    fail(Status(CLEAVE_OUT_OF_MEMORY, "mgpuModuleGetFunction: out of memory"));
    return nullptr;
  }
#endif
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
#ifndef CLEAVE_HAVE_CUDA
  (void)gridX, (void)gridY, (void)gridZ, (void)blockX, (void)blockY,
      (void)blockZ, (void)smem, (void)stream, (void)params, (void)extra;
  fail(Status(CLEAVE_FAILED_PRECONDITION,
              std::string("mgpuLaunchKernel: ") + kNoCudaSupport));
#else
  const CudaDriver *d = CudaDriver::loaded();
  if (!d) {
    fail(Status(CLEAVE_FAILED_PRECONDITION,
                "mgpuLaunchKernel: the CUDA driver is not loaded"));
    return;
  }
  auto *f = static_cast<CUfunction>(function);
  CUresult r = d->cuLaunchKernel(
      f, unsigned(gridX), unsigned(gridY), unsigned(gridZ), unsigned(blockX),
      unsigned(blockY), unsigned(blockZ), unsigned(smem),
      static_cast<CUstream>(stream), params, extra);
  if (r == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  if (d->cuFuncGetName)
    d->cuFuncGetName(&name, f);
  fail(Status(CLEAVE_INTERNAL,
              std::string("mgpuLaunchKernel: kernel '") + (name ? name : "?") +
                  "' (grid " + std::to_string(gridX) + "x" +
                  std::to_string(gridY) + "x" + std::to_string(gridZ) +
                  ", block " + std::to_string(blockX) + "x" +
                  std::to_string(blockY) + "x" + std::to_string(blockZ) + ", " +
                  std::to_string(smem) +
                  " bytes of shared memory): " + d->describe(r)));
#endif
}

} // extern "C"

//===- CudaModules.cpp - Artifact GPU modules in a CUDA context -----------===//
//
// See CudaModules.h.
//
//===----------------------------------------------------------------------===//

#include "device/cuda/CudaModules.h"

#include "device/KernelModules.h"

#include <map>
#include <new>
#include <string>
#include <string_view>

namespace cleave::rt {

namespace {

/// A module loaded into one context, and the functions looked up in it.
class CudaLoadedModule final : public LoadedKernelModule {
public:
  CudaLoadedModule(const CudaDriver &d, CUcontext context, CUmodule module)
      : d_(d), context_(context), module_(module) {}

  ~CudaLoadedModule() override {
    // Unloaded from its own context (primary contexts are never released,
    // so it still exists), leaving the calling thread's current one as it
    // was. Errors (the driver shut down at process exit) have no one to go
    // to.
    CUcontext previous = nullptr;
    d_.cuCtxGetCurrent(&previous);
    if (d_.cuCtxSetCurrent(context_) == CUDA_SUCCESS)
      d_.cuModuleUnload(module_);
    d_.cuCtxSetCurrent(previous);
  }

  const void *key() const override { return context_; }
  CUmodule module() const { return module_; }
  std::map<std::string, CUfunction, std::less<>> functions;

private:
  const CudaDriver &d_;
  CUcontext context_;
  CUmodule module_;
};

class CudaModules final : public KernelModules {
public:
  CudaModules(const CudaDriver &d, CUcontext context)
      : d_(d), context_(context) {}

  Status function(KernelModule &m, const char *name, void *&out) override {
    try {
      std::lock_guard<std::mutex> lock(m.mutex);
      CudaLoadedModule *loaded = nullptr;
      for (const std::unique_ptr<LoadedKernelModule> &l : m.loaded)
        if (l->key() == context_)
          loaded = static_cast<CudaLoadedModule *>(l.get());
      if (!loaded)
        CLEAVE_RETURN_IF_ERROR(load(m, name, loaded));
      auto it = loaded->functions.find(std::string_view(name));
      if (it != loaded->functions.end()) {
        out = it->second;
        return Status::success();
      }
      CUfunction f = nullptr;
      CUresult r = d_.cuModuleGetFunction(&f, loaded->module(), name);
      if (r != CUDA_SUCCESS)
        return makeError(CLEAVE_INTERNAL, "mgpuModuleGetFunction: no kernel '",
                         name,
                         "' in the artifact's GPU module: ", d_.describe(r));
      loaded->functions.emplace(name, f);
      out = f;
      return Status::success();
    } catch (const std::bad_alloc &) {
      return makeError(CLEAVE_OUT_OF_MEMORY,
                       "mgpuModuleGetFunction: out of memory");
    }
  }

  Status launch(void *function, const LaunchDims &dims, void *stream,
                void **params, void **extra) override {
    auto *f = static_cast<CUfunction>(function);
    CUresult r =
        d_.cuLaunchKernel(f, unsigned(dims.grid[0]), unsigned(dims.grid[1]),
                          unsigned(dims.grid[2]), unsigned(dims.block[0]),
                          unsigned(dims.block[1]), unsigned(dims.block[2]),
                          unsigned(dims.sharedMemory),
                          static_cast<CUstream>(stream), params, extra);
    if (r == CUDA_SUCCESS)
      return Status::success();
    const char *name = nullptr;
    if (d_.cuFuncGetName)
      d_.cuFuncGetName(&name, f);
    return makeError(
        CLEAVE_INTERNAL, "mgpuLaunchKernel: kernel '", name ? name : "?",
        "' (grid ", dims.grid[0], "x", dims.grid[1], "x", dims.grid[2],
        ", block ", dims.block[0], "x", dims.block[1], "x", dims.block[2], ", ",
        dims.sharedMemory, " bytes of shared memory): ", d_.describe(r));
  }

private:
  /// Loads `m` into this context (made current on the calling thread, where
  /// the entry point runs).
  Status load(KernelModule &m, const char *name, CudaLoadedModule *&out) {
    CLEAVE_RETURN_IF_ERROR(
        d_.check(d_.cuCtxSetCurrent(context_),
                 std::string("mgpuModuleGetFunction(") + name +
                     "): cannot make the device's context current"));
    CUmodule cu = nullptr;
    CUresult r;
    if (m.jit) {
      CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
      void *values[] = {reinterpret_cast<void *>(intptr_t(m.optLevel))};
      r = d_.cuModuleLoadDataEx(&cu, m.data, 1, options, values);
    } else {
      r = d_.cuModuleLoadData(&cu, m.data);
    }
    if (r != CUDA_SUCCESS)
      return makeError(CLEAVE_INTERNAL, "mgpuModuleGetFunction(", name,
                       "): cannot load the artifact's GPU module (", m.size,
                       " bytes): ", d_.describe(r));
    auto loaded = std::make_unique<CudaLoadedModule>(d_, context_, cu);
    out = loaded.get();
    m.loaded.push_back(std::move(loaded));
    return Status::success();
  }

  const CudaDriver &d_;
  CUcontext context_;
};

} // namespace

std::unique_ptr<KernelModules> createCudaModules(const CudaDriver &driver,
                                                 CUcontext context) {
  return std::make_unique<CudaModules>(driver, context);
}

} // namespace cleave::rt

//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//

#include "device/cuda/CudaDriver.h"
#include "device/GpuArch.h"

#include <dlfcn.h>

#include <mutex>

namespace cleave::rt {

namespace {
struct LoadResult {
  CudaDriver driver;
  std::string error;
  bool ok = false;
};

LoadResult &loadOnce() {
  static LoadResult result;
  static std::once_flag once;
  std::call_once(once, [] {
    LoadResult &r = result;
    // RTLD_LOCAL: the driver's symbols stay out of the global namespace, so
    // the artifacts' own (none) and the runtime's mgpu* cannot clash.
    void *handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      r.error = "no CUDA driver (libcuda.so.1 not found)";
      return;
    }
    CudaDriver &d = r.driver;
#define CLEAVE_CUDA_RESOLVE(name)                                              \
  d.name = reinterpret_cast<decltype(d.name)>(                                 \
      ::dlsym(handle, CLEAVE_CUDA_SYMBOL(name)));                              \
  if (!d.name) {                                                               \
    r.error = std::string("the CUDA driver (libcuda.so.1) is too old: it has " \
                          "no ") +                                             \
              CLEAVE_CUDA_SYMBOL(name);                                        \
    return;                                                                    \
  }
    CLEAVE_CUDA_DRIVER_FUNCTIONS(CLEAVE_CUDA_RESOLVE)
#undef CLEAVE_CUDA_RESOLVE
    d.cuFuncGetName = reinterpret_cast<decltype(d.cuFuncGetName)>(
        ::dlsym(handle, CLEAVE_CUDA_SYMBOL(cuFuncGetName)));
    CUresult init = d.cuInit(0);
    if (init == CUDA_ERROR_NO_DEVICE) {
      r.error = "no CUDA device";
      return;
    }
    if (init != CUDA_SUCCESS) {
      r.error = "the CUDA driver failed to initialise: " + d.describe(init);
      return;
    }
    if (d.cuDriverGetVersion(&d.version) != CUDA_SUCCESS)
      d.version = 0;
    if (Status usable = checkDriverVersion(d.version, CUDA_VERSION);
        !usable.ok()) {
      r.error = usable.message();
      return;
    }
    r.ok = true;
  });
  return result;
}
} // namespace

const CudaDriver *CudaDriver::get(std::string &error) {
  LoadResult &r = loadOnce();
  if (!r.ok) {
    error = r.error;
    return nullptr;
  }
  return &r.driver;
}

const CudaDriver *CudaDriver::loaded() {
  LoadResult &r = loadOnce();
  return r.ok ? &r.driver : nullptr;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(int(result));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

Status CudaDriver::check(CUresult result, const std::string &what) const {
  if (result == CUDA_SUCCESS)
    return Status::success();
  return makeError(result == CUDA_ERROR_OUT_OF_MEMORY ? CLEAVE_OUT_OF_MEMORY
                                                      : CLEAVE_INTERNAL,
                   what, ": ", describe(result));
}

} // namespace cleave::rt

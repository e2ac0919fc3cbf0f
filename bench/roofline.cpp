//===- roofline.cpp - The GEMM-bound limit of a model's micro-step --------===//
//
// Reads an artifact's manifest, takes every matmul kernel of its micro-step
// (the GEMMs of the forward and backward passes) and times each in
// isolation through the runtime's oneDNN kernels, hot in cache, best of
// several runs. The sum is the least time a micro-step can take when GEMMs
// run at the machine's measured speed and everything else is free: the
// GEMM-bound limit. Prints one JSON object.
//
//   cleave-roofline model.cleave
//
//===----------------------------------------------------------------------===//

#include "cleave/kernel_abi.h"
#include "kernels/KernelContext.h"

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using Clock = std::chrono::steady_clock;

namespace {

/// A 64-byte aligned buffer of random floats.
struct Buffer {
  explicit Buffer(size_t n)
      : data(static_cast<float *>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (size_t i = 0; i < n; ++i)
      data[i] = u(rng);
  }
  ~Buffer() { std::free(data); }
  float *data;
};

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cleave-roofline model.cleave\n");
    return 2;
  }
  // Only the manifest is needed: read it straight from the artifact.
  void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  auto manifestFn =
      so ? reinterpret_cast<const char *(*)()>(dlsym(so, "cleave_manifest"))
         : nullptr;
  if (!manifestFn) {
    std::fprintf(stderr, "cleave-roofline: error: %s: not a Cleave artifact\n",
                 argv[1]);
    return 1;
  }
  nlohmann::json manifest = nlohmann::json::parse(manifestFn());

  nlohmann::json kernels = manifest["kernels"];
  std::string error;
  auto ctx = cleave::rt::KernelContext::create(kernels, error);
  if (!ctx) {
    std::fprintf(stderr, "cleave-roofline: error: %s\n", error.c_str());
    return 1;
  }
  nlohmann::json gemms = nlohmann::json::array();
  double totalMs = 0;
  for (const auto &k : kernels) {
    // The GEMMs of the micro-step: its forward and backward passes.
    if (k["op"] != "matmul" || k.value("entry", "") != "micro_step")
      continue;
    int64_t batch = k["batch"], m = k["m"], n = k["n"], kk = k["k"];
    bool bBatched = k["b_batched"];
    Buffer a{size_t(batch * m * kk)}, b{size_t((bBatched ? batch : 1) * kk * n)},
        bias{size_t(n)}, c{size_t(batch * m * n)};
    int64_t id = k["id"];
    auto run = [&] {
      cleave_kernel_matmul(ctx.get(), id, a.data, b.data,
                           k["bias"] ? bias.data : nullptr, c.data);
    };
    for (int i = 0; i < 5; ++i)
      run();
    double best = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
      int iters = 50;
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i)
        run();
      best = std::min(best,
                      std::chrono::duration<double>(Clock::now() - t0).count() /
                          iters);
    }
    double flops = 2.0 * double(batch * m * n * kk);
    totalMs += best * 1e3;
    gemms.push_back({{"id", id},
                   {"m", m},
                   {"n", n},
                   {"k", kk},
                   {"batch", batch},
                   {"ms", best * 1e3},
                   {"gflops", flops / best / 1e9}});
  }
  nlohmann::json out = {{"micro_step_gemm_ms", totalMs}, {"gemms", gemms}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

//===- roofline.cpp - The GEMM-bound limit of a model's micro-step --------===//
//
// Reads an artifact's manifest, takes every matmul kernel of its micro-step
// (the GEMMs of the forward and backward passes) and times each in
// isolation through the runtime's oneDNN kernels, hot in cache, best of
// several runs. The sum is the least time a micro-step can take when GEMMs
// run at the machine's measured speed and everything else is free: the
// GEMM-bound limit. A bf16 matmul's f32 operands come from the layout
// cache's bf16 copies, as a session's parameters do. Prints one JSON object.
//
//   cleave-roofline model.cleave
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "cleave/kernel_abi.h"
#include "kernels/KernelContext.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

using Clock = std::chrono::steady_clock;

namespace {

/// A 64-byte aligned buffer of n random floats in [-1, 1], which also reads
/// as 2n bfloat16 values in [-1, 1] (an operand the entry stores in bf16):
/// each float's low half repeats its high half.
struct Buffer {
  explicit Buffer(size_t n)
      : data(static_cast<float *>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (size_t i = 0; i < n; ++i) {
      float x = u(rng);
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      bits = (bits & 0xffff0000u) | (bits >> 16);
      std::memcpy(&data[i], &bits, 4);
    }
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { std::free(data); }
  float *data;
};

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cleave-roofline model.cleave\n");
    return 2;
  }
  // Only the kernel table is needed; the runtime's loader checks the file
  // (and says what is wrong with it) before anything maps it.
  std::shared_ptr<cleave::rt::Artifact> artifact;
  cleave::rt::Status status = cleave::rt::Artifact::load(argv[1], artifact);
  if (!status.ok()) {
    std::fprintf(stderr, "cleave-roofline: error: %s\n",
                 status.message().c_str());
    return 1;
  }
  const nlohmann::json &kernels = artifact->manifest().kernels;
  std::string error;
  auto ctx = cleave::rt::KernelContext::create(kernels, error);
  if (!ctx) {
    std::fprintf(stderr, "cleave-roofline: error: %s\n", error.c_str());
    return 1;
  }
  // The GEMMs of the micro-step: its forward and backward passes.
  struct Gemm {
    nlohmann::json spec;
    Buffer a, b, bias, c;
  };
  std::vector<std::unique_ptr<Gemm>> timed;
  // A bf16 matmul's f32 operands are parameters in a session (activations
  // that feed one are stored in bf16), read from the layout cache's bf16
  // copy made once per window: the cache stands in for that here, so that
  // the limit is the bf16 multiply's, not a conversion's per call.
  std::vector<cleave::rt::BufferRange> parameters;
  for (const auto &k : kernels) {
    if (k["op"] != "matmul" || k.value("entry", "") != "micro_step")
      continue;
    int64_t batch = k["batch"], m = k["m"], n = k["n"], kk = k["k"];
    bool bBatched = k["b_batched"];
    timed.push_back(std::unique_ptr<Gemm>(
        new Gemm{k, Buffer{size_t(batch * m * kk)},
                 Buffer{size_t((bBatched ? batch : 1) * kk * n)},
                 Buffer{size_t(n)}, Buffer{size_t(batch * m * n)}}));
    Gemm &g = *timed.back();
    if (k.value("math", "f32") == "bf16") {
      if (k.value("a_type", "f32") == "f32")
        parameters.push_back({g.a.data, size_t(batch * m * kk) * 4});
      if (k.value("b_type", "f32") == "f32")
        parameters.push_back(
            {g.b.data, size_t((bBatched ? batch : 1) * kk * n) * 4});
    }
  }
  if (timed.empty()) {
    // No limit to give (an inference artifact, or a model without matmuls):
    // a time of 0 would read as an infinite rate.
    std::fprintf(stderr,
                 "cleave-roofline: error: %s: its micro-step has no matmul\n",
                 argv[1]);
    return 1;
  }
  if (!parameters.empty())
    ctx->enableLayoutCache(parameters, {});

  nlohmann::json gemms = nlohmann::json::array();
  double totalMs = 0;
  for (const std::unique_ptr<Gemm> &g : timed) {
    const nlohmann::json &k = g->spec;
    int64_t batch = k["batch"], m = k["m"], n = k["n"], kk = k["k"];
    Buffer &a = g->a, &b = g->b, &bias = g->bias, &c = g->c;
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

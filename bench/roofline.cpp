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
//   cleave-roofline model.cleave [--paired [--seconds=S]]
//
// --paired also trains the model (a session on random data, windows of the
// artifact's N micro-steps with their apply steps) and alternates the two
// for S seconds (default 6): a window untimed, then two timed, then every
// GEMM once untimed and four times timed, and so on. Each such
// pair gives a ratio of the session's samples/s to the limit's, measured
// within three windows' time of each other (13 ms for the f32 MLP at
// micro-batch 32, ~40 ms for the bf16 one at 256), so that a VM whose speed
// drifts by 20% from one second to the next (seen on cloud VMs) still
// gives the ratio; the JSON adds the median ratio, its quartiles, and the
// medians of both rates.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "RandomBatch.h"
#include "cleave/kernel_abi.h"
#include "cleave/runtime.hpp"
#include "kernels/KernelContext.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
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

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The q-quantile of `v` (sorted in place), interpolated between the two
/// nearest ranks (the median of an even count is the mean of the middle
/// two).
double quantile(std::vector<double> &v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * double(v.size() - 1);
  const size_t below = size_t(at);
  const size_t above = std::min(below + 1, v.size() - 1);
  return v[below] + (at - double(below)) * (v[above] - v[below]);
}

/// --paired: the session and the GEMMs alternated (the file comment).
nlohmann::json paired(const char *path, double budget,
                      const std::vector<std::function<void()>> &gemms) {
  cleave::Artifact artifact = cleave::Artifact::load(path);
  int64_t b = 0, n = 0, window = 0;
  cleave_artifact_micro_batch(artifact.get(), &b);
  cleave_artifact_accumulate(artifact.get(), &n);
  cleave_artifact_window_samples(artifact.get(), &window);
  cleave::bench::RandomBatch data = cleave::bench::randomBatch(artifact, b);
  // A window that ends with a short micro-batch (window_samples), fed as
  // cleave-train and cleave-bench feed it: the first rows.
  cleave::Batch lastBatch = data.firstRows(window - (n - 1) * b);
  cleave::Session session(artifact, cleave::SessionOptions{});
  session.setAccumulation(n);
  auto trainWindow = [&] {
    for (int64_t i = 0; i < n; ++i)
      session.microStep(i == n - 1 ? lastBatch : data.batch);
  };
  std::vector<double> ratios, sessionRates, limitRates;
  auto t0 = Clock::now();
  while (seconds(t0, Clock::now()) < budget || ratios.size() < 9) {
    trainWindow();
    auto a = Clock::now();
    trainWindow();
    trainWindow();
    const double sessionRate = 2.0 * double(window) / seconds(a, Clock::now());
    // Each GEMM hot: once untimed, then the mean of four runs in a row.
    // A mean, as the session's side is and as each of the unpaired limit's
    // repetitions is (50 runs); the unpaired limit's best of seven such
    // means filters the noise that pairing cancels here. (The best single
    // run of four instead would time each GEMM at its luckiest against a
    // session timed on average: 77-84% for the f32 MLP at micro-batch 32
    // on Zen 5, against 79-95% as means, in runs minutes apart.)
    double gemmSeconds = 0;
    for (const auto &run : gemms) {
      run();
      auto g = Clock::now();
      for (int i = 0; i < 4; ++i)
        run();
      gemmSeconds += seconds(g, Clock::now()) / 4;
    }
    // A window's samples over N micro-steps of GEMMs: a short last
    // micro-batch runs the same GEMMs as a full one.
    const double limitRate = double(window) / (double(n) * gemmSeconds);
    ratios.push_back(sessionRate / limitRate);
    sessionRates.push_back(sessionRate);
    limitRates.push_back(limitRate);
  }
  return {{"pairs", ratios.size()},
          {"ratio_median", quantile(ratios, 0.5)},
          {"ratio_quartiles", {quantile(ratios, 0.25), quantile(ratios, 0.75)}},
          {"session_samples_per_second_median", quantile(sessionRates, 0.5)},
          {"limit_samples_per_second_median", quantile(limitRates, 0.5)}};
}

} // namespace

int main(int argc, char **argv) {
  bool pairedMode = false, secondsGiven = false, usage = false;
  double budget = 6;
  const char *path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--paired"))
      pairedMode = true;
    else if (!std::strncmp(argv[i], "--seconds=", 10)) {
      char *end = nullptr;
      budget = std::strtod(argv[i] + 10, &end);
      usage |= *end != '\0' || !std::isfinite(budget);
      secondsGiven = true;
    } else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else
      usage = true;
  }
  if (usage || !path || !(budget > 0) || (secondsGiven && !pairedMode)) {
    std::fprintf(stderr, "usage: cleave-roofline model.cleave [--paired "
                         "[--seconds=S]]\n");
    return 2;
  }
  // Only the kernel table is needed; the runtime's loader checks the file
  // (and says what is wrong with it) before anything maps it.
  std::shared_ptr<cleave::rt::Artifact> artifact;
  cleave::rt::Status status = cleave::rt::Artifact::load(path, artifact);
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
                 path);
    return 1;
  }
  if (!parameters.empty())
    ctx->enableLayoutCache(parameters, {});

  // One call of each GEMM, in the micro-step's order.
  std::vector<std::function<void()>> runs;
  for (const std::unique_ptr<Gemm> &g : timed) {
    int64_t id = g->spec["id"];
    float *bias = g->spec.value("bias", false) ? g->bias.data : nullptr;
    runs.push_back(
        [context = ctx.get(), id, a = g->a.data, b = g->b.data, bias,
         c = g->c.data] { cleave_kernel_matmul(context, id, a, b, bias, c); });
  }

  nlohmann::json gemms = nlohmann::json::array();
  double totalMs = 0;
  for (size_t index = 0; index < timed.size(); ++index) {
    const nlohmann::json &k = timed[index]->spec;
    int64_t batch = k["batch"], m = k["m"], n = k["n"], kk = k["k"];
    const std::function<void()> &run = runs[index];
    for (int i = 0; i < 5; ++i)
      run();
    double best = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
      int iters = 50;
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i)
        run();
      best = std::min(best, seconds(t0, Clock::now()) / iters);
    }
    double flops = 2.0 * double(batch * m * n * kk);
    totalMs += best * 1e3;
    gemms.push_back({{"id", k["id"]},
                     {"m", m},
                     {"n", n},
                     {"k", kk},
                     {"batch", batch},
                     {"ms", best * 1e3},
                     {"gflops", flops / best / 1e9}});
  }
  nlohmann::json out = {{"micro_step_gemm_ms", totalMs}, {"gemms", gemms}};
  if (pairedMode) {
    try {
      out["paired"] = paired(path, budget, runs);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "cleave-roofline: error: %s\n", e.what());
      return 1;
    }
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

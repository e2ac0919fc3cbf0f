//===- gemm_window.cpp - Where a window's weight gradients could go -------===//
//
// The f32 MLP 784-512-512-10's window of N micro-steps as its GEMMs only
// (the matmuls Cleave's micro-step makes, in its layouts, run by the
// runtime's own kernels, and an SGD apply loop), with four schedules for
// the weight gradients:
//
// * per micro-step: each micro-step's weight-gradient GEMM (K = micro-batch)
//   adds into the accumulator (beta = 1); the apply step zeroes it. This is
//   what Cleave's micro-step does today (split.md, cpu-lowering.md).
// * first writes: the first micro-step of a window writes the gradient
//   (beta = 0) and the apply step does not zero it: one pass over the
//   accumulators fewer per window.
// * deferred, adding: each micro-step copies the weight gradient's operands
//   (the layer's input and its output gradient) into a stash, and one GEMM
//   of N x micro-batch rows per window adds the window's gradient into the
//   accumulator (beta = 1), which the apply step zeroes: what the runtime
//   alone can do (cpu-lowering.md, "Deferred weight gradients"), since it
//   cannot know that nothing else adds into an accumulator.
// * deferred, writing: the same GEMM writes the gradient (beta = 0) and the
//   apply step does not zero the accumulator: the accumulators are written
//   once per window and never read by the micro-steps. Only valid where the
//   compiler knows this GEMM is the accumulator's only writer.
//
// Both deferred schedules stash only where the stash is no larger than the
// accumulator (N B (in + out) <= in out); the 10-wide last layer stays per
// micro-step.
//
// A question to ask a CPU before the compiler builds a schedule (issue 23,
// item 7): on Intel Xeons the f32 MLP at micro-batch 32 reaches 73-78% of
// its GEMM-bound limit and every GEMM runs 16-25% slower in a session than
// hot, which points at the accumulators' traffic (2.7 MB, with the 2.7 MB of
// weights, against a 2 MB L2). The generated elementwise loops are left
// out (a few percent of the micro-step, bench/README.md). The four
// schedules are first checked to compute the same window gradient, and to
// add it into or overwrite the accumulators as they claim. One thread;
// alternated rounds, best window of each schedule, Markdown table.
//
//   OMP_NUM_THREADS=1 build/bin/cleave-gemm-window [--check] [micro-batch ...]
//
// `--check` stops after the check (a test runs it).
//
//===----------------------------------------------------------------------===//

#include "cleave/kernel_abi.h"
#include "kernels/KernelContext.h"
#include "schema/SchemaWriteJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kAccumulate = 4;
constexpr int kWidths[] = {784, 512, 512, 10};
constexpr int kLayers = 3;

/// A 64-byte aligned buffer of n floats, small values so nothing overflows.
struct Buffer {
  explicit Buffer(size_t n)
      : data(static_cast<float *>(
            std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))),
        size(n) {
    for (size_t i = 0; i < n; ++i)
      data[i] = 1e-3f * float(i % 7);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { std::free(data); }
  float *data;
  size_t size;
};

/// One matmul of the window's kernel table, C[m, n] (+)= op(A) op(B), and
/// the buffers it runs on.
struct Gemm {
  int64_t id;
  const float *a, *b, *bias;
  float *c;
};

enum class Schedule {
  PerMicroStep,
  FirstWrites,
  DeferredAdding,
  DeferredWriting
};
constexpr Schedule kSchedules[] = {
    Schedule::PerMicroStep, Schedule::FirstWrites, Schedule::DeferredAdding,
    Schedule::DeferredWriting};
constexpr int kNumSchedules = int(std::size(kSchedules));
const char *name(Schedule s) {
  switch (s) {
  case Schedule::PerMicroStep:
    return "per micro-step (Cleave today)";
  case Schedule::FirstWrites:
    return "first micro-step writes";
  case Schedule::DeferredAdding:
    return "deferred, adding";
  case Schedule::DeferredWriting:
    return "deferred, writing";
  }
  return "";
}
bool defers(Schedule s) {
  return s == Schedule::DeferredAdding || s == Schedule::DeferredWriting;
}

/// Seconds spent per window in each part, and windows run.
struct Parts {
  double forwardAndData = 0, gradientsInStep = 0, gradientsAtEnd = 0, apply = 0;
  int windows = 0;
  double total() const {
    return forwardAndData + gradientsInStep + gradientsAtEnd + apply;
  }
};

class Window {
public:
  /// Throws std::runtime_error when the runtime refuses the kernel table.
  explicit Window(int b) : b_(b) {
    const int n = kAccumulate;
    for (int l = 0; l <= kLayers; ++l) {
      act_.emplace_back(new Buffer(size_t(b) * kWidths[l]));
      // grad_[l] is the gradient of act_[l]; the input's is never made.
      grad_.emplace_back(new Buffer(l ? size_t(b) * kWidths[l] : 0));
    }
    for (int l = 0; l < kLayers; ++l) {
      const int in = kWidths[l], out = kWidths[l + 1];
      // PyTorch's layout: W is [out, in]; forward Y = X W^T + bias.
      weight_.emplace_back(new Buffer(size_t(out) * in));
      bias_.emplace_back(new Buffer(size_t(out)));
      acc_.emplace_back(new Buffer(size_t(out) * in));
      defer_.push_back(int64_t(n) * b * (in + out) <= int64_t(in) * out);
      stashX_.emplace_back(new Buffer(defer_[l] ? size_t(n) * b * in : 0));
      stashDy_.emplace_back(new Buffer(defer_[l] ? size_t(n) * b * out : 0));
      forward_.push_back(matmul(b, in, out, false, true, false, act_[l]->data,
                                weight_[l]->data, act_[l + 1]->data,
                                bias_[l]->data));
      if (l > 0)
        backwardData_.push_back(matmul(b, out, in, false, false, false,
                                       grad_[l + 1]->data, weight_[l]->data,
                                       grad_[l]->data));
      // dW[out, in] = dY^T X, as Cleave's micro-step calls it.
      addGradient_.push_back(matmul(out, b, in, true, false, true,
                                    grad_[l + 1]->data, act_[l]->data,
                                    acc_[l]->data));
      writeGradient_.push_back(matmul(out, b, in, true, false, false,
                                      grad_[l + 1]->data, act_[l]->data,
                                      acc_[l]->data));
      // Where the layer is not deferred, never run (an id no kernel has).
      for (bool accumulate : {false, true})
        (accumulate ? addWindowGradient_ : writeWindowGradient_)
            .push_back(defer_[l]
                           ? matmul(out, n * b, in, true, false, accumulate,
                                    stashDy_[l]->data, stashX_[l]->data,
                                    acc_[l]->data)
                           : Gemm{-1, nullptr, nullptr, nullptr, nullptr});
    }
    std::string error;
    ctx_ = cleave::rt::KernelContext::create(kernels_, error);
    if (!ctx_)
      throw std::runtime_error(error);
  }

  /// Some layer's stash is no larger than its accumulator.
  bool defersAny() const {
    return std::find(defer_.begin(), defer_.end(), true) != defer_.end();
  }

  /// One window and its apply step.
  void run(Schedule schedule, Parts &parts) {
    gradients(schedule, &parts, /*varyInputs=*/false);
    // SGD on the window's mean gradient; accumulators that micro-steps add
    // into are zeroed for the next window in the same sweep.
    auto t0 = Clock::now();
    const float scale = 1e-9f / float(kAccumulate * b_);
    for (int l = 0; l < kLayers; ++l) {
      float *w = weight_[l]->data, *g = acc_[l]->data;
      const size_t size = acc_[l]->size;
      for (size_t i = 0; i < size; ++i)
        w[i] -= scale * g[i];
      resetAccumulator(schedule, l);
    }
    parts.apply += seconds(t0, Clock::now());
    ++parts.windows;
    throwIfFailed();
  }

  /// The accumulators after a window under `schedule`, parameters
  /// unchanged: what the apply step would read. Each starts as the last
  /// window's gradient (1 everywhere), reset as the apply step resets it,
  /// plus `start` where the window adds into it (another value than zero
  /// shows that nothing overwrites it). The window's inputs differ from one
  /// micro-step to the next, and the stashes start as NaN, so that a slot
  /// copied to the wrong place, or not at all, shows.
  std::vector<std::vector<float>>
  windowGradients(Schedule schedule,
                  const std::vector<std::vector<float>> *start = nullptr) {
    for (int l = 0; l < kLayers; ++l) {
      float *acc = acc_[l]->data;
      std::fill(acc, acc + acc_[l]->size, 1.f);
      resetAccumulator(schedule, l);
      // A reset of an accumulator the window overwrites would not change
      // the gradient, only the apply step's time.
      if (!adds(schedule, l) && std::any_of(acc, acc + acc_[l]->size,
                                            [](float x) { return x != 1.f; }))
        throw std::runtime_error(std::string("'") + name(schedule) +
                                 "' resets an accumulator it overwrites");
      if (start && adds(schedule, l))
        for (size_t i = 0; i < acc_[l]->size; ++i)
          acc[i] += (*start)[size_t(l)][i];
      for (Buffer *stash : {stashX_[l].get(), stashDy_[l].get()})
        std::fill(stash->data, stash->data + stash->size,
                  std::numeric_limits<float>::quiet_NaN());
    }
    gradients(schedule, nullptr, /*varyInputs=*/true);
    throwIfFailed();
    std::vector<std::vector<float>> out;
    for (auto &acc : acc_)
      out.emplace_back(acc->data, acc->data + acc->size);
    return out;
  }

  /// Whether the window adds into the layer's accumulator from its first
  /// micro-step on (and the apply step zeroes it).
  bool adds(Schedule schedule, int layer) const {
    return schedule == Schedule::PerMicroStep ||
           schedule == Schedule::DeferredAdding ||
           (schedule == Schedule::DeferredWriting && !defer_[layer]);
  }

private:
  bool isDeferred(Schedule schedule, int layer) const {
    return defers(schedule) && defer_[layer];
  }
  /// What the apply step leaves in the layer's accumulator for the next
  /// window: zeros where the window adds into it, else the gradient.
  void resetAccumulator(Schedule schedule, int layer) {
    if (adds(schedule, layer))
      std::memset(acc_[layer]->data, 0, acc_[layer]->size * 4);
  }
  void throwIfFailed() const {
    if (ctx_->failed())
      throw std::runtime_error(ctx_->error().message());
  }

  /// The micro-steps of a window, in the order Cleave's micro-step calls
  /// its GEMMs (the forward layers, then from the last layer back: its
  /// backward-data GEMM, then its weight gradient), and the weight
  /// gradients made at the window's end.
  /// With `varyInputs`, each micro-step gets its own input and output
  /// gradient (the check); else all get the same (the timed windows).
  void gradients(Schedule schedule, Parts *parts, bool varyInputs) {
    // The runtime's CPU kernels return when their work is done.
    double inStep = 0;
    auto w0 = Clock::now();
    for (int step = 0; step < kAccumulate; ++step) {
      // Scaled by the step too: rows of 784 repeat a pattern of 7, which
      // alone could give every micro-step the same column sums.
      if (varyInputs)
        for (Buffer *buffer : {act_[0].get(), grad_[kLayers].get()})
          for (size_t i = 0; i < buffer->size; ++i)
            buffer->data[i] =
                1e-3f * float(step + 1) * float((i + 3 * size_t(step)) % 7);
      for (const Gemm &g : forward_)
        run(g);
      for (int l = kLayers - 1; l >= 0; --l) {
        if (l > 0)
          run(backwardData_[l - 1]);
        auto t0 = Clock::now();
        if (isDeferred(schedule, l)) {
          const int in = kWidths[l], out = kWidths[l + 1];
          std::memcpy(stashX_[l]->data + size_t(step) * b_ * in, act_[l]->data,
                      size_t(b_) * in * 4);
          std::memcpy(stashDy_[l]->data + size_t(step) * b_ * out,
                      grad_[l + 1]->data, size_t(b_) * out * 4);
        } else {
          run(schedule != Schedule::FirstWrites || step > 0
                  ? addGradient_[l]
                  : writeGradient_[l]);
        }
        inStep += seconds(t0, Clock::now());
      }
    }
    auto w1 = Clock::now();
    for (int l = 0; l < kLayers; ++l)
      if (isDeferred(schedule, l))
        run(schedule == Schedule::DeferredAdding ? addWindowGradient_[l]
                                                 : writeWindowGradient_[l]);
    if (parts) {
      parts->forwardAndData += seconds(w0, w1) - inStep;
      parts->gradientsInStep += inStep;
      parts->gradientsAtEnd += seconds(w1, Clock::now());
    }
  }

  /// Adds a matmul to the kernel table (before the context is made).
  Gemm matmul(int m, int k, int n, bool transA, bool transB, bool accumulate,
              const float *a, const float *b, float *c,
              const float *bias = nullptr) {
    namespace abi = cleave::abi;
    abi::Kernel entry;
    entry.id = int64_t(kernels_.size());
    entry.op = abi::KernelOp::matmul;
    entry.batch = 1;
    entry.m = m;
    entry.k = k;
    entry.n = n;
    entry.transA = transA;
    entry.transB = transB;
    entry.bBatched = false;
    entry.bias = bias != nullptr;
    entry.activation = abi::Activation::none;
    entry.accumulate = accumulate;
    kernels_.push_back(abi::toJson(entry));
    return {entry.id, a, b, bias, c};
  }
  void run(const Gemm &g) {
    cleave_kernel_matmul(ctx_.get(), g.id, g.a, g.b, g.bias, g.c);
  }

  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  int b_;
  std::vector<std::unique_ptr<Buffer>> act_, grad_, weight_, bias_, acc_,
      stashX_, stashDy_;
  std::vector<bool> defer_;
  std::vector<Gemm> forward_, backwardData_, addGradient_, writeGradient_,
      addWindowGradient_, writeWindowGradient_;
  nlohmann::json kernels_ = nlohmann::json::array();
  std::unique_ptr<cleave::rt::KernelContext> ctx_;
};

/// Checks the schedules at each micro-batch, then (unless `checkOnly`)
/// times them: the exit status. Throws std::runtime_error.
int measure(const std::vector<int> &batches, bool checkOnly) {
  std::vector<std::unique_ptr<Window>> windows;
  for (int b : batches) {
    windows.push_back(std::make_unique<Window>(b));
    Window &window = *windows.back();
    // The schedules must compute the same window gradient (to rounding:
    // the deferred GEMM sums its N x B rows in another order), and add it
    // to what an accumulator they add into held before (here the gradient
    // itself, so a GEMM that wrote instead of adding would give half).
    const auto reference = window.windowGradients(Schedule::PerMicroStep);
    for (Schedule s : kSchedules) {
      const auto got = window.windowGradients(s, &reference);
      for (size_t l = 0; l < got.size(); ++l)
        for (size_t i = 0; i < got[l].size(); ++i) {
          const float want = (window.adds(s, int(l)) ? 2 : 1) * reference[l][i];
          // Written so that NaN fails.
          if (!(std::fabs(got[l][i] - want) <=
                1e-5f * std::fabs(want) + 1e-30f)) {
            std::fprintf(stderr,
                         "cleave-gemm-window: '%s' at micro-batch %d: layer "
                         "%zu's gradient[%zu] is %g, want %g\n",
                         name(s), b, l, i, double(got[l][i]), double(want));
            return 1;
          }
        }
    }
  }
  if (checkOnly)
    return 0;
  std::printf(
      "| micro-batch | schedule | us per window | samples/s | "
      "forward + backward-data | weight gradients in micro-steps | "
      "at the window's end | apply |\n|---|---|---|---|---|---|---|---|\n");
  for (size_t w = 0; w < batches.size(); ++w) {
    const int b = batches[w];
    Window &window = *windows[w];
    Parts best[kNumSchedules];
    for (int round = 0; round < 7; ++round) {
      for (int i = 0; i < kNumSchedules; ++i) {
        int s = round % 2 ? kNumSchedules - 1 - i : i;
        Parts parts;
        auto start = Clock::now();
        do
          window.run(kSchedules[s], parts);
        while (std::chrono::duration<double>(Clock::now() - start).count() <
               0.3);
        if (!best[s].windows ||
            parts.total() / parts.windows < best[s].total() / best[s].windows)
          best[s] = parts;
      }
    }
    for (int s = 0; s < kNumSchedules; ++s) {
      const Parts &p = best[s];
      double us = 1e6 / p.windows;
      std::printf("| %d | %s%s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n",
                  b, name(kSchedules[s]),
                  defers(kSchedules[s]) && !window.defersAny()
                      ? " (no layer: every stash would outgrow its "
                        "accumulator)"
                      : "",
                  p.total() * us, kAccumulate * b * p.windows / p.total(),
                  p.forwardAndData * us, p.gradientsInStep * us,
                  p.gradientsAtEnd * us, p.apply * us);
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> batches;
  bool checkOnly = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) {
      checkOnly = true;
      continue;
    }
    int b = std::atoi(argv[i]);
    if (b <= 0) {
      std::fprintf(stderr,
                   "usage: cleave-gemm-window [--check] [micro-batch ...]\n");
      return 2;
    }
    batches.push_back(b);
  }
  if (batches.empty())
    batches = {32, 256};
  // The runtime refusing the kernel table, or a kernel failing.
  try {
    return measure(batches, checkOnly);
  } catch (const std::runtime_error &e) {
    std::fprintf(stderr, "cleave-gemm-window: error: %s\n", e.what());
    return 1;
  }
}

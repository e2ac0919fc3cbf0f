//===- cleave_bench.cpp - Time an artifact's micro-step and apply step ----===//
//
// Loads an artifact and trains it on random data of the right shapes through
// the runtime's public API, the way cleave-train does. Prints one JSON
// object: ms per micro-step (apply excluded), ms per apply step, samples/s of
// the steady training loop with accumulation N (real samples: a window
// whose last micro-batch is short counts its window_samples), and peak RSS.
//
//   cleave-bench model.cleave --accumulate=N --seconds=S [--device=cuda[:K]]
//
// On a GPU (an artifact compiled with --target=cuda) a micro-step only
// enqueues work, so every timed phase ends by waiting for the GPU (asking
// for the loss), and the JSON also has the device memory in use at the end
// (the CUDA driver's cuMemGetInfo: total minus free, the whole GPU), which
// is the session's peak: a session allocates everything when it is created.
//
//===----------------------------------------------------------------------===//

#include "RandomBatch.h"
#include "cleave/runtime.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// MiB of memory in use on the current CUDA device (the driver's view of
/// the whole GPU), or -1 if the driver cannot say. The runtime made its
/// context current on this thread.
double deviceUsedMib() {
  void *driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver)
    return -1;
  using MemGetInfo = int (*)(size_t *, size_t *);
  auto fn = reinterpret_cast<MemGetInfo>(::dlsym(driver, "cuMemGetInfo_v2"));
  size_t free = 0, total = 0;
  if (!fn || fn(&free, &total) != 0)
    return -1;
  return double(total - free) / (1024.0 * 1024.0);
}

/// A size line of /proc/self/status ("VmRSS", "VmHWM") in MiB, or -1 if
/// the kernel cannot say. VmHWM is this program's peak: getrusage's
/// ru_maxrss also keeps the peak of the process image before exec (a
/// Python parent that imported torch, for one).
double statusMib(const char *key) {
  std::FILE *status = std::fopen("/proc/self/status", "r");
  if (!status)
    return -1;
  char line[256];
  long long kib = -1;
  const size_t length = std::strlen(key);
  while (std::fgets(line, sizeof(line), status))
    if (!std::strncmp(line, key, length) && line[length] == ':' &&
        std::sscanf(line + length + 1, "%lld", &kib) == 1)
      break;
  std::fclose(status);
  return kib < 0 ? -1 : double(kib) / 1024.0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cleave-bench model.cleave [--accumulate=N] "
                         "[--seconds=S] [--device=cpu|cuda[:K]]\n");
    return 2;
  }
  int64_t n = 0;
  double budget = 3.0;
  cleave::SessionOptions options;
  for (int i = 2; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--accumulate=", 13))
      n = std::atoll(argv[i] + 13);
    else if (!std::strncmp(argv[i], "--seconds=", 10))
      budget = std::atof(argv[i] + 10);
    else if (!std::strcmp(argv[i], "--device=cpu"))
      options.device = CLEAVE_DEVICE_CPU;
    else if (!std::strcmp(argv[i], "--device=cuda"))
      options.device = CLEAVE_DEVICE_CUDA;
    else if (!std::strncmp(argv[i], "--device=cuda:", 14)) {
      options.device = CLEAVE_DEVICE_CUDA;
      options.deviceOrdinal = std::atoi(argv[i] + 14);
    } else {
      std::fprintf(stderr, "cleave-bench: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  const bool gpu = options.device == CLEAVE_DEVICE_CUDA;
  try {
    cleave::Artifact artifact = cleave::Artifact::load(argv[1]);
    int64_t b = 0, artifactN = 0, window = 0;
    cleave_artifact_micro_batch(artifact.get(), &b);
    cleave_artifact_accumulate(artifact.get(), &artifactN);
    cleave_artifact_window_samples(artifact.get(), &window);
    if (n <= 0)
      n = artifactN;
    cleave::bench::RandomBatch data = cleave::bench::randomBatch(artifact, b);
    // A window that ends with a short micro-batch (the manifest's
    // window_samples), fed as cleave-train feeds it when N is the
    // artifact's: its first rows.
    const int64_t last = n == artifactN ? window - (n - 1) * b : b;
    cleave::Batch lastBatch = data.firstRows(last);
    // What the process holds before the session: the peak less this is what
    // the session cost (against the manifest's memory report). The peak
    // starts again from here (writing 5 to clear_refs resets VmHWM), so
    // that loading the artifact does not count.
    if (std::FILE *refs = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", refs);
      std::fclose(refs);
    }
    const double rssBeforeSession = statusMib("VmRSS");
    cleave::Session session(artifact, options);

    // Micro-steps alone: a window that never fills.
    session.setAccumulation(INT64_MAX / 2);
    for (int i = 0; i < 20; ++i)
      session.microStep(data.batch);
    int64_t micro = 0;
    auto t0 = Clock::now();
    // At least a few steps, so that a tiny --seconds still divides by a
    // count rather than printing inf into the JSON.
    while (seconds(t0, Clock::now()) < budget / 3 || micro < 10) {
      session.microStep(data.batch);
      ++micro;
    }
    // Waits for the GPU; a no-op on the CPU.
    (void)session.lastLoss();
    double microMs = seconds(t0, Clock::now()) / double(micro) * 1e3;

    // Apply steps alone: flush one-micro-step windows and time the flush.
    double applySum = 0;
    int64_t applies = 0;
    auto t1 = Clock::now();
    while (seconds(t1, Clock::now()) < budget / 3 || applies < 10) {
      session.microStep(data.batch);
      (void)session.lastLoss();
      auto a = Clock::now();
      session.flush();
      if (gpu) {
        // The apply step's own work: wait for it (through a read of the
        // step counter, which waits for the stream).
        (void)session.readGlobal<int64_t>("train.step");
      }
      applySum += seconds(a, Clock::now());
      ++applies;
    }
    double applyMs = applySum / double(applies) * 1e3;

    // The steady loop with accumulation N: what training throughput is.
    session.setAccumulation(n);
    int64_t steps = 0;
    auto t2 = Clock::now();
    while (seconds(t2, Clock::now()) < budget / 3 || steps < n ||
           steps % n != 0) {
      session.microStep(steps % n == n - 1 ? lastBatch : data.batch);
      ++steps;
    }
    (void)session.lastLoss();
    double samplesPerSecond =
        double(steps / n * ((n - 1) * b + last)) / seconds(t2, Clock::now());

    std::printf("{\"micro_batch\": %lld, \"accumulate\": %lld, "
                "\"ms_per_micro_step\": %.4f, \"ms_per_apply_step\": %.4f, "
                "\"samples_per_second\": %.1f, \"peak_rss_mib\": %.1f",
                (long long)b, (long long)n, microMs, applyMs, samplesPerSecond,
                statusMib("VmHWM"));
    std::printf(", \"rss_before_session_mib\": %.1f", rssBeforeSession);
    nlohmann::json manifest = nlohmann::json::parse(artifact.manifest());
    if (manifest.contains("memory"))
      std::printf(", \"memory_report_mib\": %.1f",
                  manifest["memory"].value("total", 0.0) / (1024.0 * 1024.0));
    if (gpu)
      std::printf(", \"device_used_mib\": %.1f", deviceUsedMib());
    // Why the numbers may be lower than they could be (an entry that runs
    // without a CUDA graph), in the row and on stderr.
    std::vector<std::string> notes = session.notes();
    std::printf(", \"notes\": [");
    for (size_t i = 0; i < notes.size(); ++i) {
      std::fprintf(stderr, "cleave-bench: note: %s\n", notes[i].c_str());
      std::printf("%s%s", i ? ", " : "",
                  nlohmann::json(notes[i]).dump().c_str());
    }
    std::printf("]}\n");
  } catch (const cleave::Error &e) {
    std::fprintf(stderr, "cleave-bench: error: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cleave-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

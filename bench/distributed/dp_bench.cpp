//===- dp_bench.cpp - Time and traffic of data-parallel windows -----------===//
//
// Run on every rank of an mpirun job:
//
//   mpirun -np R dp_bench MODEL.cleave --accumulate=N [--windows=W]
//          [--warmup=K] [--threads=T]
//
// trains W windows of N micro-batches (random data: only time and traffic
// are measured) after K warm-up windows and prints, on rank 0, one JSON
// line: the ranks, N, the time per window (median, best and mean over the
// windows, as seen by rank 0, ranks started together) and the payload bytes
// each rank sent per window (from cleave_session_bytes_sent). Used by
// bench/distributed/run.py; needs only libcleave_runtime.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string artifact;
  int64_t accumulate = 1;
  int64_t windows = 10;
  int64_t warmup = 2;
  int32_t threads = 1;
};

[[noreturn]] void usage(const std::string &why) {
  std::fprintf(stderr,
               "dp_bench: %s\nusage: dp_bench MODEL.cleave --accumulate=N "
               "[--windows=W] [--warmup=K] [--threads=T]\n",
               why.c_str());
  std::exit(2);
}

int64_t positive(const std::string &flag, const std::string &text,
                 int64_t min) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min)
    usage(flag + " needs an integer >= " + std::to_string(min));
  return v;
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char *v = value("--accumulate="))
      o.accumulate = positive("--accumulate", v, 1);
    else if (const char *v = value("--windows="))
      o.windows = positive("--windows", v, 1);
    else if (const char *v = value("--warmup="))
      o.warmup = positive("--warmup", v, 0);
    else if (const char *v = value("--threads="))
      o.threads = int32_t(positive("--threads", v, 1));
    else if (arg[0] != '-' && o.artifact.empty())
      o.artifact = arg;
    else
      usage("unknown argument '" + arg + "'");
  }
  if (o.artifact.empty())
    usage("no artifact");
  return o;
}

double milliseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace

int main(int argc, char **argv) try {
  const Options o = parse(argc, argv);
  cleave::Artifact artifact = cleave::Artifact::load(o.artifact);
  cleave::SessionOptions options;
  options.distributed = true;
  options.numThreads = o.threads;
  options.accumulate = o.accumulate;
  cleave::Session session(artifact, options);
  const auto [rank, ranks] = session.rank();

  // One full micro-batch of random inputs, reused: the contents do not
  // change the work.
  const int64_t b = artifact.microBatch();
  std::mt19937_64 engine(rank);
  std::vector<std::vector<unsigned char>> storage;
  cleave::Batch batch(b);
  for (const cleave::TensorInfo &in : artifact.inputs()) {
    storage.emplace_back(in.bytes);
    std::vector<unsigned char> &s = storage.back();
    if (in.dtype == CLEAVE_DTYPE_I64) {
      auto *labels = reinterpret_cast<int64_t *>(s.data());
      for (size_t i = 0; i < in.bytes / sizeof(int64_t); ++i)
        labels[i] = int64_t(engine() % 10);
    } else {
      auto *values = reinterpret_cast<float *>(s.data());
      for (size_t i = 0; i < in.bytes / sizeof(float); ++i)
        values[i] = float((engine() >> 40) * 0x1.0p-24);
    }
    batch.add(s.data(), s.size());
  }

  auto window = [&] {
    for (int64_t k = 0; k < o.accumulate; ++k)
      session.microStep(batch);
  };
  for (int64_t w = 0; w < o.warmup; ++w)
    window();
  // Start together: a sum is a barrier.
  double sync = 0;
  cleave::check(cleave_session_sum_across_ranks(session.get(), &sync, 1));

  std::vector<double> times;
  std::vector<double> bytes;
  for (int64_t w = 0; w < o.windows; ++w) {
    const auto start = std::chrono::steady_clock::now();
    window();
    times.push_back(milliseconds(std::chrono::steady_clock::now() - start));
    uint64_t sent = 0;
    cleave::check(cleave_session_bytes_sent(session.get(), &sent, nullptr));
    bytes.push_back(double(sent));
  }
  // Bytes per window of every rank: their mean and maximum over the job.
  double local[2] = {bytes.back(), 0};
  std::vector<double> perRank(ranks, 0.0);
  perRank[rank] = bytes.back();
  cleave::check(
      cleave_session_sum_across_ranks(session.get(), perRank.data(), ranks));
  cleave::check(cleave_session_sum_across_ranks(session.get(), local, 1));
  const bool constant = std::all_of(bytes.begin(), bytes.end(),
                                    [&](double v) { return v == bytes[0]; });

  if (rank == 0) {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double t : times)
      mean += t / double(times.size());
    std::printf("{\"ranks\": %d, \"accumulate\": %lld, \"micro_batch\": %lld, "
                "\"windows\": %lld, \"window_ms_median\": %.3f, "
                "\"window_ms_best\": %.3f, \"window_ms_mean\": %.3f, "
                "\"bytes_per_window_mean\": %.0f, "
                "\"bytes_per_window_max\": %.0f, "
                "\"bytes_constant_on_rank0\": %s}\n",
                ranks, (long long)o.accumulate, (long long)b,
                (long long)o.windows, sorted[sorted.size() / 2], sorted.front(),
                mean, local[0] / ranks,
                *std::max_element(perRank.begin(), perRank.end()),
                constant ? "true" : "false");
  }
  return 0;
} catch (const cleave::Error &e) {
  std::fprintf(stderr, "dp_bench: %s\n", e.what());
  return 1;
}

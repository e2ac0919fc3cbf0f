//===- DataParallelTest.cpp - Compiled windows across MPI ranks -----------===//
//
// The data-parallel contract of docs/design/distributed.md, checked on
// artifacts compiled by cleave-compile and trained through the runtime's C
// API on every rank of an mpirun job (R = 1 to 4, see CMakeLists.txt):
//
//   - mean: R ranks x N micro-batches x b samples give the parameters of one
//     process stepping on one batch of R*N*b samples, also for a flushed
//     window whose ranks saw different numbers of samples; all ranks end
//     bit-identical;
//   - traffic: one all-reduce of the accumulators per window, whatever N is
//     (and N of them when compiled with --reduce-every-micro-step);
//   - ZeRO-1: sharded optimizer state gives the parameters of the unsharded
//     artifact, each rank holds its 1/R of every optimizer state tensor,
//     and a window costs one reduce-scatter plus one all-gather;
//   - Adasum: the parameters follow the documented tree (docs/design/
//     adasum.md) applied, in double, to the deltas of per-rank
//     single-process sessions;
//   - checkpoints are collective, written and read by rank 0 alone, resume
//     mid-window to the same bits on every rank, and are refused, by every
//     rank and without changing state, by a job of another size;
//   - an artifact compiled for R ranks refuses any other job size;
//   - a NaN in one rank's window makes every rank skip that window (Adasum,
//     ZeRO-1 and mean), stopping or going on as the session is told;
//   - an executable (a graph artifact) loaded with the distributed option
//     reduces across the job's ranks.
//
// Every rank runs every test and makes the same collective calls; failures
// use EXPECT_* so that no rank leaves a test before its peers.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace cleave::distributed {
namespace {

constexpr int64_t kMicroBatch = 4; // b of every accumulating artifact
constexpr int64_t kWindow = 2;     // their N
constexpr int64_t kPixels = 28 * 28;
/// float32 parameters after a few optimizer steps summed in another order.
constexpr double kRelativeTolerance = 1e-5;

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int worldSize() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::string artifactPath(const std::string &name) {
  return std::string(CLEAVE_DISTRIBUTED_ARTIFACT_DIR) + "/" + name + ".cleave";
}

/// Images with pixels in [0, 1) and labels in [0, 10), the same on every
/// rank for one seed.
struct Data {
  std::vector<float> images;
  std::vector<int64_t> labels;

  Data(int64_t samples, uint64_t seed)
      : images(samples * kPixels), labels(samples) {
    std::mt19937_64 engine(seed);
    for (float &p : images)
      p = float((engine() >> 11) * 0x1.0p-53);
    for (int64_t &l : labels)
      l = int64_t(engine() % 10);
  }
  int64_t size() const { return int64_t(labels.size()); }
};

/// Samples [first, first + count) of `data` as a batch of `artifact`'s
/// inputs (whichever order the artifact declares them in).
Batch slice(const Artifact &artifact, const Data &data, int64_t first,
            int64_t count) {
  Batch batch(count);
  for (const TensorInfo &in : artifact.inputs()) {
    if (in.dtype == CLEAVE_DTYPE_I64)
      batch.add(data.labels.data() + first, size_t(count) * sizeof(int64_t));
    else
      batch.add(data.images.data() + first * kPixels,
                size_t(count * kPixels) * sizeof(float));
  }
  return batch;
}

/// Samples gathered from several ranges, in order, as one batch's storage.
Data gather(const Data &data,
            const std::vector<std::pair<int64_t, int64_t>> &ranges) {
  Data out(0, 0);
  for (auto [first, count] : ranges) {
    out.images.insert(out.images.end(), data.images.begin() + first * kPixels,
                      data.images.begin() + (first + count) * kPixels);
    out.labels.insert(out.labels.end(), data.labels.begin() + first,
                      data.labels.begin() + first + count);
  }
  return out;
}

std::vector<GlobalInfo> globalsOfKind(const Artifact &artifact,
                                      cleave_global_kind kind) {
  std::vector<GlobalInfo> out;
  for (const GlobalInfo &g : artifact.globals())
    if (g.kind == kind)
      out.push_back(g);
  return out;
}

using Tensors = std::map<std::string, std::vector<float>>;

Tensors readAll(const Session &session, cleave_global_kind kind) {
  Tensors out;
  for (const GlobalInfo &g : globalsOfKind(session.artifact(), kind))
    out[g.tensor.name] = session.readGlobal<float>(g.tensor.name);
  return out;
}

void writeAll(Session &session, const Tensors &tensors) {
  for (const auto &[name, values] : tensors)
    session.writeGlobal(name, values);
}

/// The largest elementwise difference over the largest magnitude of `b`:
/// rounding noise measured against the tensor's scale.
double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b) {
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(a[i] - b[i]));
    maxRef = std::max(maxRef, std::fabs(b[i]));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

double relativeDifference(const std::vector<float> &a,
                          const std::vector<float> &b) {
  return relativeDifference(toDouble(a), toDouble(b));
}

/// Whether every rank passed the same `tensors`, bit for bit: the CRC-32
/// of the bytes (exact in a double) has the same sum and sum of squares as R
/// copies of this rank's (equality in Cauchy-Schwarz).
bool identicalOnAllRanks(const Tensors &tensors) {
  uLong crc = ::crc32(0, Z_NULL, 0);
  for (const auto &[name, values] : tensors)
    crc = ::crc32_z(crc, reinterpret_cast<const Bytef *>(values.data()),
                    values.size() * sizeof(float));
  const double mine = double(crc);
  double local[2] = {mine, mine * mine}, sums[2] = {0, 0};
  MPI_Allreduce(local, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sums[0] == mine * worldSize() && sums[1] == mine * mine * worldSize();
}

/// The number of elements rank `rank` owns of a flat vector of `length`
/// elements in the communicator's ring (the first length % R ranks own one
/// more).
int64_t ringShard(int64_t length, int rank, int ranks) {
  return length / ranks + (rank < length % ranks ? 1 : 0);
}

/// Bytes rank `rank` sends to sum `length` floats over `ranks` ranks: the
/// ring reduce-scatter sends every shard but its own, the all-gather every
/// shard but the next rank's.
uint64_t allReduceBytes(int64_t length, int rank, int ranks) {
  if (ranks == 1)
    return 0;
  return 4 * uint64_t((length - ringShard(length, rank, ranks)) +
                      (length - ringShard(length, (rank + 1) % ranks, ranks)));
}

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t shardOf(int64_t n, int ranks) { return (n + ranks - 1) / ranks; }

uint64_t lastWindowBytes(const Session &session) {
  uint64_t bytes = 0;
  check(cleave_session_bytes_sent(session.get(), &bytes, nullptr));
  return bytes;
}

SessionOptions distributed(uint64_t seed) {
  SessionOptions options;
  options.seed = seed;
  options.distributed = true;
  options.numThreads = 1;
  return options;
}

SessionOptions local(uint64_t seed) {
  SessionOptions options;
  options.seed = seed;
  options.numThreads = 1;
  return options;
}

/// Adam with eps = 1e-4: with the default 1e-8, lr / eps amplifies float
/// rounding of near-zero gradients beyond any fixed tolerance (see
/// test/e2e/EquivalenceTest.cpp).
void setHyperparameters(Session &session, const std::string &optimizer) {
  // The adaptive rules move every element by about lr a step.
  if (optimizer == "adam" || optimizer == "rmsprop" || optimizer == "adagrad") {
    session.setHyperparameter("lr", 1e-3);
    session.setHyperparameter("eps", 1e-4);
  } else {
    session.setHyperparameter("lr", 0.05);
  }
}

//===----------------------------------------------------------------------===//
// Mean: the window of R ranks is one big batch
//===----------------------------------------------------------------------===//

/// The parameter names the artifacts: an optimizer on small_mlp, or
/// "cnn_momentum", small_cnn with momentum, whose convolutions hold their
/// weight gradients back in the layout cache until the apply step, which
/// must settle them before it reduces.
class MeanTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MeanTest, RanksTimesMicroBatchesEqualOneBigBatch) {
  const std::string optimizer = GetParam();
  const int rank = worldRank(), ranks = worldSize();
  const int64_t perWindow = ranks * kWindow * kMicroBatch;
  constexpr int64_t kFullWindows = 2;
  Data data(perWindow * kFullWindows + ranks * kMicroBatch, 11);

  Artifact small = Artifact::load(artifactPath("mean_b4_n2_" + optimizer));
  Artifact big = Artifact::load(
      artifactPath("ref_b" + std::to_string(perWindow) + "_" + optimizer));
  Session dp(small, distributed(5));
  Session one(big, local(6));
  // Rank 0's initial parameters, which every rank now holds.
  writeAll(one, readAll(dp, CLEAVE_GLOBAL_PARAM));
  setHyperparameters(dp, optimizer);
  setHyperparameters(one, optimizer);

  for (int64_t w = 0; w < kFullWindows; ++w) {
    const int64_t base = w * perWindow;
    for (int64_t k = 0; k < kWindow; ++k)
      dp.microStep(slice(small, data, base + (rank * kWindow + k) * kMicroBatch,
                         kMicroBatch));
    one.microStep(slice(big, data, base, perWindow));
  }
  // A flushed, ragged window: rank q contributes q + 1 samples, so the ranks
  // weigh differently, as their samples would in one batch.
  const int64_t tail = kFullWindows * perWindow;
  dp.microStep(slice(small, data, tail + rank * kMicroBatch, rank + 1));
  dp.flush();
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int q = 0; q < ranks; ++q)
    ranges.push_back({tail + q * kMicroBatch, q + 1});
  Data union_ = gather(data, ranges);
  one.microStep(slice(big, union_, 0, union_.size()));

  EXPECT_EQ(dp.step(), kFullWindows + 1);
  EXPECT_EQ(one.step(), kFullWindows + 1);
  const Tensors got = readAll(dp, CLEAVE_GLOBAL_PARAM);
  const Tensors want = readAll(one, CLEAVE_GLOBAL_PARAM);
  for (const auto &[name, values] : want)
    EXPECT_LE(relativeDifference(got.at(name), values), kRelativeTolerance)
        << name << " on rank " << rank << " of " << ranks;
  EXPECT_TRUE(identicalOnAllRanks(got));
}

INSTANTIATE_TEST_SUITE_P(Optimizers, MeanTest,
                         ::testing::Values("momentum", "adam", "cnn_momentum"));

//===----------------------------------------------------------------------===//
// Traffic: once per window
//===----------------------------------------------------------------------===//

TEST(TrafficTest, OneAllReducePerWindowWhateverN) {
  const int rank = worldRank(), ranks = worldSize();
  Data data(16 * kMicroBatch, 12);
  Artifact boundary = Artifact::load(artifactPath("mean_b4_n2_momentum"));
  Artifact every = Artifact::load(artifactPath("every_b4_n2_momentum"));
  // The window's reduction covers every accumulator: the gradients and the
  // sample count.
  int64_t accumulated = 0;
  for (const GlobalInfo &g : globalsOfKind(boundary, CLEAVE_GLOBAL_ACCUMULATOR))
    accumulated += elements(g.tensor.shape);
  const uint64_t reduced = allReduceBytes(accumulated, rank, ranks);

  Session dp(boundary, distributed(1));
  uint64_t totalBefore = 0, totalAfter = 0;
  check(cleave_session_bytes_sent(dp.get(), nullptr, &totalBefore));
  int64_t next = 0;
  for (int64_t n : {1, 4, 16}) {
    dp.setAccumulation(n);
    for (int64_t k = 0; k < n; ++k, next += kMicroBatch)
      dp.microStep(slice(boundary, data, next % data.size(), kMicroBatch));
    EXPECT_EQ(lastWindowBytes(dp), reduced) << "N = " << n;
  }
  check(cleave_session_bytes_sent(dp.get(), nullptr, &totalAfter));
  EXPECT_EQ(totalAfter - totalBefore, 3 * reduced);

  // The baseline reduces in each of the window's micro-steps.
  Session eager(every, distributed(1));
  eager.setAccumulation(4);
  for (int64_t k = 0; k < 4; ++k)
    eager.microStep(slice(every, data, k * kMicroBatch, kMicroBatch));
  EXPECT_EQ(lastWindowBytes(eager), 4 * reduced);
}

//===----------------------------------------------------------------------===//
// ZeRO-1
//===----------------------------------------------------------------------===//

/// The elementwise optimizers ZeRO-1 runs, with their number of state
/// tensors per parameter.
class ZeroTest : public ::testing::TestWithParam<std::pair<std::string, int>> {
};

TEST_P(ZeroTest, ShardedOptimizerStateMatchesUnsharded) {
  const auto &[optimizer, slots] = GetParam();
  const int rank = worldRank(), ranks = worldSize();
  const int64_t perWindow = ranks * kWindow * kMicroBatch;
  constexpr int64_t kWindows = 3;
  Data data(perWindow * kWindows, 13);
  Artifact sharded = Artifact::load(
      artifactPath("zero_r" + std::to_string(ranks) + "_" + optimizer));
  Artifact whole =
      Artifact::load(artifactPath("mean_b4_n2_" + optimizer + "_clip"));
  Session z(sharded, distributed(2));
  Session m(whole, distributed(2));
  writeAll(z, readAll(m, CLEAVE_GLOBAL_PARAM));
  for (Session *s : {&z, &m}) {
    setHyperparameters(*s, optimizer);
    // Small enough that clipping scales every window's gradient.
    s->setHyperparameter("clip_norm", 0.05);
  }
  for (int64_t w = 0; w < kWindows; ++w)
    for (int64_t k = 0; k < kWindow; ++k) {
      const int64_t first = w * perWindow + (rank * kWindow + k) * kMicroBatch;
      z.microStep(slice(sharded, data, first, kMicroBatch));
      m.microStep(slice(whole, data, first, kMicroBatch));
    }

  const Tensors zp = readAll(z, CLEAVE_GLOBAL_PARAM);
  const Tensors mp = readAll(m, CLEAVE_GLOBAL_PARAM);
  for (const auto &[name, values] : mp)
    EXPECT_LE(relativeDifference(zp.at(name), values), kRelativeTolerance)
        << name;
  EXPECT_TRUE(identicalOnAllRanks(zp));

  // Each rank holds its shard of every optimizer state tensor, a 1/R of it:
  // the unsharded state's elements [r s, (r + 1) s), zero past the end.
  std::map<std::string, int64_t> paramSize;
  for (const GlobalInfo &p : globalsOfKind(whole, CLEAVE_GLOBAL_PARAM))
    paramSize[p.tensor.name] = elements(p.tensor.shape);
  const Tensors zs = readAll(z, CLEAVE_GLOBAL_STATE);
  const Tensors ms = readAll(m, CLEAVE_GLOBAL_STATE);
  EXPECT_EQ(zs.size(), slots * paramSize.size());
  int64_t shardElements = 0;
  for (const GlobalInfo &g : globalsOfKind(sharded, CLEAVE_GLOBAL_STATE)) {
    const std::string &name = g.tensor.name;
    const int64_t n = paramSize.at(g.of), s = shardOf(n, ranks);
    EXPECT_EQ(g.tensor.shape, std::vector<int64_t>{s}) << name;
    EXPECT_EQ(int64_t(ms.at(name).size()), n) << name;
    const std::vector<float> &shard = zs.at(name);
    const int64_t begin = std::min(n, rank * s), end = std::min(n, begin + s);
    std::vector<float> expected(ms.at(name).begin() + begin,
                                ms.at(name).begin() + end);
    expected.resize(s, 0.0f);
    EXPECT_LE(relativeDifference(shard, expected), kRelativeTolerance) << name;
    for (int64_t i = end - begin; i < s; ++i)
      EXPECT_EQ(shard[i], 0.0f) << name << " padding element " << i;
  }
  for (const auto &[name, n] : paramSize)
    shardElements += shardOf(n, ranks);

  // A window: reduce-scatter and all-gather of R shards of S floats, plus
  // the sums of the loss and the sample count (two floats), of the clipping
  // norm (one) and of the window check's flags (one per accumulator).
  const int64_t accumulators =
      int64_t(globalsOfKind(sharded, CLEAVE_GLOBAL_ACCUMULATOR).size());
  const uint64_t expectedBytes =
      2 * 4 * uint64_t(ranks - 1) * uint64_t(shardElements) +
      allReduceBytes(2, rank, ranks) + allReduceBytes(1, rank, ranks) +
      allReduceBytes(accumulators, rank, ranks);
  EXPECT_EQ(lastWindowBytes(z), expectedBytes);
}

INSTANTIATE_TEST_SUITE_P(
    , ZeroTest,
    ::testing::Values(std::pair<std::string, int>{"adam", 2},
                      std::pair<std::string, int>{"rmsprop", 1},
                      std::pair<std::string, int>{"adagrad", 1}),
    [](const auto &info) { return info.param.first; });

TEST(ZeroRefusalTest, RefusesAnotherJobSize) {
  const int ranks = worldSize();
  const int other = ranks == 2 ? 3 : 2;
  Artifact sharded =
      Artifact::load(artifactPath("zero_r" + std::to_string(other) + "_adam"));
  try {
    Session z(sharded, distributed(0));
    ADD_FAILURE() << "a session of an artifact for " << other
                  << " ranks was created in a job of " << ranks;
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find(
                  "compiled for " + std::to_string(other) +
                  " data-parallel ranks (its optimizer state is sharded over "
                  "them), but this session has " +
                  std::to_string(ranks)),
              std::string::npos)
        << e.what();
  }
  // Without the distributed option a session is one rank.
  try {
    Session z(sharded, local(0));
    ADD_FAILURE() << "a single-rank session of an artifact for " << other
                  << " ranks was created";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("mpirun -np " + std::to_string(other)),
              std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// Adasum: the documented tree over per-rank deltas
//===----------------------------------------------------------------------===//

/// adasum(a, b) of docs/design/adasum.md, in double, zero vectors having no
/// direction.
std::vector<double> adasumPair(const std::vector<double> &a,
                               const std::vector<double> &b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double ca = aa == 0 ? 0 : 1 - dot / (2 * aa);
  const double cb = bb == 0 ? 0 : 1 - dot / (2 * bb);
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = (aa == 0 ? 0 : ca * a[i]) + (bb == 0 ? 0 : cb * b[i]);
  return out;
}

/// The tree of docs/design/adasum.md: fold ranks P.. R-1 into 0.. R-P-1,
/// then a balanced tree over the P (a power of two) remaining ranks.
std::vector<double> adasumTree(std::vector<std::vector<double>> v) {
  const size_t ranks = v.size();
  size_t p = 1;
  while (p * 2 <= ranks)
    p *= 2;
  for (size_t i = 0; i + p < ranks; ++i)
    v[i] = adasumPair(v[i], v[p + i]);
  for (size_t d = 1; d < p; d *= 2)
    for (size_t i = 0; i < p; i += 2 * d)
      v[i] = adasumPair(v[i], v[i + d]);
  return v[0];
}

TEST(AdasumTest, ParametersFollowTheTreeOfPerRankDeltas) {
  const int rank = worldRank(), ranks = worldSize();
  constexpr int64_t kWindows = 2;
  const int64_t perWindow = ranks * kWindow * kMicroBatch;
  Data data(perWindow * kWindows, 14);
  Artifact artifact = Artifact::load(artifactPath("adasum_b4_n2_momentum"));
  Session dp(artifact, distributed(3));
  // Rank q of the job, replayed in this process by a single-process session
  // (its cross-rank reduction is the identity) on rank q's samples.
  std::vector<Session> alone;
  const Tensors initial = readAll(dp, CLEAVE_GLOBAL_PARAM);
  for (int q = 0; q < ranks; ++q) {
    alone.emplace_back(artifact, local(3));
    writeAll(alone.back(), initial);
    setHyperparameters(alone.back(), "momentum");
  }
  setHyperparameters(dp, "momentum");

  for (int64_t w = 0; w < kWindows; ++w) {
    const Tensors before = readAll(dp, CLEAVE_GLOBAL_PARAM);
    std::map<std::string, std::vector<std::vector<double>>> deltas;
    for (int q = 0; q < ranks; ++q) {
      for (int64_t k = 0; k < kWindow; ++k)
        alone[q].microStep(slice(
            artifact, data, w * perWindow + (q * kWindow + k) * kMicroBatch,
            kMicroBatch));
      for (const auto &[name, after] : readAll(alone[q], CLEAVE_GLOBAL_PARAM)) {
        std::vector<double> d(after.size());
        for (size_t i = 0; i < d.size(); ++i)
          d[i] = double(after[i]) - double(before.at(name)[i]);
        deltas[name].push_back(std::move(d));
      }
    }
    for (int64_t k = 0; k < kWindow; ++k)
      dp.microStep(slice(artifact, data,
                         w * perWindow + (rank * kWindow + k) * kMicroBatch,
                         kMicroBatch));
    const Tensors after = readAll(dp, CLEAVE_GLOBAL_PARAM);

    Tensors next;
    for (auto &[name, perRank] : deltas) {
      const std::vector<double> combined = adasumTree(perRank);
      std::vector<double> got(combined.size());
      for (size_t i = 0; i < got.size(); ++i)
        got[i] = double(after.at(name)[i]) - double(before.at(name)[i]);
      EXPECT_LE(relativeDifference(got, combined), kRelativeTolerance)
          << name << ", window " << w << ", " << ranks << " ranks";
      if (ranks > 1) {
        // The comparison tells Adasum from a sum or a mean of the deltas.
        std::vector<double> sum(combined.size(), 0.0);
        for (const std::vector<double> &d : perRank)
          for (size_t i = 0; i < d.size(); ++i)
            sum[i] += d[i];
        std::vector<double> mean(sum);
        for (double &x : mean)
          x /= ranks;
        EXPECT_GT(relativeDifference(sum, combined), 100 * kRelativeTolerance);
        EXPECT_GT(relativeDifference(mean, combined), 100 * kRelativeTolerance);
      }
      std::vector<float> &p = next[name];
      for (size_t i = 0; i < combined.size(); ++i)
        p.push_back(float(double(before.at(name)[i]) + combined[i]));
    }
    // Every replayed rank continues from the combined parameters, with its
    // own optimizer state, as the job's ranks do.
    for (Session &s : alone)
      writeAll(s, next);
  }
  EXPECT_TRUE(identicalOnAllRanks(readAll(dp, CLEAVE_GLOBAL_PARAM)));
}

//===----------------------------------------------------------------------===//
// A window that is not finite on one rank is skipped by every rank
//===----------------------------------------------------------------------===//

/// The reductions whose ranks hold different sums when the check runs:
/// Adasum (each rank's own window) and ZeRO-1 (each rank's shards), beside
/// the mean, whose sums are reduced before it (at the window's end, or in
/// every micro-step). With the session's on_nonfinite setting.
using NonFiniteCase = std::pair<std::string, int32_t>;
class NonFiniteTest : public ::testing::TestWithParam<NonFiniteCase> {};

TEST_P(NonFiniteTest, OneRanksNaNSkipsTheWindowOnEveryRank) {
  const auto &[reduce, onNonfinite] = GetParam();
  const int rank = worldRank(), ranks = worldSize();
  const int64_t perWindow = ranks * kWindow * kMicroBatch;
  constexpr int64_t kWindows = 3;
  Data data(perWindow * kWindows, 16);
  // One pixel of the last rank's first micro-batch of window 2.
  data.images[((1 * perWindow) + (ranks - 1) * kWindow * kMicroBatch) *
                  kPixels +
              100] = std::numeric_limits<float>::quiet_NaN();
  const std::map<std::string, std::string> artifacts = {
      {"zero", "zero_r" + std::to_string(ranks) + "_adam"},
      {"adasum", "adasum_b4_n2_momentum"},
      {"every", "every_b4_n2_momentum"},
      {"mean", "mean_b4_n2_momentum"}};
  const std::string &name = artifacts.at(reduce);
  const std::string optimizer = reduce == "zero" ? "adam" : "momentum";
  Artifact artifact = Artifact::load(artifactPath(name));
  SessionOptions options = distributed(4);
  options.onNonfinite = onNonfinite;
  Session s(artifact, options);
  setHyperparameters(s, optimizer);
  auto window = [&](int64_t w) {
    for (int64_t k = 0; k < kWindow; ++k)
      s.microStep(slice(artifact, data,
                        w * perWindow + (rank * kWindow + k) * kMicroBatch,
                        kMicroBatch));
  };
  auto counter = [&](const char *global) {
    return s.readGlobal<int64_t>(global).at(0);
  };

  window(0);
  ASSERT_EQ(s.step(), 1);
  const Tensors params = readAll(s, CLEAVE_GLOBAL_PARAM);
  const Tensors state = readAll(s, CLEAVE_GLOBAL_STATE);
  if (onNonfinite == CLEAVE_NONFINITE_STOP) {
    try {
      window(1);
      ADD_FAILURE() << "rank " << rank << " applied the window";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), CLEAVE_NON_FINITE) << e.what();
      EXPECT_NE(std::string(e.what()).find(
                    ": window 2 (optimizer step 2): the gradient of 'fc1."),
                std::string::npos)
          << e.what();
    }
  } else {
    window(1);
  }
  // Every rank skipped it: nothing changed, and the accumulators start the
  // next window from zero.
  EXPECT_EQ(s.step(), 1) << "rank " << rank;
  EXPECT_EQ(counter("train.skipped_steps"), 1) << "rank " << rank;
  EXPECT_NE(counter("train.nonfinite"), 0) << "rank " << rank;
  EXPECT_EQ(readAll(s, CLEAVE_GLOBAL_PARAM), params) << "rank " << rank;
  EXPECT_EQ(readAll(s, CLEAVE_GLOBAL_STATE), state) << "rank " << rank;
  for (const auto &[global, values] : readAll(s, CLEAVE_GLOBAL_ACCUMULATOR))
    EXPECT_EQ(values, std::vector<float>(values.size(), 0.f)) << global;

  // The next window is applied as optimizer step 2, the same on every rank.
  window(2);
  EXPECT_EQ(s.step(), 2);
  EXPECT_EQ(counter("train.nonfinite"), 0);
  const Tensors next = readAll(s, CLEAVE_GLOBAL_PARAM);
  for (const auto &[global, values] : next) {
    EXPECT_NE(values, params.at(global)) << global;
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float v) {
      return std::isfinite(v);
    })) << global;
  }
  EXPECT_TRUE(identicalOnAllRanks(next));
}

INSTANTIATE_TEST_SUITE_P(
    Reductions, NonFiniteTest,
    ::testing::Values(NonFiniteCase("adasum", CLEAVE_NONFINITE_STOP),
                      NonFiniteCase("adasum", CLEAVE_NONFINITE_SKIP),
                      NonFiniteCase("zero", CLEAVE_NONFINITE_STOP),
                      NonFiniteCase("zero", CLEAVE_NONFINITE_SKIP),
                      NonFiniteCase("mean", CLEAVE_NONFINITE_STOP),
                      NonFiniteCase("every", CLEAVE_NONFINITE_SKIP)),
    [](const auto &info) {
      return info.param.first +
             (info.param.second == CLEAVE_NONFINITE_STOP ? "_stop" : "_skip");
    });

//===----------------------------------------------------------------------===//
// Checkpoints: collective, rank 0 alone reads and writes the file
//===----------------------------------------------------------------------===//

TEST(CheckpointTest, RankZeroWritesTheJobsCheckpointAndItResumesMidWindow) {
  const int rank = worldRank(), ranks = worldSize();
  const int64_t perWindow = ranks * kWindow * kMicroBatch;
  constexpr int64_t kWindows = 3;
  Data data(perWindow * kWindows, 15);
  Artifact artifact =
      Artifact::load(artifactPath("zero_r" + std::to_string(ranks) + "_adam"));
  const std::string dir = std::string(CLEAVE_DISTRIBUTED_TMPDIR) + "/np" +
                          std::to_string(ranks) + "-checkpoint";
  if (rank == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string path = dir + "/job.ckpt";
  auto microStep = [&](Session &s, int64_t i) {
    const int64_t w = i / kWindow, k = i % kWindow;
    s.microStep(slice(artifact, data,
                      w * perWindow + (rank * kWindow + k) * kMicroBatch,
                      kMicroBatch));
  };
  constexpr int64_t kStopAt = 3; // mid-window: its accumulators are per rank
  constexpr int64_t kTotal = kWindows * kWindow;

  Session straight(artifact, distributed(9));
  setHyperparameters(straight, "adam");
  for (int64_t i = 0; i < kStopAt; ++i)
    microStep(straight, i);
  // Only rank 0 writes, and only `path` (ranks > 0 pass a path nobody may
  // write, which must not matter).
  straight.saveCheckpoint(rank == 0 ? path : dir + "/absent/not-written.ckpt");
  MPI_Barrier(MPI_COMM_WORLD);
  std::set<std::string> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    files.insert(entry.path().filename().string());
  EXPECT_EQ(files, std::set<std::string>{"job.ckpt"});
  for (int64_t i = kStopAt; i < kTotal; ++i)
    microStep(straight, i);

  // Another seed: every value, on every rank, comes from the checkpoint.
  Session resumed(artifact, distributed(1234));
  resumed.loadCheckpoint(rank == 0 ? path : std::string("ignored"));
  EXPECT_EQ(resumed.microSteps(), kStopAt % kWindow);
  for (int64_t i = kStopAt; i < kTotal; ++i)
    microStep(resumed, i);

  for (cleave_global_kind kind :
       {CLEAVE_GLOBAL_PARAM, CLEAVE_GLOBAL_STATE, CLEAVE_GLOBAL_ACCUMULATOR}) {
    const Tensors a = readAll(straight, kind), b = readAll(resumed, kind);
    for (const auto &[name, values] : a)
      EXPECT_EQ(values, b.at(name)) << name << " differs after resuming";
  }
  EXPECT_EQ(resumed.step(), straight.step());
}

TEST(CheckpointTest, RanksRefuseACheckpointOfAnotherJobSizeTogether) {
  const int rank = worldRank(), ranks = worldSize();
  if (ranks == 1)
    GTEST_SKIP() << "needs a data-parallel job";
  const std::string dir = std::string(CLEAVE_DISTRIBUTED_TMPDIR) + "/np" +
                          std::to_string(ranks) + "-foreign-checkpoint";
  Artifact mean = Artifact::load(artifactPath("mean_b4_n2_adam_clip"));
  // A single-process session's checkpoint, written by rank 0 alone.
  if (rank == 0) {
    std::filesystem::create_directories(dir);
    Session one(mean, local(0));
    one.saveCheckpoint(dir + "/single.ckpt");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Session job(mean, distributed(0));
  const std::vector<float> before = job.readGlobal<float>(
      mean.globals().front().tensor.name);
  try {
    job.loadCheckpoint(dir + "/single.ckpt");
    ADD_FAILURE() << "rank " << rank << " loaded a single-process checkpoint";
  } catch (const Error &e) {
    const std::string expected =
        rank == 0 ? "holds the state of a single-process session, this "
                    "session is rank 0 of " +
                        std::to_string(ranks)
                  : "holds no state for rank " + std::to_string(rank) +
                        " of " + std::to_string(ranks);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(job.readGlobal<float>(mean.globals().front().tensor.name), before)
      << "a failed load changed the session";
  // And a single-process session refuses the job's checkpoint.
  job.saveCheckpoint(dir + "/job.ckpt");
  if (rank == 0) {
    Session one(mean, local(0));
    try {
      one.loadCheckpoint(dir + "/job.ckpt");
      ADD_FAILURE() << "a single-process session loaded a job's checkpoint";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(
                    "holds the state of rank 0 of " + std::to_string(ranks) +
                    ", this session is a single-process session"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ExecutableTest, ADistributedExecutableReducesAcrossTheJob) {
  const int rank = worldRank();
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  cleave_executable_options options;
  cleave_executable_options_init(&options);
  options.distributed = 1;
  cleave_executable *exe = nullptr;
  ASSERT_EQ(cleave_executable_load(CLEAVE_GRAPH_ARTIFACT, &options, &exe),
            CLEAVE_OK)
      << cleave_last_error_message();
  struct alignas(64) {
    float v[4];
  } w;
  for (int i = 0; i < 4; ++i)
    w.v[i] = float((rank + 1) * (i + 1));
  void *args[] = {w.v};
  EXPECT_EQ(cleave_executable_run(exe, "sum_ranks", args, 1), CLEAVE_OK)
      << cleave_last_error_message();
  // 1 + 2 + ... + R, times i + 1.
  const float ranksSum = float(ranks * (ranks + 1) / 2);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(w.v[i], ranksSum * float(i + 1)) << i;
  cleave_executable_destroy(exe);
}

} // namespace
} // namespace cleave::distributed

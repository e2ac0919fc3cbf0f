//===- FakeGpuDataParallelTest.cpp - cuda sessions of a data-parallel job -===//
//
// Runs under mpirun with two ranks, each a cuda session on the fake CUDA
// driver (test/unit/runtime/session/FakeCudaDriver.c, whose device memory is
// host memory) and the fake NCCL beside it (FakeNccl.c, whose all-reduce is
// an MPI_Allreduce launched as a fake kernel on the session's stream). The
// runtime's GPU data-parallel path then runs for real without a GPU: one
// GPU per rank, the NCCL communicator bootstrapped over MPI, the window's
// reduction enqueued on the stream and captured into the apply step's
// graph, Adasum staged through the host, and every rank failing together
// when one cannot take part.
//
// The CPU sessions of the same model in the same job are the reference:
// with two ranks a sum is exact whatever the order, so a cuda rank must
// hold exactly the CPU rank's parameters after every window.
//
// Run with FAKE_CUDA_UNIFORM=1 (both fake GPUs sm_90) and the fake NCCL on
// LD_LIBRARY_PATH; GpuPlacement and NoNccl run in a job of their own, with
// CLEAVE_NCCL_LIBRARY naming a file that does not exist.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace cleave;
using namespace cleave::test;

namespace {

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

SessionOptions distributedOn(int32_t device, int32_t ordinal) {
  SessionOptions options;
  options.seed = 7;
  options.distributed = true;
  options.device = device;
  options.deviceOrdinal = ordinal;
  return options;
}

/// What creating a cuda session of `artifact` answers on this rank.
std::string createError(const char *artifact, int32_t ordinal) {
  Artifact a = Artifact::load(artifact);
  try {
    Session session(a, distributedOn(CLEAVE_DEVICE_CUDA, ordinal));
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_FAILED_PRECONDITION);
    return e.what();
  }
  return "(created)";
}

/// A counter of a fake library; null before the first session loads it
/// (its counters are then zero).
template <typename T> T fakeSymbol(const char *library, const char *name) {
  void *handle = ::dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    return nullptr;
  auto symbol = reinterpret_cast<T>(::dlsym(handle, name));
  EXPECT_NE(symbol, nullptr) << library << " has no " << name
                             << ": not the fake";
  return symbol;
}

int64_t ncclAllReduceCalls() {
  auto fn = fakeSymbol<int64_t (*)()>("libnccl.so.2",
                                      "fake_nccl_all_reduce_calls");
  return fn ? fn() : 0;
}

fake_cuda_stats_t driverStats() {
  auto fn = fakeSymbol<fake_cuda_stats_t (*)()>("libcuda.so.1",
                                                "fake_cuda_stats");
  return fn ? fn() : fake_cuda_stats_t{};
}

uint64_t lastWindowBytes(const Session &session) {
  uint64_t bytes = 0;
  check(cleave_session_bytes_sent(session.get(), &bytes, nullptr));
  return bytes;
}

/// Trains a CPU and a cuda session of the same model (CPU and cuda builds
/// of the SGD fake) for `windows` windows of N = 4 micro-batches, each rank
/// on data of its own, and expects the same state after every window.
void trainSideBySide(const char *cpuArtifact, const char *gpuArtifact,
                     int windows) {
  Artifact cpuA = Artifact::load(cpuArtifact);
  Artifact gpuA = Artifact::load(gpuArtifact);
  Session cpu(cpuA, distributedOn(CLEAVE_DEVICE_CPU, 0));
  Session gpu(gpuA, distributedOn(CLEAVE_DEVICE_CUDA,
                                  CLEAVE_DEVICE_ORDINAL_AUTO));
  ASSERT_EQ(gpu.rank().second, 2);
  ASSERT_EQ(snapshotGlobals(gpu), snapshotGlobals(cpu));
  Data data = makeData(windows * 4 * kMicroBatch, 11 + worldRank());
  for (int w = 0; w < windows; ++w) {
    for (int k = 0; k < 4; ++k) {
      Data part = data.slice((w * 4 + k) * kMicroBatch, kMicroBatch);
      Batch b = part.batch();
      cpu.microStep(b);
      gpu.microStep(b);
    }
    SCOPED_TRACE("window " + std::to_string(w));
    ASSERT_EQ(gpu.step(), w + 1);
    ASSERT_EQ(snapshotGlobals(gpu), snapshotGlobals(cpu));
    // The GPU's collectives are counted as the CPU's (with two ranks a ring
    // all-reduce per buffer sends what one of the packed buffers does),
    // also when the apply step is a replayed graph.
    EXPECT_GT(lastWindowBytes(cpu), 0u);
    EXPECT_EQ(lastWindowBytes(gpu), lastWindowBytes(cpu));
  }
  // The parameters moved, and the ranks agree on them (each trained on its
  // own data, so only the reduction makes them equal).
  std::vector<float> weight = gpu.readGlobal<float>("fc.weight");
  std::vector<float> rank0 = weight;
  MPI_Bcast(rank0.data(), int(rank0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(weight, rank0);
}

TEST(FakeGpuDataParallel, NcclReductionTrainsLikeMpiOnTheCpu) {
  const int64_t callsBefore = ncclAllReduceCalls();
  const int64_t graphsBefore = driverStats().graph_launches;
  trainSideBySide(CLEAVE_FAKE_SGD, CLEAVE_FAKE_SGD_CUDA, /*windows=*/6);
  // One all-reduce per buffer (gradients, bias gradients, sample count)
  // enqueued per window while the apply step ran directly; once it is
  // captured, its graph replays them with no call into NCCL.
  const int64_t calls = ncclAllReduceCalls() - callsBefore;
  EXPECT_GT(calls, 0);
  EXPECT_EQ(calls % 3, 0);
  EXPECT_LT(calls, 6 * 3) << "the apply step was never captured";
  EXPECT_GT(driverStats().graph_launches - graphsBefore, 0);
}

TEST(FakeGpuDataParallel, AdasumStagesThroughTheHost) {
  const int64_t callsBefore = ncclAllReduceCalls();
  trainSideBySide(CLEAVE_FAKE_SGD_ADASUM, CLEAVE_FAKE_SGD_CUDA_ADASUM,
                  /*windows=*/4);
  EXPECT_EQ(ncclAllReduceCalls(), callsBefore) << "Adasum is not NCCL's";
}

// A checkpoint of the job, saved mid-window, resumes on the GPUs: every
// rank's restored state reaches its device before it trains on.
TEST(FakeGpuDataParallel, ACheckpointResumesOnTheGpus) {
  const int rank = worldRank();
  const std::string dir = std::string(CLEAVE_TEST_TMPDIR) + "/gpu-checkpoint";
  if (rank == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string path = dir + "/job.ckpt";
  constexpr int kStopAt = 6, kTotal = 12; // N = 4: mid-window
  Data data = makeData(kTotal * kMicroBatch, 21 + rank);
  auto microStep = [&](Session &s, int i) {
    Data part = data.slice(i * kMicroBatch, kMicroBatch); // b points into it
    Batch b = part.batch();
    s.microStep(b);
  };
  Artifact artifact = Artifact::load(CLEAVE_FAKE_SGD_CUDA);
  Session straight(artifact,
                   distributedOn(CLEAVE_DEVICE_CUDA, CLEAVE_DEVICE_ORDINAL_AUTO));
  for (int i = 0; i < kStopAt; ++i)
    microStep(straight, i);
  straight.saveCheckpoint(rank == 0 ? path : std::string("ignored"));
  for (int i = kStopAt; i < kTotal; ++i)
    microStep(straight, i);

  // Another seed: every value on the GPUs must come from the checkpoint.
  SessionOptions other =
      distributedOn(CLEAVE_DEVICE_CUDA, CLEAVE_DEVICE_ORDINAL_AUTO);
  other.seed = 1234;
  Session resumed(artifact, other);
  resumed.loadCheckpoint(rank == 0 ? path : std::string("ignored"));
  ASSERT_EQ(resumed.step(), kStopAt / 4);
  for (int i = kStopAt; i < kTotal; ++i)
    microStep(resumed, i);
  EXPECT_EQ(resumed.step(), straight.step());
  EXPECT_EQ(snapshotGlobals(resumed), snapshotGlobals(straight));
  // Trained, and trained on numbers: NaN bytes would compare equal too.
  for (float w : straight.readGlobal<float>("fc.weight"))
    ASSERT_TRUE(std::isfinite(w));
}

TEST(FakeGpuDataParallel, OneGpuForSeveralRanksIsRefused) {
  std::string error = createError(CLEAVE_FAKE_SGD_CUDA, /*ordinal=*/0);
  EXPECT_NE(error.find("2 ranks of the job run on "), std::string::npos)
      << error;
  EXPECT_NE(error.find("and all would use GPU 0; NCCL needs one GPU per rank"),
            std::string::npos)
      << error;
}

TEST(FakeGpuDataParallel, ARankThatCannotJoinNcclFailsTheJob) {
  ASSERT_EQ(::setenv("FAKE_NCCL_FAIL_RANK", "1", 1), 0);
  std::string error =
      createError(CLEAVE_FAKE_SGD_CUDA, CLEAVE_DEVICE_ORDINAL_AUTO);
  ASSERT_EQ(::unsetenv("FAKE_NCCL_FAIL_RANK"), 0);
  if (worldRank() == 1)
    EXPECT_NE(error.find("rank 1 (GPU 1 (Fake GPU, sm_90)): cannot join the "
                         "NCCL communicator: NCCL error 2 (system error "
                         "(fake NCCL))"),
              std::string::npos)
        << error;
  else
    EXPECT_NE(error.find("joining the NCCL communicator failed on 1 of the "
                         "job's 2 ranks"),
              std::string::npos)
        << error;
  // The failure left nothing behind: the next session joins and trains.
  trainSideBySide(CLEAVE_FAKE_SGD, CLEAVE_FAKE_SGD_CUDA, /*windows=*/1);
}

// In a job of its own (with NoNccl): no other test may have opened GPU 1
// in this process before, since the runtime opens a device once.
TEST(GpuPlacement, EachRankTakesAGpuOfItsOwn) {
  // One GPU on this machine: rank 1, the second process here, takes GPU 1
  // and fails; rank 0, whose GPU 0 is fine, fails with it instead of
  // waiting for it in a collective.
  ASSERT_EQ(::setenv("FAKE_CUDA_DEVICES", "1", 1), 0);
  std::string error =
      createError(CLEAVE_FAKE_SGD_CUDA, CLEAVE_DEVICE_ORDINAL_AUTO);
  ASSERT_EQ(::unsetenv("FAKE_CUDA_DEVICES"), 0);
  if (worldRank() == 1) {
    EXPECT_NE(error.find("no CUDA device 1 (this machine has 1: 0 to 0) "
                         "(rank 1 is the 2nd of 2 processes on "),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(", and each takes a GPU of its own)"),
              std::string::npos)
        << error;
  } else {
    EXPECT_NE(error.find("opening a GPU failed on 1 of the job's 2 ranks"),
              std::string::npos)
        << error;
  }
}

TEST(NoNccl, EveryRankSaysWhy) {
  std::string error =
      createError(CLEAVE_FAKE_SGD_CUDA, CLEAVE_DEVICE_ORDINAL_AUTO);
  EXPECT_NE(error.find("fake_sgd_cuda.cleave: data-parallel training on GPU " +
                       std::to_string(worldRank()) + " (Fake GPU, sm_90): "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("rank " + std::to_string(worldRank()) +
                       ": no NCCL (/nonexistent/libnccl.so.2 not found"),
            std::string::npos)
      << error;
}

} // namespace

//===- FakeGpuTest.cpp - cuda sessions on a fake CUDA driver --------------===//
//
// The device session end to end without a GPU: this program runs with
// FakeCudaDriver.c's libcuda.so.1 on LD_LIBRARY_PATH, whose device memory is
// host memory, so the SGD fake compiled as a cuda artifact (FakeArtifact.c
// with FAKE_CUDA) can compute on the pointers it is given. A cuda session
// must then train exactly as a CPU session of the CPU build of the same
// model: same initial values (computed on the host and copied up), same
// steps, losses, partial windows, hyperparameter changes, checkpoints.
// The fake artifact does all its work in kernels, as a compiled one does, so
// that the CUDA graphs the session captures after the first steps replay all
// of it. Also: the one-line refusals of GPUs the artifact cannot run on, the
// module loaded once per context, launches on the session's stream, graphs
// turned off or not capturable, and a GPU failure seen when a result is
// waited for. And a graph artifact (GraphArtifact.c with FAKE_CUDA) run by an
// executable on the GPU: through its device twins, captured once warm.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace cleave;
using namespace cleave::test;

namespace {

SessionOptions onGpu(int ordinal = 0) {
  SessionOptions options;
  options.seed = 7;
  options.device = CLEAVE_DEVICE_CUDA;
  options.deviceOrdinal = ordinal;
  return options;
}

SessionOptions onCpu() {
  SessionOptions options;
  options.seed = 7;
  return options;
}

/// The fake driver this process loaded (the runtime loads it with the first
/// cuda session).
void *fakeDriver() {
  void *handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << "the fake CUDA driver is not loaded";
  return handle;
}

fake_cuda_stats_t driverStats() {
  auto fn = reinterpret_cast<fake_cuda_stats_t (*)()>(
      ::dlsym(fakeDriver(), "fake_cuda_stats"));
  return fn ? fn() : fake_cuda_stats_t{};
}

/// Calls the fake driver's knob `name` (fake_cuda_fail_sync, ...).
void setKnob(const char *name, int value) {
  auto fn = reinterpret_cast<void (*)(int)>(::dlsym(fakeDriver(), name));
  ASSERT_NE(fn, nullptr) << name;
  fn(value);
}

void failSync(int fail) { setKnob("fake_cuda_fail_sync", fail); }

std::string createError(const SessionOptions &options) {
  Artifact artifact = Artifact::load(CLEAVE_FAKE_SGD_CUDA);
  try {
    Session session(artifact, options);
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_FAILED_PRECONDITION);
    return e.what();
  }
  return "(created)";
}

/// The same calls on a CPU session and a GPU session, compared after each.
class FakeGpuTest : public ::testing::Test {
protected:
  FakeGpuTest()
      : cpuArtifact(Artifact::load(CLEAVE_FAKE_SGD)),
        gpuArtifact(Artifact::load(CLEAVE_FAKE_SGD_CUDA)),
        cpu(cpuArtifact, onCpu()), gpu(gpuArtifact, onGpu()) {}

  void expectSameState(const char *when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(snapshotGlobals(gpu), snapshotGlobals(cpu));
    EXPECT_EQ(gpu.microSteps(), cpu.microSteps());
    EXPECT_EQ(gpu.step(), cpu.step());
    double a = gpu.lastLoss(), b = cpu.lastLoss();
    if (std::isnan(b))
      EXPECT_TRUE(std::isnan(a));
    else
      EXPECT_EQ(a, b);
  }

  Artifact cpuArtifact, gpuArtifact;
  Session cpu, gpu;
};

TEST_F(FakeGpuTest, InitialValuesAreTheCpus) { expectSameState("created"); }

TEST_F(FakeGpuTest, TrainsExactlyLikeTheCpu) {
  Data data = makeData(61, 3);
  // Three full micro-batches, then a short one that closes the window of
  // N = 4 (the manifest's).
  for (int64_t start : {0, 8, 16}) {
    Data part = data.slice(start, kMicroBatch);
    Batch b = part.batch();
    cpu.microStep(b);
    gpu.microStep(b);
    expectSameState("micro-step");
  }
  Data shortPart = data.slice(24, 5);
  Batch shortBatch = shortPart.batch();
  cpu.microStep(shortBatch);
  gpu.microStep(shortBatch);
  expectSameState("short micro-step, apply");
  ASSERT_EQ(gpu.step(), 1);

  // A hyperparameter change and a run-time N reach the device.
  cpu.setHyperparameter("lr", 0.03);
  gpu.setHyperparameter("lr", 0.03);
  cpu.setAccumulation(3);
  gpu.setAccumulation(3);
  // 29 samples in micro-batches of 6: four of 6 and one of 5, so a window
  // closes inside trainBatch and the next stays open.
  Data manyPart = data.slice(29, 29);
  Batch many = manyPart.batch();
  cpu.trainBatch(many, 6);
  gpu.trainBatch(many, 6);
  expectSameState("trainBatch");
  EXPECT_EQ(gpu.step(), 2);
  EXPECT_EQ(gpu.microSteps(), 2);

  // A partial window flushed.
  Data lastPart = data.slice(53, 8);
  Batch last = lastPart.batch();
  cpu.microStep(last);
  gpu.microStep(last);
  cpu.flush();
  gpu.flush();
  expectSameState("flush");
  EXPECT_EQ(gpu.step(), 3);
  EXPECT_EQ(gpu.microSteps(), 0);

  // Evaluation: the prediction comes back from the device when asked for.
  Data evalPart = data.slice(0, 7);
  Batch evalBatch = evalPart.batch();
  cpu.eval(evalBatch);
  gpu.eval(evalBatch);
  EXPECT_EQ(gpu.output<float>("eval_step", "prediction"),
            cpu.output<float>("eval_step", "prediction"));
}

/// The fake driver's trace (FakeCudaDriver.c) with streams and events
/// renamed in order of first appearance (s0, s1, e0, ...), so that it does
/// not depend on what earlier tests created.
std::string normalizedTrace() {
  auto fn = reinterpret_cast<const char *(*)()>(
      ::dlsym(fakeDriver(), "fake_cuda_trace"));
  if (!fn)
    return "(no trace)";
  std::map<std::string, std::string> names;
  int streams = 0, events = 0;
  std::istringstream in(fn());
  std::string line, out;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word, renamed;
    while (words >> word) {
      if (word.size() > 1 && (word[0] == 's' || word[0] == 'e') &&
          std::isdigit(static_cast<unsigned char>(word[1]))) {
        auto [it, added] = names.emplace(word, "");
        if (added)
          it->second = word[0] + std::to_string(word[0] == 's' ? streams++
                                                               : events++);
        word = it->second;
      }
      renamed += (renamed.empty() ? "" : " ") + word;
    }
    out += renamed + "\n";
  }
  return out;
}

TEST_F(FakeGpuTest, InputCopiesOverlapTheStepBefore) {
  // Two micro-steps to warm up (direct runs), so that the third is captured
  // and the fourth replays a graph of the other input set.
  Data data = makeData(4 * kMicroBatch, 9);
  auto step = [&](int i) {
    Data part = data.slice(i * kMicroBatch, kMicroBatch);
    Batch b = part.batch();
    cpu.microStep(b);
    gpu.microStep(b);
  };
  auto reset = reinterpret_cast<void (*)()>(
      ::dlsym(fakeDriver(), "fake_cuda_trace_reset"));
  ASSERT_NE(reset, nullptr);
  reset();
  for (int i = 0; i < 4; ++i)
    step(i);
  // s0 is the copy stream, s1 the session's stream. e0 and e2 mark the end
  // of the copies into input sets 0 and 1, e1 and e3 the end of the entries
  // that read them. The entry waits for its batch's copies; a batch's
  // copies wait for the entry that read their set two batches before, and
  // for nothing else, so they overlap the entry before them; the host only
  // waits for a set's earlier copies (sync) before writing it again. The first
  // batch in each set also writes its sample weights (3 copies, then 2);
  // the third and fourth micro-steps are captured (one graph per set) and
  // launched; the apply step reads no input and waits for no copy.
  EXPECT_EQ(normalizedTrace(),
            "h2d s0\nh2d s0\nh2d s0\nrecord e0 s0\n"
            "wait s1 e0\nlaunch s1 micro_step\nrecord e1 s1\nd2h s1\n"
            "h2d s0\nh2d s0\nh2d s0\nrecord e2 s0\n"
            "wait s1 e2\nlaunch s1 micro_step\nrecord e3 s1\nd2h s1\n"
            "sync e0\nwait s0 e1\nh2d s0\nh2d s0\nrecord e0 s0\n"
            "wait s1 e0\ngraph s1\nrecord e1 s1\nd2h s1\n"
            "sync e2\nwait s0 e3\nh2d s0\nh2d s0\nrecord e2 s0\n"
            "wait s1 e2\ngraph s1\nrecord e3 s1\nd2h s1\n"
            "launch s1 sgd_update\n");
  EXPECT_EQ(gpu.step(), 1);
  expectSameState("four micro-steps, one window");
}

/// The source addresses of the fake driver's host-to-device copies since
/// its trace was last reset.
std::vector<const void *> h2dSources() {
  auto fn = reinterpret_cast<int (*)(const void *const **)>(
      ::dlsym(fakeDriver(), "fake_cuda_h2d_sources"));
  EXPECT_NE(fn, nullptr);
  const void *const *sources = nullptr;
  int n = fn ? fn(&sources) : 0;
  return std::vector<const void *>(sources, sources + n);
}

/// How many of `sources` lie in the `bytes` bytes at `base`.
int64_t countWithin(const std::vector<const void *> &sources, const void *base,
                    size_t bytes) {
  auto *begin = static_cast<const unsigned char *>(base);
  return std::count_if(sources.begin(), sources.end(), [&](const void *p) {
    auto *q = static_cast<const unsigned char *>(p);
    return q >= begin && q < begin + bytes;
  });
}

/// `data` copied into memory the fake driver allocated: GPU memory
/// (cuMemAlloc, in the context current on this thread: the GPU session's)
/// or page-locked host memory (cuMemHostAlloc). The fake's GPU memory is
/// host memory, so the test writes both directly.
class FakeDriverCopy {
public:
  FakeDriverCopy(const Data &data, int memory)
      : device(memory == CLEAVE_MEMORY_DEVICE), samples(data.samples) {
    x = allocate(data.x.size() * sizeof(float));
    labels = allocate(data.labels.size() * sizeof(int64_t));
    if (x)
      std::memcpy(x, data.x.data(), data.x.size() * sizeof(float));
    if (labels)
      std::memcpy(labels, data.labels.data(),
                  data.labels.size() * sizeof(int64_t));
  }
  ~FakeDriverCopy() {
    release(x);
    release(labels);
  }
  FakeDriverCopy(const FakeDriverCopy &) = delete;
  FakeDriverCopy &operator=(const FakeDriverCopy &) = delete;

  /// Rows [start, start + count) (to the end by default).
  Batch batch(int64_t start = 0, int64_t count = -1) const {
    if (count < 0)
      count = samples - start;
    Batch b(count);
    b.add(static_cast<float *>(x) + start * kFeatures,
          size_t(count * kFeatures) * sizeof(float))
        .add(static_cast<int64_t *>(labels) + start,
             size_t(count) * sizeof(int64_t));
    return b;
  }
  int64_t *labelData() const { return static_cast<int64_t *>(labels); }

private:
  void *allocate(size_t bytes) {
    void *p = nullptr;
    if (device) {
      auto alloc = reinterpret_cast<int (*)(uintptr_t *, size_t)>(
          ::dlsym(fakeDriver(), "cuMemAlloc_v2"));
      uintptr_t d = 0;
      EXPECT_TRUE(alloc && alloc(&d, bytes) == 0);
      p = reinterpret_cast<void *>(d);
    } else {
      auto alloc = reinterpret_cast<int (*)(void **, size_t, unsigned)>(
          ::dlsym(fakeDriver(), "cuMemHostAlloc"));
      EXPECT_TRUE(alloc && alloc(&p, bytes, 0) == 0);
    }
    return p;
  }
  void release(void *p) {
    if (!p)
      return;
    if (device)
      reinterpret_cast<int (*)(uintptr_t)>(::dlsym(
          fakeDriver(), "cuMemFree_v2"))(reinterpret_cast<uintptr_t>(p));
    else
      reinterpret_cast<int (*)(void *)>(::dlsym(fakeDriver(), "cuMemFreeHost"))(
          p);
  }

  bool device;
  int64_t samples;
  void *x = nullptr, *labels = nullptr;
};

/// Runs `call` and expects it to throw CLEAVE_INVALID_ARGUMENT containing
/// `message`.
template <typename Call>
void expectInvalid(Call &&call, const std::string &message) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
        << e.what();
  }
}

void resetTrace() {
  auto reset = reinterpret_cast<void (*)()>(
      ::dlsym(fakeDriver(), "fake_cuda_trace_reset"));
  ASSERT_NE(reset, nullptr);
  reset();
}

// What differs between the kinds of batch memory is how the session copies
// them, which the trace shows; the results must be the CPU's.
TEST_F(FakeGpuTest, PinnedAndDeviceBatchesTrainLikeHostOnes) {
  Data data = makeData(61, 5);
  FakeDriverCopy pinned(data, CLEAVE_MEMORY_PINNED),
      onGpu(data, CLEAVE_MEMORY_DEVICE);
  auto copyOf = [&](int memory) -> const FakeDriverCopy & {
    return memory == CLEAVE_MEMORY_PINNED ? pinned : onGpu;
  };
  // Full and short micro-batches of each kind: a short one is padded on the
  // device with its last row, as the CPU pads it on the host.
  int64_t start = 0;
  for (auto [count, memory] : {std::pair<int64_t, int>{8, CLEAVE_MEMORY_PINNED},
                               {5, CLEAVE_MEMORY_PINNED},
                               {8, CLEAVE_MEMORY_DEVICE},
                               {3, CLEAVE_MEMORY_DEVICE}}) {
    Data part = data.slice(start, count);
    cpu.microStep(part.batch());
    gpu.microStep(copyOf(memory).batch(start, count), memory);
    start += count;
    expectSameState(memory == CLEAVE_MEMORY_PINNED ? "pinned" : "device");
  }
  ASSERT_EQ(gpu.step(), 1);
  Data manyPart = data.slice(24, 29);
  cpu.trainBatch(manyPart.batch(), 6);
  gpu.trainBatch(onGpu.batch(24, 29), 6, CLEAVE_MEMORY_DEVICE);
  expectSameState("trainBatch on a device batch");
  // Evaluation returns every row of the micro-batch, padding included: the
  // padded rows are the last real one's on either kind.
  for (int memory : {CLEAVE_MEMORY_PINNED, CLEAVE_MEMORY_DEVICE}) {
    Data evalPart = data.slice(53, 3);
    cpu.eval(evalPart.batch());
    gpu.eval(copyOf(memory).batch(53, 3), memory);
    EXPECT_EQ(gpu.output<float>("eval_step", "prediction"),
              cpu.output<float>("eval_step", "prediction"));
  }
}

TEST_F(FakeGpuTest, APinnedBatchIsUploadedFromTheCallersBuffer) {
  Data data = makeData(2 * kMicroBatch, 6);
  FakeDriverCopy pinned(data, CLEAVE_MEMORY_PINNED);
  for (int memory : {CLEAVE_MEMORY_HOST, CLEAVE_MEMORY_PINNED}) {
    SCOPED_TRACE(memory == CLEAVE_MEMORY_HOST ? "host" : "pinned");
    Data part = data.slice(0, kMicroBatch);
    Batch b = memory == CLEAVE_MEMORY_HOST ? part.batch()
                                           : pinned.batch(0, kMicroBatch);
    const cleave_batch view = b.view();
    resetTrace();
    gpu.microStep(b, memory);
    std::vector<const void *> sources = h2dSources();
    // Host memory goes through the session's staging buffer; pinned memory
    // is uploaded where it is, features and labels alike.
    int64_t fromCaller = countWithin(sources, view.data[0], view.bytes[0]) +
                         countWithin(sources, view.data[1], view.bytes[1]);
    EXPECT_EQ(fromCaller, memory == CLEAVE_MEMORY_HOST ? 0 : 2);
  }
}

TEST_F(FakeGpuTest, ADeviceBatchIsCopiedOnTheDevice) {
  Data data = makeData(3 * kMicroBatch, 8);
  // Two host micro-steps first: each input set then holds its sample
  // weights, so what follows uploads nothing.
  for (int i = 0; i < 2; ++i) {
    Data part = data.slice(i * kMicroBatch, kMicroBatch);
    gpu.microStep(part.batch());
  }
  FakeDriverCopy onGpu(data.slice(2 * kMicroBatch, kMicroBatch),
                       CLEAVE_MEMORY_DEVICE);
  resetTrace();
  gpu.microStep(onGpu.batch(), CLEAVE_MEMORY_DEVICE);
  // The set's earlier copies (e0) waited for on the host, and the entry
  // that read it (e1) on the copy stream (s0); features and labels copied
  // there, the labels downloaded too and waited for (e2: the host checks
  // them against index_bound); the end of the copies (e0), which the host
  // waits for before the call returns; then the step, replayed from its
  // graph. No upload.
  EXPECT_EQ(normalizedTrace(), "sync e0\nwait s0 e1\nd2d s0\nd2d s0\nd2h s0\n"
                               "record e2 s0\nsync e2\nrecord e0 s0\nsync e0\n"
                               "wait s1 e0\ngraph s1\nrecord e1 s1\nd2h s1\n");
}

TEST_F(FakeGpuTest, ADeviceBatchsLabelsAreCheckedOnTheHost) {
  Data data = makeData(kMicroBatch, 9);
  data.labels[3] = 7;
  FakeDriverCopy onGpu(data, CLEAVE_MEMORY_DEVICE);
  resetTrace();
  expectInvalid([&] { gpu.microStep(onGpu.batch(), CLEAVE_MEMORY_DEVICE); },
                "batch: input 'labels' element 3 is 7, expected 0 to 2");
  EXPECT_EQ(gpu.microSteps(), 0);
  // The copies it had enqueued from the caller's buffers were waited for
  // before the error returned.
  EXPECT_EQ(normalizedTrace(), "d2d s0\nd2d s0\nd2h s0\nrecord e0 s0\n"
                               "sync e0\nrecord e1 s0\nsync e1\n");
  // trainBatch checks the whole batch before its first micro-step, also
  // when the bad label is in a later slice.
  Data many = makeData(3 * kMicroBatch, 10);
  many.labels[2 * kMicroBatch + 1] = -1;
  FakeDriverCopy manyOnGpu(many, CLEAVE_MEMORY_DEVICE);
  expectInvalid(
      [&] {
        gpu.trainBatch(manyOnGpu.batch(), kMicroBatch, CLEAVE_MEMORY_DEVICE);
      },
      "batch: input 'labels' element 17 is -1, expected 0 to 2");
  EXPECT_EQ(gpu.microSteps(), 0);
  // The session is still usable.
  onGpu.labelData()[3] = 1;
  data.labels[3] = 1;
  gpu.microStep(onGpu.batch(), CLEAVE_MEMORY_DEVICE);
  cpu.microStep(data.batch());
  expectSameState("after a refused device batch");
}

TEST_F(FakeGpuTest, MemoryOfAnotherKindIsRefused) {
  Data data = makeData(kMicroBatch, 11);
  FakeDriverCopy pinned(data, CLEAVE_MEMORY_PINNED),
      onGpu(data, CLEAVE_MEMORY_DEVICE);
  // The driver tells pageable, page-locked and GPU memory apart; a copy
  // from the wrong kind would fail on the GPU and end the session.
  expectInvalid([&] { gpu.microStep(data.batch(), CLEAVE_MEMORY_DEVICE); },
                "batch: data[0] ('x') is pageable host memory, not memory of "
                "GPU 0");
  expectInvalid([&] { gpu.microStep(pinned.batch(), CLEAVE_MEMORY_DEVICE); },
                "batch: data[0] ('x') is page-locked host memory, not memory "
                "of GPU 0");
  expectInvalid([&] { gpu.microStep(data.batch(), CLEAVE_MEMORY_PINNED); },
                "batch: data[0] ('x') is pageable host memory, not "
                "page-locked host memory (CLEAVE_MEMORY_PINNED)");
  expectInvalid([&] { gpu.microStep(onGpu.batch(), CLEAVE_MEMORY_PINNED); },
                "batch: data[0] ('x') is GPU memory, not page-locked host "
                "memory (CLEAVE_MEMORY_PINNED)");
  // Rows past the end of the allocation.
  Batch past(kMicroBatch);
  past.add(static_cast<const float *>(onGpu.batch().view().data[0]) + 1,
           kMicroBatch * kFeatures * sizeof(float))
      .add(onGpu.labelData(), kMicroBatch * sizeof(int64_t));
  expectInvalid([&] { gpu.microStep(past, CLEAVE_MEMORY_DEVICE); },
                "batch: data[0] ('x'): its 160 bytes run past the end of "
                "their allocation (156 bytes from the pointer)");
  EXPECT_EQ(gpu.microSteps(), 0);
  // Nothing was copied, and the session goes on.
  gpu.microStep(onGpu.batch(), CLEAVE_MEMORY_DEVICE);
  cpu.microStep(data.batch());
  expectSameState("after refused batches");
}

TEST_F(FakeGpuTest, WrittenGlobalsReachTheDevice) {
  std::vector<float> weight(kClasses * kFeatures, 0.25f);
  cpu.writeGlobal("fc.weight", weight);
  gpu.writeGlobal("fc.weight", weight);
  EXPECT_EQ(gpu.readGlobal<float>("fc.weight"), weight);
  Data data = makeData(8, 4);
  cpu.microStep(data.batch());
  gpu.microStep(data.batch());
  expectSameState("after writeGlobal");
}

TEST_F(FakeGpuTest, CheckpointsResumeMidWindowBitIdentically) {
  Data data = makeData(96, 5);
  auto run = [&](Session &s, int64_t from, int64_t to) {
    for (int64_t i = from; i < to; ++i) {
      Data part = data.slice(i * kMicroBatch, kMicroBatch);
      s.microStep(part.batch());
    }
  };
  run(gpu, 0, 6); // one window of 4, then 2 micro-steps into the next
  ASSERT_EQ(gpu.microSteps(), 2);
  std::string path = makeTempDir("fake-gpu-ckpt") + "/mid.ckpt";
  gpu.saveCheckpoint(path);
  run(gpu, 6, 12);
  const auto straight = snapshotGlobals(gpu);
  const double straightLoss = gpu.lastLoss();

  Session resumed(gpuArtifact, onGpu());
  resumed.loadCheckpoint(path);
  EXPECT_EQ(resumed.microSteps(), 2);
  EXPECT_EQ(resumed.step(), 1);
  run(resumed, 6, 12);
  EXPECT_EQ(snapshotGlobals(resumed), straight);
  EXPECT_EQ(resumed.lastLoss(), straightLoss);
}

TEST(FakeGpu, ModuleLoadsOncePerContextAndLaunchesOnTheSessionStream) {
  Artifact artifact = Artifact::load(CLEAVE_FAKE_SGD_CUDA);
  Data data = makeData(8, 6);
  {
    Session first(artifact, onGpu());
    Session second(artifact, onGpu());
    for (int i = 0; i < 8; ++i) {
      first.microStep(data.batch());
      second.microStep(data.batch());
    }
    EXPECT_EQ(first.step(), 2);
    EXPECT_EQ(second.step(), 2);
  }
  fake_cuda_stats_t stats = driverStats();
  // Both sessions share device 0's primary context, hence the module.
  EXPECT_EQ(stats.module_loads, 1);
  // 8 micro-steps and 2 apply steps per session, one kernel each.
  EXPECT_EQ(stats.launches, 20);
  // Each session captured its micro-step after two direct runs, once per
  // input set, and replayed it 6 times; 2 apply steps are too few to
  // capture.
  EXPECT_EQ(stats.captures, 4);
  EXPECT_EQ(stats.graph_launches, 12);
}

/// Trains `gpu` and a CPU session of the CPU build alike: 12 micro-steps
/// (3 windows), a short batch, a flush; the states must be equal.
void trainBothAndCompare(Session &gpu) {
  Session cpu(Artifact::load(CLEAVE_FAKE_SGD), onCpu());
  Data data = makeData(104, 9);
  for (int i = 0; i < 13; ++i) {
    Data part = data.slice(i * 8, i == 12 ? 3 : 8);
    cpu.microStep(part.batch());
    gpu.microStep(part.batch());
  }
  cpu.flush();
  gpu.flush();
  EXPECT_EQ(snapshotGlobals(gpu), snapshotGlobals(cpu));
  EXPECT_EQ(gpu.lastLoss(), cpu.lastLoss());
  EXPECT_EQ(gpu.step(), 4);
}

TEST(FakeGpu, GraphsCanBeTurnedOff) {
  ::setenv("CLEAVE_CUDA_GRAPHS", "0", 1);
  Session gpu(Artifact::load(CLEAVE_FAKE_SGD_CUDA), onGpu());
  ::unsetenv("CLEAVE_CUDA_GRAPHS");
  trainBothAndCompare(gpu);
  EXPECT_EQ(driverStats().captures, 0);
  EXPECT_EQ(driverStats().graph_launches, 0);
  EXPECT_EQ(driverStats().launches, 17);
}

TEST(FakeGpu, WorkThatCannotBeCapturedRunsDirectly) {
  Session gpu(Artifact::load(CLEAVE_FAKE_SGD_CUDA), onGpu());
  setKnob("fake_cuda_refuse_capture", 1);
  trainBothAndCompare(gpu);
  setKnob("fake_cuda_refuse_capture", 0);
  EXPECT_EQ(driverStats().captures, 0);
  EXPECT_EQ(driverStats().launches, 17);
  // Said once per entry, with the driver's reason, when it happened.
  const std::vector<std::string> &notes = gpu.notes();
  ASSERT_EQ(notes.size(), 2u);
  for (const std::string &note : notes)
    EXPECT_NE(note.find(" could not be captured into a CUDA graph and runs "
                        "directly from now on"),
              std::string::npos)
        << note;
  EXPECT_EQ(notes[0].rfind("micro_step ", 0), 0u) << notes[0];
  EXPECT_EQ(notes[1].rfind("apply_step ", 0), 0u) << notes[1];
  EXPECT_NE(notes[0].find("cannot capture a CUDA graph"), std::string::npos)
      << notes[0];
}

TEST(FakeGpu, GraphsReplayEveryStep) {
  Session gpu(Artifact::load(CLEAVE_FAKE_SGD_CUDA), onGpu());
  trainBothAndCompare(gpu);
  // The micro-step was captured once per input set, the apply step once.
  EXPECT_EQ(driverStats().captures, 3);
  EXPECT_EQ(driverStats().launches, 17);
  // Of 13 micro-steps and 4 apply steps, 2 of each ran directly and one of
  // each while it was captured, then by its graph.
  EXPECT_EQ(driverStats().graph_launches, 11 + 2);
  EXPECT_TRUE(gpu.notes().empty());
}

#ifdef CLEAVE_ELEMENTWISE_CUDA
// The memory report of a cuda artifact is the device memory its session
// allocates (docs/design/memory.md), to within the runtime's own small
// buffers (the hyperparameters), which the report leaves out.
TEST(FakeGpu, DeviceAllocationsAreTheMemoryReport) {
  Artifact artifact = Artifact::load(CLEAVE_ELEMENTWISE_CUDA);
  nlohmann::json memory = nlohmann::json::parse(artifact.manifest())["memory"];
  ASSERT_EQ(memory["space"], "device");
  const auto report = memory["total"].get<int64_t>();
  // Loaded here as the runtime loads it, to count from before the session.
  ASSERT_NE(::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), nullptr);
  const int64_t before = driverStats().bytes_allocated;
  Session session(artifact, onGpu());
  const int64_t allocated = driverStats().bytes_allocated - before;
  // 512 samples of 256 floats in and out: two input sets on the device.
  EXPECT_EQ(memory["inputs"].get<int64_t>(), 2 * (2 * 512 * 256 * 4 + 512 * 4));
  EXPECT_GE(allocated, report);
  EXPECT_LE(allocated, report + 16 * 1024) << "report " << report;
}

// A cuda session's memory budget is the device's free memory when it is
// created: an artifact whose report needs more is refused before anything
// is allocated, naming both; one that fits says how much of it it takes.
TEST(FakeGpu, TheDevicesFreeMemoryIsTheBudget) {
  Artifact artifact = Artifact::load(CLEAVE_ELEMENTWISE_CUDA);
  const auto report =
      nlohmann::json::parse(artifact.manifest())["memory"]["total"]
          .get<int64_t>();
  ASSERT_GT(report, 1 << 20);
  char need[64];
  std::snprintf(need, sizeof(need), "a session needs %.1f MiB of device memory",
                double(report) / (1 << 20));
  ASSERT_NE(::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), nullptr);
  setKnob("fake_cuda_free_mib", 1);
  const int64_t before = driverStats().bytes_allocated;
  try {
    Session session(artifact, onGpu());
    ADD_FAILURE() << "a session larger than the free memory was created";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_OUT_OF_MEMORY);
    const std::string what = e.what();
    EXPECT_NE(what.find(std::string(need) +
                        " (the artifact's memory report), more than the "
                        "1.0 MiB free of 2048.0 MiB on GPU 0"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("--memory-budget=1MiB"), std::string::npos) << what;
  }
  EXPECT_EQ(driverStats().bytes_allocated, before);
  setKnob("fake_cuda_free_mib", 0);

  Session session(artifact, onGpu());
  const std::vector<std::string> notes = session.notes();
  ASSERT_EQ(notes.size(), 1u);
  const std::string &note = notes[0];
  std::snprintf(need, sizeof(need), "device memory: the session needs %.1f MiB",
                double(report) / (1 << 20));
  EXPECT_EQ(note.rfind(need, 0), 0u) << note;
  EXPECT_NE(note.find("of the 1024.0 MiB free of 2048.0 MiB on GPU 0"),
            std::string::npos)
      << note;
}
#endif

TEST(FakeGpu, RefusesAGpuWithoutCodeForIt) {
  EXPECT_EQ(createError(onGpu(1)),
            std::string(CLEAVE_FAKE_SGD_CUDA) +
                ": the GPU is sm_75 but the artifact has sm_80, sm_90 and PTX "
                "for sm_80 only");
}

TEST(FakeGpu, RefusesAMissingDevice) {
  EXPECT_EQ(createError(onGpu(5)),
            std::string(CLEAVE_FAKE_SGD_CUDA) +
                ": no CUDA device 5 (this machine has 2: 0 to 1)");
  ::setenv("FAKE_CUDA_DEVICES", "0", 1);
  EXPECT_EQ(createError(onGpu(0)),
            std::string(CLEAVE_FAKE_SGD_CUDA) + ": no CUDA device");
  ::unsetenv("FAKE_CUDA_DEVICES");
}

// An entry that fails (here a launch the driver refuses) leaves the
// session unusable, but the device is fine: its globals can still be read,
// as on the CPU, and a checkpoint restores it.
TEST_F(FakeGpuTest, AFailedEntryLeavesTheGlobalsReadable) {
  Data data = makeData(8, 8);
  std::string path = makeTempDir("fake-gpu-entry-failure") + "/good.ckpt";
  gpu.saveCheckpoint(path);
  const std::vector<float> before = gpu.readGlobal<float>("fc.weight");
  ::setenv("CLEAVE_CUDA_GRAPHS", "0", 1);
  Session direct(Artifact::load(CLEAVE_FAKE_SGD_CUDA), onGpu());
  ::unsetenv("CLEAVE_CUDA_GRAPHS");
  direct.loadCheckpoint(path);
  setKnob("fake_cuda_fail_launch", 1);
  try {
    direct.microStep(data.batch());
    ADD_FAILURE() << "a micro-step whose launch failed succeeded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("mgpuLaunchKernel: kernel "),
              std::string::npos)
        << e.what();
  }
  setKnob("fake_cuda_fail_launch", 0);
  EXPECT_EQ(direct.readGlobal<float>("fc.weight"), before);
  try {
    direct.microStep(data.batch());
    ADD_FAILURE() << "a session whose entry failed went on";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_FAILED_PRECONDITION);
  }
  direct.loadCheckpoint(path);
  direct.microStep(data.batch());
}

TEST_F(FakeGpuTest, GpuFailureMakesTheSessionUnusableUntilRestored) {
  Data data = makeData(8, 8);
  std::string path = makeTempDir("fake-gpu-failure") + "/good.ckpt";
  gpu.saveCheckpoint(path);
  failSync(1);
  // Enqueued work does not wait for the GPU; the failure shows when a
  // result is waited for.
  gpu.microStep(data.batch());
  EXPECT_TRUE(std::isnan(gpu.lastLoss()));
  try {
    gpu.microStep(data.batch());
    ADD_FAILURE() << "a session whose GPU failed went on";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find("an illegal memory access"),
              std::string::npos)
        << e.what();
  }
  failSync(0);
  gpu.loadCheckpoint(path);
  gpu.microStep(data.batch());
  cpu.microStep(data.batch());
  expectSameState("restored");
}

//===----------------------------------------------------------------------===//
// An executable on the GPU: the caller's host buffers go through device
// twins, and an entry is replayed from a graph once warm.
//===----------------------------------------------------------------------===//

/// 64-byte aligned floats, as the ABI requires of every buffer.
struct alignas(64) Floats4 {
  float v[4] = {0, 0, 0, 0};
};

cleave_executable *loadGraphOnGpu() {
  cleave_executable_options options;
  cleave_executable_options_init(&options);
  options.device = CLEAVE_DEVICE_CUDA;
  cleave_executable *exe = nullptr;
  EXPECT_EQ(cleave_executable_load(CLEAVE_GRAPH_ARTIFACT_CUDA, &options, &exe),
            CLEAVE_OK)
      << cleave_last_error_message();
  return exe;
}

TEST(FakeGpuExecutable, RunsThroughTwinsAndReplaysAGraph) {
  cleave_executable *exe = loadGraphOnGpu();
  ASSERT_NE(exe, nullptr);
  Floats4 x, a, y, w;
  for (int i = 0; i < 4; ++i)
    x.v[i] = float(i + 1);
  void *args[] = {x.v, a.v, y.v, w.v};
  float expected[4] = {0, 0, 0, 0};
  for (int run = 1; run <= 5; ++run) {
    SCOPED_TRACE(run);
    // A new input each run: replayed graphs read the twins, which each run
    // fills from the caller's buffers.
    a.v[0] = float(run);
    ASSERT_EQ(cleave_executable_run(exe, "axpy", args, 4), CLEAVE_OK)
        << cleave_last_error_message();
    for (int i = 0; i < 4; ++i) {
      expected[i] += float(run) * x.v[i];
      EXPECT_EQ(w.v[i], expected[i]) << i;
      EXPECT_EQ(y.v[i], 2 * expected[i]) << i;
    }
  }
  // The caller's global is what the entry reads, not the twin's old value.
  w = Floats4();
  a.v[0] = 1;
  ASSERT_EQ(cleave_executable_run(exe, "axpy", args, 4), CLEAVE_OK);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(w.v[i], x.v[i]) << i;

  fake_cuda_stats_t stats = driverStats();
  EXPECT_EQ(stats.module_loads, 1);
  EXPECT_EQ(stats.launches, 6);
  // Two direct runs, then one capture replayed by the other four.
  EXPECT_EQ(stats.captures, 1);
  EXPECT_EQ(stats.graph_launches, 4);
  cleave_executable_destroy(exe);
}

TEST(FakeGpuExecutable, AKernelErrorLeavesItUsable) {
  cleave_executable *exe = loadGraphOnGpu();
  ASSERT_NE(exe, nullptr);
  Floats4 c;
  void *out[] = {c.v};
  EXPECT_EQ(cleave_executable_run(exe, "unknown_kernel", out, 1),
            CLEAVE_INTERNAL);
  EXPECT_EQ(std::string(cleave_last_error_message()),
            std::string("cleave_executable_run: ") +
                CLEAVE_GRAPH_ARTIFACT_CUDA +
                ": entry 'unknown_kernel': cleave_kernel_matmul: no kernel 9 "
                "(the context has 3)");
  // On a GPU the entry's own work is launches, which a failed kernel call
  // turns into no-ops too (the CPU's entry writes c = 7 on regardless): c
  // is what the twin held.
  EXPECT_EQ(c.v[0], 0.f);
  Floats4 x, a, y, w;
  x.v[0] = 2;
  a.v[0] = 3;
  void *args[] = {x.v, a.v, y.v, w.v};
  ASSERT_EQ(cleave_executable_run(exe, "axpy", args, 4), CLEAVE_OK)
      << cleave_last_error_message();
  EXPECT_EQ(w.v[0], 6.f);
  cleave_executable_destroy(exe);
}

/// What the fake cuBLASLt ran since the last clearCublasTrace(), one line
/// per matmul (FakeCublasLt.c).
std::string cublasTrace() {
  void *lt = ::dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lt, nullptr) << "the fake cuBLASLt is not loaded";
  auto fn = lt ? reinterpret_cast<const char *(*)()>(
                     ::dlsym(lt, "fake_cublaslt_trace"))
               : nullptr;
  EXPECT_NE(fn, nullptr);
  return fn ? fn() : "";
}

void clearCublasTrace() {
  void *lt = ::dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (auto fn =
          lt ? reinterpret_cast<void (*)()>(::dlsym(lt, "fake_cublaslt_clear"))
             : nullptr)
    fn();
}

/// `x` rounded to bf16 (nearest even), widened back.
float bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

struct alignas(64) Floats6 {
  float v[6] = {0, 0, 0, 0, 0, 0};
};

// The cuda matmul kernel on (the fake) cuBLASLt: an f32 entry multiplies in
// f32 (CUBLAS_COMPUTE_32F); an entry whose operands are stored in bf16, as
// cleave-compile makes them for cuda, gives cuBLASLt bf16 A and B with f32
// compute, an f32 C and an f32 bias epilogue, whatever their alignment (a
// is 2 bytes into the scratch area; the heuristics are asked with a bias
// pointer aligned to a float, which the fake requires); "math": "bf16" on f32
// operands is the FAST_16BF compute type. The narrowing kernel and the matmul
// are captured and replayed in order with new inputs each run.
TEST(FakeGpuExecutable, MatmulsRunOnCublasLtInF32AndBf16) {
  cleave_executable *exe = loadGraphOnGpu();
  ASSERT_NE(exe, nullptr);
  Floats6 a, b;
  Floats4 c;
  void *args[] = {a.v, b.v, c.v};
  auto fill = [&](int run) {
    // Values with more bits than bf16 keeps.
    for (int i = 0; i < 6; ++i) {
      a.v[i] = 1.0f + float(i + run) / 1024.0f;
      b.v[i] = 0.5f - float(3 * i + run) / 4096.0f;
    }
  };
  // c = a @ b, a [2, 3] and b [3, 2] row-major, each operand through `round`.
  auto product = [&](float (*round)(float)) {
    std::array<float, 4> out{};
    for (int r = 0; r < 2; ++r)
      for (int col = 0; col < 2; ++col) {
        double sum = 0;
        for (int k = 0; k < 3; ++k)
          sum += double(round(a.v[r * 3 + k])) * round(b.v[k * 2 + col]);
        out[r * 2 + col] = float(sum);
      }
    return out;
  };
  auto exact = [](float x) { return x; };

  clearCublasTrace();
  fill(0);
  ASSERT_EQ(cleave_executable_run(exe, "matmul", args, 3), CLEAVE_OK)
      << cleave_last_error_message();
  std::array<float, 4> f32 = product(exact);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(c.v[i], f32[i]) << i;
  EXPECT_EQ(cublasTrace(), "matmul compute=32F a=f32 b=f32 c=f32 2x2 batch=1 "
                           "epilogue=1 beta=0\n");

  fake_cuda_stats_t before = driverStats();
  for (int run = 0; run < 5; ++run) {
    SCOPED_TRACE(run);
    clearCublasTrace();
    fill(run);
    void *bf16Args[] = {a.v, b.v, c.v};
    ASSERT_EQ(cleave_executable_run(exe, "matmul_bf16", bf16Args, 3), CLEAVE_OK)
        << cleave_last_error_message();
    std::array<float, 4> expected = product(bf16);
    std::array<float, 4> unrounded = product(exact);
    EXPECT_NE(expected, unrounded) << "the inputs do not show the rounding";
    // The entry's f32 bias, one per column of c (the fake's epilogue adds
    // it in double before the one rounding to f32: compare to an ulp).
    const float bias[2] = {0.5f, -0.25f};
    for (int i = 0; i < 4; ++i)
      EXPECT_FLOAT_EQ(c.v[i], expected[i] + bias[i % 2]) << i;
    EXPECT_EQ(cublasTrace(), "matmul compute=32F a=bf16 b=bf16 c=f32 2x2 "
                             "batch=1 epilogue=4 beta=0\n");
  }
  // Replayed from a captured graph once warm, narrowing and matmul alike.
  EXPECT_GT(driverStats().graph_launches, before.graph_launches);

  clearCublasTrace();
  ASSERT_EQ(cleave_executable_run(exe, "matmul_fast_bf16", args, 3), CLEAVE_OK)
      << cleave_last_error_message();
  EXPECT_EQ(cublasTrace(), "matmul compute=32F_FAST_16BF a=f32 b=f32 c=f32 "
                           "2x2 batch=1 epilogue=1 beta=0\n");
  cleave_executable_destroy(exe);
}

TEST(FakeGpuExecutable, OneOperandStoredInBf16IsRefused) {
  cleave_executable_options options;
  cleave_executable_options_init(&options);
  options.device = CLEAVE_DEVICE_CUDA;
  cleave_executable *exe = nullptr;
  EXPECT_NE(
      cleave_executable_load(CLEAVE_GRAPH_ARTIFACT_CUDA_MIXED, &options, &exe),
      CLEAVE_OK);
  EXPECT_EQ(exe, nullptr);
  EXPECT_NE(std::string(cleave_last_error_message())
                .find("kernel 1 (matmul): 'a_type' and 'b_type' must both be "
                      "bf16 or both f32 on the GPU (cuBLASLt takes bf16 only "
                      "for both operands); this entry stores only a in bf16"),
            std::string::npos)
      << cleave_last_error_message();
}

TEST(FakeGpuExecutable, ADeviceFailureMakesItUnusable) {
  cleave_executable *exe = loadGraphOnGpu();
  ASSERT_NE(exe, nullptr);
  Floats4 x, a, y, w;
  void *args[] = {x.v, a.v, y.v, w.v};
  failSync(1);
  EXPECT_EQ(cleave_executable_run(exe, "axpy", args, 4), CLEAVE_INTERNAL);
  std::string first = cleave_last_error_message();
  EXPECT_NE(first.find("an illegal memory access"), std::string::npos) << first;
  failSync(0);
  EXPECT_EQ(cleave_executable_run(exe, "axpy", args, 4),
            CLEAVE_FAILED_PRECONDITION);
  EXPECT_NE(std::string(cleave_last_error_message())
                .find("the executable is unusable since its device failed"),
            std::string::npos)
      << cleave_last_error_message();
  cleave_executable_destroy(exe);
}

//===----------------------------------------------------------------------===//
// Convolutions and pooling on (the fake) cuDNN
//===----------------------------------------------------------------------===//

/// What the fake cuDNN ran since the last clearCudnnTrace(), one line per
/// call (FakeCudnn.c).
std::string cudnnTrace() {
  void *dnn = ::dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(dnn, nullptr) << "the fake cuDNN is not loaded";
  auto fn = dnn ? reinterpret_cast<const char *(*)()>(
                      ::dlsym(dnn, "fake_cudnn_trace"))
                : nullptr;
  EXPECT_NE(fn, nullptr);
  return fn ? fn() : "";
}

void clearCudnnTrace() {
  void *dnn = ::dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  if (auto fn =
          dnn ? reinterpret_cast<void (*)()>(::dlsym(dnn, "fake_cudnn_clear"))
              : nullptr)
    fn();
}

/// `size` floats, 64-byte aligned as the ABI wants every buffer.
class AlignedFloats {
public:
  explicit AlignedFloats(size_t size)
      : data_(static_cast<float *>(
            std::aligned_alloc(64, (size * sizeof(float) + 63) / 64 * 64))),
        size_(size) {
    std::fill(data_, data_ + size_, 0.0f);
  }
  ~AlignedFloats() { std::free(data_); }
  AlignedFloats(const AlignedFloats &) = delete;
  AlignedFloats &operator=(const AlignedFloats &) = delete;
  float *data() { return data_; }
  float &operator[](size_t i) { return data_[i]; }
  size_t size() const { return size_; }
  void fillRandom(uint32_t seed) {
    for (size_t i = 0; i < size_; ++i) {
      seed = seed * 1664525u + 1013904223u;
      data_[i] = float(int32_t(seed >> 8) % 2001 - 1000) / 1000.0f;
    }
  }

private:
  float *data_;
  size_t size_;
};

/// ConvArtifact.c's convolution, as the kernel ABI defines it (padding top
/// 1, nothing else): calls `tap(srcIndex, weiIndex, dstIndex)` for every
/// multiply.
template <typename Tap> void forEachConvTap(Tap &&tap) {
  const int n = 2, c = 4, h = 6, w = 6, o = 6, kh = 3, kw = 2, oh = 3, ow = 4;
  const int groups = 2, cg = c / groups, og = o / groups;
  for (int b = 0; b < n; ++b)
    for (int oc = 0; oc < o; ++oc)
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x)
          for (int ci = 0; ci < cg; ++ci)
            for (int ky = 0; ky < kh; ++ky)
              for (int kx = 0; kx < kw; ++kx) {
                int iy = y * 2 - 1 + ky, ix = x + kx * 2;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                  continue;
                int ic = (oc / og) * cg + ci;
                tap(((b * c + ic) * h + iy) * w + ix,
                    ((oc * cg + ci) * kh + ky) * kw + kx,
                    ((b * o + oc) * oh + y) * ow + x);
              }
}

/// ConvArtifact.c's pooling windows (3x3, stride 2, padding 1, [2, 3, 5, 5]
/// to [2, 3, 3, 3]): calls `window(dstIndex, srcIndices)` for each, with
/// the taps inside the input in row-major order.
template <typename Window> void forEachPoolWindow(Window &&window) {
  for (int plane = 0; plane < 6; ++plane)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 3; ++x) {
        std::vector<int> taps;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            int iy = y * 2 - 1 + ky, ix = x * 2 - 1 + kx;
            if (iy >= 0 && iy < 5 && ix >= 0 && ix < 5)
              taps.push_back((plane * 5 + iy) * 5 + ix);
          }
        window((plane * 3 + y) * 3 + x, taps);
      }
}

cleave_executable *loadExecutableOnGpu(const char *path) {
  cleave_executable_options options;
  cleave_executable_options_init(&options);
  options.device = CLEAVE_DEVICE_CUDA;
  cleave_executable *exe = nullptr;
  if (cleave_executable_load(path, &options, &exe) != CLEAVE_OK)
    return nullptr;
  return exe;
}

void expectFloats(AlignedFloats &got, const std::vector<double> &expected,
                  const char *what) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-5 * (1 + std::fabs(expected[i])))
        << what << " [" << i << "]";
}

// The runtime's cuda convolutions and pooling on (the fake) cuDNN, each
// against the ABI's definition computed here: the descriptors' layouts,
// groups, strides, dilations, the top-only padding that cuDNN pads on both
// sides (accepted: no window reaches the bottom row it adds), the bias and
// ReLU after the forward pass, the backward-weights sum into the buffer
// (beta 1), max pooling's routing to the first maximum and average
// pooling's count of the taps inside the input. cuDNN's heuristics offer a
// non-deterministic and a tensor-op algorithm first; the session takes the
// third. Each entry runs three times with new values: the later runs replay
// a captured graph.
TEST(FakeGpuExecutable, ConvolutionsAndPoolingRunOnCudnn) {
  cleave_executable *exe = loadExecutableOnGpu(CLEAVE_CONV_ARTIFACT_CUDA);
  ASSERT_NE(exe, nullptr) << cleave_last_error_message();
  const fake_cuda_stats_t before = driverStats();
  AlignedFloats src(2 * 4 * 6 * 6), wei(6 * 2 * 3 * 2), bias(6),
      dst(2 * 6 * 3 * 4), diffDst(2 * 6 * 3 * 4), diffSrc(2 * 4 * 6 * 6),
      gw(6 * 2 * 3 * 2);
  AlignedFloats poolSrc(2 * 3 * 5 * 5), poolDst(2 * 3 * 3 * 3),
      poolDiffDst(2 * 3 * 3 * 3), poolDiffSrc(2 * 3 * 5 * 5);
  for (uint32_t run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    src.fillRandom(1 + run), wei.fillRandom(11 + run);
    bias.fillRandom(21 + run), diffDst.fillRandom(31 + run);
    poolSrc.fillRandom(41 + run), poolDiffDst.fillRandom(51 + run);

    // Forward: the convolution rounded to f32, then the bias, then ReLU.
    clearCudnnTrace();
    void *fwd[] = {src.data(), wei.data(), bias.data(), dst.data()};
    ASSERT_EQ(cleave_executable_run(exe, "conv_fwd", fwd, 4), CLEAVE_OK)
        << cleave_last_error_message();
    std::vector<double> expected(dst.size(), 0.0);
    forEachConvTap(
        [&](int s, int k, int d) { expected[d] += double(src[s]) * wei[k]; });
    for (size_t i = 0; i < expected.size(); ++i)
      expected[i] =
          std::max(0.0, double(float(expected[i])) + bias[(i / 12) % 6]);
    expectFloats(dst, expected, "conv_fwd");
    if (run == 0) {
      EXPECT_EQ(
          cudnnTrace(),
          "conv_fwd x=f32 w=f32 y=f32 2x4x6x6 k=6 algo=2 math=fma beta=0\n"
          "add_tensor a=f32 c=f32\nrelu f32\n");
    }

    void *data[] = {diffDst.data(), wei.data(), diffSrc.data()};
    ASSERT_EQ(cleave_executable_run(exe, "conv_bwd_data", data, 3), CLEAVE_OK)
        << cleave_last_error_message();
    expected.assign(diffSrc.size(), 0.0);
    forEachConvTap([&](int s, int k, int d) {
      expected[s] += double(diffDst[d]) * wei[k];
    });
    expectFloats(diffSrc, expected, "conv_bwd_data");

    // Added into gw, which keeps the previous runs' sums.
    std::vector<double> previous(gw.data(), gw.data() + gw.size());
    clearCudnnTrace();
    void *weights[] = {src.data(), diffDst.data(), gw.data()};
    ASSERT_EQ(cleave_executable_run(exe, "conv_bwd_weights", weights, 3),
              CLEAVE_OK)
        << cleave_last_error_message();
    expected = previous;
    std::vector<double> step(gw.size(), 0.0);
    forEachConvTap(
        [&](int s, int k, int d) { step[k] += double(src[s]) * diffDst[d]; });
    for (size_t i = 0; i < step.size(); ++i)
      expected[i] += step[i];
    expectFloats(gw, expected, "conv_bwd_weights");
    if (run == 0) {
      EXPECT_EQ(cudnnTrace(), "conv_bwd_filter x=f32 w=f32 y=f32 2x4x6x6 k=6 "
                              "algo=2 math=fma beta=1\n");
    }

    void *maxFwd[] = {poolSrc.data(), poolDst.data()};
    ASSERT_EQ(cleave_executable_run(exe, "max_pool", maxFwd, 2), CLEAVE_OK)
        << cleave_last_error_message();
    expected.assign(poolDst.size(), 0.0);
    forEachPoolWindow([&](int d, const std::vector<int> &taps) {
      float best = poolSrc[taps[0]];
      for (int t : taps)
        best = std::max(best, poolSrc[t]);
      expected[d] = best;
    });
    expectFloats(poolDst, expected, "max_pool");

    void *maxBwd[] = {poolSrc.data(), poolDiffDst.data(), poolDiffSrc.data()};
    ASSERT_EQ(cleave_executable_run(exe, "max_pool_bwd", maxBwd, 3), CLEAVE_OK)
        << cleave_last_error_message();
    expected.assign(poolDiffSrc.size(), 0.0);
    forEachPoolWindow([&](int d, const std::vector<int> &taps) {
      int first = taps[0];
      for (int t : taps)
        if (poolSrc[t] > poolSrc[first])
          first = t;
      expected[first] += poolDiffDst[d];
    });
    expectFloats(poolDiffSrc, expected, "max_pool_bwd");

    void *avgFwd[] = {poolSrc.data(), poolDst.data()};
    ASSERT_EQ(cleave_executable_run(exe, "avg_pool", avgFwd, 2), CLEAVE_OK)
        << cleave_last_error_message();
    expected.assign(poolDst.size(), 0.0);
    forEachPoolWindow([&](int d, const std::vector<int> &taps) {
      double sum = 0;
      for (int t : taps)
        sum += poolSrc[t];
      expected[d] = sum / double(taps.size());
    });
    expectFloats(poolDst, expected, "avg_pool");

    void *avgBwd[] = {poolDiffDst.data(), poolDiffSrc.data()};
    ASSERT_EQ(cleave_executable_run(exe, "avg_pool_bwd", avgBwd, 2), CLEAVE_OK)
        << cleave_last_error_message();
    expected.assign(poolDiffSrc.size(), 0.0);
    forEachPoolWindow([&](int d, const std::vector<int> &taps) {
      for (int t : taps)
        expected[t] += poolDiffDst[d] / double(taps.size());
    });
    expectFloats(poolDiffSrc, expected, "avg_pool_bwd");
  }
  EXPECT_GT(driverStats().graph_launches, before.graph_launches);
  cleave_executable_destroy(exe);
}

// cuDNN pads both sides of a dimension alike: a convolution padded at the
// bottom alone would give a 2-row output where the entry has 3, so the
// session refuses it when it is loaded, naming the kernel.
TEST(FakeGpuExecutable, PaddingCudnnCannotExpressIsRefused) {
  cleave_executable *exe =
      loadExecutableOnGpu(CLEAVE_CONV_ARTIFACT_CUDA_BAD_PADDING);
  EXPECT_EQ(exe, nullptr);
  std::string error = cleave_last_error_message();
  EXPECT_NE(error.find("kernel 0 (conv2d_fwd): padding (top 0, left 0, "
                       "bottom 1, right 0) cannot be expressed with cuDNN"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("it would give a 2x4 output, the entry has 3x4"),
            std::string::npos)
      << error;
}

/// `x` rounded to bf16 (nearest even), as a double.
double roundedToBf16(double x) { return bf16(float(x)); }

// The three convolutions in bf16, as cleave-compile makes them for cuda:
// every operand stored in bf16 gives cuDNN bf16 tensors, and the result is
// the f32 sum of the bf16 products rounded once to bf16 (the same values in
// f32 give a different result: the entries were honoured). The heuristics
// offer a non-deterministic tensor-op algorithm first, then a deterministic
// one with default math, which the session takes and gives the descriptor
// (the fake runs a bf16 algorithm only with the math it was offered with,
// so keeping the tensor-op descriptor fails), and no FMA one.
TEST(FakeGpuExecutable, Bf16ConvolutionsRunOnCudnnWithBf16Tensors) {
  cleave_executable *exe = loadExecutableOnGpu(CLEAVE_CONV_ARTIFACT_CUDA);
  ASSERT_NE(exe, nullptr) << cleave_last_error_message();
  AlignedFloats src(2 * 4 * 6 * 6), wei(6 * 2 * 3 * 2), dst(2 * 6 * 3 * 4),
      diffDst(2 * 6 * 3 * 4), diffSrc(2 * 4 * 6 * 6), diffWei(6 * 2 * 3 * 2);
  src.fillRandom(3), wei.fillRandom(5), diffDst.fillRandom(7);
  auto r = [](float x) { return double(bf16(x)); };
  // `sums` rounded to f32 then to bf16 must equal `got`, and rounding to
  // f32 alone must not.
  auto expectBf16 = [](AlignedFloats &got, const std::vector<double> &sums,
                       const char *what) {
    ASSERT_EQ(got.size(), sums.size());
    bool rounded = false;
    for (size_t i = 0; i < sums.size(); ++i) {
      EXPECT_EQ(got[i], float(roundedToBf16(sums[i])))
          << what << " [" << i << "]";
      rounded |= got[i] != float(sums[i]);
    }
    EXPECT_TRUE(rounded) << what << ": no element shows the bf16 result";
  };

  clearCudnnTrace();
  void *fwd[] = {src.data(), wei.data(), dst.data()};
  ASSERT_EQ(cleave_executable_run(exe, "conv_fwd_bf16", fwd, 3), CLEAVE_OK)
      << cleave_last_error_message();
  std::vector<double> sums(dst.size(), 0.0);
  forEachConvTap(
      [&](int s, int k, int d) { sums[d] += r(src[s]) * r(wei[k]); });
  expectBf16(dst, sums, "conv_fwd_bf16");
  EXPECT_EQ(cudnnTrace(), "conv_fwd x=bf16 w=bf16 y=bf16 2x4x6x6 k=6 algo=1 "
                          "math=default beta=0\n");

  clearCudnnTrace();
  void *data[] = {diffDst.data(), wei.data(), diffSrc.data()};
  ASSERT_EQ(cleave_executable_run(exe, "conv_bwd_data_bf16", data, 3),
            CLEAVE_OK)
      << cleave_last_error_message();
  sums.assign(diffSrc.size(), 0.0);
  forEachConvTap(
      [&](int s, int k, int d) { sums[s] += r(diffDst[d]) * r(wei[k]); });
  expectBf16(diffSrc, sums, "conv_bwd_data_bf16");
  EXPECT_EQ(cudnnTrace(), "conv_bwd_data x=bf16 w=bf16 y=bf16 2x4x6x6 k=6 "
                          "algo=1 math=default beta=0\n");

  clearCudnnTrace();
  void *weights[] = {src.data(), diffDst.data(), diffWei.data()};
  ASSERT_EQ(cleave_executable_run(exe, "conv_bwd_weights_bf16", weights, 3),
            CLEAVE_OK)
      << cleave_last_error_message();
  sums.assign(diffWei.size(), 0.0);
  forEachConvTap(
      [&](int s, int k, int d) { sums[k] += r(src[s]) * r(diffDst[d]); });
  expectBf16(diffWei, sums, "conv_bwd_weights_bf16");
  EXPECT_EQ(cudnnTrace(), "conv_bwd_filter x=bf16 w=bf16 y=bf16 2x4x6x6 k=6 "
                          "algo=1 math=default beta=0\n");
  cleave_executable_destroy(exe);
}

// cuDNN multiplies bf16 only on bf16 tensors: a bf16 convolution whose
// weights stay f32 is refused when the executable is loaded, naming them.
TEST(FakeGpuExecutable, Bf16ConvolutionWithF32WeightsIsRefused) {
  cleave_executable *exe =
      loadExecutableOnGpu(CLEAVE_CONV_ARTIFACT_CUDA_BF16_F32_WEIGHTS);
  EXPECT_EQ(exe, nullptr);
  std::string error = cleave_last_error_message();
  EXPECT_NE(error.find("kernel 7 (conv2d_fwd): a bf16 convolution on the GPU "
                       "needs every operand stored in bf16 (cuDNN multiplies "
                       "bf16 only on bf16 tensors); this entry has weights in "
                       "f32"),
            std::string::npos)
      << error;
}

/// `size` bf16 values, 64-byte aligned as the ABI wants every buffer.
class AlignedBf16 {
public:
  explicit AlignedBf16(size_t size)
      : data_(static_cast<uint16_t *>(
            std::aligned_alloc(64, (size * sizeof(uint16_t) + 63) / 64 * 64))),
        size_(size) {
    std::fill(data_, data_ + size_, uint16_t(0));
  }
  ~AlignedBf16() { std::free(data_); }
  AlignedBf16(const AlignedBf16 &) = delete;
  AlignedBf16 &operator=(const AlignedBf16 &) = delete;
  uint16_t *data() { return data_; }
  size_t size() const { return size_; }
  /// Element `i`, widened.
  double operator[](size_t i) const {
    uint32_t bits = uint32_t(data_[i]) << 16;
    float x;
    std::memcpy(&x, &bits, sizeof(x));
    return x;
  }
  /// Values in [-range, range], rounded to bf16.
  void fillRandom(uint32_t seed, float range) {
    for (size_t i = 0; i < size_; ++i) {
      seed = seed * 1664525u + 1013904223u;
      float x = range * float(int32_t(seed >> 8) % 2001 - 1000) / 1000.0f;
      data_[i] = fake_bf16_bits(x);
    }
  }
  /// A dropout mask: 0 with probability about `ratio`, else 1.
  void fillKeep(uint32_t seed, double ratio) {
    for (size_t i = 0; i < size_; ++i) {
      seed = seed * 1664525u + 1013904223u;
      data_[i] =
          fake_bf16_bits((seed >> 8) % 1000 < ratio * 1000 ? 0.0f : 1.0f);
    }
  }

private:
  uint16_t *data_;
  size_t size_;
};

/// An attention kernel of SdpaArtifact.c.
struct AttentionShape {
  int batch, t, s, d, dv;
  double scale;
  bool causal;
  /// Dropout's ratio: the probabilities times keep / (1 - dropout).
  double dropout = 0;
};

/// What probability (b, i, j) is multiplied by after the softmax.
double keptFactor(const AttentionShape &a, const AlignedBf16 *keep, int b,
                  int i, int j) {
  if (!keep)
    return 1;
  return (*keep)[(size_t(b) * a.t + i) * a.s + j] / (1 - a.dropout);
}

/// kernel_abi.h's attention in double, from the operands the kernel was
/// given, with each result's magnitude (the sum of the absolute values of
/// its terms) to scale the tolerance by.
struct AttentionReference {
  std::vector<double> o, oMagnitude, lse;
  std::vector<double> dq, dqMagnitude, dk, dkMagnitude, dv, dvMagnitude;
};

/// The scaled, masked scores of row `i` of slice `b`.
std::vector<double> attentionScores(const AttentionShape &a,
                                    const AlignedBf16 &q, const AlignedBf16 &k,
                                    const AlignedBf16 *mask, int b, int i) {
  std::vector<double> row(a.s);
  for (int j = 0; j < a.s; ++j) {
    double dot = 0;
    for (int c = 0; c < a.d; ++c)
      dot += q[(b * a.t + i) * a.d + c] * k[(b * a.s + j) * a.d + c];
    row[j] = a.scale * dot + (mask ? (*mask)[i * a.s + j] : 0.0);
    if (a.causal && j > i)
      row[j] = -INFINITY;
  }
  return row;
}

AttentionReference attentionForward(const AttentionShape &a,
                                    const AlignedBf16 &q, const AlignedBf16 &k,
                                    const AlignedBf16 &v,
                                    const AlignedBf16 *mask,
                                    const AlignedBf16 *keep) {
  AttentionReference r;
  r.o.assign(size_t(a.batch) * a.t * a.dv, 0.0);
  r.oMagnitude = r.o;
  r.lse.assign(size_t(a.batch) * a.t, 0.0);
  for (int b = 0; b < a.batch; ++b)
    for (int i = 0; i < a.t; ++i) {
      std::vector<double> s = attentionScores(a, q, k, mask, b, i);
      double max = *std::max_element(s.begin(), s.end()), sum = 0;
      for (double x : s)
        sum += std::exp(x - max);
      const double lse = max + std::log(sum);
      r.lse[b * a.t + i] = lse;
      for (int j = 0; j < a.s; ++j) {
        const double p = std::exp(s[j] - lse) * keptFactor(a, keep, b, i, j);
        for (int c = 0; c < a.dv; ++c) {
          const double term = p * v[(b * a.s + j) * a.dv + c];
          r.o[(b * a.t + i) * a.dv + c] += term;
          r.oMagnitude[(b * a.t + i) * a.dv + c] += std::fabs(term);
        }
      }
    }
  return r;
}

AttentionReference attentionBackward(
    const AttentionShape &a, const AlignedBf16 &q, const AlignedBf16 &k,
    const AlignedBf16 &v, const AlignedBf16 *mask, const AlignedBf16 *keep,
    const AlignedBf16 &o, AlignedFloats &lse, const AlignedBf16 &dO) {
  AttentionReference r;
  r.dq.assign(size_t(a.batch) * a.t * a.d, 0.0);
  r.dk.assign(size_t(a.batch) * a.s * a.d, 0.0);
  r.dv.assign(size_t(a.batch) * a.s * a.dv, 0.0);
  r.dqMagnitude = r.dq, r.dkMagnitude = r.dk, r.dvMagnitude = r.dv;
  for (int b = 0; b < a.batch; ++b)
    for (int i = 0; i < a.t; ++i) {
      std::vector<double> s = attentionScores(a, q, k, mask, b, i);
      double delta = 0;
      for (int c = 0; c < a.dv; ++c)
        delta += dO[(b * a.t + i) * a.dv + c] * o[(b * a.t + i) * a.dv + c];
      for (int j = 0; j < a.s; ++j) {
        const double p = std::exp(s[j] - lse[b * a.t + i]);
        const double factor = keptFactor(a, keep, b, i, j);
        double dp = 0;
        for (int c = 0; c < a.dv; ++c) {
          const double dOc = dO[(b * a.t + i) * a.dv + c];
          dp += dOc * v[(b * a.s + j) * a.dv + c];
          r.dv[(b * a.s + j) * a.dv + c] += p * factor * dOc;
          r.dvMagnitude[(b * a.s + j) * a.dv + c] +=
              std::fabs(p * factor * dOc);
        }
        const double ds = a.scale * p * (dp * factor - delta);
        for (int c = 0; c < a.d; ++c) {
          const double toQ = ds * k[(b * a.s + j) * a.d + c];
          const double toK = ds * q[(b * a.t + i) * a.d + c];
          r.dq[(b * a.t + i) * a.d + c] += toQ;
          r.dqMagnitude[(b * a.t + i) * a.d + c] += std::fabs(toQ);
          r.dk[(b * a.s + j) * a.d + c] += toK;
          r.dkMagnitude[(b * a.s + j) * a.d + c] += std::fabs(toK);
        }
      }
    }
  return r;
}

/// bf16 keeps 8 significant bits: rounding P (or dS) before the product
/// and rounding its result each move it by at most 2^-8 of their value, so
/// 2^-7 of the terms' magnitude bounds both. f32 rounding of the scores and
/// of the sums adds a little more.
void expectAttentionResult(const AlignedBf16 &got,
                           const std::vector<double> &expected,
                           const std::vector<double> &magnitude,
                           const char *what) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], (1.0 / 128 + 1e-5) * magnitude[i] + 1e-5)
        << what << " [" << i << "]";
}

/// Sets one of the fake cuDNN's knobs, fake_cudnn_refuse_graphs or
/// fake_cudnn_fail_executions (FakeCudnn.c), loading it if no session has
/// yet; it stays loaded, knob and all, for the runtime to find.
void setCudnnKnob(const char *knob, int value) {
  void *dnn = ::dlopen("libcudnn.so.9", RTLD_NOW);
  ASSERT_NE(dnn, nullptr) << ::dlerror();
  auto fn = reinterpret_cast<void (*)(int)>(::dlsym(dnn, knob));
  ASSERT_NE(fn, nullptr) << knob;
  fn(value);
}

/// One attention entry pair of SdpaArtifact.c, its shape and mask (or, with
/// dropout, keep), run forward then backward on fresh values, each against
/// the reference.
void runAttention(cleave_executable *exe, const char *entry,
                  const AttentionShape &a, bool withMask, uint32_t seed,
                  std::string *trace) {
  SCOPED_TRACE(entry);
  const size_t b = size_t(a.batch);
  AlignedBf16 q(b * a.t * a.d), k(b * a.s * a.d), v(b * a.s * a.dv),
      mask(size_t(a.t) * a.s), keep(b * a.t * a.s), o(b * a.t * a.dv),
      dO(b * a.t * a.dv), dq(b * a.t * a.d), dk(b * a.s * a.d),
      dv(b * a.s * a.dv);
  AlignedFloats lse(b * a.t);
  q.fillRandom(seed, 1.0f), k.fillRandom(seed + 1, 1.0f);
  v.fillRandom(seed + 2, 1.0f), mask.fillRandom(seed + 3, 2.0f);
  dO.fillRandom(seed + 4, 1.0f), keep.fillKeep(seed + 5, a.dropout);
  const AlignedBf16 *maskArg = withMask ? &mask : nullptr;
  const AlignedBf16 *keepArg = a.dropout != 0 ? &keep : nullptr;

  clearCudnnTrace();
  std::vector<void *> fwd = {q.data(), k.data(), v.data()};
  if (withMask)
    fwd.push_back(mask.data());
  if (keepArg)
    fwd.push_back(keep.data());
  fwd.insert(fwd.end(), {o.data(), lse.data()});
  ASSERT_EQ(cleave_executable_run(exe, entry, fwd.data(), int(fwd.size())),
            CLEAVE_OK)
      << cleave_last_error_message();
  AttentionReference r = attentionForward(a, q, k, v, maskArg, keepArg);
  expectAttentionResult(o, r.o, r.oMagnitude, "o");
  for (size_t i = 0; i < r.lse.size(); ++i)
    EXPECT_NEAR(lse[i], r.lse[i], 1e-5 * (1 + std::fabs(r.lse[i])))
        << "lse [" << i << "]";

  // The backward pass from the forward's o and lse, as in training.
  std::vector<void *> bwd = {q.data(), k.data(), v.data()};
  if (withMask)
    bwd.push_back(mask.data());
  if (keepArg)
    bwd.push_back(keep.data());
  bwd.insert(bwd.end(), {o.data(), lse.data(), dO.data(), dq.data(), dk.data(),
                         dv.data()});
  const std::string backward = std::string(entry) + "_bwd";
  ASSERT_EQ(
      cleave_executable_run(exe, backward.c_str(), bwd.data(), int(bwd.size())),
      CLEAVE_OK)
      << cleave_last_error_message();
  r = attentionBackward(a, q, k, v, maskArg, keepArg, o, lse, dO);
  expectAttentionResult(dq, r.dq, r.dqMagnitude, "dq");
  expectAttentionResult(dk, r.dk, r.dkMagnitude, "dk");
  expectAttentionResult(dv, r.dv, r.dvMagnitude, "dv");
  *trace = cudnnTrace();
}

// Fused attention on (the fake) cuDNN's graph API, forward and backward,
// against kernel_abi.h's definition computed here in double from the bf16
// operands: a causal case without a mask (T = S), a masked one that is
// not causal (T != S, value_dim != head_dim), and a causal one with
// dropout (keep bound, P times keep and 1 / (1 - r), dO vᵀ times keep,
// softmax_sum times 1 - r: two more operations forward, three backward).
// The fake interprets whatever
// operation graph the runtime builds, in dependency order over its tensors
// (virtual ones rounded to their declared type), so a graph without the
// scale, the mask or the causal operations gives other numbers. The
// heuristics offer a non-deterministic engine first, which the session
// passes over, then engine 1, whose workspace the fake overwrites while it
// runs (so the backward's softmax_sum must lie after it). The backward is
// cudnn-frontend's deterministic graph: dS k written straight to dq, with
// no dQ_accum and no IDENTITY operation rounding it. Each entry runs three
// times with new values; the later runs replay a captured graph, with the
// scalars cuDNN read when the graph was captured.
TEST(FakeGpuExecutable, AttentionRunsOnCudnnGraphs) {
  cleave_executable *exe = loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA);
  ASSERT_NE(exe, nullptr) << cleave_last_error_message();
  // Deterministic engines: nothing to note.
  size_t notes = 1;
  ASSERT_EQ(cleave_executable_num_notes(exe, &notes), CLEAVE_OK);
  EXPECT_EQ(notes, 0u);
  const fake_cuda_stats_t before = driverStats();
  const AttentionShape causal = {3, 10, 10, 16, 16, 0.3, true};
  const AttentionShape masked = {2, 6, 9, 8, 16, 0.45, false};
  const AttentionShape dropout = {2, 7, 7, 8, 8, 0.35, true, 0.25};
  for (uint32_t run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    std::string trace;
    runAttention(exe, "attention_causal", causal, false, 10 * run + 1, &trace);
    if (run == 0) {
      EXPECT_EQ(trace, "graph ops=14 engine=1\ngraph ops=21 engine=1\n");
    }
    runAttention(exe, "attention_masked", masked, true, 10 * run + 5, &trace);
    if (run == 0) {
      EXPECT_EQ(trace, "graph ops=11 engine=1\ngraph ops=18 engine=1\n");
    }
    runAttention(exe, "attention_dropout", dropout, false, 10 * run + 7,
                 &trace);
    if (run == 0) {
      EXPECT_EQ(trace, "graph ops=16 engine=1\ngraph ops=24 engine=1\n");
    }
  }
  EXPECT_GT(driverStats().graph_launches, before.graph_launches);
  cleave_executable_destroy(exe);
}

// A cuDNN with no engine for the deterministic backward graph (the fake
// refuses a matmul writing dq from f32 operands): the backward takes
// cudnn-frontend's default graph instead, dS k summed into the f32
// dQ_accum after softmax_sum (placed after engine 0's workspace, none
// here) and rounded to dq by an IDENTITY operation, on the heuristics'
// first engine, non-deterministic engine 0, which the kernel's description
// (shown in an execution's error) names. The forward keeps its
// deterministic engine.
TEST(FakeGpuExecutable, AttentionBackwardFallsBackToDqAccum) {
  struct Reset {
    ~Reset() {
      setCudnnKnob("fake_cudnn_refuse_graphs", 0);
      setCudnnKnob("fake_cudnn_fail_executions", 0);
    }
  } reset;
  setCudnnKnob("fake_cudnn_refuse_graphs", 3);
  cleave_executable *exe = loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA);
  ASSERT_NE(exe, nullptr) << cleave_last_error_message();
  // The executable's notes say so once per such kernel, and how to avoid it.
  size_t count = 0;
  ASSERT_EQ(cleave_executable_num_notes(exe, &count), CLEAVE_OK);
  std::string notes;
  for (size_t i = 0; i < count; ++i) {
    const char *note = nullptr;
    ASSERT_EQ(cleave_executable_note(exe, i, &note), CLEAVE_OK);
    notes += std::string(note) + "\n";
  }
  EXPECT_NE(notes.find("kernel 1 (sdpa_bwd): cuDNN has no deterministic "
                       "engine for this attention gradient here; it runs "
                       "engine 0, which sums dq with atomics, so dq may differ "
                       "in the last bits from run to run "
                       "(--fused-attention=false spells attention out "
                       "deterministically)\n"),
            std::string::npos)
      << notes;

  setCudnnKnob("fake_cudnn_fail_executions", 1);
  AlignedBf16 q(3 * 10 * 16), o(3 * 10 * 16), dO(3 * 10 * 16), dq(3 * 10 * 16),
      dk(3 * 10 * 16), dv(3 * 10 * 16);
  AlignedFloats lse(3 * 10);
  std::array<void *, 9> args = {q.data(),  q.data(),   q.data(),
                                o.data(),  lse.data(), dO.data(),
                                dq.data(), dk.data(),  dv.data()};
  EXPECT_NE(cleave_executable_run(exe, "attention_causal_bwd", args.data(),
                                  int(args.size())),
            CLEAVE_OK);
  const std::string error = cleave_last_error_message();
  EXPECT_NE(error.find("sdpa_bwd on cuDNN: a graph of 22 operations, engine "
                       "0 (heuristics mode A), non-deterministic (dQ summed "
                       "with atomics), 0 bytes of workspace"),
            std::string::npos)
      << error;
  setCudnnKnob("fake_cudnn_fail_executions", 0);

  const AttentionShape causal = {3, 10, 10, 16, 16, 0.3, true};
  const AttentionShape masked = {2, 6, 9, 8, 16, 0.45, false};
  for (uint32_t run = 0; run < 2; ++run) {
    SCOPED_TRACE(run);
    std::string trace;
    runAttention(exe, "attention_causal", causal, false, 10 * run + 1, &trace);
    if (run == 0) {
      EXPECT_EQ(trace, "graph ops=14 engine=1\ngraph ops=22 engine=0\n");
    }
    runAttention(exe, "attention_masked", masked, true, 10 * run + 5, &trace);
    if (run == 0) {
      EXPECT_EQ(trace, "graph ops=11 engine=1\ngraph ops=19 engine=0\n");
    }
  }
  cleave_executable_destroy(exe);
}

// cuDNN's fused attention takes bf16 tensors only, and head dimensions
// that are multiples of 8: other entries are refused when the executable
// is loaded, naming the kernel and what to do instead.
TEST(FakeGpuExecutable, AttentionCudnnCannotRunIsRefused) {
  EXPECT_EQ(loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA_F32), nullptr);
  std::string error = cleave_last_error_message();
  EXPECT_NE(error.find("kernel 0 (sdpa_fwd): cuDNN's fused attention needs "
                       "bf16 tensors (io_type bf16); compile with "
                       "--precision=bf16 or let the compiler decompose "
                       "attention"),
            std::string::npos)
      << error;

  EXPECT_EQ(loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA_HEAD_DIM_12),
            nullptr);
  error = cleave_last_error_message();
  EXPECT_NE(error.find("kernel 2 (sdpa_fwd): cuDNN's fused attention needs a "
                       "head_dim that is a multiple of 8 and at most 256, "
                       "this entry has 12"),
            std::string::npos)
      << error;
}

// A graph cuDNN has no engine for is refused when the executable is
// loaded, naming the kernel, its shape and cuDNN's status and message for
// each engine it tried, and leaking none of its descriptors: here the
// heuristics refuse the graph, then every plan fails to finalize, then
// the heuristics refuse both of the backward's graphs (dQ written directly
// and with dQ_accum) while taking the forward's.
TEST(FakeGpuExecutable, AttentionWithoutACudnnEngineIsRefused) {
  struct Reset {
    ~Reset() { setCudnnKnob("fake_cudnn_refuse_graphs", 0); }
  } reset;
  setCudnnKnob("fake_cudnn_refuse_graphs", 1);
  EXPECT_EQ(loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA), nullptr);
  std::string error = cleave_last_error_message();
  EXPECT_NE(
      error.find("kernel 0 (sdpa_fwd): cuDNN has no engine for this attention "
                 "(batch 3, seq_q 10, seq_kv 10, head_dim 16, value_dim 16, "
                 "causal): heuristics mode A: "
                 "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN (no engine matches "
                 "this graph (fake_cudnn_refuse_graphs)); heuristics "
                 "fallback: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN"),
      std::string::npos)
      << error;

  setCudnnKnob("fake_cudnn_refuse_graphs", 2);
  EXPECT_EQ(loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA), nullptr);
  error = cleave_last_error_message();
  EXPECT_NE(
      error.find("kernel 0 (sdpa_fwd): cuDNN has no engine for this attention "
                 "(batch 3, seq_q 10, seq_kv 10, head_dim 16, value_dim 16, "
                 "causal): engine 0 is non-deterministic; engine 1's plan: "
                 "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT "
                 "(engine 1 does not fit (fake_cudnn_refuse_graphs)); engine "
                 "2's plan: CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_"
                 "INSUFFICIENT"),
      std::string::npos)
      << error;

  setCudnnKnob("fake_cudnn_refuse_graphs", 4);
  EXPECT_EQ(loadExecutableOnGpu(CLEAVE_SDPA_ARTIFACT_CUDA), nullptr);
  error = cleave_last_error_message();
  EXPECT_NE(
      error.find("kernel 1 (sdpa_bwd): cuDNN has no engine for this attention "
                 "(batch 3, seq_q 10, seq_kv 10, head_dim 16, value_dim 16, "
                 "causal): with dQ written directly, heuristics mode A: "
                 "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN (no engine matches "
                 "this graph (fake_cudnn_refuse_graphs)); heuristics "
                 "fallback: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN (no "
                 "engine matches this graph (fake_cudnn_refuse_graphs)); with "
                 "dQ_accum, heuristics mode A: CUDNN_STATUS_NOT_SUPPORTED_"
                 "GRAPH_PATTERN"),
      std::string::npos)
      << error;
}

} // namespace

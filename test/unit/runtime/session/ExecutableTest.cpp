//===- ExecutableTest.cpp - Running graph artifacts -----------------------===//
//
// The executable API runs the entries of a graph artifact (what the tracing
// frontend compiles) on caller-owned buffers: entries of any name, globals
// updated in place, scratch and the kernel context owned by the executable.
// Graph manifests are validated as strictly as training ones, minus what
// only a session needs; the two kinds of artifact are not interchangeable.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <memory>

using namespace cleave;
using namespace cleave::test;
using nlohmann::json;

namespace {

/// 64-byte aligned floats, as the ABI requires of every buffer. The size
/// passed to aligned_alloc must be a multiple of the alignment (C11; ASan
/// refuses any other).
struct Buffer {
  explicit Buffer(size_t n)
      : data(static_cast<float *>(
            std::aligned_alloc(64, (64 + n * 4 + 63) / 64 * 64))) {}
  ~Buffer() { std::free(data); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  float &operator[](size_t i) { return data[i]; }
  float *data;
};

void expectError(cleave_status status, cleave_status expected,
                 const std::string &message) {
  EXPECT_EQ(status, expected) << cleave_status_string(status);
  EXPECT_EQ(std::string(cleave_last_error_message()), message);
}

class ExecutableTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cleave_executable_load(CLEAVE_GRAPH_ARTIFACT, nullptr, &exe),
              CLEAVE_OK)
        << cleave_last_error_message();
  }
  void TearDown() override { cleave_executable_destroy(exe); }

  cleave_executable *exe = nullptr;
};

TEST_F(ExecutableTest, DescribesItsEntries) {
  size_t n = 0;
  ASSERT_EQ(cleave_executable_num_entries(exe, &n), CLEAVE_OK);
  ASSERT_EQ(n, 4u);
  const char *name = nullptr;
  ASSERT_EQ(cleave_executable_entry_name(exe, 0, &name), CLEAVE_OK);
  EXPECT_STREQ(name, "axpy");
  ASSERT_EQ(cleave_executable_entry_name(exe, 1, &name), CLEAVE_OK);
  EXPECT_STREQ(name, "matmul");
  ASSERT_EQ(cleave_executable_entry_name(exe, 2, &name), CLEAVE_OK);
  EXPECT_STREQ(name, "sum_ranks");
  ASSERT_EQ(cleave_executable_entry_name(exe, 3, &name), CLEAVE_OK);
  EXPECT_STREQ(name, "unknown_kernel");

  // Scratch is the executable's: four arguments, not five.
  ASSERT_EQ(cleave_executable_num_args(exe, "axpy", &n), CLEAVE_OK);
  ASSERT_EQ(n, 4u);
  struct Expected {
    cleave_arg_role role;
    const char *name;
    int32_t rank;
    size_t bytes;
  };
  const Expected expected[] = {{CLEAVE_ARG_INPUT, "x", 1, 16},
                               {CLEAVE_ARG_INPUT, "a", 0, 4},
                               {CLEAVE_ARG_OUTPUT, "y", 1, 16},
                               {CLEAVE_ARG_GLOBAL, "w", 1, 16}};
  for (size_t i = 0; i < n; ++i) {
    cleave_arg_info info;
    ASSERT_EQ(cleave_executable_arg(exe, "axpy", i, &info), CLEAVE_OK);
    EXPECT_EQ(info.role, expected[i].role) << i;
    EXPECT_STREQ(info.tensor.name, expected[i].name);
    EXPECT_EQ(info.tensor.dtype, CLEAVE_DTYPE_F32);
    EXPECT_EQ(info.tensor.rank, expected[i].rank);
    EXPECT_EQ(info.tensor.bytes, expected[i].bytes);
  }
  const char *manifest = nullptr;
  ASSERT_EQ(cleave_executable_manifest(exe, &manifest), CLEAVE_OK);
  EXPECT_EQ(json::parse(manifest)["kind"], "graph");
}

TEST_F(ExecutableTest, RunsOnCallerBuffersAndUpdatesGlobalsInPlace) {
  Buffer x(4), a(1), y(4), w(4);
  for (int i = 0; i < 4; ++i) {
    x[i] = float(i + 1);
    w[i] = 10.0f;
  }
  a[0] = 0.5f;
  void *args[] = {x.data, a.data, y.data, w.data};
  ASSERT_EQ(cleave_executable_run(exe, "axpy", args, 4), CLEAVE_OK)
      << cleave_last_error_message();
  ASSERT_EQ(cleave_executable_run(exe, "axpy", args, 4), CLEAVE_OK);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(w[i], 10.0f + 2 * 0.5f * float(i + 1)) << i;
    EXPECT_EQ(y[i], 2 * w[i]) << i;
  }
}

TEST_F(ExecutableTest, EntriesReachTheKernelContext) {
  Buffer a(6), b(6), c(4);
  for (int i = 0; i < 6; ++i) {
    a[i] = float(i + 1);     // [[1, 2, 3], [4, 5, 6]]
    b[i] = float(i % 3) - 1; // [[-1, 0], [1, -1], [0, 1]]
  }
  void *args[] = {a.data, b.data, c.data};
  ASSERT_EQ(cleave_executable_run(exe, "matmul", args, 3), CLEAVE_OK)
      << cleave_last_error_message();
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 2; ++col) {
      float expected = 0;
      for (int k = 0; k < 3; ++k)
        expected += a[r * 3 + k] * b[k * 2 + col];
      EXPECT_FLOAT_EQ(c[r * 2 + col], expected) << r << "," << col;
    }
}

TEST_F(ExecutableTest, AFailingKernelCallIsReturnedAndLeavesItUsable) {
  Buffer c(4);
  void *out[] = {c.data};
  expectError(cleave_executable_run(exe, "unknown_kernel", out, 1),
              CLEAVE_INTERNAL,
              std::string("cleave_executable_run: ") + CLEAVE_GRAPH_ARTIFACT +
                  ": entry 'unknown_kernel': cleave_kernel_matmul: no kernel "
                  "9 (the context has 1)");
  // Like compiled code, the entry ran on after the failed call.
  EXPECT_EQ(c[0], 7.f);

  // The executable holds no state of its own: the next run starts afresh.
  Buffer a(6), b(6);
  for (int i = 0; i < 6; ++i) {
    a[i] = 1;
    b[i] = 2;
  }
  void *args[] = {a.data, b.data, c.data};
  ASSERT_EQ(cleave_executable_run(exe, "matmul", args, 3), CLEAVE_OK)
      << cleave_last_error_message();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(c[i], 6.f) << i;
}

TEST_F(ExecutableTest, RefusesBadArguments) {
  Buffer x(4), a(1), y(4), w(4);
  void *args[] = {x.data, a.data, y.data, w.data};
  expectError(cleave_executable_run(exe, "axpy", args, 3),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_run: entry 'axpy' takes 4 arguments, 3 "
              "given");
  expectError(cleave_executable_run(exe, "axpy", nullptr, 4),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_run: entry 'axpy': args is NULL");
  void *null[] = {x.data, a.data, nullptr, w.data};
  expectError(cleave_executable_run(exe, "axpy", null, 4),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_run: entry 'axpy': args[2] (output 'y') is "
              "NULL");
  void *unaligned[] = {x.data, a.data, y.data, w.data + 1};
  expectError(cleave_executable_run(exe, "axpy", unaligned, 4),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_run: entry 'axpy': args[3] (global 'w') is "
              "not 64-byte aligned");
  expectError(cleave_executable_run(exe, "micro_step", args, 4),
              CLEAVE_NOT_FOUND,
              "cleave_executable_run: the executable has no entry "
              "'micro_step'");
  expectError(cleave_executable_run(nullptr, "axpy", args, 4),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_run: executable is NULL");
  size_t n;
  expectError(cleave_executable_num_args(exe, "nope", &n), CLEAVE_NOT_FOUND,
              "cleave_executable_num_args: the executable has no entry "
              "'nope'");
  cleave_arg_info info;
  expectError(cleave_executable_arg(exe, "axpy", 4, &info),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_arg: index 4 is out of range (the artifact "
              "has 4 arguments)");
  const char *name;
  expectError(cleave_executable_entry_name(exe, 4, &name),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_executable_entry_name: index 4 is out of range (the "
              "artifact has 4 entries)");
  cleave_executable *other = nullptr;
  expectError(cleave_executable_load(nullptr, nullptr, &other),
              CLEAVE_INVALID_ARGUMENT, "cleave_executable_load: path is NULL");
  cleave_executable_options options;
  cleave_executable_options_init(&options);
  options.num_threads = -1;
  expectError(cleave_executable_load(CLEAVE_GRAPH_ARTIFACT, &options, &other),
              CLEAVE_INVALID_ARGUMENT,
              "options: num_threads is -1, expected 0 (leave OpenMP alone) "
              "or a positive count");
  EXPECT_EQ(other, nullptr);
  cleave_executable_destroy(nullptr); // allowed
}

TEST(ExecutableKindTest, TrainingAndGraphArtifactsDoNotMix) {
  cleave_artifact *artifact = nullptr;
  expectError(cleave_artifact_load(CLEAVE_GRAPH_ARTIFACT, &artifact),
              CLEAVE_INVALID_ARTIFACT,
              std::string(CLEAVE_GRAPH_ARTIFACT) +
                  ": a graph artifact; graph artifacts run through "
                  "cleave_executable_load");
  EXPECT_EQ(artifact, nullptr);
  cleave_executable *exe = nullptr;
  expectError(cleave_executable_load(CLEAVE_FAKE_SGD, nullptr, &exe),
              CLEAVE_INVALID_ARTIFACT,
              std::string(CLEAVE_FAKE_SGD) +
                  ": a training artifact; training and inference artifacts run "
                  "through cleave_session_create");
  EXPECT_EQ(exe, nullptr);
}

//===----------------------------------------------------------------------===//
// Devices: a graph artifact runs on the device it was compiled for, chosen
// as a session's is (FakeGpuTest runs one on the fake CUDA driver).
//===----------------------------------------------------------------------===//

cleave_status loadOn(const char *path, int32_t device, int32_t ordinal = 0) {
  cleave_executable_options options;
  cleave_executable_options_init(&options);
  options.device = device;
  options.device_ordinal = ordinal;
  cleave_executable *exe = nullptr;
  cleave_status status = cleave_executable_load(path, &options, &exe);
  EXPECT_EQ(exe == nullptr, status != CLEAVE_OK);
  cleave_executable_destroy(exe);
  return status;
}

TEST(ExecutableDeviceTest, DefaultsAreTheCpu) {
  cleave_executable_options options;
  std::memset(&options, 0x5a, sizeof(options));
  cleave_executable_options_init(&options);
  EXPECT_EQ(options.num_threads, 0);
  EXPECT_EQ(options.distributed, 0);
  EXPECT_EQ(options.device, CLEAVE_DEVICE_CPU);
  EXPECT_EQ(options.device_ordinal, 0);
}

TEST(ExecutableDeviceTest, RunsOnTheDeviceItWasCompiledFor) {
  const std::string cuda = CLEAVE_GRAPH_ARTIFACT_CUDA;
  expectError(loadOn(cuda.c_str(), CLEAVE_DEVICE_CPU),
              CLEAVE_FAILED_PRECONDITION,
              cuda + ": compiled for CUDA GPUs (sm_80, sm_90 and PTX for "
                     "sm_80), but the executable is on the CPU; load it with "
                     "device CLEAVE_DEVICE_CUDA in cleave_executable_options");
  // NULL options are the CPU's.
  cleave_executable *exe = nullptr;
  EXPECT_EQ(cleave_executable_load(cuda.c_str(), nullptr, &exe),
            CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(exe, nullptr);
  expectError(loadOn(CLEAVE_GRAPH_ARTIFACT, CLEAVE_DEVICE_CUDA),
              CLEAVE_FAILED_PRECONDITION,
              std::string(CLEAVE_GRAPH_ARTIFACT) +
                  ": compiled for the CPU, but the executable is on a CUDA "
                  "GPU; load it with device CLEAVE_DEVICE_CPU in "
                  "cleave_executable_options");
  expectError(loadOn(cuda.c_str(), 7), CLEAVE_INVALID_ARGUMENT,
              "options: device is 7, expected "
              "CLEAVE_DEVICE_CPU (0) or CLEAVE_DEVICE_CUDA (1)");
  expectError(loadOn(cuda.c_str(), CLEAVE_DEVICE_CUDA, -5),
              CLEAVE_INVALID_ARGUMENT,
              "options: device ordinal is -5, expected 0 or more, or -1 (one "
              "device per rank)");
}

TEST(ExecutableDeviceTest, NoDriverIsOneLine) {
  std::optional<std::string> why = noCudaReason();
  if (!why)
    GTEST_SKIP() << "this machine has a CUDA driver, so the driverless "
                    "refusal cannot happen here (FakeGpuTest and "
                    "scripts/gpu-check.sh cover the driver path)";
  for (int32_t ordinal : {0, CLEAVE_DEVICE_ORDINAL_AUTO})
    expectError(loadOn(CLEAVE_GRAPH_ARTIFACT_CUDA, CLEAVE_DEVICE_CUDA, ordinal),
                CLEAVE_FAILED_PRECONDITION,
                std::string(CLEAVE_GRAPH_ARTIFACT_CUDA) + ": " + *why);
}

//===----------------------------------------------------------------------===//
// Graph manifests chosen by the test (EchoArtifact.c, which exports entries
// micro_step and apply_step)
//===----------------------------------------------------------------------===//

json graphManifest() {
  json m = json::parse(R"({
    "kind": "graph",
    "globals": [
      {"name": "p", "kind": "param", "dtype": "f32", "shape": [2, 3],
       "init": {"kind": "zeros"}},
      {"name": "p.grad", "kind": "accumulator", "of": "p", "dtype": "f32",
       "shape": [2, 3], "init": {"kind": "zeros"}}
    ],
    "entries": {
      "micro_step": {"args": [
        {"role": "input", "name": "x", "dtype": "i64", "shape": [5]},
        {"role": "global", "name": "p.grad"},
        {"role": "output", "name": "y", "dtype": "f64", "shape": [5, 2]},
        {"role": "scratch", "bytes": 64}]}
    },
    "kernels": []
  })");
  m["abi_version"] = CLEAVE_KERNEL_ABI_VERSION;
  return m;
}

class GraphManifestTest : public ::testing::Test {
protected:
  void SetUp() override {
    handle = ::dlopen(CLEAVE_ECHO_ARTIFACT, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    set = reinterpret_cast<void (*)(const char *, int32_t)>(
        ::dlsym(handle, "echo_set"));
    ASSERT_NE(set, nullptr);
  }
  void TearDown() override {
    set(nullptr, 1);
    ::dlclose(handle);
  }

  CallResult loadWith(const json &manifest) {
    text = manifest.dump();
    set(text.c_str(), 1);
    cleave_executable *exe = nullptr;
    CallResult r =
        result(cleave_executable_load(CLEAVE_ECHO_ARTIFACT, nullptr, &exe));
    EXPECT_EQ(exe == nullptr, r.status != CLEAVE_OK);
    cleave_executable_destroy(exe);
    return r;
  }

  /// Expects the manifest to be refused with `message` after the path.
  void expectRefused(const json &manifest, const std::string &message) {
    CallResult r = loadWith(manifest);
    EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
    EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) + ": " + message);
  }

  void *handle = nullptr;
  void (*set)(const char *, int32_t) = nullptr;
  std::string text;
};

TEST_F(GraphManifestTest, NeedsNoneOfTheTrainingFields) {
  // No micro_batch, counters, inputs, hyperparameters or apply_step.
  CallResult r = loadWith(graphManifest());
  EXPECT_EQ(r.status, CLEAVE_OK) << r.message;
}

TEST_F(GraphManifestTest, RefusesWhatItCannotRun) {
  json m = graphManifest();
  m["kind"] = "evaluation";
  expectRefused(m, "manifest: kind must be one of training, inference, graph "
                   "(got 'evaluation')");

  m = graphManifest();
  m["entries"] = json::object();
  expectRefused(m, "manifest: entries must declare at least one entry point");

  m = graphManifest();
  m["entries"]["forward"] = m["entries"]["micro_step"];
  expectRefused(m, "the manifest declares entry 'forward' but the artifact "
                   "does not export cleave_entry_forward");

  m = graphManifest();
  m["entries"]["2fast"] = m["entries"]["micro_step"];
  expectRefused(m, "manifest: entries.2fast is not a valid entry name "
                   "(letters, digits and '_', not starting with a digit)");

  m = graphManifest();
  m["entries"]["micro_step"]["args"].push_back(
      {{"role", "hyper"}, {"name", "lr"}});
  expectRefused(m, "manifest: entries.micro_step.args[4].role 'hyper' is not "
                   "allowed in a graph artifact (scalars are inputs)");

  m = graphManifest();
  m["entries"]["micro_step"]["args"][1]["name"] = "q";
  expectRefused(m, "manifest: entries.micro_step.args[1].name 'q' is not the "
                   "name of a global");

  m = graphManifest();
  m["entries"]["micro_step"]["args"][2]["shape"] = {5, -2};
  expectRefused(m, "manifest: entries.micro_step.args[2].shape must be a list "
                   "of non-negative integers");

  m = graphManifest();
  m["entries"]["micro_step"]["args"].push_back(
      m["entries"]["micro_step"]["args"][0]);
  expectRefused(m, "manifest: entries.micro_step.args[4].name 'x' is already "
                   "the name of another input of this entry");

  // A graph's inputs are caller buffers: dtype and shape are theirs.
  m = graphManifest();
  m["entries"]["micro_step"]["args"][0].erase("dtype");
  expectRefused(m, "manifest: entries.micro_step.args[0].dtype is missing");

  // Keys a graph does not use are type-checked all the same.
  m = graphManifest();
  m["micro_batch"] = "8";
  expectRefused(m, "manifest: micro_batch must be a positive integer");

  m = graphManifest();
  m["globals"][1]["of"] = "nothing";
  expectRefused(m, "manifest: globals[1].of 'nothing' is not the name of a "
                   "param global");

  m = graphManifest();
  m["kernels"] = json::array({{{"id", 0}, {"op", "matmul"}}});
  CallResult r = loadWith(m);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message.rfind(std::string(CLEAVE_ECHO_ARTIFACT) +
                                ": kernels: kernel 0 (matmul): ",
                            0),
            0u)
      << r.message;
}

TEST_F(GraphManifestTest, TrainingManifestsStayStrict) {
  // A graph-like manifest without a kind is a training manifest, and a
  // training manifest still needs everything a session relies on.
  json m = graphManifest();
  m.erase("kind");
  cleave_artifact *artifact = nullptr;
  text = m.dump();
  set(text.c_str(), 1);
  CallResult r = result(cleave_artifact_load(CLEAVE_ECHO_ARTIFACT, &artifact));
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": manifest: micro_batch is missing");
  cleave_artifact_release(artifact);
}

} // namespace

//===- ArtifactTest.cpp - Loading artifacts, good and bad -----------------===//
//
// A missing, foreign, truncated or malformed artifact is refused with a
// status and a message naming the file and the problem; a valid one exposes
// its manifest through the accessors.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

using namespace cleave;
using namespace cleave::test;
using nlohmann::json;

namespace {

CallResult load(const std::string &path) {
  cleave_artifact *a = nullptr;
  CallResult r = result(cleave_artifact_load(path.c_str(), &a));
  EXPECT_EQ(a == nullptr, r.status != CLEAVE_OK);
  cleave_artifact_release(a);
  return r;
}

TEST(ArtifactTest, MissingFile) {
  std::string path = makeTempDir("a") + "/absent.cleave";
  CallResult r = load(path);
  EXPECT_EQ(r.status, CLEAVE_IO_ERROR);
  EXPECT_EQ(r.message, path + ": cannot open (No such file or directory)");
}

TEST(ArtifactTest, NotAnElfFile) {
  std::string path = makeTempDir("a") + "/model.cleave";
  writeFile(path, "{\"this is\": \"json, not a shared object\"}\n");
  CallResult r = load(path);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, path + ": not a Cleave artifact (not an ELF file)");
  writeFile(path, "");
  EXPECT_EQ(load(path).message,
            path + ": not a Cleave artifact (not an ELF file)");
}

TEST(ArtifactTest, ElfRelocatableObjectIsNotASharedObject) {
  std::string path = makeTempDir("a") + "/model.o";
  std::string elf = readFile(CLEAVE_FAKE_SGD);
  elf[16] = 1; // e_type = ET_REL
  writeFile(path, elf);
  CallResult r = load(path);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(
      r.message,
      path + ": not a Cleave artifact (an ELF file but not a shared object)");
}

TEST(ArtifactTest, TruncatedArtifact) {
  std::string dir = makeTempDir("a");
  std::string elf = readFile(CLEAVE_FAKE_SGD);
  ASSERT_GT(elf.size(), 4096u);
  // Cut inside the ELF header, the program headers' segments, the data.
  for (size_t size :
       {size_t(40), size_t(100), elf.size() / 3, elf.size() / 2}) {
    std::string path = dir + "/truncated" + std::to_string(size) + ".cleave";
    writeFile(path, elf.substr(0, size));
    CallResult r = load(path);
    EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT) << size;
    EXPECT_EQ(r.message.rfind(path + ": ", 0), 0u) << r.message;
    // Which check trips depends on where the file is cut; all are one line.
    EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
  }
}

TEST(ArtifactTest, SegmentSizeThatWrapsPastTheFileEnd) {
  // A segment whose p_offset + p_filesz overflows back inside the file must
  // be caught before dlopen maps it.
  std::string elf = readFile(CLEAVE_FAKE_SGD);
  Elf64_Ehdr eh;
  ASSERT_GE(elf.size(), sizeof(eh));
  std::memcpy(&eh, elf.data(), sizeof(eh));
  bool forged = false;
  for (uint16_t i = 0; i < eh.e_phnum && !forged; ++i) {
    Elf64_Phdr ph;
    size_t at = eh.e_phoff + size_t(i) * sizeof(ph);
    std::memcpy(&ph, elf.data() + at, sizeof(ph));
    if (ph.p_offset < 2)
      continue;
    ph.p_filesz = ~uint64_t(0) - ph.p_offset + 2; // the sum wraps to 1
    std::memcpy(elf.data() + at, &ph, sizeof(ph));
    forged = true;
  }
  ASSERT_TRUE(forged) << "no segment with a non-zero file offset";
  std::string path = makeTempDir("a") + "/wrapped.cleave";
  writeFile(path, elf);
  CallResult r = load(path);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message.rfind(path + ": truncated or corrupt ELF file (segment ",
                            0),
            0u)
      << r.message;
}

TEST(ArtifactTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  std::string path = makeTempDir("a") + "/fifo.cleave";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  CallResult r = load(path);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, path + ": not a Cleave artifact (not a regular file)");
}

TEST(ArtifactTest, SharedObjectWithoutTheSymbols) {
  CallResult r = load(CLEAVE_NOSYMBOLS);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, std::string(CLEAVE_NOSYMBOLS) +
                           ": not a Cleave artifact (missing symbol "
                           "cleave_abi_version)");
}

TEST(ArtifactTest, RelativePathIsNotSearchedInTheLibraryPath) {
  std::string dir = std::string(CLEAVE_FAKE_SGD);
  std::string file = dir.substr(dir.rfind('/') + 1);
  dir = dir.substr(0, dir.rfind('/'));
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  CallResult r = load(file);
  ASSERT_EQ(::chdir(cwd), 0);
  EXPECT_EQ(r.status, CLEAVE_OK) << r.message;
}

TEST(ArtifactTest, AccessorsDescribeTheManifest) {
  Artifact a = Artifact::load(CLEAVE_FAKE_ADAM);
  EXPECT_EQ(a.path(), CLEAVE_FAKE_ADAM);
  EXPECT_EQ(a.microBatch(), kMicroBatch);
  EXPECT_EQ(a.accumulate(), 2);
  EXPECT_EQ(json::parse(a.manifest())["reduce"], "none");

  // The sample-weights input is the runtime's, not the caller's.
  std::vector<TensorInfo> inputs = a.inputs();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[0].dtype, CLEAVE_DTYPE_F32);
  EXPECT_EQ(inputs[0].shape, (std::vector<int64_t>{kMicroBatch, kFeatures}));
  EXPECT_EQ(inputs[0].bytes, size_t(kMicroBatch * kFeatures * 4));
  EXPECT_EQ(inputs[1].name, "labels");
  EXPECT_EQ(inputs[1].dtype, CLEAVE_DTYPE_I64);

  std::vector<GlobalInfo> globals = a.globals();
  ASSERT_GE(globals.size(), 8u);
  EXPECT_EQ(globals[0].tensor.name, "fc.weight");
  EXPECT_EQ(globals[0].kind, CLEAVE_GLOBAL_PARAM);
  EXPECT_EQ(globals[2].tensor.name, "fc.weight.grad");
  EXPECT_EQ(globals[2].kind, CLEAVE_GLOBAL_ACCUMULATOR);
  EXPECT_EQ(globals[2].of, "fc.weight");
  EXPECT_EQ(globals[5].tensor.name, "train.step");
  EXPECT_EQ(globals[5].kind, CLEAVE_GLOBAL_COUNTER);
  EXPECT_TRUE(globals[5].tensor.shape.empty());

  std::vector<HyperparameterInfo> hypers = a.hyperparameters();
  ASSERT_EQ(hypers.size(), 5u);
  EXPECT_EQ(hypers[3].name, "eps");
  EXPECT_DOUBLE_EQ(hypers[3].defaultValue, 1e-8);

  EXPECT_TRUE(a.hasEntry("micro_step"));
  EXPECT_TRUE(a.hasEntry("eval_step"));
  EXPECT_FALSE(a.hasEntry("predict"));
  std::vector<TensorInfo> outs = a.outputs("eval_step");
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].name, "prediction");
  EXPECT_EQ(outs[0].shape, (std::vector<int64_t>{kMicroBatch, kClasses}));

  std::vector<WarningInfo> warnings = a.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].op, "nn.dropout");
  EXPECT_EQ(warnings[0].loc, "fake.mlir:3:5");
}

TEST(ArtifactTest, AnArtifactOutlivesItsHandleWhileSessionsUseIt) {
  cleave_artifact *a = nullptr;
  ASSERT_EQ(cleave_artifact_load(CLEAVE_FAKE_SGD, &a), CLEAVE_OK);
  cleave_session *s = nullptr;
  ASSERT_EQ(cleave_session_create(a, nullptr, &s), CLEAVE_OK);
  cleave_artifact_release(a);
  cleave_artifact *borrowed = nullptr;
  ASSERT_EQ(cleave_session_artifact(s, &borrowed), CLEAVE_OK);
  int64_t b = 0;
  EXPECT_EQ(cleave_artifact_micro_batch(borrowed, &b), CLEAVE_OK);
  EXPECT_EQ(b, kMicroBatch);
  cleave_session_destroy(s);
}

//===----------------------------------------------------------------------===//
// Manifests chosen by the test (EchoArtifact.c)
//===----------------------------------------------------------------------===//

/// A valid manifest for the echo artifact: a one-parameter model.
json echoManifest() {
  json m = json::parse(R"({
    "micro_batch": 4, "accumulate": 2, "reduce": "none",
    "dtype": "f32",
    "globals": [
      {"name": "w", "kind": "param", "dtype": "f32", "shape": [2, 3],
       "init": {"kind": "kaiming_uniform"}},
      {"name": "w.grad", "kind": "accumulator", "of": "w", "dtype": "f32",
       "shape": [2, 3], "init": {"kind": "zeros"}},
      {"name": "train.step", "kind": "counter", "dtype": "i64", "shape": [],
       "init": {"kind": "zeros"}},
      {"name": "train.micro_steps", "kind": "counter", "dtype": "i64",
       "shape": [], "init": {"kind": "zeros"}}
    ],
    "hyperparameters": [{"name": "lr", "default": 0.1}],
    "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 3]}],
    "entries": {
      "micro_step": {"args": [
        {"role": "input", "name": "x"},
        {"role": "output", "name": "loss", "dtype": "f32", "shape": []},
        {"role": "global", "name": "w"},
        {"role": "global", "name": "train.micro_steps"}]},
      "apply_step": {"args": [
        {"role": "hyper", "name": "lr"},
        {"role": "global", "name": "train.step"},
        {"role": "global", "name": "train.micro_steps"}]}
    },
    "kernels": []
  })");
  m["abi_version"] = CLEAVE_KERNEL_ABI_VERSION;
  return m;
}

class EchoTest : public ::testing::Test {
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

  CallResult loadWith(const json &manifest, int32_t abi = 1) {
    text = manifest.dump();
    set(text.c_str(), abi);
    return load(CLEAVE_ECHO_ARTIFACT);
  }

  void *handle = nullptr;
  void (*set)(const char *, int32_t) = nullptr;
  std::string text;
};

TEST_F(EchoTest, LoadsAValidManifest) {
  CallResult r = loadWith(echoManifest());
  EXPECT_EQ(r.status, CLEAVE_OK) << r.message;
}

TEST_F(EchoTest, RefusesAnotherAbiVersion) {
  CallResult r = loadWith(echoManifest(), 2);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": ABI version 2, this runtime loads version 1");
}

TEST_F(EchoTest, RefusesANullManifest) {
  set(nullptr, 1);
  CallResult r = load(CLEAVE_ECHO_ARTIFACT);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": cleave_manifest() returned NULL");
}

TEST_F(EchoTest, RefusesAManifestThatIsNotJson) {
  text = "{\"micro_batch\": ";
  set(text.c_str(), 1);
  CallResult r = load(CLEAVE_ECHO_ARTIFACT);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message.rfind(std::string(CLEAVE_ECHO_ARTIFACT) +
                                ": manifest: is not valid JSON (",
                            0),
            0u)
      << r.message;
}

TEST_F(EchoTest, NamesTheBadFieldWithThePath) {
  json m = echoManifest();
  m["globals"][3]["shape"] = json::array({2, -1});
  CallResult r = loadWith(m);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": manifest: globals[3].shape must be a list of "
                           "non-negative integers");
}

TEST_F(EchoTest, RefusesAnEntryItDoesNotExport) {
  json m = echoManifest();
  m["entries"]["eval_step"] = {{"args", json::array()}};
  CallResult r = loadWith(m);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": the manifest declares entry 'eval_step' but the "
                           "artifact does not export cleave_entry_eval_step");
}

TEST_F(EchoTest, RefusesAKernelsTableTheRuntimeCannotBuild) {
  json m = echoManifest();
  m["kernels"] = json::array({{{"id", 0}, {"op", "fft"}}});
  ASSERT_EQ(loadWith(m).status, CLEAVE_OK);
  Artifact a = Artifact::load(CLEAVE_ECHO_ARTIFACT);
  cleave_session *s = nullptr;
  CallResult r = result(cleave_session_create(a.get(), nullptr, &s));
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(
      r.message.rfind(std::string(CLEAVE_ECHO_ARTIFACT) + ": kernels: ", 0), 0u)
      << r.message;
}

TEST_F(EchoTest, AModelWithoutLrCannotHaveALearningRateSchedule) {
  json m = echoManifest();
  m["hyperparameters"] = json::array();
  m["entries"]["apply_step"]["args"].erase(0); // the lr argument
  ASSERT_EQ(loadWith(m).status, CLEAVE_OK);
  Artifact a = Artifact::load(CLEAVE_ECHO_ARTIFACT);
  Session s(a);
  cleave_lr_schedule constant = makeLrSchedule(CLEAVE_LR_CONSTANT);
  constant.lr = 0.1;
  CallResult r = result(cleave_session_set_lr_schedule(s.get(), &constant));
  EXPECT_EQ(r.status, CLEAVE_NOT_FOUND);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": the model has no hyperparameter 'lr' for a "
                           "learning-rate schedule to set");
}

TEST_F(EchoTest, AGlobalTooLargeForMemoryIsAStatus) {
  // 2^47 bytes: within the manifest's 2^48 limit, but as large as the whole
  // user address space Linux hands out on x86-64, so it can never be mapped;
  // the session refuses it from the manifest, before allocating anything.
  json m = echoManifest();
  m["globals"][0]["shape"] = json::array({int64_t(1) << 22, int64_t(1) << 23});
  m["globals"][1]["shape"] = m["globals"][0]["shape"];
  ASSERT_EQ(loadWith(m).status, CLEAVE_OK);
  Artifact a = Artifact::load(CLEAVE_ECHO_ARTIFACT);
  cleave_session *s = nullptr;
  CallResult r = result(cleave_session_create(a.get(), nullptr, &s));
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(r.status, CLEAVE_OUT_OF_MEMORY);
  EXPECT_EQ(r.message.rfind(std::string(CLEAVE_ECHO_ARTIFACT) +
                                ": a session needs 268435456 MiB (",
                            0),
            0u)
      << r.message;
}

TEST_F(EchoTest, DetectsAnEntryPointThatBreaksTheCounterContract) {
  ASSERT_EQ(loadWith(echoManifest()).status, CLEAVE_OK);
  Session s(Artifact::load(CLEAVE_ECHO_ARTIFACT));
  std::vector<float> x(4 * 3, 1.0f);
  Batch batch(4);
  batch.add(x);
  cleave_batch b = batch.view();
  CallResult r = result(cleave_session_micro_step(s.get(), &b));
  EXPECT_EQ(r.status, CLEAVE_INTERNAL);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": micro_step changed train.micro_steps from 0 to 0 "
                           "(expected 1)");
  // Without a sample-weights input, short micro-batches cannot be padded.
  batch.setSamples(3);
  batch.clear();
  batch.add(x.data(), 3 * 3 * sizeof(float));
  b = batch.view();
  r = result(cleave_session_micro_step(s.get(), &b));
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "batch: samples is 3 but the artifact has no "
                       "sample-weights input, so every micro-batch must have "
                       "exactly 4 samples");
  // Evaluation needs an eval_step.
  r = result(cleave_session_eval(s.get(), &b));
  EXPECT_EQ(r.status, CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(r.message, std::string(CLEAVE_ECHO_ARTIFACT) +
                           ": the artifact has no eval_step entry");
}

} // namespace

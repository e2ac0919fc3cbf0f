//===- ManifestTest.cpp - Validation of every manifest field --------------===//
//
// One valid manifest, then one mutation per rule of
// docs/design/runtime-abi.md, each refused with a message naming the field.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "Checksum.h"
#include "ManifestCheck.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>

using namespace cleave::rt;
using nlohmann::json;

namespace {

// globals: [0] w, [1] b, [2] w.grad, [3] train.samples, [4] train.step,
// [5] train.micro_steps.
json validManifest() {
  json m = json::parse(R"({
    "micro_batch": 8, "accumulate": 4, "reduce": "mean",
    "dtype": "f32",
    "globals": [
      {"name": "w", "kind": "param", "dtype": "f32", "shape": [3, 5, 2],
       "init": {"kind": "kaiming_uniform"}},
      {"name": "b", "kind": "param", "dtype": "f32", "shape": [3],
       "init": {"kind": "fan_in_uniform", "fan_in": 4}},
      {"name": "w.grad", "kind": "accumulator", "of": "w", "dtype": "f32",
       "shape": [3, 5, 2], "init": {"kind": "zeros"}},
      {"name": "train.samples", "kind": "accumulator", "dtype": "f32",
       "shape": [], "init": {"kind": "zeros"}},
      {"name": "train.step", "kind": "counter", "dtype": "i64", "shape": [],
       "init": {"kind": "zeros"}},
      {"name": "train.micro_steps", "kind": "counter", "dtype": "i64",
       "shape": [], "init": {"kind": "zeros"}}
    ],
    "hyperparameters": [{"name": "lr", "default": 0.01}],
    "inputs": [
      {"name": "x", "dtype": "f32", "shape": [8, 5, 2]},
      {"name": "labels", "dtype": "i64", "shape": [8], "index_bound": 3},
      {"name": "weights", "dtype": "f32", "shape": [8], "role": "sample_weights"}
    ],
    "entries": {
      "micro_step": {"args": [
        {"role": "input", "name": "x"},
        {"role": "input", "name": "labels"},
        {"role": "input", "name": "weights"},
        {"role": "output", "name": "loss", "dtype": "f32", "shape": []},
        {"role": "global", "name": "w"},
        {"role": "global", "name": "w.grad"},
        {"role": "global", "name": "train.micro_steps"},
        {"role": "scratch", "bytes": 1000}]},
      "apply_step": {"args": [
        {"role": "hyper", "name": "lr"},
        {"role": "global", "name": "w"},
        {"role": "global", "name": "train.step"},
        {"role": "global", "name": "train.micro_steps"}]},
      "eval_step": {"args": [
        {"role": "input", "name": "x"},
        {"role": "output", "name": "prediction", "dtype": "f32",
         "shape": [8, 3]}]}
    },
    "kernels": [{"id": 0, "op": "matmul"}],
    "warnings": [{"op": "nn.dropout", "loc": "m.mlir:1:2", "message": "m"}]
  })");
  m["abi_version"] = CLEAVE_KERNEL_ABI_VERSION;
  return m;
}

TEST(ManifestTest, TokenLabelsWeighTokens) {
  json j = validManifest();
  j["inputs"][1]["shape"] = json::array({8, 4});
  j["inputs"][1]["ignore_index"] = -100;
  j["inputs"][2]["shape"] = json::array({8, 4});
  Manifest m;
  Status s = parseManifest(j.dump(), m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(m.tokenLabelsInput.has_value());
  EXPECT_EQ(*m.tokenLabelsInput, 1u);
  EXPECT_EQ(m.inputs[1].ignoreIndex, std::optional<int64_t>(-100));
  EXPECT_EQ(m.inputs[1].rowBytes, 4u * 8u);
}

TEST(ManifestTest, ParsesTheFactsTheSessionUses) {
  std::string text = validManifest().dump();
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.microBatch, 8);
  EXPECT_EQ(m.accumulate, 4);
  // Without window_samples, N whole micro-batches.
  EXPECT_EQ(m.windowSamples, 32);
  EXPECT_EQ(m.reduce, ReduceMode::mean);
  ASSERT_EQ(m.globals.size(), 6u);
  EXPECT_EQ(m.globals[0].numElements, 30);
  EXPECT_EQ(m.globals[0].bytes, 120u);
  // kaiming_uniform: fan_in is the product of all dimensions but the first.
  EXPECT_EQ(m.globals[0].init.fanIn, 10);
  EXPECT_DOUBLE_EQ(m.globals[0].init.hi, 1.0 / std::sqrt(10.0));
  EXPECT_DOUBLE_EQ(m.globals[1].init.lo, -0.5);
  EXPECT_EQ(m.stepGlobal, 4u);
  EXPECT_EQ(m.microStepsGlobal, 5u);
  EXPECT_EQ(m.samplesGlobal, std::optional<size_t>(3));
  EXPECT_FALSE(m.rngGlobal);
  EXPECT_EQ(m.userInputs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(m.sampleWeightsInput, std::optional<size_t>(2));
  EXPECT_EQ(m.inputs[0].rowBytes, 40u);
  EXPECT_EQ(m.inputs[0].indexBound, 0);
  EXPECT_EQ(m.inputs[1].indexBound, 3);
  const EntryDesc &micro = m.entry(EntryKind::micro_step);
  EXPECT_EQ(micro.args.size(), 8u);
  EXPECT_EQ(micro.args[7].scratchBytes, 1000u);
  EXPECT_EQ(micro.usesInput, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(m.entry(EntryKind::eval_step).usesInput,
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(m.lossOutput, 0u);
  EXPECT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.hash, crc32(text.data(), text.size()));
  std::string other = text + " ";
  EXPECT_NE(m.hash, crc32(other.data(), other.size()));
}

TEST(ManifestTest, WindowSamplesEndWithAShortMicroBatch) {
  // 3 micro-batches of 8 and one of 1 to 8.
  for (int64_t w : {25, 31}) {
    json j = validManifest();
    j["window_samples"] = w;
    Manifest m;
    Status s = parseManifest(j.dump(), m);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(m.windowSamples, w);
  }
}

TEST(ManifestTest, NarrowTypesCarryInputsAndOutputs) {
  // Every dtype by its name and size.
  const std::pair<const char *, size_t> dtypes[] = {
      {"f32", 4}, {"f64", 8}, {"i32", 4}, {"i64", 8}, {"i8", 1},  {"u8", 1},
      {"i16", 2}, {"u16", 2}, {"u32", 4}, {"f16", 2}, {"bf16", 2}};
  for (auto [name, size] : dtypes) {
    std::optional<DType> d = cleave::abi::parse<DType>(name);
    ASSERT_TRUE(d) << name;
    EXPECT_STREQ(cleave::abi::name(*d), name);
    EXPECT_EQ(dtypeSize(*d), size) << name;
  }
  EXPECT_FALSE(cleave::abi::parse<DType>("u64"));
  // Images as u8: a row of the batch is one byte per element.
  json j = validManifest();
  j["inputs"][0]["dtype"] = "u8";
  Manifest m;
  Status s = parseManifest(j.dump(), m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.inputs[0].dtype, DType::u8);
  EXPECT_EQ(m.inputs[0].rowBytes, 10u);
  EXPECT_FALSE(isFloat(DType::f16));
  EXPECT_TRUE(isNarrow(DType::bf16));
  EXPECT_FALSE(isNarrow(DType::i32));
}

TEST(ManifestTest, Crc32MatchesItsReferenceValues) {
  // The CRC-32 check value (of "123456789") and the empty input; the
  // compiler's llvm::crc32 seals artifacts with the same function.
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32("123456789", 9), 0xcbf43926u);
  // In pieces, as the seal check reads a file.
  EXPECT_EQ(crc32("6789", 4, crc32("12345", 5)), 0xcbf43926u);
}

TEST(ManifestTest, OptionalPartsMayBeAbsent) {
  json m = validManifest();
  m.erase("warnings");
  m["entries"].erase("eval_step");
  m["globals"].erase(3); // train.samples
  Manifest out;
  Status s = parseManifest(m.dump(), out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(out.entry(EntryKind::eval_step).present);
  EXPECT_FALSE(out.samplesGlobal);
}

/// The valid manifest made forward-only: eval_step alone, parameters as the
/// only globals, no hyperparameters, window or float type.
json inferenceManifest() {
  json m = validManifest();
  m["kind"] = "inference";
  for (const char *key : {"accumulate", "reduce", "dtype", "hyperparameters"})
    m.erase(key);
  m["entries"].erase("micro_step");
  m["entries"].erase("apply_step");
  m["globals"] = json::array({m["globals"][0], m["globals"][1]});
  m["inputs"] = json::array({m["inputs"][0]});
  return m;
}

TEST(ManifestTest, InferenceArtifactsHaveEvalStepAlone) {
  Manifest out;
  Status s = parseManifest(inferenceManifest().dump(), out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(out.kind, ArtifactKind::inference);
  EXPECT_TRUE(out.entry(EntryKind::eval_step).present);
  EXPECT_FALSE(out.entry(EntryKind::micro_step).present);
  EXPECT_EQ(out.accumulate, 1);
  EXPECT_TRUE(out.hypers.empty());

  json m = inferenceManifest();
  m["entries"]["micro_step"] = validManifest()["entries"]["micro_step"];
  s = parseManifest(m.dump(), out);
  EXPECT_EQ(s.message(), "manifest: entries.micro_step is not allowed in an "
                         "inference artifact (it has eval_step alone)");
  m = inferenceManifest();
  m["entries"].erase("eval_step");
  s = parseManifest(m.dump(), out);
  EXPECT_EQ(s.message(), "manifest: entries.eval_step is missing");
}

TEST(ManifestTest, DeviceIsTheCpuUnlessSaid) {
  Manifest out;
  ASSERT_TRUE(parseManifest(validManifest().dump(), out).ok());
  EXPECT_EQ(out.device, DeviceKind::cpu);
  EXPECT_TRUE(out.gpuArches.empty());
  EXPECT_FALSE(out.ptxArch);
  json m = validManifest();
  m["device"] = "cpu";
  ASSERT_TRUE(parseManifest(m.dump(), out).ok());
  EXPECT_EQ(out.device, DeviceKind::cpu);
}

TEST(ManifestTest, CudaArtifactsNameTheirGpuCode) {
  json m = validManifest();
  m["device"] = "cuda";
  m["gpu_arches"] = {"sm_80", "sm_90a", "sm_100"};
  m["ptx_arch"] = "sm_80";
  Manifest out;
  Status s = parseManifest(m.dump(), out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(out.device, DeviceKind::cuda);
  ASSERT_EQ(out.gpuArches.size(), 3u);
  EXPECT_EQ(out.gpuArches[0].major, 8);
  EXPECT_EQ(out.gpuArches[0].minor, 0);
  EXPECT_FALSE(out.gpuArches[0].specific);
  EXPECT_TRUE(out.gpuArches[1].specific);
  EXPECT_EQ(out.gpuArches[1].name(), "sm_90a");
  EXPECT_EQ(out.gpuArches[2].major, 10);
  EXPECT_EQ(out.gpuArches[2].minor, 0);
  ASSERT_TRUE(out.ptxArch);
  EXPECT_EQ(out.ptxArch->name(), "sm_80");
  // PTX is optional.
  m.erase("ptx_arch");
  ASSERT_TRUE(parseManifest(m.dump(), out).ok());
  EXPECT_FALSE(out.ptxArch);
}

TEST(ManifestTest, TheDocumentIsWhatTheManifestSays) {
  Manifest m;
  Status s = parseManifest(validManifest().dump(), m);
  ASSERT_TRUE(s.ok()) << s.message();
  // Absent fields stay absent; the session reads the kernel table itself.
  EXPECT_EQ(m.doc.microBatch, std::optional<int64_t>(8));
  EXPECT_FALSE(m.doc.device.has_value());
  EXPECT_FALSE(m.doc.windowSamples.has_value());
  EXPECT_TRUE(m.doc.kernels.empty());
  EXPECT_EQ(m.kernels.size(), 1u);
}

TEST(ManifestTest, ReadManifestDocReadsTheKernelTableToo) {
  json j = validManifest();
  std::string error;
  cleave::abi::Manifest doc;
  // parseManifest leaves {"id": 0, "op": "matmul"} to KernelContext::create,
  // which refuses it; the document's reader refuses it by its row, and
  // checkManifest (the compiler's check) as the kernel library would.
  Manifest m;
  EXPECT_TRUE(parseManifest(j.dump(), m).ok());
  EXPECT_FALSE(checkManifest(j.dump(), error));
  EXPECT_EQ(error, "kernel 0 (matmul): missing field 'batch'");
  EXPECT_FALSE(readManifestDoc(j.dump(), doc, error));
  EXPECT_EQ(error, "manifest: kernels[0].batch is missing");
  j["kernels"][0] = json::parse(R"({"id": 0, "op": "matmul", "batch": 1,
      "m": 8, "k": 10, "n": 3, "trans_a": false, "trans_b": true,
      "b_batched": false, "bias": false, "activation": "none",
      "accumulate": false})");
  ASSERT_TRUE(readManifestDoc(j.dump(), doc, error)) << error;
  ASSERT_EQ(doc.kernels.size(), 1u);
  EXPECT_EQ(doc.kernels[0].k, std::optional<int64_t>(10));
  // The rules apply as well.
  j["window_samples"] = 33;
  EXPECT_FALSE(readManifestDoc(j.dump(), doc, error));
  EXPECT_EQ(error.rfind("manifest: window_samples must be more than", 0), 0u)
      << error;
}

struct BadCase {
  const char *name;
  std::function<void(json &)> mutate;
  const char *message;
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.name; }

class BadManifestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadManifestTest, IsRefusedWithAMessageNamingTheField) {
  json m = validManifest();
  GetParam().mutate(m);
  Manifest out;
  Status s = parseManifest(m.dump(), out);
  EXPECT_EQ(s.code(), CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(s.message(), std::string("manifest: ") + GetParam().message);
}

json &global(json &m, int i) { return m["globals"][i]; }
json &arg(json &m, const char *entry, int i) {
  return m["entries"][entry]["args"][i];
}

static_assert(CLEAVE_KERNEL_ABI_VERSION == 1,
              "update the AbiVersion case's message");
const BadCase kBadCases[] = {
    {"RootNotObject", [](json &m) { m = json::array(); },
     "must be a JSON object"},
    // CLEAVE_KERNEL_ABI_VERSION is 1 (static_assert below).
    {"AbiVersion", [](json &m) { m["abi_version"] = 2; },
     "abi_version is 2, this runtime supports 1"},
    {"MicroBatchMissing", [](json &m) { m.erase("micro_batch"); },
     "micro_batch is missing"},
    {"MicroBatchZero", [](json &m) { m["micro_batch"] = 0; },
     "micro_batch must be a positive integer"},
    {"AccumulateString", [](json &m) { m["accumulate"] = "4"; },
     "accumulate must be a positive integer"},
    {"AccumulateFloat", [](json &m) { m["accumulate"] = 4.5; },
     "accumulate must be a positive integer"},
    {"WindowSamplesZero", [](json &m) { m["window_samples"] = 0; },
     "window_samples must be a positive integer"},
    {"WindowSamplesBeyondN", [](json &m) { m["window_samples"] = 33; },
     "window_samples must be more than accumulate - 1 and at most accumulate "
     "micro-batches (24 < window_samples <= 32), got 33"},
    {"WindowSamplesOneMicroBatchShort",
     [](json &m) { m["window_samples"] = 24; },
     "window_samples must be more than accumulate - 1 and at most accumulate "
     "micro-batches (24 < window_samples <= 32), got 24"},
    {"Reduce", [](json &m) { m["reduce"] = "max"; },
     "reduce must be one of none, sum, mean, adasum (got 'max')"},
    {"ModelDtype", [](json &m) { m["dtype"] = "i32"; },
     "dtype must be f32 or f64 (the model's float type)"},
    {"GlobalsNotList", [](json &m) { m["globals"] = json::object(); },
     "globals must be a list"},
    {"GlobalNotObject", [](json &m) { global(m, 0) = 3; },
     "globals[0] must be an object"},
    {"GlobalNameEmpty", [](json &m) { global(m, 0)["name"] = ""; },
     "globals[0].name must be a non-empty string"},
    {"GlobalNameDuplicate", [](json &m) { global(m, 1)["name"] = "w"; },
     "globals[1].name 'w' is already the name of another global"},
    {"GlobalKind", [](json &m) { global(m, 0)["kind"] = "weight"; },
     "globals[0].kind must be one of param, buffer, accumulator, state, "
     "counter (got 'weight')"},
    {"GlobalDtype", [](json &m) { global(m, 0)["dtype"] = "f8"; },
     "globals[0].dtype must be one of f32, f64, i32, i64, i8, u8, i16, u16, "
     "u32, f16, bf16 (got 'f8')"},
    // The narrow types carry inputs and outputs only.
    {"GlobalNarrowDtype", [](json &m) { global(m, 0)["dtype"] = "f16"; },
     "globals[0].dtype must be f32, f64, i32 or i64 for a global (got "
     "'f16')"},
    {"ShapeNegative",
     [](json &m) {
       global(m, 3)["shape"] = json::array({2, -1});
     },
     "globals[3].shape must be a list of non-negative integers"},
    {"ShapeFloat", [](json &m) { global(m, 1)["shape"] = json::array({1.5}); },
     "globals[1].shape must be a list of non-negative integers"},
    {"ShapeNotList", [](json &m) { global(m, 1)["shape"] = 3; },
     "globals[1].shape must be a list of non-negative integers"},
    {"ShapeHuge",
     [](json &m) {
       global(m, 1)["shape"] = json::array({1 << 30, 1 << 30, 1 << 30});
     },
     "globals[1].shape describes a tensor larger than 2^48 bytes"},
    {"OfOnParam", [](json &m) { global(m, 0)["of"] = "b"; },
     "globals[0].of is only allowed on accumulator and state globals"},
    {"OfUnknown", [](json &m) { global(m, 2)["of"] = "v"; },
     "globals[2].of 'v' is not the name of a param global"},
    {"OfNotParam", [](json &m) { global(m, 2)["of"] = "train.step"; },
     "globals[2].of 'train.step' is not the name of a param global"},
    {"InitMissing", [](json &m) { global(m, 0).erase("init"); },
     "globals[0].init is missing"},
    {"InitNotObject", [](json &m) { global(m, 0)["init"] = "zeros"; },
     "globals[0].init must be an object"},
    {"InitKind",
     [](json &m) {
       global(m, 0)["init"] = {{"kind", "xavier"}};
     },
     "globals[0].init.kind must be one of zeros, ones, constant, uniform, "
     "normal, kaiming_uniform, fan_in_uniform, data (got 'xavier')"},
    {"UniformBounds",
     [](json &m) {
       global(m, 0)["init"] = {{"kind", "uniform"}, {"lo", 1}, {"hi", 0}};
     },
     "globals[0].init has lo > hi"},
    {"UniformMissingHi",
     [](json &m) {
       global(m, 0)["init"] = {{"kind", "uniform"}, {"lo", 1}};
     },
     "globals[0].init.hi is missing"},
    {"NormalStd",
     [](json &m) {
       global(m, 0)["init"] = {{"kind", "normal"}, {"mean", 0}, {"std", -1}};
     },
     "globals[0].init.std must be non-negative"},
    {"ConstantNotNumber",
     [](json &m) {
       global(m, 0)["init"] = {{"kind", "constant"}, {"value", "one"}};
     },
     "globals[0].init.value must be a finite number"},
    {"ConstantFractionOnInteger",
     [](json &m) {
       global(m, 4)["init"] = {{"kind", "constant"}, {"value", 1.5}};
     },
     "globals[4].init.value must be an integer representable as i64"},
    {"RandomOnInteger",
     [](json &m) {
       global(m, 4)["init"] = {{"kind", "uniform"}, {"lo", 0}, {"hi", 1}};
     },
     "globals[4].init.kind 'uniform' needs a float global (this one is i64)"},
    {"KaimingOnVector",
     [](json &m) {
       global(m, 1)["init"] = {{"kind", "kaiming_uniform"}};
     },
     "globals[1].init.kind 'kaiming_uniform' needs a shape of rank >= 2 "
     "(fan_in is the product of all dimensions but the first)"},
    {"KaimingZeroFanIn",
     [](json &m) {
       global(m, 0)["shape"] = json::array({3, 0});
     },
     "globals[0].shape gives kaiming_uniform a fan_in of 0"},
    {"FanInZero",
     [](json &m) {
       global(m, 1)["init"] = {{"kind", "fan_in_uniform"}, {"fan_in", 0}};
     },
     "globals[1].init.fan_in must be a positive integer"},
    {"DataBytes",
     [](json &m) {
       global(m, 1)["init"] = {{"kind", "data"}, {"offset", 0}, {"bytes", 4}};
     },
     "globals[1].init.bytes is 4, the global has 12 bytes"},
    {"DataOffset",
     [](json &m) {
       global(m, 1)["init"] = {{"kind", "data"}, {"offset", -8}, {"bytes", 12}};
     },
     "globals[1].init.offset must be a non-negative integer"},
    {"NoStepCounter", [](json &m) { m["globals"].erase(4); },
     "globals has no 'train.step' global (required by the runtime)"},
    {"MicroStepsDtype", [](json &m) { global(m, 5)["dtype"] = "f32"; },
     "globals[5].dtype of 'train.micro_steps' must be i64"},
    {"StepKind", [](json &m) { global(m, 4)["kind"] = "state"; },
     "globals[4].kind of 'train.step' must be counter"},
    {"SamplesShape", [](json &m) { global(m, 3)["shape"] = json::array({1}); },
     "globals[3].shape of 'train.samples' must be [] (a scalar)"},
    {"SamplesDtype", [](json &m) { global(m, 3)["dtype"] = "i64"; },
     "globals[3].dtype of 'train.samples' must be f32 or f64"},
    {"RngDtype",
     [](json &m) {
       m["globals"].push_back({{"name", "train.rng"},
                               {"kind", "counter"},
                               {"dtype", "i32"},
                               {"shape", json::array()},
                               {"init", {{"kind", "zeros"}}}});
     },
     "globals[6].dtype of 'train.rng' must be i64"},
    {"HypersNotList", [](json &m) { m["hyperparameters"] = 1; },
     "hyperparameters must be a list"},
    {"HyperDefault",
     [](json &m) { m["hyperparameters"][0]["default"] = "fast"; },
     "hyperparameters[0].default must be a finite number"},
    {"HyperDuplicate",
     [](json &m) {
       m["hyperparameters"].push_back({{"name", "lr"}, {"default", 1}});
     },
     "hyperparameters[1].name 'lr' is already the name of another "
     "hyperparameter"},
    {"InputsMissing", [](json &m) { m.erase("inputs"); }, "inputs is missing"},
    {"InputBatchDim",
     [](json &m) { m["inputs"][1]["shape"] = json::array({4}); },
     "inputs[1].shape must start with the micro-batch size 8"},
    {"InputScalar", [](json &m) { m["inputs"][1]["shape"] = json::array(); },
     "inputs[1].shape must start with the micro-batch size 8"},
    {"InputDuplicate", [](json &m) { m["inputs"][1]["name"] = "x"; },
     "inputs[1].name 'x' is already the name of another input"},
    {"InputRole", [](json &m) { m["inputs"][1]["role"] = "labels"; },
     "inputs[1].role must be one of sample_weights (got 'labels')"},
    {"TwoSampleWeights",
     [](json &m) {
       m["inputs"].push_back({{"name", "w2"},
                              {"dtype", "f32"},
                              {"shape", json::array({8})},
                              {"role", "sample_weights"}});
     },
     "inputs[3].role 'sample_weights' is already the role of inputs[2]"},
    {"IndexBoundZero", [](json &m) { m["inputs"][1]["index_bound"] = 0; },
     "inputs[1].index_bound must be a positive integer"},
    {"IndexBoundOnFloats", [](json &m) { m["inputs"][0]["index_bound"] = 3; },
     "inputs[0].index_bound is only allowed on an i32 or i64 input"},
    {"SampleWeightsDtype", [](json &m) { m["inputs"][2]["dtype"] = "i64"; },
     "inputs[2] (sample weights) must be f32 or f64"},
    {"SampleWeightsShape",
     [](json &m) {
       m["inputs"][2]["shape"] = json::array({8, 2});
     },
     "inputs[2] (sample weights) must have shape [8]"},
    {"IgnoreIndexOnClassLabels",
     [](json &m) { m["inputs"][1]["ignore_index"] = -100; },
     "inputs[1].ignore_index is only allowed on token labels: an integer "
     "input with an index_bound and a token dimension"},
    {"IgnoreIndexNotInteger",
     [](json &m) {
       m["inputs"][1]["shape"] = json::array({8, 4});
       m["inputs"][1]["ignore_index"] = "pad";
     },
     "inputs[1].ignore_index must be an integer"},
    {"TokenWeightsShape",
     [](json &m) {
       m["inputs"][1]["shape"] = json::array({8, 4});
       m["inputs"][1]["ignore_index"] = -100;
     },
     "inputs[2] (sample weights) must have shape [8, 4], the token labels' "
     "shape"},
    {"EntriesNotObject", [](json &m) { m["entries"] = json::array(); },
     "entries must be an object"},
    {"UnknownEntry",
     [](json &m) {
       m["entries"]["train_step"] = {{"args", json::array()}};
     },
     "entries.train_step is not an entry point of ABI version 1 (expected "
     "micro_step, apply_step or eval_step)"},
    {"ApplyMissing", [](json &m) { m["entries"].erase("apply_step"); },
     "entries.apply_step is missing"},
    {"ArgsMissing", [](json &m) { m["entries"]["eval_step"].erase("args"); },
     "entries.eval_step.args is missing"},
    {"ArgRole", [](json &m) { arg(m, "micro_step", 4)["role"] = "param"; },
     "entries.micro_step.args[4].role must be one of input, output, global, "
     "hyper, scratch (got 'param')"},
    {"ArgUnknownInput", [](json &m) { arg(m, "eval_step", 0)["name"] = "y"; },
     "entries.eval_step.args[0].name 'y' is not the name of an input"},
    {"ArgUnknownGlobal", [](json &m) { arg(m, "micro_step", 4)["name"] = "v"; },
     "entries.micro_step.args[4].name 'v' is not the name of a global"},
    {"ArgUnknownHyper",
     [](json &m) { arg(m, "apply_step", 0)["name"] = "alpha"; },
     "entries.apply_step.args[0].name 'alpha' is not the name of a "
     "hyperparameter"},
    {"ArgNameMissing", [](json &m) { arg(m, "apply_step", 0).erase("name"); },
     "entries.apply_step.args[0].name is missing"},
    {"ScratchBytes", [](json &m) { arg(m, "micro_step", 7)["bytes"] = -1; },
     "entries.micro_step.args[7].bytes must be a non-negative integer"},
    {"OutputShape",
     [](json &m) { arg(m, "eval_step", 1)["shape"] = json::array({-3}); },
     "entries.eval_step.args[1].shape must be a list of non-negative "
     "integers"},
    {"OutputDuplicate",
     [](json &m) {
       m["entries"]["eval_step"]["args"].push_back(arg(m, "eval_step", 1));
     },
     "entries.eval_step.args[2].name 'prediction' is already the name of "
     "another output"},
    {"NoLoss", [](json &m) { arg(m, "micro_step", 3)["name"] = "cost"; },
     "entries.micro_step has no output named 'loss'"},
    {"LossNotScalar",
     [](json &m) { arg(m, "micro_step", 3)["shape"] = json::array({8}); },
     "entries.micro_step output 'loss' must be a f32 or f64 scalar (shape "
     "[])"},
    {"MicroStepWithoutCounter",
     [](json &m) { m["entries"]["micro_step"]["args"].erase(6); },
     "entries.micro_step does not take global 'train.micro_steps'"},
    {"ApplyWithoutStep",
     [](json &m) { m["entries"]["apply_step"]["args"].erase(2); },
     "entries.apply_step does not take global 'train.step'"},
    {"ApplyWithInput",
     [](json &m) {
       m["entries"]["apply_step"]["args"].push_back(
           {{"role", "input"}, {"name", "x"}});
     },
     "entries.apply_step takes input 'x' (apply_step runs without data)"},
    {"DeviceUnknown", [](json &m) { m["device"] = "tpu"; },
     "device must be one of cpu, cuda (got 'tpu')"},
    {"DeviceNotString", [](json &m) { m["device"] = 1; },
     "device must be one of cpu, cuda (got 1)"},
    {"GpuArchesOnCpu", [](json &m) { m["gpu_arches"] = {"sm_80"}; },
     "gpu_arches is only valid with \"device\": \"cuda\""},
    {"PtxArchOnCpu", [](json &m) { m["ptx_arch"] = "sm_80"; },
     "ptx_arch is only valid with \"device\": \"cuda\""},
    {"GpuArchesMissing", [](json &m) { m["device"] = "cuda"; },
     "gpu_arches is missing (a \"cuda\" artifact names the architectures "
     "of its cubins)"},
    {"GpuArchesEmpty",
     [](json &m) {
       m["device"] = "cuda";
       m["gpu_arches"] = json::array();
     },
     "gpu_arches must be a non-empty list of SM architectures (\"sm_80\", "
     "\"sm_90a\", ...)"},
    {"GpuArchMalformed",
     [](json &m) {
       m["device"] = "cuda";
       m["gpu_arches"] = {"sm_80", "compute_90"};
     },
     "gpu_arches[1] must be an SM architecture such as \"sm_80\" (got "
     "\"compute_90\")"},
    {"GpuArchRepeated",
     [](json &m) {
       m["device"] = "cuda";
       m["gpu_arches"] = {"sm_80", "sm_80"};
     },
     "gpu_arches[1] repeats sm_80"},
    {"PtxArchSpecific",
     [](json &m) {
       m["device"] = "cuda";
       m["gpu_arches"] = {"sm_90a"};
       m["ptx_arch"] = "sm_90a";
     },
     "ptx_arch must be an SM architecture without the 'a' suffix, such as "
     "\"sm_80\" (got \"sm_90a\")"},
    // Enums: the table's spellings, and the value refused, also when it is
    // not a string.
    {"KindUnknown", [](json &m) { m["kind"] = "evaluation"; },
     "kind must be one of training, inference, graph (got 'evaluation')"},
    {"GlobalDtypeNotString", [](json &m) { global(m, 0)["dtype"] = 3; },
     "globals[0].dtype must be one of f32, f64, i32, i64, i8, u8, i16, u16, "
     "u32, f16, bf16 (got 3)"},
    // Keys the runtime does not use are type-checked all the same.
    {"PrecisionUnknown", [](json &m) { m["precision"] = "f8"; },
     "precision must be one of f32, bf16 (got 'f8')"},
    {"MemoryTotalNegative",
     [](json &m) {
       m["memory"] = {{"total", -1}};
     },
     "memory.total must be a non-negative integer"},
    {"TargetFeatureNotString",
     [](json &m) {
       m["target"] = {{"cpu", "x86-64"}, {"features", {"+avx2", 2}}};
     },
     "target.features must be a list of strings"},
    {"GpuArchesNotList",
     [](json &m) {
       m["device"] = "cuda";
       m["gpu_arches"] = "sm_80";
     },
     "gpu_arches must be a non-empty list of SM architectures (\"sm_80\", "
     "\"sm_90a\", ...)"},
    {"KernelsMissing", [](json &m) { m.erase("kernels"); },
     "kernels is missing"},
    {"KernelNotObject", [](json &m) { m["kernels"] = json::array({1}); },
     "kernels[0] must be an object"},
    {"WarningOp", [](json &m) { m["warnings"][0].erase("op"); },
     "warnings[0].op is missing"},
    {"WarningsNotList", [](json &m) { m["warnings"] = "none"; },
     "warnings must be a list"},
};

INSTANTIATE_TEST_SUITE_P(Fields, BadManifestTest,
                         ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(ManifestTest, NotJson) {
  Manifest m;
  Status s = parseManifest("{\"micro_batch\": 8,", m);
  EXPECT_EQ(s.code(), CLEAVE_INVALID_ARTIFACT);
  EXPECT_EQ(s.message().rfind("manifest: is not valid JSON (parse error", 0),
            0u)
      << s.message();
}

} // namespace

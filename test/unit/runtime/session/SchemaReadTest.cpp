//===- SchemaReadTest.cpp - The schema's reader, case by case -------------===//
//
// Step 2 of docs/design/artifact-schema.md. The cases come from the table,
// not from a hand list: a valid manifest is walked with the schema, and for
// every field present there the reader must refuse it of the wrong JSON
// kind, missing where its object's case requires it, below its minimum,
// or as an enum spelling the table lacks, each time naming the key's path.
// A row added to artifact_schema.def is tested by the same loop.
//
//===----------------------------------------------------------------------===//

#include "schema/SchemaRead.h"
#include "schema/SchemaWrite.h"

#include "cleave/kernel_abi.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
namespace abi = cleave::abi;

/// A training manifest with one kernel of each family, every struct of the
/// table present at least once.
json validManifest() {
  json m = json::parse(R"({
    "micro_batch": 8, "accumulate": 4, "reduce": "mean", "dtype": "f32",
    "device": "cpu", "sealed": false, "window_samples": 30,
    "target": {"cpu": "x86-64-v3", "features": ["+avx2"]},
    "globals": [
      {"name": "w", "kind": "param", "dtype": "f32", "shape": [3, 5, 2],
       "init": {"kind": "kaiming_uniform"}},
      {"name": "b", "kind": "param", "dtype": "f32", "shape": [3],
       "init": {"kind": "fan_in_uniform", "fan_in": 4}},
      {"name": "w.grad", "kind": "accumulator", "of": "w", "dtype": "f32",
       "shape": [3, 5, 2], "init": {"kind": "zeros"}},
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
        {"role": "output", "name": "loss", "dtype": "f32", "shape": []},
        {"role": "global", "name": "w"},
        {"role": "scratch", "bytes": 1000}]},
      "apply_step": {"args": [{"role": "hyper", "name": "lr"}]}
    },
    "kernels": [
      {"id": 0, "op": "matmul", "batch": 1, "m": 8, "k": 10, "n": 3,
       "trans_a": false, "trans_b": true, "b_batched": false, "bias": true,
       "activation": "relu", "accumulate": false, "math": "f32"},
      {"id": 1, "op": "conv2d_fwd", "n": 8, "c": 3, "h": 6, "w": 6, "o": 4,
       "kh": 3, "kw": 3, "oh": 4, "ow": 4, "strides": [1, 1],
       "padding": [0, 0, 0, 0], "dilations": [1, 1], "groups": 1,
       "bias": false, "activation": "none"},
      {"id": 2, "op": "avg_pool2d_fwd", "n": 8, "c": 3, "h": 6, "w": 6,
       "oh": 3, "ow": 3, "kernel": [2, 2], "strides": [2, 2],
       "padding": [0, 0, 0, 0], "dilations": [1, 1],
       "count_include_pad": true}
    ],
    "warnings": [{"op": "nn.dropout", "loc": "m.mlir:1:2", "message": "m"}],
    "memory": {"space": "host", "parameters": 1, "optimizer_state": 0,
      "accumulators": 1, "buffers": 0, "counters": 16, "inputs": 1,
      "outputs": 1, "scratch": 1000, "held_activations": 0,
      "kernel_caches": 0, "kernel_arena": 0, "fixed_overhead": 0,
      "total": 1020, "entries": {"micro_step": {"scratch": 1000,
        "held_activations": 0, "recomputed": {"values": 0, "bytes": 0,
        "flops": 0, "forward_flops": 0}}}}
  })");
  m["abi_version"] = CLEAVE_KERNEL_ABI_VERSION;
  return m;
}

/// The column of `object` in struct `s` (its discriminator's case).
size_t columnOf(const abi::StructDesc &s, const json &object) {
  const abi::FieldDesc *f = abi::discriminatorField(s);
  if (!f)
    return 0;
  const abi::EnumDesc *e = s.columns();
  std::string spelling = object.contains(f->key)
                             ? object[f->key].get<std::string>()
                             : f->presence.codes[0].defaultText;
  for (size_t c = 0; c < e->count; ++c)
    if (spelling == e->cases[c].spelling)
      return c;
  return 0;
}

/// A mutation: where, what is done, and what the reader must say.
struct Case {
  std::string path;
  std::string change;
  std::function<void(json &)> apply;
};

/// Calls `visit` with a pointer into `root` at each object of the schema
/// (`s` at `path`), and, through `pointer`, how to reach it again.
void walk(const json &object, const abi::StructDesc &s,
          const json::json_pointer &pointer, const std::string &path,
          std::vector<Case> &cases) {
  const size_t column = columnOf(s, object);
  for (size_t i = 0; i < s.count; ++i) {
    const abi::FieldDesc &f = s.fields[i];
    const std::string key = f.key;
    const std::string at = path.empty() ? key : path + "." + key;
    const json::json_pointer p = pointer / key;
    const abi::PresenceKind presence = f.presence.codes[column].kind;
    if (!object.contains(key)) {
      continue;
    }
    if (presence == abi::PresenceKind::Required)
      cases.push_back({at, "removed", [p](json &m) {
                         m[p.parent_pointer()].erase(p.back());
                       }});
    const bool composite =
        f.type == abi::TypeKind::List || f.type == abi::TypeKind::Map ||
        f.type == abi::TypeKind::Object || f.type == abi::TypeKind::Shape ||
        f.type == abi::TypeKind::Ints || f.type == abi::TypeKind::Strings;
    cases.push_back({at, "of the wrong kind", [p, composite](json &m) {
                       m[p] = composite ? json("x") : json::object();
                     }});
    if (f.check.kind == abi::CheckKind::Min &&
        (f.type == abi::TypeKind::Int || f.type == abi::TypeKind::KInt))
      cases.push_back({at, "below its minimum",
                       [p, f](json &m) { m[p] = f.check.min - 1; }});
    if (f.type == abi::TypeKind::Enum)
      cases.push_back(
          {at, "a spelling the table lacks", [p](json &m) { m[p] = "bogus"; }});
    const json &value = object[key];
    const abi::StructDesc *nested = abi::nestedStruct(f);
    if (f.type == abi::TypeKind::Object && nested)
      walk(value, *nested, p, at, cases);
    else if (f.type == abi::TypeKind::List && nested)
      for (size_t e = 0; e < value.size(); ++e)
        walk(value[e], *nested, p / e, at + "[" + std::to_string(e) + "]",
             cases);
    else if (f.type == abi::TypeKind::Map && nested)
      for (auto it = value.begin(); it != value.end(); ++it)
        walk(it.value(), *nested, p / it.key(), at + "." + it.key(), cases);
  }
}

const abi::StructDesc &topLevel() {
  for (const abi::StructDesc &s : abi::kStructs)
    if (std::string(s.path).empty())
      return s;
  throw std::logic_error("the table has no top-level struct");
}

TEST(SchemaReadTest, AcceptsAValidManifest) {
  abi::Manifest m;
  std::string error;
  ASSERT_TRUE(abi::readManifestText(validManifest().dump(), m, error)) << error;
  EXPECT_EQ(m.microBatch.value_or(0), 8);
  ASSERT_EQ(m.kernels.size(), 3u);
  EXPECT_EQ(m.kernels[1].op, abi::KernelOp::conv2d_fwd);
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries.front().first, "apply_step"); // key order
}

TEST(SchemaReadTest, EveryRowIsCheckedAndNamesItsPath) {
  const json base = validManifest();
  std::vector<Case> cases;
  walk(base, topLevel(), json::json_pointer(), "", cases);
  // Every struct of the table is in the base manifest, so every row with a
  // value there yields at least one case.
  EXPECT_GT(cases.size(), 200u);
  for (const Case &c : cases) {
    json mutated = base;
    c.apply(mutated);
    abi::Manifest m;
    std::string error;
    bool read = abi::readManifestText(mutated.dump(), m, error);
    EXPECT_FALSE(read) << c.path << " " << c.change << " was accepted";
    EXPECT_EQ(error.rfind("manifest: " + c.path + " ", 0), 0u)
        << c.path << " " << c.change << ": " << error;
  }
}

TEST(SchemaReadTest, KernelEntriesAreStrict) {
  json m = validManifest();
  m["kernels"][0]["frobnicate"] = 1;
  abi::Manifest out;
  std::string error;
  EXPECT_FALSE(abi::readManifestText(m.dump(), out, error));
  EXPECT_EQ(error, "manifest: kernels[0].frobnicate is not a known field");
  // A key of another op is not allowed either.
  m = validManifest();
  m["kernels"][0]["groups"] = 1;
  EXPECT_FALSE(abi::readManifestText(m.dump(), out, error));
  EXPECT_EQ(error, "manifest: kernels[0].groups is not allowed for matmul");
  // Elsewhere an unknown key is ignored, as the runtime's parser does.
  m = validManifest();
  m["globals"][0]["note"] = "hello";
  EXPECT_TRUE(abi::readManifestText(m.dump(), out, error)) << error;
}

TEST(SchemaReadTest, AbsentAndDefaultStayDistinct) {
  json m = validManifest();
  abi::Manifest out;
  std::string error;
  ASSERT_TRUE(abi::readManifestText(m.dump(), out, error)) << error;
  ASSERT_TRUE(out.device.has_value());
  EXPECT_EQ(*out.device, abi::Device::cpu);
  m.erase("device");
  ASSERT_TRUE(abi::readManifestText(m.dump(), out, error)) << error;
  EXPECT_FALSE(out.device.has_value());
}

} // namespace

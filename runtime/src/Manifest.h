//===- Manifest.h - The validated manifest of an artifact -------*- C++ -*-===//
//
// The manifest (docs/design/runtime-abi.md, version 1) parsed into typed
// structures. Parsing validates every field, so the session works from facts,
// never from JSON, and never looks anything up by name on a hot path.
//
// Two kinds of artifact share the format: training artifacts (the default,
// micro_step/apply_step/eval_step, driven by a Session) and graph artifacts
// (`"kind": "graph"`, made by the tracing frontend: entries of any name whose
// arguments the caller owns, run by an Executable).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_MANIFEST_H
#define CLEAVE_RUNTIME_MANIFEST_H

#include "Status.h"
#include "cleave/kernel_abi.h"
#include "schema/Schema.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cleave::rt {

/// The manifest version (`abi_version`) this runtime understands.
inline constexpr int64_t kManifestAbiVersion = CLEAVE_KERNEL_ABI_VERSION;

/// Alignment, in bytes, of every buffer passed to an entry point.
inline constexpr size_t kBufferAlignment = 64;

/// `bytes` rounded up to a multiple of kBufferAlignment: the room a buffer
/// takes when buffers are placed back to back. Sizes come from a validated
/// manifest (at most 2^48 bytes each), so this cannot overflow.
inline constexpr size_t alignedSize(uint64_t bytes) {
  return size_t((bytes + kBufferAlignment - 1) / kBufferAlignment *
                kBufferAlignment);
}

// The manifest's enums are the schema's (artifact_schema.def): their cases
// are the spellings on the wire, abi::name and abi::parse convert, and the C
// API's enums follow the same order (checked in CApi.cpp).

/// Element types. Globals and what the runtime computes with
/// (hyperparameters, sample weights, index checks) are f32, f64, i32 or i64;
/// the narrow types only carry a model's inputs and outputs, which the model
/// widens and narrows itself.
using DType = abi::DType;

size_t dtypeSize(DType dtype);
/// f32 or f64: the float types the runtime computes with.
bool isFloat(DType dtype);
/// A type only inputs and outputs have (i8, u8, i16, u16, u32, f16, bf16).
bool isNarrow(DType dtype);

using GlobalKind = abi::GlobalKind;
using InitKind = abi::InitKind;

/// How a global gets its initial value; only the fields of `kind` are set.
struct InitSpec {
  InitKind kind = InitKind::zeros;
  double value = 0.0;           // constant
  double lo = 0.0, hi = 0.0;    // uniform; also the bound of the fan-in kinds
  double mean = 0.0, std = 0.0; // normal
  int64_t fanIn = 0;            // kaiming_uniform (derived), fan_in_uniform
  uint64_t offset = 0;          // data
  uint64_t bytes = 0;           // data
};

/// A dense row-major tensor.
struct TensorDesc {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t numElements = 1;
  size_t bytes = 0;
};

struct GlobalDesc : TensorDesc {
  GlobalKind kind = GlobalKind::param;
  std::string of; // empty when absent
  InitSpec init;
};

struct InputDesc : TensorDesc {
  /// The `"role": "sample_weights"` input, filled by the runtime.
  bool sampleWeights = false;
  /// Bytes of one sample (the tensor without its leading batch dimension).
  size_t rowBytes = 0;
  /// For class labels and embedding indices: every element must lie in
  /// [0, indexBound) (`"index_bound"`; 0: no bound).
  int64_t indexBound = 0;
  /// Token labels (`"ignore_index"`): elements equal to this value are not
  /// predicted; they get sample weight 0 and need not lie in the bound.
  std::optional<int64_t> ignoreIndex;
};

struct HyperDesc {
  std::string name;
  double defaultValue = 0.0;
};

struct WarningDesc {
  std::string op, loc, message;
};

using ArgRole = abi::ArgRole;

/// One argument of an entry point, resolved to an index.
struct ArgDesc {
  ArgRole role = ArgRole::input;
  /// Index into Manifest::inputs, EntryDesc::outputs, Manifest::globals or
  /// Manifest::hypers (by role); unused for scratch.
  size_t index = 0;
  /// Bytes of a scratch area.
  uint64_t scratchBytes = 0;
};

/// The entry points of a training or inference artifact.
using EntryKind = abi::EntryName;
inline constexpr size_t kNumEntryKinds = abi::kCaseCount<EntryKind>;

struct EntryDesc {
  bool present = false;
  std::vector<ArgDesc> args;
  std::vector<TensorDesc> outputs;
  /// usesInput[i]: some argument of this entry is Manifest::inputs[i].
  std::vector<bool> usesInput;
};

using ReduceMode = abi::Reduce;

/// What an artifact is for: a Session trains a Training artifact and
/// evaluates an Inference one (forward only: eval_step alone, no counters,
/// hyperparameters or window), an Executable runs the entries of a Graph
/// artifact.
using ArtifactKind = abi::ArtifactKind;

/// One argument of a graph entry. Inputs, outputs and globals are buffers
/// the caller passes; scratch is owned by the executable.
struct GraphArgDesc {
  /// Input, Output, Global or Scratch.
  ArgRole role = ArgRole::input;
  /// The buffer's name, dtype and shape (a global's are its declaration's).
  TensorDesc tensor;
  /// Bytes of a scratch area.
  uint64_t scratchBytes = 0;
};

/// An entry point of a graph artifact: `cleave_entry_<name>`.
struct GraphEntryDesc {
  std::string name;
  std::vector<GraphArgDesc> args;
};

/// The CPU an artifact's code was generated for (`--target-cpu`), and every
/// feature it enables, by LLVM's names.
struct TargetDesc {
  std::string cpu;
  std::vector<std::string> features;
};

/// What executes an artifact's entry points (`"device"`).
using DeviceKind = abi::Device;

/// An SM architecture of the manifest's `gpu_arches` and `ptx_arch`
/// (`"sm_80"`, or `"sm_90a"` for code that runs on that exact GPU only).
struct GpuArch {
  int major = 0, minor = 0;
  /// The `a` suffix: architecture-specific features, no compatibility with
  /// any other GPU.
  bool specific = false;
  std::string name() const;
};
/// Parses `sm_<major><minor>[a]`; nullopt if `text` is not of that form.
std::optional<GpuArch> parseGpuArch(std::string_view text);

/// Everything the manifest says, validated: `doc` as the schema reads it
/// (artifact_schema.def), and the facts derived from it that the session
/// indexes with. Of the derived facts a Graph artifact sets only `kind`,
/// `abiVersion`, `globals`, `graphEntries`, `kernels`, `warnings`, `text`
/// and `hash`.
struct Manifest {
  /// Every field, as written (absent fields stay absent), but the kernel
  /// table: `doc.kernels` is empty, and `kernels` holds the raw entries,
  /// which a session or executable reads when it is created.
  abi::Manifest doc;
  ArtifactKind kind = ArtifactKind::training;
  int64_t abiVersion = 0;
  /// The file ends with a checksum seal, which the loader has verified.
  bool sealed = false;
  /// Absent in artifacts that do not record it (hand-written test ones).
  std::optional<TargetDesc> target;
  /// `"device"`: absent means the CPU. A `cuda` artifact passes device
  /// pointers to its entry points and launches its kernels through the
  /// runtime's mgpu* functions (docs/design/gpu-runtime.md).
  DeviceKind device = DeviceKind::cpu;
  /// `cuda` only: the architectures the artifact has a cubin for, in the
  /// order the compiler was given them, and the one whose PTX it embeds
  /// (absent: none).
  std::vector<GpuArch> gpuArches;
  std::optional<GpuArch> ptxArch;
  int64_t microBatch = 0;
  int64_t accumulate = 0;
  /// One rank's samples per window: accumulate x micro_batch, or fewer when
  /// the last micro-batch of each window is short (`window_samples`).
  int64_t windowSamples = 0;
  ReduceMode reduce = ReduceMode::none;
  /// Data-parallel ranks the artifact is compiled for; 0: any number.
  int64_t ranks = 0;
  /// ZeRO-1: optimizer state is this rank's shard (needs `ranks`).
  bool shardOptimizerState = false;
  /// The gradients are reduced in every micro-step (a benchmark baseline).
  bool reduceEveryMicroStep = false;
  DType dtype = DType::f32;
  /// The memory report's total: the bytes a session allocates in its
  /// device's memory (docs/design/memory.md). Absent in artifacts without a
  /// report (hand-written test ones, graphs).
  std::optional<int64_t> memoryTotal;
  std::vector<GlobalDesc> globals;
  std::vector<HyperDesc> hypers;
  std::vector<InputDesc> inputs;
  /// Indices into `inputs` of the inputs a caller supplies (all but the
  /// sample-weights input), in manifest order.
  std::vector<size_t> userInputs;
  std::optional<size_t> sampleWeightsInput;
  /// The input with `ignore_index` (token labels), whose shape the sample
  /// weights then have: one weight per token rather than per sample.
  std::optional<size_t> tokenLabelsInput;
  std::array<EntryDesc, kNumEntryKinds> entries;
  /// The entries of a Graph artifact, in manifest order.
  std::vector<GraphEntryDesc> graphEntries;
  nlohmann::json kernels = nlohmann::json::array();
  std::vector<WarningDesc> warnings;

  /// Indices of the well-known globals.
  size_t stepGlobal = 0;
  size_t microStepsGlobal = 0;
  std::optional<size_t> samplesGlobal;
  std::optional<size_t> rngGlobal;
  /// The apply step's verdict on the window (0: finite, else 1 + the index
  /// among the accumulators, in manifest order, of the first sum that is
  /// not) and its count of skipped windows; absent where the artifact was
  /// compiled without the check (cleave-opt pipelines may leave it out).
  std::optional<size_t> nonfiniteGlobal;
  std::optional<size_t> skippedStepsGlobal;
  /// Index of micro_step's `loss` output.
  size_t lossOutput = 0;

  /// The manifest text and its CRC-32 (the model's identity in
  /// checkpoints).
  std::string text;
  uint64_t hash = 0;

  const EntryDesc &entry(EntryKind kind) const {
    return entries[static_cast<size_t>(kind)];
  }
  std::optional<size_t> findGlobal(std::string_view name) const;
  std::optional<size_t> findHyper(std::string_view name) const;
};

/// Parses and validates manifest `text`, of any kind (the root's `kind`:
/// absent or "training", "inference" or "graph"): the schema's reader
/// (schema/SchemaRead.h) checks each field, then the rules that read two or
/// more. Error messages name the offending field as a path, e.g.
/// "globals[3].shape must be a list of non-negative integers"; the caller
/// prefixes the artifact's path.
Status parseManifest(std::string_view text, Manifest &out);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_MANIFEST_H

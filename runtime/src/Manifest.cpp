//===- Manifest.cpp - Parse and validate an artifact's manifest -----------===//
//
// parseManifest = the schema's reader (schema/SchemaRead.cpp, every field's
// presence, type and range by its row of artifact_schema.def) + the rules
// here (ManifestRules: every check that reads two or more fields, and the
// facts the session derives). Messages name the field by its path. Unknown
// keys are ignored so that a newer compiler can add informational fields
// without bumping the ABI version.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "Checksum.h"
#include "ManifestCheck.h"
#include "kernels/KernelSpec.h"
#include "schema/SchemaReadJson.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

using nlohmann::json;

namespace cleave::rt {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::f64:
  case DType::i64:
    return 8;
  case DType::f32:
  case DType::i32:
  case DType::u32:
    return 4;
  case DType::i16:
  case DType::u16:
  case DType::f16:
  case DType::bf16:
    return 2;
  case DType::i8:
  case DType::u8:
    return 1;
  }
  return 0;
}

bool isFloat(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

bool isNarrow(DType dtype) {
  return dtype != DType::f32 && dtype != DType::f64 && dtype != DType::i32 &&
         dtype != DType::i64;
}

std::string GpuArch::name() const {
  return "sm_" + std::to_string(major) + std::to_string(minor) +
         (specific ? "a" : "");
}

std::optional<GpuArch> parseGpuArch(std::string_view text) {
  if (text.substr(0, 3) != "sm_")
    return std::nullopt;
  std::string_view digits = text.substr(3);
  GpuArch arch;
  if (!digits.empty() && digits.back() == 'a') {
    arch.specific = true;
    digits.remove_suffix(1);
  }
  // The minor version is the last digit (sm_100 is 10.0, sm_120 is 12.0).
  if (digits.size() < 2 || digits.size() > 3 || digits.front() == '0' ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  arch.minor = digits.back() - '0';
  arch.major = std::stoi(std::string(digits.substr(0, digits.size() - 1)));
  return arch;
}

std::optional<size_t> Manifest::findGlobal(std::string_view name) const {
  for (size_t i = 0; i < globals.size(); ++i)
    if (globals[i].name == name)
      return i;
  return std::nullopt;
}

std::optional<size_t> Manifest::findHyper(std::string_view name) const {
  for (size_t i = 0; i < hypers.size(); ++i)
    if (hypers[i].name == name)
      return i;
  return std::nullopt;
}

namespace {

/// Tensors larger than this are refused: it keeps every size computation in
/// range and is far beyond what a session could allocate.
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 48;

std::string join(const std::string &path, const char *key) {
  return path.empty() ? std::string(key) : path + "." + key;
}
std::string index(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// The rules of a manifest the schema's reader has read (`m.doc`): every
/// check that reads two or more fields, and every fact the session derives
/// (sizes, indices, the well-known globals). Each error names the field by
/// its JSON path.
class ManifestRules {
public:
  /// `root` is the document `m.doc` was read from, for the one key the
  /// reader ignores and the runtime refuses (`of` on a param).
  ManifestRules(Manifest &m, const json &root) : m(m), d(m.doc), root(root) {}

  Status check();

private:
  static Status error(const std::string &path, const std::string &what) {
    return makeError(CLEAVE_INVALID_ARTIFACT, "manifest: ", path, " ", what);
  }

  static Status tensor(const std::string &path, abi::DType dtype,
                       const std::vector<int64_t> &shape, TensorDesc &t);
  Status device();
  Status window();
  Status dataParallel();
  Status modelDType();
  Status globals();
  Status init(const abi::Init &in, const std::string &path, GlobalDesc &g);
  Status wellKnownGlobals();
  Status checkWellKnown(const char *name, bool required, bool counter,
                        bool floatScalar, std::optional<size_t> &out);
  Status hypers();
  Status inputs();
  Status entries();
  Status entry(EntryKind kind, const abi::Entry &e, const std::string &path);
  Status checkEntryRules();
  Status graphEntries();
  Status graphEntry(const abi::Entry &e, const std::string &path,
                    GraphEntryDesc &entry);

  Manifest &m;
  const abi::Manifest &d;
  const json &root;
};

Status ManifestRules::check() {
  m.abiVersion = d.abiVersion;
  m.sealed = d.sealed.value_or(false);
  if (d.target)
    m.target = TargetDesc{d.target->cpu, d.target->features};
  CLEAVE_RETURN_IF_ERROR(device());
  m.kind = d.kind.value_or(abi::ArtifactKind::training);
  if (d.memory)
    m.memoryTotal = d.memory->total;
  for (const abi::Warning &w : d.warnings.value_or(std::vector<abi::Warning>()))
    m.warnings.push_back({w.op, w.loc, w.message});
  // A graph artifact has no window, counters, data inputs or
  // hyperparameters for a session to manage: its entries take caller-owned
  // buffers. The training-only fields are ignored if present.
  if (m.kind == ArtifactKind::graph) {
    CLEAVE_RETURN_IF_ERROR(globals());
    return graphEntries();
  }
  m.microBatch = *d.microBatch;
  // A forward-only artifact: no window, counters or hyperparameters of its
  // own, but a float type and hyperparameters if the model has them.
  if (m.kind == ArtifactKind::inference) {
    m.accumulate = 1;
    CLEAVE_RETURN_IF_ERROR(modelDType());
    CLEAVE_RETURN_IF_ERROR(globals());
    CLEAVE_RETURN_IF_ERROR(hypers());
    CLEAVE_RETURN_IF_ERROR(inputs());
    return entries();
  }
  m.accumulate = *d.accumulate;
  CLEAVE_RETURN_IF_ERROR(window());
  m.reduce = *d.reduce;
  CLEAVE_RETURN_IF_ERROR(dataParallel());
  CLEAVE_RETURN_IF_ERROR(modelDType());
  CLEAVE_RETURN_IF_ERROR(globals());
  CLEAVE_RETURN_IF_ERROR(wellKnownGlobals());
  CLEAVE_RETURN_IF_ERROR(hypers());
  CLEAVE_RETURN_IF_ERROR(inputs());
  return entries();
}

/// `dtype` and `shape`, and the element and byte counts they give.
Status ManifestRules::tensor(const std::string &path, abi::DType dtype,
                             const std::vector<int64_t> &shape, TensorDesc &t) {
  t.dtype = dtype;
  t.shape = shape;
  uint64_t elements = 1;
  bool overflow = false;
  for (int64_t dim : shape) {
    if (dim != 0 && elements > kMaxTensorBytes / uint64_t(dim))
      overflow = true;
    else
      elements *= uint64_t(dim);
  }
  if (overflow || elements * dtypeSize(t.dtype) > kMaxTensorBytes)
    return error(join(path, "shape"),
                 "describes a tensor larger than 2^48 bytes");
  t.numElements = int64_t(elements);
  t.bytes = size_t(elements * dtypeSize(t.dtype));
  return Status::success();
}

/// `device`, and for `cuda` the architectures of its GPU code: `gpu_arches`
/// (required, no repeats) and `ptx_arch` (optional), both refused on the
/// CPU. Which of them a GPU can run is decided when a session is created
/// (device/GpuArch.h).
Status ManifestRules::device() {
  m.device = d.device.value_or(abi::Device::cpu);
  if (m.device == DeviceKind::cpu) {
    if (d.gpuArches)
      return error("gpu_arches", "is only valid with \"device\": \"cuda\"");
    if (d.ptxArch)
      return error("ptx_arch", "is only valid with \"device\": \"cuda\"");
    return Status::success();
  }
  if (!d.gpuArches)
    return error("gpu_arches", "is missing (a \"cuda\" artifact names the "
                               "architectures of its cubins)");
  for (size_t i = 0; i < d.gpuArches->size(); ++i) {
    const std::string &name = (*d.gpuArches)[i];
    std::optional<GpuArch> arch = parseGpuArch(name);
    if (!arch)
      return error(index("gpu_arches", i),
                   "must be an SM architecture such as \"sm_80\" (got " +
                       json(name).dump() + ")");
    for (const GpuArch &seen : m.gpuArches)
      if (seen.name() == arch->name())
        return error(index("gpu_arches", i), "repeats " + arch->name());
    m.gpuArches.push_back(*arch);
  }
  if (d.ptxArch) {
    std::optional<GpuArch> arch = parseGpuArch(*d.ptxArch);
    if (!arch || arch->specific)
      return error("ptx_arch",
                   "must be an SM architecture without the 'a' suffix, such "
                   "as \"sm_80\" (got " +
                       json(*d.ptxArch).dump() + ")");
    m.ptxArch = *arch;
  }
  return Status::success();
}

/// Without `window_samples`, accumulate whole micro-batches; with it, a
/// window whose last micro-batch is short.
Status ManifestRules::window() {
  m.windowSamples = d.windowSamples.value_or(m.accumulate * m.microBatch);
  if (m.windowSamples > m.accumulate * m.microBatch ||
      m.windowSamples <= (m.accumulate - 1) * m.microBatch)
    return error("window_samples",
                 "must be more than accumulate - 1 and at most accumulate "
                 "micro-batches (" +
                     std::to_string((m.accumulate - 1) * m.microBatch) +
                     " < window_samples <= " +
                     std::to_string(m.accumulate * m.microBatch) + "), got " +
                     std::to_string(m.windowSamples));
  return Status::success();
}

/// `ranks` (the job size the artifact is compiled for),
/// `shard_optimizer_state` (ZeRO-1, which fixes `ranks` and needs the mean
/// reduction) and `reduce_every_micro_step`.
Status ManifestRules::dataParallel() {
  m.ranks = d.ranks.value_or(0);
  m.shardOptimizerState = d.shardOptimizerState.value_or(false);
  m.reduceEveryMicroStep = d.reduceEveryMicroStep.value_or(false);
  if (m.shardOptimizerState && (m.ranks == 0 || m.reduce != ReduceMode::mean))
    return error("shard_optimizer_state",
                 "needs \"ranks\" and \"reduce\": \"mean\"");
  if (m.reduceEveryMicroStep && m.reduce != ReduceMode::mean)
    return error("reduce_every_micro_step", "needs \"reduce\": \"mean\"");
  return Status::success();
}

/// The model's float type, of hyperparameters and sample weights
/// (inference: optional, as a model without parameters has none).
Status ManifestRules::modelDType() {
  m.dtype = d.dtype.value_or(abi::DType::f32);
  if (!isFloat(m.dtype))
    return error("dtype", "must be f32 or f64 (the model's float type)");
  return Status::success();
}

/// The globals: unique names, tensors of the wide types, `of` naming a
/// param, and initialisers.
Status ManifestRules::globals() {
  std::set<std::string> names;
  for (size_t i = 0; i < d.globals.size(); ++i) {
    const abi::Global &g = d.globals[i];
    std::string path = index("globals", i);
    GlobalDesc desc;
    desc.name = g.name;
    if (!names.insert(desc.name).second)
      return error(join(path, "name"),
                   "'" + desc.name + "' is already the name of another global");
    desc.kind = g.kind;
    CLEAVE_RETURN_IF_ERROR(tensor(path, g.dtype, g.shape, desc));
    if (isNarrow(desc.dtype))
      return error(join(path, "dtype"),
                   std::string("must be f32, f64, i32 or i64 for a global "
                               "(got '") +
                       abi::name(desc.dtype) + "')");
    // The row says X for the other kinds, which the reader ignores.
    if (desc.kind != GlobalKind::accumulator &&
        desc.kind != GlobalKind::state &&
        root.at("globals").at(i).contains("of"))
      return error(join(path, "of"),
                   "is only allowed on accumulator and state globals");
    desc.of = g.of.value_or("");
    CLEAVE_RETURN_IF_ERROR(init(g.init, path, desc));
    m.globals.push_back(std::move(desc));
  }
  for (size_t i = 0; i < m.globals.size(); ++i) {
    const GlobalDesc &g = m.globals[i];
    if (g.of.empty())
      continue;
    std::optional<size_t> target = m.findGlobal(g.of);
    if (!target || m.globals[*target].kind != GlobalKind::param)
      return error(join(index("globals", i), "of"),
                   "'" + g.of + "' is not the name of a param global");
  }
  return Status::success();
}

/// What an initialiser needs of its global: random kinds a float one,
/// constants a value it can hold, data its exact size; and the fan-in
/// kinds' bounds.
Status ManifestRules::init(const abi::Init &in, const std::string &path,
                           GlobalDesc &g) {
  const std::string initPath = join(path, "init");
  const std::string kind = abi::name(in.kind);
  InitSpec &init = g.init;
  init.kind = in.kind;
  if (init.kind != InitKind::zeros && init.kind != InitKind::ones &&
      init.kind != InitKind::constant && init.kind != InitKind::data &&
      !isFloat(g.dtype))
    return error(join(initPath, "kind"),
                 "'" + kind + "' needs a float global (this one is " +
                     abi::name(g.dtype) + ")");
  switch (init.kind) {
  case InitKind::zeros:
  case InitKind::ones:
    break;
  case InitKind::constant:
    init.value = *in.value;
    if (!isFloat(g.dtype)) {
      double limit =
          g.dtype == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
      if (init.value != std::trunc(init.value) || init.value < -limit ||
          init.value >= limit)
        return error(join(initPath, "value"),
                     std::string("must be an integer representable as ") +
                         abi::name(g.dtype));
    }
    break;
  case InitKind::uniform:
    init.lo = *in.lo;
    init.hi = *in.hi;
    if (init.lo > init.hi)
      return error(initPath, "has lo > hi");
    break;
  case InitKind::normal:
    init.mean = *in.mean;
    init.std = *in.stddev;
    break;
  case InitKind::kaiming_uniform: {
    // PyTorch refuses fan computations on tensors of rank < 2 as well.
    if (g.shape.size() < 2)
      return error(join(initPath, "kind"),
                   "'kaiming_uniform' needs a shape of rank >= 2 (fan_in is "
                   "the product of all dimensions but the first)");
    // tensor() bounds the element count, but not when the first dimension
    // is 0: the product of the others is checked here.
    int64_t fanIn = 1;
    for (size_t i = 1; i < g.shape.size(); ++i)
      if (__builtin_mul_overflow(fanIn, g.shape[i], &fanIn))
        return error(join(path, "shape"),
                     "gives kaiming_uniform a fan_in beyond 2^63");
    if (fanIn == 0)
      return error(join(path, "shape"), "gives kaiming_uniform a fan_in of 0");
    init.fanIn = fanIn;
    break;
  }
  case InitKind::fan_in_uniform:
    init.fanIn = *in.fanIn;
    break;
  case InitKind::data:
    if (uint64_t(*in.bytes) != g.bytes)
      return error(join(initPath, "bytes"),
                   "is " + std::to_string(*in.bytes) + ", the global has " +
                       std::to_string(g.bytes) + " bytes");
    init.offset = uint64_t(*in.offset);
    init.bytes = uint64_t(*in.bytes);
    break;
  }
  if (init.kind == InitKind::kaiming_uniform ||
      init.kind == InitKind::fan_in_uniform) {
    init.hi = 1.0 / std::sqrt(double(init.fanIn));
    init.lo = -init.hi;
  }
  return Status::success();
}

Status ManifestRules::wellKnownGlobals() {
  std::optional<size_t> idx;
  CLEAVE_RETURN_IF_ERROR(checkWellKnown("train.step", true, true, false, idx));
  m.stepGlobal = *idx;
  CLEAVE_RETURN_IF_ERROR(
      checkWellKnown("train.micro_steps", true, true, false, idx));
  m.microStepsGlobal = *idx;
  CLEAVE_RETURN_IF_ERROR(
      checkWellKnown("train.samples", false, false, true, m.samplesGlobal));
  CLEAVE_RETURN_IF_ERROR(
      checkWellKnown("train.nonfinite", false, true, false, m.nonfiniteGlobal));
  CLEAVE_RETURN_IF_ERROR(checkWellKnown("train.skipped_steps", false, true,
                                        false, m.skippedStepsGlobal));
  if (m.nonfiniteGlobal.has_value() != m.skippedStepsGlobal.has_value())
    return error("globals", "has one of 'train.nonfinite' and "
                            "'train.skipped_steps' without the other");
  return checkWellKnown("train.rng", false, false, false, m.rngGlobal);
}

/// The runtime reads train.step and train.micro_steps, so their types are part
/// of the contract; train.samples and train.rng are checked when present.
Status ManifestRules::checkWellKnown(const char *name, bool required,
                                     bool counter, bool floatScalar,
                                     std::optional<size_t> &out) {
  out = m.findGlobal(name);
  if (!out) {
    if (required)
      return error("globals", std::string("has no '") + name +
                                  "' global (required by the runtime)");
    return Status::success();
  }
  const GlobalDesc &g = m.globals[*out];
  std::string path = index("globals", *out);
  if (!g.shape.empty())
    return error(join(path, "shape"),
                 std::string("of '") + name + "' must be [] (a scalar)");
  if (floatScalar) {
    if (!isFloat(g.dtype))
      return error(join(path, "dtype"),
                   std::string("of '") + name + "' must be f32 or f64");
    if (g.kind != GlobalKind::accumulator)
      return error(join(path, "kind"),
                   std::string("of '") + name + "' must be accumulator");
    return Status::success();
  }
  if (g.dtype != DType::i64)
    return error(join(path, "dtype"),
                 std::string("of '") + name + "' must be i64");
  if (counter && g.kind != GlobalKind::counter)
    return error(join(path, "kind"),
                 std::string("of '") + name + "' must be counter");
  return Status::success();
}

Status ManifestRules::hypers() {
  std::set<std::string> names;
  const std::vector<abi::Hyper> none;
  const std::vector<abi::Hyper> &hypers = d.hypers ? *d.hypers : none;
  for (size_t i = 0; i < hypers.size(); ++i) {
    const abi::Hyper &h = hypers[i];
    if (!names.insert(h.name).second)
      return error(join(index("hyperparameters", i), "name"),
                   "'" + h.name +
                       "' is already the name of another hyperparameter");
    m.hypers.push_back({h.name, h.defaultValue});
  }
  return Status::success();
}

/// Names, the micro-batch leading every input, the sample weights (one
/// input, a float per sample or per token) and the token labels.
Status ManifestRules::inputs() {
  std::set<std::string> names;
  for (size_t i = 0; i < d.inputs->size(); ++i) {
    const abi::Input &in = (*d.inputs)[i];
    std::string path = index("inputs", i);
    InputDesc desc;
    desc.name = in.name;
    if (!names.insert(desc.name).second)
      return error(join(path, "name"),
                   "'" + desc.name + "' is already the name of another input");
    CLEAVE_RETURN_IF_ERROR(tensor(path, in.dtype, in.shape, desc));
    if (desc.shape.empty() || desc.shape[0] != m.microBatch)
      return error(join(path, "shape"),
                   "must start with the micro-batch size " +
                       std::to_string(m.microBatch));
    desc.rowBytes = desc.bytes / size_t(m.microBatch);
    if (in.role) {
      if (m.sampleWeightsInput)
        return error(join(path, "role"),
                     "'sample_weights' is already the role of inputs[" +
                         std::to_string(*m.sampleWeightsInput) + "]");
      // [B], or the token labels' shape (checked below, once every input
      // is known).
      if (!isFloat(desc.dtype))
        return error(path, "(sample weights) must be f32 or f64");
      desc.sampleWeights = true;
      m.sampleWeightsInput = i;
    } else {
      m.userInputs.push_back(i);
    }
    if (in.indexBound) {
      desc.indexBound = *in.indexBound;
      if (desc.dtype != DType::i32 && desc.dtype != DType::i64)
        return error(join(path, "index_bound"),
                     "is only allowed on an i32 or i64 input");
    }
    if (in.ignoreIndex) {
      if (desc.indexBound == 0 || desc.shape.size() < 2)
        return error(join(path, "ignore_index"),
                     "is only allowed on token labels: an integer input with "
                     "an index_bound and a token dimension");
      if (m.tokenLabelsInput)
        return error(join(path, "ignore_index"),
                     "is already on inputs[" +
                         std::to_string(*m.tokenLabelsInput) + "]");
      desc.ignoreIndex = *in.ignoreIndex;
      m.tokenLabelsInput = i;
    }
    m.inputs.push_back(std::move(desc));
  }
  // Sample weights: one per sample, or one per token of the token labels.
  if (m.sampleWeightsInput) {
    const InputDesc &w = m.inputs[*m.sampleWeightsInput];
    std::vector<int64_t> expected = {m.microBatch};
    if (m.tokenLabelsInput)
      expected = m.inputs[*m.tokenLabelsInput].shape;
    if (w.shape != expected) {
      std::string dims;
      for (int64_t dim : expected)
        dims += (dims.empty() ? "" : ", ") + std::to_string(dim);
      return error(index("inputs", *m.sampleWeightsInput),
                   "(sample weights) must have shape [" + dims + "]" +
                       (m.tokenLabelsInput ? ", the token labels' shape"
                                           : ""));
    }
  }
  return Status::success();
}

/// The entry points by name: micro_step and apply_step, optionally
/// eval_step (training); eval_step alone (inference).
Status ManifestRules::entries() {
  for (const auto &[name, e] : d.entries) {
    std::optional<EntryKind> kind = abi::parse<EntryKind>(name);
    std::string path = "entries." + name;
    if (!kind)
      return error(path, "is not an entry point of ABI version 1 (expected "
                         "micro_step, apply_step or eval_step)");
    if (m.kind == ArtifactKind::inference && *kind != EntryKind::eval_step)
      return error(path, "is not allowed in an inference artifact (it has "
                         "eval_step alone)");
    CLEAVE_RETURN_IF_ERROR(entry(*kind, e, path));
  }
  if (m.kind == ArtifactKind::inference) {
    if (!m.entry(EntryKind::eval_step).present)
      return error("entries.eval_step", "is missing");
    return Status::success();
  }
  for (EntryKind kind : {EntryKind::micro_step, EntryKind::apply_step})
    if (!m.entry(kind).present)
      return error(std::string("entries.") + abi::name(kind), "is missing");
  return checkEntryRules();
}

/// Every argument resolved to what it names; outputs' names unique.
Status ManifestRules::entry(EntryKind kind, const abi::Entry &e,
                            const std::string &path) {
  EntryDesc &entry = m.entries[static_cast<size_t>(kind)];
  entry.present = true;
  entry.usesInput.assign(m.inputs.size(), false);
  for (size_t i = 0; i < e.args.size(); ++i) {
    const abi::Arg &a = e.args[i];
    std::string argPath = index(join(path, "args"), i);
    ArgDesc arg;
    arg.role = a.role;
    const std::string name = a.name.value_or("");
    switch (arg.role) {
    case ArgRole::scratch:
      if (uint64_t(*a.bytes) > kMaxTensorBytes)
        return error(join(argPath, "bytes"), "is larger than 2^48");
      arg.scratchBytes = uint64_t(*a.bytes);
      break;
    case ArgRole::input: {
      auto it =
          std::find_if(m.inputs.begin(), m.inputs.end(),
                       [&](const InputDesc &in) { return in.name == name; });
      if (it == m.inputs.end())
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of an input");
      arg.index = size_t(it - m.inputs.begin());
      entry.usesInput[arg.index] = true;
      break;
    }
    case ArgRole::output: {
      for (const TensorDesc &out : entry.outputs)
        if (out.name == name)
          return error(join(argPath, "name"),
                       "'" + name + "' is already the name of another output");
      TensorDesc out;
      out.name = name;
      CLEAVE_RETURN_IF_ERROR(tensor(argPath, *a.dtype, *a.shape, out));
      arg.index = entry.outputs.size();
      entry.outputs.push_back(std::move(out));
      break;
    }
    case ArgRole::global: {
      std::optional<size_t> g = m.findGlobal(name);
      if (!g)
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of a global");
      arg.index = *g;
      break;
    }
    case ArgRole::hyper: {
      std::optional<size_t> h = m.findHyper(name);
      if (!h)
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of a hyperparameter");
      arg.index = *h;
      break;
    }
    }
    entry.args.push_back(arg);
  }
  return Status::success();
}

/// Rules the session relies on: it reads micro_step's loss, and decides when
/// to apply from train.micro_steps, which micro_step increments and apply_step
/// zeroes (incrementing train.step).
Status ManifestRules::checkEntryRules() {
  auto takesGlobal = [&](EntryKind kind, size_t global) {
    for (const ArgDesc &a : m.entry(kind).args)
      if (a.role == ArgRole::global && a.index == global)
        return true;
    return false;
  };
  const EntryDesc &micro = m.entry(EntryKind::micro_step);
  bool foundLoss = false;
  for (size_t i = 0; i < micro.outputs.size(); ++i) {
    const TensorDesc &out = micro.outputs[i];
    if (out.name != "loss")
      continue;
    if (!out.shape.empty() || !isFloat(out.dtype))
      return error("entries.micro_step",
                   "output 'loss' must be a f32 or f64 scalar (shape [])");
    m.lossOutput = i;
    foundLoss = true;
  }
  if (!foundLoss)
    return error("entries.micro_step", "has no output named 'loss'");
  if (!takesGlobal(EntryKind::micro_step, m.microStepsGlobal))
    return error("entries.micro_step",
                 "does not take global 'train.micro_steps'");
  if (!takesGlobal(EntryKind::apply_step, m.microStepsGlobal))
    return error("entries.apply_step",
                 "does not take global 'train.micro_steps'");
  if (!takesGlobal(EntryKind::apply_step, m.stepGlobal))
    return error("entries.apply_step", "does not take global 'train.step'");
  for (const ArgDesc &a : m.entry(EntryKind::apply_step).args)
    if (a.role == ArgRole::input)
      return error("entries.apply_step",
                   "takes input '" + m.inputs[a.index].name +
                       "' (apply_step runs without data)");
  return Status::success();
}

/// A graph artifact's entries: at least one, each name an identifier.
Status ManifestRules::graphEntries() {
  if (d.entries.empty())
    return error("entries", "must declare at least one entry point");
  for (const auto &[name, e] : d.entries) {
    std::string path = "entries." + name;
    // The name becomes part of the symbol cleave_entry_<name>.
    bool identifier =
        !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
        std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        });
    if (!identifier)
      return error(path, "is not a valid entry name (letters, digits and "
                         "'_', not starting with a digit)");
    GraphEntryDesc entry;
    entry.name = name;
    CLEAVE_RETURN_IF_ERROR(graphEntry(e, path, entry));
    m.graphEntries.push_back(std::move(entry));
  }
  return Status::success();
}

/// Inputs and outputs are caller buffers, each named once per entry and
/// described by its own dtype and shape; globals resolve; no hypers.
Status ManifestRules::graphEntry(const abi::Entry &e, const std::string &path,
                                 GraphEntryDesc &entry) {
  std::set<std::string> inputs, outputs;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const abi::Arg &a = e.args[i];
    std::string argPath = index(join(path, "args"), i);
    GraphArgDesc arg;
    arg.role = a.role;
    arg.tensor.name = a.name.value_or("");
    const std::string &name = arg.tensor.name;
    switch (arg.role) {
    case ArgRole::scratch:
      if (uint64_t(*a.bytes) > kMaxTensorBytes)
        return error(join(argPath, "bytes"), "is larger than 2^48");
      arg.scratchBytes = uint64_t(*a.bytes);
      break;
    case ArgRole::input:
    case ArgRole::output: {
      const char *role = abi::name(a.role);
      if (!(arg.role == ArgRole::input ? inputs : outputs).insert(name).second)
        return error(join(argPath, "name"), "'" + name +
                                                "' is already the name of "
                                                "another " +
                                                role + " of this entry");
      // An input's dtype and shape are copies elsewhere (I), not here.
      if (!a.dtype)
        return error(join(argPath, "dtype"), "is missing");
      if (!a.shape)
        return error(join(argPath, "shape"), "is missing");
      CLEAVE_RETURN_IF_ERROR(tensor(argPath, *a.dtype, *a.shape, arg.tensor));
      break;
    }
    case ArgRole::global: {
      std::optional<size_t> g = m.findGlobal(name);
      if (!g)
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of a global");
      arg.tensor = m.globals[*g];
      break;
    }
    case ArgRole::hyper:
      return error(join(argPath, "role"),
                   "'hyper' is not allowed in a graph artifact (scalars are "
                   "inputs)");
    }
    entry.args.push_back(std::move(arg));
  }
  return Status::success();
}

/// Reads and checks `text` into `out`, the kernel table as `kernels` says.
Status parse(std::string_view text, Manifest &out, abi::Kernels kernels) {
  json root;
  std::string why;
  Manifest m;
  if (!abi::parseJson(text, root, why) ||
      !abi::readManifest(root, m.doc, kernels, why))
    return makeError(CLEAVE_INVALID_ARTIFACT, why);
  CLEAVE_RETURN_IF_ERROR(ManifestRules(m, root).check());
  m.kernels = std::move(root["kernels"]);
  m.text = std::string(text);
  m.hash = crc32(text.data(), text.size());
  out = std::move(m);
  return Status::success();
}

} // namespace

bool checkManifest(std::string_view text, std::string &error) {
  Manifest m;
  Status status = parseManifest(text, m);
  if (!status.ok()) {
    error = status.message();
    return false;
  }
  // The kernel table as a session's kernel library reads it.
  error = checkKernelTable(m.kernels);
  return error.empty();
}

bool readManifestDoc(std::string_view text, abi::Manifest &doc,
                     std::string &error) {
  Manifest m;
  Status status = parse(text, m, abi::Kernels::Read);
  if (!status.ok()) {
    error = status.message();
    return false;
  }
  doc = std::move(m.doc);
  return true;
}

Status parseManifest(std::string_view text, Manifest &out) {
  return parse(text, out, abi::Kernels::Defer);
}

} // namespace cleave::rt

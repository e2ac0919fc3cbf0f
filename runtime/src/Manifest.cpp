//===- Manifest.cpp - Parse and validate an artifact's manifest -----------===//
//
// Every field of docs/design/runtime-abi.md is checked here, with messages
// that name the field by its path. Unknown keys are ignored so that a newer
// compiler can add informational fields without bumping the ABI version.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "Checksum.h"
#include "ManifestCheck.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

using nlohmann::json;

namespace cleave::rt {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4}, {DType::F64, "f64", 8},  {DType::I32, "i32", 4},
    {DType::I64, "i64", 8}, {DType::I8, "i8", 1},    {DType::U8, "u8", 1},
    {DType::I16, "i16", 2}, {DType::U16, "u16", 2},  {DType::U32, "u32", 4},
    {DType::F16, "f16", 2}, {DType::BF16, "bf16", 2}};
} // namespace

size_t dtypeSize(DType dtype) {
  for (const DTypeInfo &t : kDTypes)
    if (t.dtype == dtype)
      return t.size;
  return 0;
}

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &t : kDTypes)
    if (t.dtype == dtype)
      return t.name;
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &t : kDTypes)
    if (name == t.name)
      return t.dtype;
  return std::nullopt;
}

bool isFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

bool isNarrow(DType dtype) {
  return dtype != DType::F32 && dtype != DType::F64 && dtype != DType::I32 &&
         dtype != DType::I64;
}

const char *globalKindName(GlobalKind kind) {
  switch (kind) {
  case GlobalKind::Param:
    return "param";
  case GlobalKind::Buffer:
    return "buffer";
  case GlobalKind::Accumulator:
    return "accumulator";
  case GlobalKind::State:
    return "state";
  case GlobalKind::Counter:
    return "counter";
  }
  return "?";
}

const char *entryName(EntryKind kind) {
  switch (kind) {
  case EntryKind::MicroStep:
    return "micro_step";
  case EntryKind::ApplyStep:
    return "apply_step";
  case EntryKind::EvalStep:
    return "eval_step";
  }
  return "?";
}

const char *artifactKindName(ArtifactKind kind) {
  switch (kind) {
  case ArtifactKind::Training:
    return "training";
  case ArtifactKind::Inference:
    return "inference";
  case ArtifactKind::Graph:
    return "graph";
  }
  return "?";
}

const char *deviceKindName(DeviceKind kind) {
  return kind == DeviceKind::Cuda ? "cuda" : "cpu";
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

std::optional<EntryKind> parseEntryName(std::string_view name) {
  for (size_t i = 0; i < kNumEntryKinds; ++i)
    if (name == entryName(static_cast<EntryKind>(i)))
      return static_cast<EntryKind>(i);
  return std::nullopt;
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

/// Validates one manifest, accumulating facts into a Manifest. Each check
/// returns an error naming the field by its JSON path.
class ManifestParser {
public:
  explicit ManifestParser(Manifest &m) : m(m) {}

  Status parse(const json &root);

private:
  static Status error(const std::string &path, const std::string &what) {
    return makeError(CLEAVE_INVALID_ARTIFACT, "manifest: ", path, " ", what);
  }

  static std::string join(const std::string &path, const char *key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }
  static std::string index(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  /// Finds `key` in `obj`; `found` is null if it is absent and not required.
  static Status field(const json &obj, const std::string &path, const char *key,
                      bool required, const json *&found) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      found = nullptr;
      if (required)
        return error(join(path, key), "is missing");
      return Status::success();
    }
    found = &*it;
    return Status::success();
  }

  static Status getInt(const json &obj, const std::string &path,
                       const char *key, int64_t min, int64_t &out) {
    const json *v;
    CLEAVE_RETURN_IF_ERROR(field(obj, path, key, true, v));
    bool fits =
        v->is_number_integer() &&
        !(v->is_number_unsigned() &&
          v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
    if (!fits || v->get<int64_t>() < min)
      return error(join(path, key),
                   min == 0   ? "must be a non-negative integer"
                   : min == 1 ? "must be a positive integer"
                   : min == std::numeric_limits<int64_t>::min()
                       ? "must be an integer"
                       : "must be an integer >= " + std::to_string(min));
    out = v->get<int64_t>();
    return Status::success();
  }

  static Status getNumber(const json &obj, const std::string &path,
                          const char *key, double &out) {
    const json *v;
    CLEAVE_RETURN_IF_ERROR(field(obj, path, key, true, v));
    if (!v->is_number() || !std::isfinite(v->get<double>()))
      return error(join(path, key), "must be a finite number");
    out = v->get<double>();
    return Status::success();
  }

  static Status getString(const json &obj, const std::string &path,
                          const char *key, std::string &out) {
    const json *v;
    CLEAVE_RETURN_IF_ERROR(field(obj, path, key, true, v));
    if (!v->is_string() || v->get_ref<const std::string &>().empty())
      return error(join(path, key), "must be a non-empty string");
    out = v->get<std::string>();
    return Status::success();
  }

  static Status getObject(const json &v, const std::string &path) {
    if (!v.is_object())
      return error(path, "must be an object");
    return Status::success();
  }

  static Status getDType(const json &obj, const std::string &path, DType &out) {
    std::string name;
    CLEAVE_RETURN_IF_ERROR(getString(obj, path, "dtype", name));
    std::optional<DType> dtype = parseDType(name);
    if (!dtype)
      return error(join(path, "dtype"),
                   "must be one of f32, f64, i32, i64, i8, u8, i16, u16, "
                   "u32, f16, bf16 (got '" +
                       name + "')");
    out = *dtype;
    return Status::success();
  }

  /// Reads `dtype` and `shape` and derives the element and byte counts.
  static Status getTensor(const json &obj, const std::string &path,
                          TensorDesc &t) {
    CLEAVE_RETURN_IF_ERROR(getDType(obj, path, t.dtype));
    const json *shape;
    CLEAVE_RETURN_IF_ERROR(field(obj, path, "shape", true, shape));
    const char *what = "must be a list of non-negative integers";
    if (!shape->is_array())
      return error(join(path, "shape"), what);
    uint64_t elements = 1;
    bool overflow = false;
    for (const json &d : *shape) {
      if (!d.is_number_integer() ||
          (d.is_number_unsigned() &&
           d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) ||
          d.get<int64_t>() < 0)
        return error(join(path, "shape"), what);
      int64_t dim = d.get<int64_t>();
      t.shape.push_back(dim);
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

  Status parseKind(const json &root);
  Status parseInference(const json &root);
  Status parseTarget(const json &root);
  Status parseDevice(const json &root);
  Status parseDataParallel(const json &root);
  Status parseMemory(const json &root);
  Status parseGraph(const json &root);
  Status parseGraphEntries(const json &root);
  Status parseGraphEntry(const json &obj, const std::string &path,
                         GraphEntryDesc &entry);
  Status parseInit(const json &obj, const std::string &path, GlobalDesc &g);
  Status parseGlobalList(const json &root);
  Status parseGlobals(const json &root);
  Status checkWellKnown(const char *name, bool required, bool counter,
                        bool floatScalar, std::optional<size_t> &out);
  Status parseHypers(const json &root);
  Status parseInputs(const json &root);
  Status parseEntries(const json &root);
  Status parseEntry(EntryKind kind, const json &obj, const std::string &path);
  Status checkEntryRules();
  Status parseKernels(const json &root);
  Status parseWarnings(const json &root);

  Manifest &m;
};

Status ManifestParser::parseTarget(const json &root) {
  const json *target;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "target", false, target));
  if (!target)
    return Status::success();
  if (!target->is_object())
    return error("target", "must be an object");
  TargetDesc t;
  CLEAVE_RETURN_IF_ERROR(getString(*target, "target", "cpu", t.cpu));
  const json *features;
  CLEAVE_RETURN_IF_ERROR(field(*target, "target", "features", true, features));
  if (!features->is_array())
    return error("target.features", "must be a list of strings");
  for (const json &f : *features) {
    if (!f.is_string())
      return error("target.features", "must be a list of strings");
    t.features.push_back(f.get<std::string>());
  }
  m.target = std::move(t);
  return Status::success();
}

/// `device`, and for `cuda` the architectures of its GPU code: `gpu_arches`
/// (required, at least one, no repeats) and `ptx_arch` (optional). Which of
/// them a GPU can run is decided when a session is created (device/GpuArch.h).
Status ManifestParser::parseDevice(const json &root) {
  const json *device, *arches, *ptx;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "device", false, device));
  CLEAVE_RETURN_IF_ERROR(field(root, "", "gpu_arches", false, arches));
  CLEAVE_RETURN_IF_ERROR(field(root, "", "ptx_arch", false, ptx));
  if (device) {
    const std::string name =
        device->is_string() ? device->get<std::string>() : device->dump();
    if (name == "cuda")
      m.device = DeviceKind::Cuda;
    else if (name != "cpu")
      return error("device",
                   "must be \"cpu\" or \"cuda\" (got " +
                       (device->is_string() ? "'" + name + "'" : name) + ")");
  }
  if (m.device == DeviceKind::Cpu) {
    if (arches)
      return error("gpu_arches", "is only valid with \"device\": \"cuda\"");
    if (ptx)
      return error("ptx_arch", "is only valid with \"device\": \"cuda\"");
    return Status::success();
  }
  const char *what = "must be a non-empty list of SM architectures "
                     "(\"sm_80\", \"sm_90a\", ...)";
  if (!arches)
    return error("gpu_arches", "is missing (a \"cuda\" artifact names the "
                               "architectures of its cubins)");
  if (!arches->is_array() || arches->empty())
    return error("gpu_arches", what);
  for (size_t i = 0; i < arches->size(); ++i) {
    const json &a = (*arches)[i];
    std::optional<GpuArch> arch =
        a.is_string() ? parseGpuArch(a.get<std::string>()) : std::nullopt;
    if (!arch)
      return error(index("gpu_arches", i),
                   "must be an SM architecture such as \"sm_80\" (got " +
                       a.dump() + ")");
    for (const GpuArch &seen : m.gpuArches)
      if (seen.name() == arch->name())
        return error(index("gpu_arches", i), "repeats " + arch->name());
    m.gpuArches.push_back(*arch);
  }
  if (ptx) {
    std::optional<GpuArch> arch =
        ptx->is_string() ? parseGpuArch(ptx->get<std::string>()) : std::nullopt;
    if (!arch || arch->specific)
      return error("ptx_arch",
                   "must be an SM architecture without the 'a' suffix, such "
                   "as \"sm_80\" (got " +
                       ptx->dump() + ")");
    m.ptxArch = *arch;
  }
  return Status::success();
}

Status ManifestParser::parse(const json &root) {
  if (!root.is_object())
    return makeError(CLEAVE_INVALID_ARTIFACT,
                     "manifest: must be a JSON object");
  CLEAVE_RETURN_IF_ERROR(getInt(root, "", "abi_version", 0, m.abiVersion));
  if (m.abiVersion != kManifestAbiVersion)
    return error("abi_version", "is " + std::to_string(m.abiVersion) +
                                    ", this runtime supports " +
                                    std::to_string(kManifestAbiVersion));
  const json *sealed;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "sealed", false, sealed));
  if (sealed) {
    if (!sealed->is_boolean())
      return error("sealed", "must be true or false");
    m.sealed = sealed->get<bool>();
  }
  CLEAVE_RETURN_IF_ERROR(parseTarget(root));
  CLEAVE_RETURN_IF_ERROR(parseDevice(root));
  CLEAVE_RETURN_IF_ERROR(parseKind(root));
  CLEAVE_RETURN_IF_ERROR(parseMemory(root));
  if (m.kind == ArtifactKind::Graph)
    return parseGraph(root);
  CLEAVE_RETURN_IF_ERROR(getInt(root, "", "micro_batch", 1, m.microBatch));
  if (m.kind == ArtifactKind::Inference)
    return parseInference(root);
  CLEAVE_RETURN_IF_ERROR(getInt(root, "", "accumulate", 1, m.accumulate));
  // Optional: a window whose last micro-batch is short.
  m.windowSamples = m.accumulate * m.microBatch;
  const json *window;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "window_samples", false, window));
  if (window) {
    CLEAVE_RETURN_IF_ERROR(
        getInt(root, "", "window_samples", 1, m.windowSamples));
    if (m.windowSamples > m.accumulate * m.microBatch ||
        m.windowSamples <= (m.accumulate - 1) * m.microBatch)
      return error("window_samples",
                   "must be more than accumulate - 1 and at most accumulate "
                   "micro-batches (" +
                       std::to_string((m.accumulate - 1) * m.microBatch) +
                       " < window_samples <= " +
                       std::to_string(m.accumulate * m.microBatch) + "), got " +
                       std::to_string(m.windowSamples));
  }

  std::string reduce;
  CLEAVE_RETURN_IF_ERROR(getString(root, "", "reduce", reduce));
  if (reduce == "none")
    m.reduce = ReduceMode::None;
  else if (reduce == "sum")
    m.reduce = ReduceMode::Sum;
  else if (reduce == "mean")
    m.reduce = ReduceMode::Mean;
  else if (reduce == "adasum")
    m.reduce = ReduceMode::Adasum;
  else
    return error("reduce", "must be one of none, sum, mean, adasum (got '" +
                               reduce + "')");
  CLEAVE_RETURN_IF_ERROR(parseDataParallel(root));

  CLEAVE_RETURN_IF_ERROR(getDType(root, "", m.dtype));
  if (!isFloat(m.dtype))
    return error("dtype", "must be f32 or f64 (the model's float type)");

  CLEAVE_RETURN_IF_ERROR(parseGlobals(root));
  CLEAVE_RETURN_IF_ERROR(parseHypers(root));
  CLEAVE_RETURN_IF_ERROR(parseInputs(root));
  CLEAVE_RETURN_IF_ERROR(parseEntries(root));
  CLEAVE_RETURN_IF_ERROR(parseKernels(root));
  return parseWarnings(root);
}

/// The optional memory report (docs/design/memory.md): the runtime reads
/// its total, what a session needs in its device's memory.
Status ManifestParser::parseMemory(const json &root) {
  const json *memory;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "memory", false, memory));
  if (!memory)
    return Status::success();
  CLEAVE_RETURN_IF_ERROR(getObject(*memory, "memory"));
  int64_t total = 0;
  CLEAVE_RETURN_IF_ERROR(getInt(*memory, "memory", "total", 0, total));
  m.memoryTotal = total;
  return Status::success();
}

/// The optional data-parallel fields: `ranks` (the job size the artifact is
/// compiled for), `shard_optimizer_state` (ZeRO-1, which fixes `ranks` and
/// needs the mean reduction) and `reduce_every_micro_step`.
Status ManifestParser::parseDataParallel(const json &root) {
  const json *v;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "ranks", false, v));
  if (v)
    CLEAVE_RETURN_IF_ERROR(getInt(root, "", "ranks", 1, m.ranks));
  for (auto [key, out] :
       {std::pair<const char *, bool *>{"shard_optimizer_state",
                                        &m.shardOptimizerState},
        {"reduce_every_micro_step", &m.reduceEveryMicroStep}}) {
    CLEAVE_RETURN_IF_ERROR(field(root, "", key, false, v));
    if (!v)
      continue;
    if (!v->is_boolean())
      return error(key, "must be true or false");
    *out = v->get<bool>();
  }
  if (m.shardOptimizerState && (m.ranks == 0 || m.reduce != ReduceMode::Mean))
    return error("shard_optimizer_state",
                 "needs \"ranks\" and \"reduce\": \"mean\"");
  if (m.reduceEveryMicroStep && m.reduce != ReduceMode::Mean)
    return error("reduce_every_micro_step", "needs \"reduce\": \"mean\"");
  return Status::success();
}

/// `kind` is optional: manifests written before graph artifacts existed
/// have none and are training artifacts.
Status ManifestParser::parseKind(const json &root) {
  const json *kind;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "kind", false, kind));
  if (!kind)
    return Status::success();
  if (kind->is_string() && *kind == "training")
    m.kind = ArtifactKind::Training;
  else if (kind->is_string() && *kind == "inference")
    m.kind = ArtifactKind::Inference;
  else if (kind->is_string() && *kind == "graph")
    m.kind = ArtifactKind::Graph;
  else
    return error("kind", "must be \"training\", \"inference\" or \"graph\" "
                         "when present");
  return Status::success();
}

/// A forward-only artifact: inputs by rows of the micro-batch as for
/// training, globals without counters, and eval_step alone. `dtype` and
/// `hyperparameters` are optional (a model without parameters has no float
/// type of its own); the training-only fields are ignored.
Status ManifestParser::parseInference(const json &root) {
  m.accumulate = 1;
  const json *v;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "dtype", false, v));
  if (v) {
    CLEAVE_RETURN_IF_ERROR(getDType(root, "", m.dtype));
    if (!isFloat(m.dtype))
      return error("dtype", "must be f32 or f64 (the model's float type)");
  }
  CLEAVE_RETURN_IF_ERROR(parseGlobalList(root));
  CLEAVE_RETURN_IF_ERROR(field(root, "", "hyperparameters", false, v));
  if (v)
    CLEAVE_RETURN_IF_ERROR(parseHypers(root));
  CLEAVE_RETURN_IF_ERROR(parseInputs(root));
  CLEAVE_RETURN_IF_ERROR(parseEntries(root));
  CLEAVE_RETURN_IF_ERROR(parseKernels(root));
  return parseWarnings(root);
}

/// A graph artifact has no window, counters, data inputs or hyperparameters
/// for a session to manage: its entries take caller-owned buffers. The
/// training-only fields are ignored if present.
Status ManifestParser::parseGraph(const json &root) {
  CLEAVE_RETURN_IF_ERROR(parseGlobalList(root));
  CLEAVE_RETURN_IF_ERROR(parseGraphEntries(root));
  CLEAVE_RETURN_IF_ERROR(parseKernels(root));
  return parseWarnings(root);
}

Status ManifestParser::parseGraphEntries(const json &root) {
  const json *entries;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "entries", true, entries));
  CLEAVE_RETURN_IF_ERROR(getObject(*entries, "entries"));
  if (entries->empty())
    return error("entries", "must declare at least one entry point");
  for (auto it = entries->begin(); it != entries->end(); ++it) {
    const std::string &name = it.key();
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
    CLEAVE_RETURN_IF_ERROR(parseGraphEntry(it.value(), path, entry));
    m.graphEntries.push_back(std::move(entry));
  }
  return Status::success();
}

Status ManifestParser::parseGraphEntry(const json &obj, const std::string &path,
                                       GraphEntryDesc &entry) {
  CLEAVE_RETURN_IF_ERROR(getObject(obj, path));
  const json *args;
  CLEAVE_RETURN_IF_ERROR(field(obj, path, "args", true, args));
  if (!args->is_array())
    return error(join(path, "args"), "must be a list");
  std::set<std::string> inputs, outputs;
  for (size_t i = 0; i < args->size(); ++i) {
    const json &a = (*args)[i];
    std::string argPath = index(join(path, "args"), i);
    CLEAVE_RETURN_IF_ERROR(getObject(a, argPath));
    std::string role;
    CLEAVE_RETURN_IF_ERROR(getString(a, argPath, "role", role));
    GraphArgDesc arg;
    if (role == "scratch") {
      arg.role = ArgRole::Scratch;
      int64_t bytes;
      CLEAVE_RETURN_IF_ERROR(getInt(a, argPath, "bytes", 0, bytes));
      if (uint64_t(bytes) > kMaxTensorBytes)
        return error(join(argPath, "bytes"), "is larger than 2^48");
      arg.scratchBytes = uint64_t(bytes);
      entry.args.push_back(std::move(arg));
      continue;
    }
    CLEAVE_RETURN_IF_ERROR(getString(a, argPath, "name", arg.tensor.name));
    const std::string &name = arg.tensor.name;
    if (role == "input" || role == "output") {
      arg.role = role == "input" ? ArgRole::Input : ArgRole::Output;
      if (!(role == "input" ? inputs : outputs).insert(name).second)
        return error(join(argPath, "name"), "'" + name +
                                                "' is already the name of "
                                                "another " +
                                                role + " of this entry");
      CLEAVE_RETURN_IF_ERROR(getTensor(a, argPath, arg.tensor));
    } else if (role == "global") {
      arg.role = ArgRole::Global;
      std::optional<size_t> g = m.findGlobal(name);
      if (!g)
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of a global");
      arg.tensor = m.globals[*g];
    } else if (role == "hyper") {
      return error(join(argPath, "role"),
                   "'hyper' is not allowed in a graph artifact (scalars are "
                   "inputs)");
    } else {
      return error(join(argPath, "role"),
                   "must be one of input, output, global, scratch (got '" +
                       role + "')");
    }
    entry.args.push_back(std::move(arg));
  }
  return Status::success();
}

Status ManifestParser::parseInit(const json &obj, const std::string &path,
                                 GlobalDesc &g) {
  const json *initJson;
  CLEAVE_RETURN_IF_ERROR(field(obj, path, "init", true, initJson));
  std::string initPath = join(path, "init");
  CLEAVE_RETURN_IF_ERROR(getObject(*initJson, initPath));
  std::string kind;
  CLEAVE_RETURN_IF_ERROR(getString(*initJson, initPath, "kind", kind));
  InitSpec &init = g.init;
  auto requireFloat = [&]() -> Status {
    if (!isFloat(g.dtype))
      return error(join(initPath, "kind"),
                   "'" + kind + "' needs a float global (this one is " +
                       dtypeName(g.dtype) + ")");
    return Status::success();
  };

  if (kind == "zeros") {
    init.kind = InitKind::Zeros;
  } else if (kind == "ones") {
    init.kind = InitKind::Ones;
  } else if (kind == "constant") {
    init.kind = InitKind::Constant;
    CLEAVE_RETURN_IF_ERROR(getNumber(*initJson, initPath, "value", init.value));
    if (!isFloat(g.dtype)) {
      double limit =
          g.dtype == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
      if (init.value != std::trunc(init.value) || init.value < -limit ||
          init.value >= limit)
        return error(join(initPath, "value"),
                     std::string("must be an integer representable as ") +
                         dtypeName(g.dtype));
    }
  } else if (kind == "uniform") {
    init.kind = InitKind::Uniform;
    CLEAVE_RETURN_IF_ERROR(requireFloat());
    CLEAVE_RETURN_IF_ERROR(getNumber(*initJson, initPath, "lo", init.lo));
    CLEAVE_RETURN_IF_ERROR(getNumber(*initJson, initPath, "hi", init.hi));
    if (init.lo > init.hi)
      return error(initPath, "has lo > hi");
  } else if (kind == "normal") {
    init.kind = InitKind::Normal;
    CLEAVE_RETURN_IF_ERROR(requireFloat());
    CLEAVE_RETURN_IF_ERROR(getNumber(*initJson, initPath, "mean", init.mean));
    CLEAVE_RETURN_IF_ERROR(getNumber(*initJson, initPath, "std", init.std));
    if (init.std < 0)
      return error(join(initPath, "std"), "must be non-negative");
  } else if (kind == "kaiming_uniform") {
    init.kind = InitKind::KaimingUniform;
    CLEAVE_RETURN_IF_ERROR(requireFloat());
    // PyTorch refuses fan computations on tensors of rank < 2 as well.
    if (g.shape.size() < 2)
      return error(join(initPath, "kind"),
                   "'kaiming_uniform' needs a shape of rank >= 2 (fan_in is "
                   "the product of all dimensions but the first)");
    // getTensor bounds the element count, but not when the first dimension
    // is 0: the product of the others is checked here.
    int64_t fanIn = 1;
    for (size_t i = 1; i < g.shape.size(); ++i)
      if (__builtin_mul_overflow(fanIn, g.shape[i], &fanIn))
        return error(join(path, "shape"),
                     "gives kaiming_uniform a fan_in beyond 2^63");
    if (fanIn == 0)
      return error(join(path, "shape"), "gives kaiming_uniform a fan_in of 0");
    init.fanIn = fanIn;
  } else if (kind == "fan_in_uniform") {
    init.kind = InitKind::FanInUniform;
    CLEAVE_RETURN_IF_ERROR(requireFloat());
    CLEAVE_RETURN_IF_ERROR(
        getInt(*initJson, initPath, "fan_in", 1, init.fanIn));
  } else if (kind == "data") {
    init.kind = InitKind::Data;
    int64_t offset, bytes;
    CLEAVE_RETURN_IF_ERROR(getInt(*initJson, initPath, "offset", 0, offset));
    CLEAVE_RETURN_IF_ERROR(getInt(*initJson, initPath, "bytes", 0, bytes));
    if (uint64_t(bytes) != g.bytes)
      return error(join(initPath, "bytes"),
                   "is " + std::to_string(bytes) + ", the global has " +
                       std::to_string(g.bytes) + " bytes");
    init.offset = uint64_t(offset);
    init.bytes = uint64_t(bytes);
  } else {
    return error(join(initPath, "kind"),
                 "must be one of zeros, ones, constant, uniform, normal, "
                 "kaiming_uniform, fan_in_uniform, data (got '" +
                     kind + "')");
  }
  if (init.kind == InitKind::KaimingUniform ||
      init.kind == InitKind::FanInUniform) {
    init.hi = 1.0 / std::sqrt(double(init.fanIn));
    init.lo = -init.hi;
  }
  return Status::success();
}

Status ManifestParser::parseGlobals(const json &root) {
  CLEAVE_RETURN_IF_ERROR(parseGlobalList(root));
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

/// The globals list itself: names, kinds, tensors, `of` and initialisers.
Status ManifestParser::parseGlobalList(const json &root) {
  const json *globals;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "globals", true, globals));
  if (!globals->is_array())
    return error("globals", "must be a list");
  std::set<std::string> names;
  for (size_t i = 0; i < globals->size(); ++i) {
    const json &g = (*globals)[i];
    std::string path = index("globals", i);
    CLEAVE_RETURN_IF_ERROR(getObject(g, path));
    GlobalDesc desc;
    CLEAVE_RETURN_IF_ERROR(getString(g, path, "name", desc.name));
    if (!names.insert(desc.name).second)
      return error(join(path, "name"),
                   "'" + desc.name + "' is already the name of another global");
    std::string kind;
    CLEAVE_RETURN_IF_ERROR(getString(g, path, "kind", kind));
    if (kind == "param")
      desc.kind = GlobalKind::Param;
    else if (kind == "buffer")
      desc.kind = GlobalKind::Buffer;
    else if (kind == "accumulator")
      desc.kind = GlobalKind::Accumulator;
    else if (kind == "state")
      desc.kind = GlobalKind::State;
    else if (kind == "counter")
      desc.kind = GlobalKind::Counter;
    else
      return error(join(path, "kind"),
                   "must be one of param, buffer, accumulator, state, counter "
                   "(got '" +
                       kind + "')");
    CLEAVE_RETURN_IF_ERROR(getTensor(g, path, desc));
    if (isNarrow(desc.dtype))
      return error(join(path, "dtype"),
                   std::string("must be f32, f64, i32 or i64 for a global "
                               "(got '") +
                       dtypeName(desc.dtype) + "')");
    const json *of;
    CLEAVE_RETURN_IF_ERROR(field(g, path, "of", false, of));
    if (of) {
      if (desc.kind != GlobalKind::Accumulator &&
          desc.kind != GlobalKind::State)
        return error(join(path, "of"),
                     "is only allowed on accumulator and state globals");
      CLEAVE_RETURN_IF_ERROR(getString(g, path, "of", desc.of));
    }
    CLEAVE_RETURN_IF_ERROR(parseInit(g, path, desc));
    m.globals.push_back(std::move(desc));
  }
  for (size_t i = 0; i < m.globals.size(); ++i) {
    const GlobalDesc &g = m.globals[i];
    if (g.of.empty())
      continue;
    std::optional<size_t> target = m.findGlobal(g.of);
    if (!target || m.globals[*target].kind != GlobalKind::Param)
      return error(join(index("globals", i), "of"),
                   "'" + g.of + "' is not the name of a param global");
  }
  return Status::success();
}

/// The runtime reads train.step and train.micro_steps, so their types are part
/// of the contract; train.samples and train.rng are checked when present.
Status ManifestParser::checkWellKnown(const char *name, bool required,
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
    if (g.kind != GlobalKind::Accumulator)
      return error(join(path, "kind"),
                   std::string("of '") + name + "' must be accumulator");
    return Status::success();
  }
  if (g.dtype != DType::I64)
    return error(join(path, "dtype"),
                 std::string("of '") + name + "' must be i64");
  if (counter && g.kind != GlobalKind::Counter)
    return error(join(path, "kind"),
                 std::string("of '") + name + "' must be counter");
  return Status::success();
}

Status ManifestParser::parseHypers(const json &root) {
  const json *hypers;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "hyperparameters", true, hypers));
  if (!hypers->is_array())
    return error("hyperparameters", "must be a list");
  std::set<std::string> names;
  for (size_t i = 0; i < hypers->size(); ++i) {
    const json &h = (*hypers)[i];
    std::string path = index("hyperparameters", i);
    CLEAVE_RETURN_IF_ERROR(getObject(h, path));
    HyperDesc desc;
    CLEAVE_RETURN_IF_ERROR(getString(h, path, "name", desc.name));
    if (!names.insert(desc.name).second)
      return error(join(path, "name"), "'" + desc.name +
                                           "' is already the name of another "
                                           "hyperparameter");
    CLEAVE_RETURN_IF_ERROR(getNumber(h, path, "default", desc.defaultValue));
    m.hypers.push_back(std::move(desc));
  }
  return Status::success();
}

Status ManifestParser::parseInputs(const json &root) {
  const json *inputs;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "inputs", true, inputs));
  if (!inputs->is_array())
    return error("inputs", "must be a list");
  std::set<std::string> names;
  for (size_t i = 0; i < inputs->size(); ++i) {
    const json &in = (*inputs)[i];
    std::string path = index("inputs", i);
    CLEAVE_RETURN_IF_ERROR(getObject(in, path));
    InputDesc desc;
    CLEAVE_RETURN_IF_ERROR(getString(in, path, "name", desc.name));
    if (!names.insert(desc.name).second)
      return error(join(path, "name"),
                   "'" + desc.name + "' is already the name of another input");
    CLEAVE_RETURN_IF_ERROR(getTensor(in, path, desc));
    if (desc.shape.empty() || desc.shape[0] != m.microBatch)
      return error(join(path, "shape"),
                   "must start with the micro-batch size " +
                       std::to_string(m.microBatch));
    desc.rowBytes = desc.bytes / size_t(m.microBatch);
    const json *role;
    CLEAVE_RETURN_IF_ERROR(field(in, path, "role", false, role));
    if (role) {
      if (!role->is_string() || *role != "sample_weights")
        return error(join(path, "role"),
                     "must be \"sample_weights\" when present");
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
    const json *bound;
    CLEAVE_RETURN_IF_ERROR(field(in, path, "index_bound", false, bound));
    if (bound) {
      CLEAVE_RETURN_IF_ERROR(getInt(in, path, "index_bound", 1,
                                    desc.indexBound));
      if (desc.dtype != DType::I32 && desc.dtype != DType::I64)
        return error(join(path, "index_bound"),
                     "is only allowed on an i32 or i64 input");
    }
    const json *ignore;
    CLEAVE_RETURN_IF_ERROR(field(in, path, "ignore_index", false, ignore));
    if (ignore) {
      int64_t value = 0;
      CLEAVE_RETURN_IF_ERROR(getInt(in, path, "ignore_index",
                                    std::numeric_limits<int64_t>::min(),
                                    value));
      if (desc.indexBound == 0 || desc.shape.size() < 2)
        return error(join(path, "ignore_index"),
                     "is only allowed on token labels: an integer input with "
                     "an index_bound and a token dimension");
      if (m.tokenLabelsInput)
        return error(join(path, "ignore_index"),
                     "is already on inputs[" +
                         std::to_string(*m.tokenLabelsInput) + "]");
      desc.ignoreIndex = value;
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
      for (int64_t d : expected)
        dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      return error(index("inputs", *m.sampleWeightsInput),
                   "(sample weights) must have shape [" + dims + "]" +
                       (m.tokenLabelsInput ? ", the token labels' shape"
                                           : ""));
    }
  }
  return Status::success();
}

Status ManifestParser::parseEntries(const json &root) {
  const json *entries;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "entries", true, entries));
  CLEAVE_RETURN_IF_ERROR(getObject(*entries, "entries"));
  for (auto it = entries->begin(); it != entries->end(); ++it) {
    std::optional<EntryKind> kind = parseEntryName(it.key());
    std::string path = "entries." + it.key();
    if (!kind)
      return error(path, "is not an entry point of ABI version 1 (expected "
                         "micro_step, apply_step or eval_step)");
    if (m.kind == ArtifactKind::Inference && *kind != EntryKind::EvalStep)
      return error(path, "is not allowed in an inference artifact (it has "
                         "eval_step alone)");
    CLEAVE_RETURN_IF_ERROR(parseEntry(*kind, it.value(), path));
  }
  if (m.kind == ArtifactKind::Inference) {
    if (!m.entry(EntryKind::EvalStep).present)
      return error("entries.eval_step", "is missing");
    return Status::success();
  }
  for (EntryKind kind : {EntryKind::MicroStep, EntryKind::ApplyStep})
    if (!m.entry(kind).present)
      return error(std::string("entries.") + entryName(kind), "is missing");
  return checkEntryRules();
}

Status ManifestParser::parseEntry(EntryKind kind, const json &obj,
                                  const std::string &path) {
  EntryDesc &entry = m.entries[static_cast<size_t>(kind)];
  entry.present = true;
  entry.usesInput.assign(m.inputs.size(), false);
  CLEAVE_RETURN_IF_ERROR(getObject(obj, path));
  const json *args;
  CLEAVE_RETURN_IF_ERROR(field(obj, path, "args", true, args));
  if (!args->is_array())
    return error(join(path, "args"), "must be a list");
  for (size_t i = 0; i < args->size(); ++i) {
    const json &a = (*args)[i];
    std::string argPath = index(join(path, "args"), i);
    CLEAVE_RETURN_IF_ERROR(getObject(a, argPath));
    std::string role;
    CLEAVE_RETURN_IF_ERROR(getString(a, argPath, "role", role));
    ArgDesc arg;
    if (role == "scratch") {
      arg.role = ArgRole::Scratch;
      int64_t bytes;
      CLEAVE_RETURN_IF_ERROR(getInt(a, argPath, "bytes", 0, bytes));
      if (uint64_t(bytes) > kMaxTensorBytes)
        return error(join(argPath, "bytes"), "is larger than 2^48");
      arg.scratchBytes = uint64_t(bytes);
      entry.args.push_back(arg);
      continue;
    }
    std::string name;
    CLEAVE_RETURN_IF_ERROR(getString(a, argPath, "name", name));
    if (role == "input") {
      arg.role = ArgRole::Input;
      auto it =
          std::find_if(m.inputs.begin(), m.inputs.end(),
                       [&](const InputDesc &in) { return in.name == name; });
      if (it == m.inputs.end())
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of an input");
      arg.index = size_t(it - m.inputs.begin());
      entry.usesInput[arg.index] = true;
    } else if (role == "output") {
      arg.role = ArgRole::Output;
      for (const TensorDesc &out : entry.outputs)
        if (out.name == name)
          return error(join(argPath, "name"),
                       "'" + name + "' is already the name of another output");
      TensorDesc out;
      out.name = name;
      CLEAVE_RETURN_IF_ERROR(getTensor(a, argPath, out));
      arg.index = entry.outputs.size();
      entry.outputs.push_back(std::move(out));
    } else if (role == "global") {
      arg.role = ArgRole::Global;
      std::optional<size_t> g = m.findGlobal(name);
      if (!g)
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of a global");
      arg.index = *g;
    } else if (role == "hyper") {
      arg.role = ArgRole::Hyper;
      std::optional<size_t> h = m.findHyper(name);
      if (!h)
        return error(join(argPath, "name"),
                     "'" + name + "' is not the name of a hyperparameter");
      arg.index = *h;
    } else {
      return error(join(argPath, "role"),
                   "must be one of input, output, global, hyper, scratch "
                   "(got '" +
                       role + "')");
    }
    entry.args.push_back(arg);
  }
  return Status::success();
}

/// Rules the session relies on: it reads micro_step's loss, and decides when
/// to apply from train.micro_steps, which micro_step increments and apply_step
/// zeroes (incrementing train.step).
Status ManifestParser::checkEntryRules() {
  auto takesGlobal = [&](EntryKind kind, size_t global) {
    for (const ArgDesc &a : m.entry(kind).args)
      if (a.role == ArgRole::Global && a.index == global)
        return true;
    return false;
  };
  const EntryDesc &micro = m.entry(EntryKind::MicroStep);
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
  if (!takesGlobal(EntryKind::MicroStep, m.microStepsGlobal))
    return error("entries.micro_step",
                 "does not take global 'train.micro_steps'");
  if (!takesGlobal(EntryKind::ApplyStep, m.microStepsGlobal))
    return error("entries.apply_step",
                 "does not take global 'train.micro_steps'");
  if (!takesGlobal(EntryKind::ApplyStep, m.stepGlobal))
    return error("entries.apply_step", "does not take global 'train.step'");
  for (const ArgDesc &a : m.entry(EntryKind::ApplyStep).args)
    if (a.role == ArgRole::Input)
      return error("entries.apply_step",
                   "takes input '" + m.inputs[a.index].name +
                       "' (apply_step runs without data)");
  return Status::success();
}

Status ManifestParser::parseKernels(const json &root) {
  const json *kernels;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "kernels", true, kernels));
  if (!kernels->is_array())
    return error("kernels", "must be a list");
  for (size_t i = 0; i < kernels->size(); ++i)
    CLEAVE_RETURN_IF_ERROR(getObject((*kernels)[i], index("kernels", i)));
  m.kernels = *kernels;
  return Status::success();
}

Status ManifestParser::parseWarnings(const json &root) {
  const json *warnings;
  CLEAVE_RETURN_IF_ERROR(field(root, "", "warnings", false, warnings));
  if (!warnings)
    return Status::success();
  if (!warnings->is_array())
    return error("warnings", "must be a list");
  for (size_t i = 0; i < warnings->size(); ++i) {
    const json &w = (*warnings)[i];
    std::string path = index("warnings", i);
    CLEAVE_RETURN_IF_ERROR(getObject(w, path));
    WarningDesc desc;
    CLEAVE_RETURN_IF_ERROR(getString(w, path, "op", desc.op));
    CLEAVE_RETURN_IF_ERROR(getString(w, path, "loc", desc.loc));
    CLEAVE_RETURN_IF_ERROR(getString(w, path, "message", desc.message));
    m.warnings.push_back(std::move(desc));
  }
  return Status::success();
}

} // namespace

bool checkManifest(std::string_view text, std::string &error) {
  Manifest m;
  Status status = parseManifest(text, m);
  if (!status.ok())
    error = status.message();
  return status.ok();
}

Status parseManifest(std::string_view text, Manifest &out) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag.
    std::string what = e.what();
    size_t tagEnd = what.find("] ");
    if (tagEnd != std::string::npos)
      what = what.substr(tagEnd + 2);
    return makeError(CLEAVE_INVALID_ARTIFACT, "manifest: is not valid JSON (",
                     what, ")");
  }
  Manifest m;
  CLEAVE_RETURN_IF_ERROR(ManifestParser(m).parse(root));
  m.text = std::string(text);
  m.hash = crc32(text.data(), text.size());
  out = std::move(m);
  return Status::success();
}

} // namespace cleave::rt

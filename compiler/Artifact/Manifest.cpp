//===- Manifest.cpp - The artifact's manifest -----------------------------===//
//
// Everything the runtime needs to drive an artifact, gathered from the
// module while it still says it: globals and their initialisers, the entry
// points' argument lists, the kernel table and the split's report.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/GpuTarget.h"
#include "compiler/Artifact/Passes.h"
#include "compiler/Artifact/SchemaWrite.h"
#include "compiler/Artifact/Target.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainOps.h"
#include "runtime/include/cleave/kernel_abi.h"
#include "runtime/src/ManifestCheck.h"
#include "runtime/src/schema/SchemaRead.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEWRITEMANIFEST
#include "compiler/Artifact/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
namespace json = llvm::json;

namespace {

/// The runtime's name of an element type (runtime/src/Manifest.cpp);
/// `isUnsigned` reads a signless integer type as unsigned.
FailureOr<std::string> dtypeName(Type t, bool isUnsigned = false) {
  if (t.isF32())
    return std::string("f32");
  if (t.isF64())
    return std::string("f64");
  if (t.isF16())
    return std::string("f16");
  if (t.isBF16())
    return std::string("bf16");
  if (auto i = dyn_cast<IntegerType>(t)) {
    unsigned width = i.getWidth();
    // No u64: nothing in nn computes with unsigned 64-bit integers.
    if (width == 8 || width == 16 || width == 32 ||
        (width == 64 && !isUnsigned))
      return (isUnsigned ? "u" : "i") + std::to_string(width);
  }
  return failure();
}

json::Array shapeOf(ArrayRef<int64_t> shape) {
  json::Array a;
  for (int64_t d : shape)
    a.push_back(d);
  return a;
}

/// Converts a (nested) attribute of train.manifest to JSON.
#ifdef CLEAVE_CHECK_MANIFEST
/// Reads `text` with the schema's reader and writes it back with its
/// writer; fails, saying where, unless that gives `text` again.
LogicalResult checkSchemaRoundTrip(const std::string &text, std::string &why) {
  ::cleave::abi::Manifest manifest;
  if (!::cleave::abi::readManifestText(text, manifest, why))
    return failure();
  std::string again = writeManifestText(manifest);
  if (again == text)
    return success();
  size_t at = 0;
  while (at < text.size() && at < again.size() && text[at] == again[at])
    ++at;
  size_t from = at > 40 ? at - 40 : 0;
  why = "written and rewritten differ at offset " + std::to_string(at) + ": '" +
        text.substr(from, 80) + "' against '" + again.substr(from, 80) +
        "' (a key without a row?)";
  return failure();
}
#endif

json::Value toJson(Attribute a) {
  if (auto s = dyn_cast<StringAttr>(a))
    return s.str();
  // BoolAttr is an i1 IntegerAttr: test it first.
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    json::Array out;
    for (Attribute e : arr)
      out.push_back(toJson(e));
    return out;
  }
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(a))
    return shapeOf(ints.asArrayRef());
  if (auto d = dyn_cast<DictionaryAttr>(a)) {
    json::Object out;
    for (NamedAttribute n : d)
      out[n.getName().str()] = toJson(n.getValue());
    return out;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}

/// Bytes of a statically shaped buffer of `type`.
int64_t bytesOf(ShapedType type) {
  return type.getNumElements() *
         std::max<int64_t>(1, (type.getElementTypeBitWidth() + 7) / 8);
}

/// What a CPU session holds beyond the report: the runtime's and oneDNN's
/// code pages as the kernels first run, oneDNN's JIT-compiled kernels and
/// scratchpads, OpenMP. Measured with one thread against peak RSS
/// (test/tools/memory_report_rss.py, docs/design/memory.md): 2 to 4 MiB for
/// GEMM models, 8 for LeNet, 17 for resnet18 (within its 10 %); more threads
/// add their stacks and scratchpads.
constexpr int64_t kHostFixedOverhead = int64_t(16) << 20;

/// What a session of the artifact holds in memory, by kind, as the runtime
/// allocates it (docs/design/memory.md): the globals (per rank: sharded
/// optimizer state counts its shard), one micro-batch of inputs (two on a
/// GPU), each entry's outputs, one scratch area shared by the entries (the
/// largest entry's arena), and on the CPU the kernels' copies of weights
/// and weight gradients in other layouts.
struct MemoryReport {
  int64_t parameters = 0, state = 0, accumulators = 0, buffers = 0,
          counters = 0, inputs = 0, outputs = 0, scratch = 0, held = 0,
          kernelCaches = 0, kernelArena = 0;
  llvm::StringSet<> inputNames;
  llvm::StringMap<int64_t> entryScratch;
  llvm::StringMap<int64_t> entryHeld;
  /// cleave-rematerialize's summary of an entry, if it ran.
  llvm::StringMap<DictionaryAttr> entryRemat;

  void addGlobal(train::GlobalOp g) {
    int64_t bytes = bytesOf(g.getTensorType());
    switch (g.getKind()) {
    case train::GlobalKind::param:
      parameters += bytes;
      break;
    case train::GlobalKind::state:
      state += bytes;
      break;
    case train::GlobalKind::accumulator:
      accumulators += bytes;
      break;
    case train::GlobalKind::buffer:
      buffers += bytes;
      break;
    case train::GlobalKind::counter:
      counters += bytes;
      break;
    }
  }

  void addArgument(StringRef entry, StringRef role, MemRefType type,
                   DictionaryAttr d) {
    if (role == "input" &&
        inputNames.insert(d.getAs<StringAttr>("name").getValue()).second)
      inputs += bytesOf(type);
    else if (role == "output")
      outputs += bytesOf(type);
    else if (role == "scratch") {
      // The runtime aligns each area to 64 bytes.
      if (auto bytes = d.getAs<IntegerAttr>("bytes"))
        entryScratch[entry] += (bytes.getInt() + 63) / 64 * 64;
      if (auto bytes = d.getAs<IntegerAttr>("held_bytes"))
        entryHeld[entry] += bytes.getInt();
    }
  }

  /// The weight copies and gradient sums of the CPU's convolutions (the
  /// layout cache): a copy of each convolution weight per layout the
  /// micro-step's kernels read it in (forward, and backward-data, which
  /// oneDNN blocks differently), and one of each weight gradient it writes.
  ///
  /// A bf16 matmul's parameter operand is a bf16 copy, one per layout it is
  /// read in (the forward and backward-data GEMMs): counted for every
  /// micro-step GEMM whose `b` is one matrix shared by the batch and not the
  /// weight-gradient GEMM's (`trans_a`), which is where parameters are read.
  ///
  /// The kernels' arena (runtime/src/kernels/Kernel.h), estimated: one
  /// buffer the size of the largest single kernel's transient need, shared
  /// by every kernel of the session. A convolution stages each activation
  /// operand (source, destination, or their gradients) of 16 channels or
  /// more into oneDNN's blocked layout, its channels padded to a multiple of
  /// 16 (narrower ones stay plain, as oneDNN keeps a first layer's input); a
  /// max-pooling gradient recomputes the forward pass's output and its
  /// workspace (one byte per output element); a bf16 GEMM stages bf16
  /// copies of its operands but a parameter, which the layout cache holds.
  /// Primitive scratchpads are left out. Slots that are reserved but never
  /// written are not counted: their pages are never resident.
  void addKernels(ArrayAttr kernels) {
    for (Attribute k : kernels) {
      auto d = dyn_cast<DictionaryAttr>(k);
      auto op = d ? d.getAs<StringAttr>("op") : StringAttr();
      auto entry = d ? d.getAs<StringAttr>("entry") : StringAttr();
      if (!op || !entry)
        continue;
      auto get = [&](StringRef key) {
        auto v = d.getAs<IntegerAttr>(key);
        return v ? v.getInt() : 1;
      };
      auto flag = [&](StringRef key) {
        auto v = d.getAs<BoolAttr>(key);
        return v && v.getValue();
      };
      auto math = d.getAs<StringAttr>("math");
      kernelArena = std::max(kernelArena,
                             arenaNeed(op.getValue(), get, math,
                                       !flag("trans_a") && !flag("b_batched")));
      if (entry.getValue() != "micro_step")
        continue;
      if (op.getValue() == "matmul" && math && math.getValue() == "bf16" &&
          !flag("trans_a") && !flag("b_batched")) {
        kernelCaches += get("k") * get("n") * 2;
        continue;
      }
      if (!llvm::is_contained(
              {"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weights"},
              op.getValue()))
        continue;
      kernelCaches += get("o") *
                      (get("c") / std::max<int64_t>(1, get("groups"))) *
                      get("kh") * get("kw") * 4;
    }
  }

  /// One kernel's estimated transient need (addKernels).
  /// `cachedB`: a bf16 GEMM's `b` is the parameter the layout cache holds,
  /// so its staging slot is never touched (and never resident).
  template <typename Get>
  static int64_t arenaNeed(StringRef op, Get get, StringAttr math,
                           bool cachedB) {
    const bool bf16 = math && math.getValue() == "bf16";
    if (op == "matmul")
      return bf16 ? get("batch") *
                        (get("m") * get("k") +
                         (cachedB ? 0 : get("k") * get("n"))) *
                        2
                  : 0;
    auto staged = [](int64_t n, int64_t channels, int64_t h, int64_t w) {
      return channels < 16 ? 0 : n * ((channels + 15) / 16 * 16) * h * w * 4;
    };
    if (op == "conv2d_fwd" || op == "conv2d_bwd_data" ||
        op == "conv2d_bwd_weights")
      return staged(get("n"), get("c"), get("h"), get("w")) +
             staged(get("n"), get("o"), get("oh"), get("ow"));
    if (op == "max_pool2d_bwd")
      return get("n") * get("c") * get("oh") * get("ow") * (4 + 1);
    return 0;
  }

  json::Object toJson(bool device) {
    for (const auto &e : entryScratch)
      scratch = std::max(scratch, e.getValue());
    for (const auto &e : entryHeld)
      held = std::max(held, e.getValue());
    if (device) {
      kernelCaches = 0;
      kernelArena = 0;
      // A GPU session keeps two input sets, so that one is written while
      // the step before still reads the other.
      inputs *= 2;
    }
    int64_t total = parameters + state + accumulators + buffers + counters +
                    inputs + outputs + scratch + kernelCaches + kernelArena;
    json::Object entries;
    for (const auto &e : entryScratch) {
      json::Object entry{{"scratch", e.getValue()}};
      if (auto it = entryHeld.find(e.getKey()); it != entryHeld.end())
        entry["held_activations"] = it->getValue();
      if (DictionaryAttr r = entryRemat.lookup(e.getKey())) {
        auto get = [&](StringRef key) {
          auto v = r.getAs<IntegerAttr>(key);
          return v ? v.getInt() : 0;
        };
        entry["recomputed"] =
            json::Object{{"values", get("values")},
                         {"bytes", get("bytes")},
                         {"flops", get("flops")},
                         {"forward_flops", get("forward_flops")}};
      }
      entries[e.getKey()] = std::move(entry);
    }
    return json::Object{{"space", device ? "device" : "host"},
                        {"parameters", parameters},
                        {"optimizer_state", state},
                        {"accumulators", accumulators},
                        {"buffers", buffers},
                        {"counters", counters},
                        {"inputs", inputs},
                        {"outputs", outputs},
                        {"scratch", scratch},
                        {"held_activations", held},
                        {"kernel_caches", kernelCaches},
                        {"kernel_arena", kernelArena},
                        {"fixed_overhead", device ? 0 : kHostFixedOverhead},
                        {"entries", std::move(entries)},
                        {"total", total}};
  }
};

struct WriteManifestPass
    : mlir::cleave::impl::CleaveWriteManifestBase<WriteManifestPass> {
  using CleaveWriteManifestBase::CleaveWriteManifestBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    json::Object root;
    root["abi_version"] = CLEAVE_KERNEL_ABI_VERSION;
    std::string error;
    FailureOr<CpuTarget> target =
        resolveCpuTarget(targetCpu, targetFeatures, error);
    if (failed(target)) {
      module.emitError(error);
      return signalPassFailure();
    }
    json::Array targetFeatureList;
    SmallVector<Attribute> featureAttrs;
    for (const std::string &f : target->features) {
      targetFeatureList.push_back(f);
      featureAttrs.push_back(StringAttr::get(&getContext(), f));
    }
    root["target"] = json::Object{{"cpu", target->cpu},
                                  {"features", std::move(targetFeatureList)}};
    module->setAttr(
        rt::RtDialect::kTargetAttr,
        DictionaryAttr::get(
            &getContext(),
            {NamedAttribute(StringAttr::get(&getContext(), "cpu"),
                            StringAttr::get(&getContext(), target->cpu)),
             NamedAttribute(StringAttr::get(&getContext(), "features"),
                            ArrayAttr::get(&getContext(), featureAttrs))}));
    // The host code stays CPU code (the target above); with cuda every
    // buffer is device memory and the kernels are embedded for these GPUs.
    if (device == rt::Device::cuda) {
      FailureOr<SmallVector<std::string>> arches =
          parseGpuArches(gpuArches, error);
      if (failed(arches)) {
        module.emitError(error);
        return signalPassFailure();
      }
      root["device"] = rt::stringifyDevice(device).str();
      root["gpu_arches"] = json::Array(*arches);
      if (std::optional<std::string> ptx = ptxGpuArch(*arches))
        root["ptx_arch"] = *ptx;
    }
    // linkSharedObject appends the seal the runtime then requires.
    root["sealed"] = true;
    if (auto m = module->getAttrOfType<DictionaryAttr>(
            train::TrainDialect::kManifestAttr))
      for (NamedAttribute n : m)
        root[n.getName().str()] = toJson(n.getValue());

    std::vector<char> initData;
    json::Array globals;
    MemoryReport memory;
    for (auto g : module.getOps<train::GlobalOp>()) {
      auto entry = global(g, initData);
      if (failed(entry))
        return signalPassFailure();
      globals.push_back(std::move(*entry));
      memory.addGlobal(g);
    }
    root["globals"] = std::move(globals);

    json::Object entries;
    json::Array hypers, inputs;
    llvm::StringSet<> inputNames;
    SmallVector<Attribute> entryNames;
    Type floatType;
    // micro_step first: its inputs come first in the list.
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    std::stable_partition(
        functions.begin(), functions.end(), [](func::FuncOp f) {
          auto e =
              f->getAttrOfType<StringAttr>(train::TrainDialect::kEntryAttr);
          return e && e.getValue() == "micro_step";
        });
    for (auto f : functions) {
      auto abi = f->getAttrOfType<ArrayAttr>(rt::RtDialect::kAbiAttr);
      if (!abi)
        continue;
      auto name = f->getAttrOfType<StringAttr>(train::TrainDialect::kEntryAttr);
      if (!name) {
        f.emitError("has rt.abi but no train.entry");
        return signalPassFailure();
      }
      if (auto remat = f->getAttrOfType<DictionaryAttr>("cleave.remat"))
        memory.entryRemat[name.getValue()] = remat;
      // Argument 0 is the kernel context, not part of the list.
      if (abi.size() + 1 != f.getNumArguments()) {
        f.emitError() << rt::RtDialect::kAbiAttr << " lists " << abi.size()
                      << " arguments, the function takes "
                      << f.getNumArguments() << " besides the kernel context";
        return signalPassFailure();
      }
      json::Array args;
      for (auto [i, a] : llvm::enumerate(abi)) {
        auto d = dyn_cast<DictionaryAttr>(a);
        auto roleAttr = d ? d.getAs<StringAttr>("role") : StringAttr();
        auto type = dyn_cast<MemRefType>(f.getArgumentTypes()[1 + i]);
        if (!roleAttr || !type) {
          f.emitError("argument #")
              << i + 1 << " needs a memref type and a rt.abi entry with "
              << "a role";
          return signalPassFailure();
        }
        json::Object arg;
        // `unsigned` is part of the dtype's name.
        bool isUnsigned = false;
        for (NamedAttribute n : d) {
          if (n.getName() == "unsigned")
            isUnsigned = true;
          else
            arg[n.getName().str()] = toJson(n.getValue());
        }
        StringRef role = roleAttr.getValue();
        if (role == "input" || role == "output") {
          auto dtype = dtypeName(type.getElementType(), isUnsigned);
          if (failed(dtype)) {
            f.emitError("argument #") << i + 1 << " has an element type the "
                                      << "runtime does not support: " << type;
            return signalPassFailure();
          }
          arg["dtype"] = *dtype;
          arg["shape"] = shapeOf(type.getShape());
        }
        if (role == "hyper")
          floatType = type.getElementType();
        // Every entry's inputs, micro_step's first: an input the training
        // step does not read (one used only through its shape) is still one
        // the evaluation reads.
        memory.addArgument(name.getValue(), role, type, d);
        if (role == "input" &&
            inputNames.insert(d.getAs<StringAttr>("name").getValue()).second) {
          json::Object in{{"name", toJson(d.get("name"))},
                          {"dtype", arg["dtype"]},
                          {"shape", arg["shape"]}};
          if (d.getAs<StringAttr>("name").getValue() == "weights")
            in["role"] = "sample_weights";
          if (Attribute bound = d.get("index_bound"))
            in["index_bound"] = toJson(bound);
          if (Attribute ignore = d.get("ignore_index"))
            in["ignore_index"] = toJson(ignore);
          inputs.push_back(std::move(in));
        }
        if (name.getValue() == "apply_step" && role == "hyper") {
          // A session starts from the default, so the runtime requires one.
          if (!d.get("default")) {
            f.emitError("argument #")
                << i + 1 << " (hyperparameter " << d.get("name")
                << ") has no default; set " << train::TrainDialect::kDefaultAttr
                << " on the step function's argument";
            return signalPassFailure();
          }
          hypers.push_back(json::Object{{"name", toJson(d.get("name"))},
                                        {"default", toJson(d.get("default"))}});
        }
        args.push_back(std::move(arg));
      }
      entries[name.str()] = json::Object{{"args", std::move(args)}};
      entryNames.push_back(f.getSymNameAttr());
    }
    root["entries"] = std::move(entries);
    root["hyperparameters"] = std::move(hypers);
    // The first input's batch dimension; a rank-0 first input has none and
    // leaves the runtime's default. A forward-only model without data
    // inputs has the micro-batch it was specialised to.
    if (!inputs.empty()) {
      if (json::Array *shape = inputs.front().getAsObject()->getArray("shape");
          shape && !shape->empty())
        root["micro_batch"] = shape->front();
    } else if (auto batch = module->getAttrOfType<IntegerAttr>(
                   train::TrainDialect::kMicroBatchAttr)) {
      root["micro_batch"] = batch.getInt();
    }
    root["inputs"] = std::move(inputs);
    if (floatType)
      root["dtype"] = *dtypeName(floatType);
    if (auto kernels =
            module->getAttrOfType<ArrayAttr>(rt::RtDialect::kKernelsAttr)) {
      root["kernels"] = toJson(kernels);
      // What the kernels multiply in, for tools and readers; the runtime
      // goes by each kernel's own `math`.
      bool bf16 = llvm::any_of(kernels, [](Attribute k) {
        auto math = cast<DictionaryAttr>(k).getAs<StringAttr>("math");
        return math && math.getValue() == "bf16";
      });
      root["precision"] = bf16 ? "bf16" : "f32";
      memory.addKernels(kernels);
    } else
      root["kernels"] = json::Array();
    root["memory"] = memory.toJson(device == rt::Device::cuda);

    std::string text;
    llvm::raw_string_ostream os(text);
    os << json::Value(std::move(root));
#ifdef CLEAVE_CHECK_MANIFEST
    // Whatever the runtime would refuse to load is refused here, with its
    // message, rather than when the artifact is run.
    std::string refusal;
    if (!::cleave::rt::checkManifest(text, refusal)) {
      module.emitError("the runtime would refuse this artifact: ") << refusal;
      return signalPassFailure();
    }
    // The schema (artifact_schema.def) describes every key written here, in
    // the form written: read by it and written back, the text is the same.
    // A key without a row fails every compile until the row exists.
    if (std::string why; failed(checkSchemaRoundTrip(text, why))) {
      module.emitError("the manifest schema (runtime/include/cleave/"
                       "artifact_schema.def) does not describe this "
                       "manifest: ")
          << why;
      return signalPassFailure();
    }
#endif
    Builder b(&getContext());
    module->setAttr(rt::RtDialect::kManifestJsonAttr, b.getStringAttr(text));
    module->setAttr(rt::RtDialect::kEntriesAttr, b.getArrayAttr(entryNames));
    if (!initData.empty()) {
      auto type = RankedTensorType::get({(int64_t)initData.size()},
                                        b.getIntegerType(8));
      module->setAttr(rt::RtDialect::kInitDataAttr,
                      DenseElementsAttr::getFromRawBuffer(type, initData));
    }
    for (auto g : llvm::make_early_inc_range(module.getOps<train::GlobalOp>()))
      g.erase();
    module->removeAttr(rt::RtDialect::kKernelsAttr);
    module->removeAttr(train::TrainDialect::kManifestAttr);
    module->removeAttr(train::TrainDialect::kMicroBatchAttr);
  }

  FailureOr<json::Object> global(train::GlobalOp g,
                                 std::vector<char> &initData) {
    RankedTensorType type = g.getTensorType();
    auto dtype = dtypeName(type.getElementType());
    if (failed(dtype))
      return g.emitOpError("has an element type the runtime does not support");
    json::Object out{{"name", g.getSymName().str()},
                     {"kind", train::stringifyGlobalKind(g.getKind()).str()},
                     {"dtype", *dtype},
                     {"shape", shapeOf(type.getShape())}};
    if (auto of = g.getOfAttr())
      out["of"] = of.getValue().str();
    json::Object init;
    Attribute value = g.getInitialValueAttr();
    if (!value) {
      init["kind"] = "zeros";
    } else if (auto i = dyn_cast<train::InitializerAttr>(value)) {
      init["kind"] = train::stringifyInitKind(i.getKind()).str();
      switch (i.getKind()) {
      case train::InitKind::constant:
        init["value"] = i.getParam(0);
        break;
      case train::InitKind::uniform:
        init["lo"] = i.getParam(0);
        init["hi"] = i.getParam(1);
        break;
      case train::InitKind::normal:
        init["mean"] = i.getParam(0);
        init["std"] = i.getParam(1);
        break;
      case train::InitKind::fan_in_uniform:
        init["fan_in"] = i.getParam(0);
        break;
      default:
        break;
      }
    } else if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
      // Splats are stored expanded: the runtime copies bytes verbatim.
      size_t offset = (initData.size() + 63) / 64 * 64;
      initData.resize(offset);
      int64_t eltBytes = type.getElementTypeBitWidth() / 8;
      if (dense.isSplat()) {
        ArrayRef<char> one = dense.getRawData();
        for (int64_t k = 0; k < type.getNumElements(); ++k)
          initData.insert(initData.end(), one.begin(), one.begin() + eltBytes);
      } else {
        ArrayRef<char> raw = dense.getRawData();
        initData.insert(initData.end(), raw.begin(), raw.end());
      }
      init["kind"] = "data";
      init["offset"] = (int64_t)offset;
      init["bytes"] = type.getNumElements() * eltBytes;
    } else {
      return g.emitOpError("has an initial value the artifact cannot hold");
    }
    out["init"] = std::move(init);
    return out;
  }
};

} // namespace

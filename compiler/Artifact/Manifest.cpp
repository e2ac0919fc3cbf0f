//===- Manifest.cpp - The artifact's manifest -----------------------------===//
//
// Everything the runtime needs to drive an artifact, gathered from the
// module while it still says it: globals and their initialisers, the entry
// points' argument lists, the kernel table and the split's report.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/GpuTarget.h"
#include "compiler/Artifact/Passes.h"
#include "compiler/Artifact/SchemaAttr.h"
#include "compiler/Artifact/SchemaDict.h"
#include "compiler/Artifact/SchemaWrite.h"
#include "compiler/Artifact/Target.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainOps.h"
#include "runtime/include/cleave/kernel_abi.h"
#include "runtime/src/ManifestCheck.h"
#include "runtime/src/kernels/ConvTaps.h"
#include "runtime/src/schema/SchemaRead.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <map>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEWRITEMANIFEST
#include "compiler/Artifact/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace abi = ::cleave::abi;

namespace {

/// The manifest's element type for `t`; `isUnsigned` reads a signless
/// integer type as unsigned.
FailureOr<abi::DType> dtypeOf(Type t, bool isUnsigned = false) {
  if (t.isF32())
    return abi::DType::f32;
  if (t.isF64())
    return abi::DType::f64;
  if (t.isF16())
    return abi::DType::f16;
  if (t.isBF16())
    return abi::DType::bf16;
  if (auto i = dyn_cast<IntegerType>(t)) {
    unsigned width = i.getWidth();
    // No u64: nothing in nn computes with unsigned 64-bit integers.
    if (width == 8 || width == 16 || width == 32 ||
        (width == 64 && !isUnsigned))
      if (std::optional<abi::DType> d = abi::parse<abi::DType>(
              (isUnsigned ? "u" : "i") + std::to_string(width)))
        return *d;
  }
  return failure();
}

std::vector<int64_t> shapeOf(ArrayRef<int64_t> shape) {
  return std::vector<int64_t>(shape.begin(), shape.end());
}

#ifdef CLEAVE_CHECK_MANIFEST
/// Reads `text` with the schema's reader and writes it back with its
/// writer; fails, saying where, unless that gives `text` again.
LogicalResult checkSchemaRoundTrip(const std::string &text, std::string &why) {
  abi::Manifest manifest;
  if (!abi::readManifestText(text, manifest, why))
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
        "' (the reader and the writer disagree)";
  return failure();
}
#endif

/// A kernel's size field, 1 where its op has none.
int64_t orOne(int64_t v) { return v; }
int64_t orOne(const std::optional<int64_t> &v) { return v.value_or(1); }

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

  void addArgument(StringRef entry, const abi::Arg &arg, MemRefType type) {
    if (arg.role == abi::ArgRole::input &&
        inputNames.insert(arg.name.value_or("")).second)
      inputs += bytesOf(type);
    else if (arg.role == abi::ArgRole::output)
      outputs += bytesOf(type);
    else if (arg.role == abi::ArgRole::scratch) {
      // The runtime aligns each area to 64 bytes.
      if (arg.bytes)
        entryScratch[entry] += (*arg.bytes + 63) / 64 * 64;
      if (arg.heldBytes)
        entryHeld[entry] += *arg.heldBytes;
    }
  }

  /// The weight copies and gradient sums of the CPU's convolutions (the
  /// layout cache): a copy of each convolution weight per layout the
  /// micro-step's kernels read it in (forward, and backward-data, which
  /// oneDNN blocks differently), and one of each weight gradient it writes.
  ///
  /// A bf16 matmul's parameter operand is a bf16 copy in the parameter's
  /// own layout, shared by the GEMMs that read it transposed (forward) and
  /// as it is (backward-data). The rows name no buffer, so the copies of
  /// each stored shape are counted as the larger of its transposed and its
  /// plain readers among the micro-step GEMMs whose `b` is one matrix shared
  /// by the batch and not the weight-gradient GEMM's (`trans_a`), which is
  /// where parameters are read.
  ///
  /// The kernels' arena (runtime/src/kernels/Kernel.h), estimated: one
  /// buffer the size of the largest single kernel's transient need, shared
  /// by every kernel of the session. A convolution stages each activation
  /// operand (source, destination, or their gradients) of 16 channels or
  /// more into oneDNN's blocked layout, its channels padded to a multiple of
  /// 16 (narrower ones stay plain, as oneDNN keeps a first layer's input); a
  /// max-pooling gradient recomputes the forward pass's output and its
  /// workspace (one byte per output element); a bf16 GEMM stages bf16
  /// copies of its operands but a parameter, which the layout cache holds,
  /// and those stored in bf16, which it reads as they are.
  /// Primitive scratchpads are left out. Slots that are reserved but never
  /// written are not counted: their pages are never resident.
  void addKernels(const std::vector<abi::Kernel> &kernels) {
    // bf16 GEMM weights by their layout in memory ([rows, columns] of B as
    // stored): how many GEMMs read such a B transposed and how many as it
    // is. A weight's forward and backward-data GEMMs read it in the two
    // orientations and share one copy (runtime/src/kernels/Matmul.cpp).
    std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>>
        bf16Weights;
    for (const abi::Kernel &k : kernels) {
      const bool bf16 = k.math == abi::Math::bf16;
      // A parameter operand: one matrix shared by the batch, not the
      // weight-gradient GEMM's, and not an activation stored in bf16.
      const bool weightB = !k.transA.value_or(false) &&
                           !k.bBatched.value_or(false) &&
                           k.bType != abi::Storage::bf16;
      kernelArena = std::max(kernelArena, arenaNeed(k, bf16 && weightB));
      if (k.entry != "micro_step")
        continue;
      if (k.op == abi::KernelOp::matmul && bf16 && weightB) {
        const bool transB = k.transB.value_or(false);
        std::pair<int64_t, int64_t> &readers =
            bf16Weights[transB ? std::make_pair(orOne(k.n), orOne(k.k))
                               : std::make_pair(orOne(k.k), orOne(k.n))];
        ++(transB ? readers.first : readers.second);
        continue;
      }
      if (k.op != abi::KernelOp::conv2d_fwd &&
          k.op != abi::KernelOp::conv2d_bwd_data &&
          k.op != abi::KernelOp::conv2d_bwd_weights)
        continue;
      kernelCaches += orOne(k.o) *
                      (orOne(k.c) / std::max<int64_t>(1, orOne(k.groups))) *
                      cachedTaps(k) * 4;
    }
    for (const auto &[shape, readers] : bf16Weights)
      kernelCaches += std::max(readers.first, readers.second) * shape.first *
                      shape.second * 2;
  }

  /// The taps of a convolution's weights that its cached copy or partial
  /// sum holds: those some output reads the input through (the CPU kernel
  /// crops the others, runtime/src/kernels/ConvTaps.h).
  static int64_t cachedTaps(const abi::Kernel &k) {
    const std::vector<int64_t> strides = k.strides.value_or(
                                   std::vector<int64_t>{1, 1}),
                               dilations = k.dilations.value_or(
                                   std::vector<int64_t>{1, 1}),
                               padding = k.padding.value_or(
                                   std::vector<int64_t>{0, 0, 0, 0});
    const int64_t in[2] = {orOne(k.h), orOne(k.w)},
                  out[2] = {orOne(k.oh), orOne(k.ow)},
                  taps[2] = {orOne(k.kh), orOne(k.kw)};
    int64_t kept = 1;
    for (int d = 0; d < 2; ++d)
      kept *= ::cleave::rt::liveTaps(in[d], out[d], taps[d], strides[d],
                                     padding[d], padding[d + 2], dilations[d])
                  .size();
    return kept;
  }

  /// One kernel's estimated transient need (addKernels).
  /// `cachedB`: a bf16 GEMM's `b` is the parameter the layout cache holds,
  /// so its staging slot is never touched (and never resident).
  static int64_t arenaNeed(const abi::Kernel &k, bool cachedB) {
    auto get = [](const auto &v) { return orOne(v); };
    auto staged = [](int64_t n, int64_t channels, int64_t h, int64_t w) {
      return channels < 16 ? 0 : n * ((channels + 15) / 16 * 16) * h * w * 4;
    };
    switch (k.op) {
    case abi::KernelOp::matmul: {
      if (k.math != abi::Math::bf16)
        return 0;
      const bool stagedA = k.aType != abi::Storage::bf16;
      const bool stagedB = !cachedB && k.bType != abi::Storage::bf16;
      return get(k.batch) *
             ((stagedA ? get(k.m) * get(k.k) : 0) +
              (stagedB ? get(k.k) * get(k.n) : 0)) *
             2;
    }
    case abi::KernelOp::conv2d_fwd:
    case abi::KernelOp::conv2d_bwd_data:
    case abi::KernelOp::conv2d_bwd_weights:
      return staged(get(k.n), get(k.c), get(k.h), get(k.w)) +
             staged(get(k.n), get(k.o), get(k.oh), get(k.ow));
    case abi::KernelOp::max_pool2d_bwd:
      return get(k.n) * get(k.c) * get(k.oh) * get(k.ow) * (4 + 1);
    default:
      return 0;
    }
  }

  abi::Memory report(bool device) {
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
    abi::Memory m;
    m.space = device ? abi::MemorySpace::device : abi::MemorySpace::host;
    m.parameters = parameters;
    m.optimizerState = state;
    m.accumulators = accumulators;
    m.buffers = buffers;
    m.counters = counters;
    m.inputs = inputs;
    m.outputs = outputs;
    m.scratch = scratch;
    m.heldActivations = held;
    m.kernelCaches = kernelCaches;
    m.kernelArena = kernelArena;
    m.fixedOverhead = device ? 0 : kHostFixedOverhead;
    m.total = parameters + state + accumulators + buffers + counters + inputs +
              outputs + scratch + kernelCaches + kernelArena;
    m.entries.emplace();
    for (const auto &e : entryScratch) {
      abi::MemoryEntry entry;
      entry.scratch = e.getValue();
      if (auto it = entryHeld.find(e.getKey()); it != entryHeld.end())
        entry.heldActivations = it->getValue();
      if (DictionaryAttr r = entryRemat.lookup(e.getKey())) {
        auto get = [&](StringRef key) {
          auto v = r.getAs<IntegerAttr>(key);
          return v ? v.getInt() : 0;
        };
        entry.recomputed = abi::Recomputed{get("values"), get("bytes"),
                                           get("flops"), get("forward_flops")};
      }
      m.entries->emplace_back(e.getKey().str(), std::move(entry));
    }
    return m;
  }
};

/// The kernel table `rt.kernels` (LowerRuntimeCallsPass) as the schema's
/// structs; a key without a row, or a field the kernel's op does not take,
/// is the compiler's fault and is reported here.
FailureOr<std::vector<abi::Kernel>> readKernelTable(ModuleOp module) {
  std::vector<abi::Kernel> kernels;
  auto table = module->getAttrOfType<ArrayAttr>(rt::RtDialect::kKernelsAttr);
  if (!table)
    return kernels;
  for (auto [i, a] : llvm::enumerate(table)) {
    abi::DictFault fault;
    if (!abi::fromDict(cast<DictionaryAttr>(a), kernels.emplace_back(), fault))
      return module.emitError("kernel ")
             << i << " of '" << rt::RtDialect::kKernelsAttr
             << "': " << fault.message();
  }
  return kernels;
}

struct WriteManifestPass
    : mlir::cleave::impl::CleaveWriteManifestBase<WriteManifestPass> {
  using CleaveWriteManifestBase::CleaveWriteManifestBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    abi::Manifest doc;
    // What earlier passes recorded (its verifier took only Carried rows).
    if (auto carried = module->getAttrOfType<DictionaryAttr>(
            train::TrainDialect::kManifestAttr)) {
      abi::DictFault fault;
      if (!abi::fromDict(carried, doc, fault,
                         {/*carriedOnly=*/true, /*requireAll=*/false})) {
        module.emitError("'")
            << train::TrainDialect::kManifestAttr << "': " << fault.message();
        return signalPassFailure();
      }
    }
    doc.abiVersion = CLEAVE_KERNEL_ABI_VERSION;
    std::string error;
    FailureOr<CpuTarget> target =
        resolveCpuTarget(targetCpu, targetFeatures, error);
    if (failed(target)) {
      module.emitError(error);
      return signalPassFailure();
    }
    doc.target = abi::Target{target->cpu, target->features};
    SmallVector<Attribute> featureAttrs;
    for (const std::string &f : target->features)
      featureAttrs.push_back(StringAttr::get(&getContext(), f));
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
      doc.device = toWire(rt::Device(device));
      doc.gpuArches = std::vector<std::string>(arches->begin(), arches->end());
      doc.ptxArch = ptxGpuArch(*arches);
    }
    // linkSharedObject appends the seal the runtime then requires.
    doc.sealed = true;

    std::vector<char> initData;
    MemoryReport memory;
    for (auto g : module.getOps<train::GlobalOp>()) {
      FailureOr<abi::Global> global = globalOf(g, initData);
      if (failed(global))
        return signalPassFailure();
      doc.globals.push_back(std::move(*global));
      memory.addGlobal(g);
    }

    if (failed(addEntries(module, doc, memory)))
      return signalPassFailure();
    // The first input's batch dimension; a rank-0 first input has none and
    // leaves the runtime's default. A forward-only model without data
    // inputs has the micro-batch it was specialised to.
    if (!doc.inputs->empty()) {
      if (!doc.inputs->front().shape.empty())
        doc.microBatch = doc.inputs->front().shape.front();
    } else if (auto batch = module->getAttrOfType<IntegerAttr>(
                   train::TrainDialect::kMicroBatchAttr)) {
      doc.microBatch = batch.getInt();
    }
    FailureOr<std::vector<abi::Kernel>> kernels = readKernelTable(module);
    if (failed(kernels))
      return signalPassFailure();
    doc.kernels = std::move(*kernels);
    if (module->getAttr(rt::RtDialect::kKernelsAttr)) {
      // What the kernels multiply in, for tools and readers; the runtime
      // goes by each kernel's own `math`.
      bool bf16 = llvm::any_of(doc.kernels, [](const abi::Kernel &k) {
        return k.math == abi::Math::bf16;
      });
      doc.precision = bf16 ? abi::Math::bf16 : abi::Math::f32;
      memory.addKernels(doc.kernels);
      // A CPU model with AMX whose AMX the target lacks (a hypervisor hides
      // it from the host, or --target-features turned it off): on such a
      // machine oneDNN's bf16 kernels run on AVX512-BF16, which these cores
      // issue at half the rate of f32 FMAs (mixed-precision.md, "Which
      // CPUs"). oneDNN chooses its instructions when the artifact runs, so
      // the warning is about machines that lack AMX as the target does.
      if (bf16 && device == rt::Device::cpu &&
          target->lacksFeatureOfItsCpu("amx-bf16"))
        module.emitWarning("precision=bf16 for '")
            << target->cpu
            << "' without AMX (as on a VM that hides it): on a machine "
               "without AMX the bf16 matmuls and convolutions run on "
               "AVX512-BF16, at about half the speed of f32 on these cores, "
               "and the model trains faster with precision=f32; bf16 still "
               "halves the bytes of the activations it stores "
               "(docs/design/mixed-precision.md, \"Which CPUs\")";
    }
    doc.memory = memory.report(device == rt::Device::cuda);

    std::string text = writeManifestText(doc);
#ifdef CLEAVE_CHECK_MANIFEST
    // Whatever the runtime would refuse to load is refused here, with its
    // message, rather than when the artifact is run.
    std::string refusal;
    if (!::cleave::rt::checkManifest(text, refusal)) {
      module.emitError("the runtime would refuse this artifact: ") << refusal;
      return signalPassFailure();
    }
    // The schema's reader gives back what its writer wrote.
    if (std::string why; failed(checkSchemaRoundTrip(text, why))) {
      module.emitError("the manifest schema (runtime/include/cleave/"
                       "artifact_schema.def) does not round-trip this "
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

  /// The entry points' argument lists (their rt.abi attributes), every
  /// entry's inputs (micro_step's first) and apply_step's hyperparameters.
  LogicalResult addEntries(ModuleOp module, abi::Manifest &doc,
                           MemoryReport &memory) {
    doc.inputs.emplace();
    doc.hypers.emplace();
    llvm::StringSet<> inputNames;
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
      auto abiAttr = f->getAttrOfType<ArrayAttr>(rt::RtDialect::kAbiAttr);
      if (!abiAttr)
        continue;
      auto name = f->getAttrOfType<StringAttr>(train::TrainDialect::kEntryAttr);
      if (!name)
        return f.emitError("has rt.abi but no train.entry");
      if (auto remat = f->getAttrOfType<DictionaryAttr>("cleave.remat"))
        memory.entryRemat[name.getValue()] = remat;
      // Argument 0 is the kernel context, not part of the list.
      if (abiAttr.size() + 1 != f.getNumArguments())
        return f.emitError()
               << rt::RtDialect::kAbiAttr << " lists " << abiAttr.size()
               << " arguments, the function takes " << f.getNumArguments()
               << " besides the kernel context";
      abi::Entry entry;
      for (auto [i, a] : llvm::enumerate(abiAttr)) {
        auto d = dyn_cast<DictionaryAttr>(a);
        auto type = dyn_cast<MemRefType>(f.getArgumentTypes()[1 + i]);
        if (!d || !d.getAs<StringAttr>("role") || !type)
          return f.emitError("argument #")
                 << i + 1 << " needs a memref type and a rt.abi entry with "
                 << "a role";
        // `unsigned` is part of the dtype's name and `sample_weights` the
        // input's role (cleave-attach-loss's weights, whatever the model's
        // own inputs are called); the rest are the row's keys, which
        // WriteManifestPass completes (dtype, shape).
        bool isUnsigned = static_cast<bool>(d.get("unsigned"));
        bool isSampleWeights = static_cast<bool>(d.get("sample_weights"));
        NamedAttrList keys(d);
        keys.erase("unsigned");
        keys.erase("sample_weights");
        abi::Arg &arg = entry.args.emplace_back();
        abi::DictFault fault;
        if (!abi::fromDict(keys.getDictionary(&getContext()), arg, fault,
                           {/*carriedOnly=*/false, /*requireAll=*/false}))
          return f.emitError("argument #")
                 << i + 1 << " of " << rt::RtDialect::kAbiAttr << ": "
                 << fault.message();
        if (arg.role == abi::ArgRole::input ||
            arg.role == abi::ArgRole::output) {
          FailureOr<abi::DType> dtype =
              dtypeOf(type.getElementType(), isUnsigned);
          if (failed(dtype))
            return f.emitError("argument #")
                   << i + 1 << " has an element type the "
                   << "runtime does not support: " << type;
          arg.dtype = *dtype;
          arg.shape = shapeOf(type.getShape());
        }
        if (arg.role == abi::ArgRole::hyper)
          floatType = type.getElementType();
        // Every entry's inputs, micro_step's first: an input the training
        // step does not read (one used only through its shape) is still one
        // the evaluation reads.
        memory.addArgument(name.getValue(), arg, type);
        if (arg.role == abi::ArgRole::input &&
            inputNames.insert(*arg.name).second) {
          abi::Input in;
          in.name = *arg.name;
          in.dtype = *arg.dtype;
          in.shape = *arg.shape;
          if (isSampleWeights)
            in.role = abi::InputRole::sample_weights;
          in.indexBound = arg.indexBound;
          in.ignoreIndex = arg.ignoreIndex;
          doc.inputs->push_back(std::move(in));
        }
        if (name.getValue() == "apply_step" &&
            arg.role == abi::ArgRole::hyper) {
          // A session starts from the default, so the runtime requires one.
          if (!arg.defaultValue)
            return f.emitError("argument #")
                   << i + 1 << " (hyperparameter \"" << *arg.name
                   << "\") has no default; set "
                   << train::TrainDialect::kDefaultAttr
                   << " on the step function's argument";
          doc.hypers->push_back(abi::Hyper{*arg.name, *arg.defaultValue});
        }
      }
      doc.entries.emplace_back(name.str(), std::move(entry));
      entryNames.push_back(f.getSymNameAttr());
    }
    if (floatType)
      doc.dtype = *dtypeOf(floatType);
    return success();
  }

  FailureOr<abi::Global> globalOf(train::GlobalOp g,
                                  std::vector<char> &initData) {
    RankedTensorType type = g.getTensorType();
    FailureOr<abi::DType> dtype = dtypeOf(type.getElementType());
    if (failed(dtype))
      return g.emitOpError("has an element type the runtime does not support");
    abi::Global out;
    out.name = g.getSymName().str();
    out.kind = toWire(g.getKind());
    out.dtype = *dtype;
    out.shape = shapeOf(type.getShape());
    if (auto of = g.getOfAttr())
      out.of = of.getValue().str();
    abi::Init &init = out.init;
    Attribute value = g.getInitialValueAttr();
    if (!value) {
      init.kind = abi::InitKind::zeros;
    } else if (auto i = dyn_cast<train::InitializerAttr>(value)) {
      init.kind = toWire(i.getKind());
      switch (i.getKind()) {
      case train::InitKind::constant:
        init.value = i.getParam(0);
        break;
      case train::InitKind::uniform:
        init.lo = i.getParam(0);
        init.hi = i.getParam(1);
        break;
      case train::InitKind::normal:
        init.mean = i.getParam(0);
        init.stddev = i.getParam(1);
        break;
      case train::InitKind::fan_in_uniform:
        init.fanIn = int64_t(i.getParam(0));
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
      init.kind = abi::InitKind::data;
      init.offset = (int64_t)offset;
      init.bytes = type.getNumElements() * eltBytes;
    } else {
      return g.emitOpError("has an initial value the artifact cannot hold");
    }
    return out;
  }

  /// The entry points, in the order addEntries met them.
  SmallVector<Attribute> entryNames;
};

} // namespace

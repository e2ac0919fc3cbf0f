//===- RtOps.cpp - Calls into the Cleave runtime --------------------------===//
//
// The rt dialect: verification of its ops and rt.* attributes, memory
// effects and bufferization of the destination-passing ops that become
// runtime calls.
//
//===----------------------------------------------------------------------===//

#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Common/EnumKeyword.h"

#include "compiler/Artifact/SchemaDict.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::rt;

#include "dialects/Runtime/IR/RtDialect.cpp.inc"
#include "dialects/Runtime/IR/RtEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Runtime/IR/RtAttrs.cpp.inc"

void RtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Runtime/IR/RtOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Runtime/IR/RtAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// rt.* attributes
//===----------------------------------------------------------------------===//

/// One rt.abi entry: a dictionary with a known role and its fields.
static LogicalResult verifyAbiEntry(Operation *op, unsigned i,
                                    Attribute entry) {
  auto emitError = [&]() -> InFlightDiagnostic {
    return op->emitError() << "'" << RtDialect::kAbiAttr << "' entry #" << i
                           << " ";
  };
  auto dict = dyn_cast<DictionaryAttr>(entry);
  if (!dict)
    return emitError() << "must be a dictionary, got " << entry;
  auto role = dict.getAs<StringAttr>("role");
  if (!role)
    return emitError() << "has no string 'role'";
  if (role.getValue() == "scratch") {
    auto bytes = dict.getAs<IntegerAttr>("bytes");
    if (!bytes || bytes.getValue().isNegative())
      return emitError() << "(scratch) needs a non-negative integer 'bytes'";
    return success();
  }
  if (!llvm::is_contained({"input", "hyper", "output", "global"},
                          role.getValue()))
    return emitError() << "has unknown role " << role
                       << "; expected input, hyper, output, global or "
                          "scratch";
  auto name = dict.getAs<StringAttr>("name");
  if (!name || name.empty())
    return emitError() << "(" << role.getValue()
                       << ") needs a non-empty string 'name'";
  return success();
}

LogicalResult RtDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  Attribute value = attr.getValue();
  if (name == kAbiAttr) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << name << "' is a function attribute";
    auto entries = dyn_cast<ArrayAttr>(value);
    if (!entries)
      return op->emitError()
             << "'" << name << "' must be an array, got " << value;
    for (auto [i, entry] : llvm::enumerate(entries))
      if (failed(verifyAbiEntry(op, i, entry)))
        return failure();
    return success();
  }
  if (name != kKernelsAttr && name != kManifestJsonAttr &&
      name != kEntriesAttr && name != kInitDataAttr && name != kTargetAttr)
    return op->emitError() << "unknown attribute '" << name << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << name << "' is a module attribute";
  if (name == kKernelsAttr) {
    auto kernels = dyn_cast<ArrayAttr>(value);
    if (!kernels || !llvm::all_of(kernels, llvm::IsaPred<DictionaryAttr>))
      return op->emitError()
             << "'" << name << "' must be an array of dictionaries, got "
             << value;
    // Each a kernels[] entry of the manifest (artifact_schema.def), which
    // WriteManifestPass copies: a key no row lists, or one the op does not
    // take, is refused where it is made.
    for (auto [i, kernel] : llvm::enumerate(kernels)) {
      ::cleave::abi::Kernel entry;
      ::cleave::abi::DictFault fault;
      if (!::cleave::abi::fromDict(cast<DictionaryAttr>(kernel), entry, fault))
        return op->emitError()
               << "'" << name << "' entry " << i << ": " << fault.message();
    }
    return success();
  }
  if (name == kManifestJsonAttr) {
    auto text = dyn_cast<StringAttr>(value);
    if (!text)
      return op->emitError()
             << "'" << name << "' must be a string, got " << value;
    // The runtime parses it; a broken one must not reach an artifact.
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
    if (!json)
      return op->emitError()
             << "'" << name
             << "' is not JSON: " << llvm::toString(json.takeError());
    if (!json->getAsObject())
      return op->emitError() << "'" << name << "' must be a JSON object";
    return success();
  }
  if (name == kEntriesAttr) {
    auto entries = dyn_cast<ArrayAttr>(value);
    if (!entries || !llvm::all_of(entries, llvm::IsaPred<StringAttr>))
      return op->emitError()
             << "'" << name << "' must be an array of strings, got " << value;
    return success();
  }
  if (name == kTargetAttr) {
    auto target = dyn_cast<DictionaryAttr>(value);
    auto features = target ? target.getAs<ArrayAttr>("features") : nullptr;
    if (!target || !target.getAs<StringAttr>("cpu") || !features ||
        !llvm::all_of(features, llvm::IsaPred<StringAttr>) ||
        target.size() != 2)
      return op->emitError() << "'" << name
                             << "' must be {cpu = \"name\", features = "
                                "[strings]}, got "
                             << value;
    return success();
  }
  auto data = dyn_cast<DenseIntElementsAttr>(value);
  if (!data || !data.getElementType().isInteger(8) ||
      data.getType().getRank() != 1)
    return op->emitError() << "'" << name
                           << "' must be a 1-D tensor of i8 (bytes)";
  return success();
}

//===----------------------------------------------------------------------===//
// rt.kernel
//===----------------------------------------------------------------------===//

bool KernelOp::getFlag(StringRef name) {
  auto attr = getConfig().getAs<BoolAttr>(name);
  return attr && attr.getValue();
}

SmallVector<int64_t> KernelOp::getInts(StringRef name) {
  SmallVector<int64_t> out;
  if (auto arr = getConfig().getAs<DenseI64ArrayAttr>(name))
    out.assign(arr.asArrayRef().begin(), arr.asArrayRef().end());
  return out;
}

bool KernelOp::isStorableInBf16(unsigned input) {
  switch (getKind()) {
  case KernelKind::matmul:
  case KernelKind::conv2d_fwd:
  case KernelKind::conv2d_bwd_data:
  case KernelKind::conv2d_bwd_weights:
    return input < 2;
  case KernelKind::sdpa_fwd:
    return true;
  case KernelKind::sdpa_bwd:
    return input != 4; // lse
  default:
    return false;
  }
}

bool KernelOp::isResultStorableInBf16(unsigned output) {
  switch (getKind()) {
  case KernelKind::conv2d_fwd:
  case KernelKind::conv2d_bwd_data:
  case KernelKind::conv2d_bwd_weights:
  case KernelKind::sdpa_bwd:
    return true;
  case KernelKind::sdpa_fwd:
    return output == 0; // not lse
  default:
    return false;
  }
}

unsigned KernelOp::getNumOutputsOf(KernelKind kind) {
  switch (kind) {
  case KernelKind::sdpa_fwd:
    return 2;
  case KernelKind::sdpa_bwd:
    return 3;
  default:
    return 1;
  }
}

/// The shapes of an attention kernel: q [B, T, D], k [B, S, D], v [B, S,
/// Dv], o [B, T, Dv], lse [B, T], mask [T, S], keep [B, T, S]; a finite
/// non-zero scale, a dropout in [0, 1).
static LogicalResult verifySdpa(KernelOp op) {
  bool fwd = op.getKind() == KernelKind::sdpa_fwd;
  ValueRange ins = op.getInputs(), outs = op.getOutputs();
  // With `dropout`, keep is the last input, after the optional mask.
  auto dropout = op.getConfig().getAs<FloatAttr>("dropout");
  unsigned required = (fwd ? 3 : 6) + (dropout ? 1 : 0);
  if (ins.size() != required && ins.size() != required + 1)
    return op.emitOpError("'")
           << stringifyKernelKind(op.getKind()) << "' takes " << required << "-"
           << required + 1 << " inputs" << (dropout ? " with dropout" : "")
           << ", got " << ins.size();
  if (dropout &&
      !(dropout.getValueAsDouble() >= 0 && dropout.getValueAsDouble() < 1))
    return op.emitOpError("config's 'dropout' must be in [0, 1), got ")
           << dropout.getValueAsDouble();
  auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  for (Value v : llvm::concat<Value>(ins, outs))
    if (!cast<ShapedType>(v.getType()).hasStaticShape())
      return op.emitOpError("attention needs static shapes");
  ArrayRef<int64_t> q = shape(ins[0]), k = shape(ins[1]), v = shape(ins[2]);
  if (q.size() != 3 || k.size() != 3 || v.size() != 3 || k[0] != q[0] ||
      v[0] != q[0] || k[2] != q[2] || v[1] != k[1])
    return op.emitOpError("attention needs q [B, T, D], k [B, S, D] and v "
                          "[B, S, Dv]");
  int64_t b = q[0], t = q[1], s = k[1], dv = v[2];
  auto expect = [&](Value x, ArrayRef<int64_t> want, StringRef name) {
    if (shape(x) == want)
      return success();
    return LogicalResult(op.emitOpError(name)
                         << " must be [" << want << "], got " << x.getType());
  };
  SmallVector<int64_t> o = {b, t, dv}, lse = {b, t}, mask = {t, s},
                       keep = {b, t, s};
  unsigned maskAt = fwd ? 3 : 6;
  if (ins.size() > required && failed(expect(ins[maskAt], mask, "the mask")))
    return failure();
  if (dropout && failed(expect(ins.back(), keep, "keep")))
    return failure();
  if (fwd) {
    if (failed(expect(outs[0], o, "o")) || failed(expect(outs[1], lse, "lse")))
      return failure();
  } else if (failed(expect(ins[3], o, "o")) ||
             failed(expect(ins[4], lse, "lse")) ||
             failed(expect(ins[5], o, "do")) ||
             failed(expect(outs[0], q, "dq")) ||
             failed(expect(outs[1], k, "dk")) ||
             failed(expect(outs[2], v, "dv"))) {
    return failure();
  }
  auto scale = op.getConfig().getAs<FloatAttr>("scale");
  if (!scale || !std::isfinite(scale.getValueAsDouble()) ||
      scale.getValueAsDouble() == 0)
    return op.emitOpError("config needs 'scale', finite and non-zero");
  return success();
}

LogicalResult KernelOp::verify() {
  unsigned outputs = getNumOutputsOf(getKind());
  if (getOutputs().size() != outputs)
    return emitOpError("'")
           << stringifyKernelKind(getKind()) << "' has " << outputs << " output"
           << (outputs == 1 ? "" : "s") << ", got " << getOutputs().size();
  bool tensors = isa<RankedTensorType>(getOutputs()[0].getType());
  if (getResults().size() != (tensors ? outputs : 0u))
    return emitOpError("must have a result per output on tensors and none "
                       "on memrefs");
  for (Value v : getOutputs())
    if (isa<RankedTensorType>(v.getType()) != tensors)
      return emitOpError("mixes tensor and memref operands");
  for (Value v : getInputs())
    if (isa<RankedTensorType>(v.getType()) != tensors)
      return emitOpError("mixes tensor and memref operands");
  // f32, but a multiplied input of a compute-bound kernel may be stored in
  // bf16 (mixed-precision.md): matmul's a and b, a convolution's src,
  // diff_dst and weights (biases stay f32), attention's every input but the
  // log-sum-exp.
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    Type element = cast<ShapedType>(v.getType()).getElementType();
    if (element.isF32() || (element.isBF16() && isStorableInBf16(i)))
      continue;
    return emitOpError("input ")
           << i << " of '" << stringifyKernelKind(getKind()) << "' must be f32"
           << (isStorableInBf16(i) ? " or bf16" : "") << ", got "
           << v.getType();
  }
  // f32, but a convolution's may be bf16 (cuDNN's bf16 result), which no
  // bias, activation or accumulation may follow inside the kernel, and
  // attention's but its log-sum-exp (cuDNN's fused attention).
  for (auto [i, v] : llvm::enumerate(getOutputs())) {
    Type element = cast<ShapedType>(v.getType()).getElementType();
    if (element.isF32())
      continue;
    if (!element.isBF16() || !isResultStorableInBf16(i))
      return emitOpError("output ")
             << i << " must be f32"
             << (isResultStorableInBf16(i) ? " or bf16" : "") << ", got "
             << v.getType();
    auto activation = getConfig().getAs<StringAttr>("activation");
    if (getFlag("accumulate") ||
        (getKind() == KernelKind::conv2d_fwd && getInputs().size() > 2) ||
        (activation && activation.getValue() != "none"))
      return emitOpError("a bf16 output takes no bias, activation or "
                         "accumulate (the sum would be rounded)");
  }

  auto need = [&](unsigned lo, unsigned hi) -> LogicalResult {
    unsigned n = getInputs().size();
    if (n < lo || n > hi)
      return emitOpError("'")
             << stringifyKernelKind(getKind()) << "' takes " << lo
             << (lo == hi ? "" : "-" + std::to_string(hi)) << " inputs, got "
             << n;
    return success();
  };
  auto needInts = [&](StringRef key, size_t size) -> LogicalResult {
    auto arr = getConfig().getAs<DenseI64ArrayAttr>(key);
    if (!arr || arr.size() != (int64_t)size)
      return emitOpError("config needs '")
             << key << "' as an array of " << size << " integers";
    return success();
  };
  switch (getKind()) {
  case KernelKind::matmul:
    return need(2, 3);
  case KernelKind::conv2d_fwd:
  case KernelKind::conv2d_bwd_data:
  case KernelKind::conv2d_bwd_weights:
    if (failed(need(2, getKind() == KernelKind::conv2d_fwd ? 3 : 2)) ||
        failed(needInts("strides", 2)) || failed(needInts("padding", 4)) ||
        failed(needInts("dilations", 2)))
      return failure();
    if (!getConfig().getAs<IntegerAttr>("groups"))
      return emitOpError("config needs 'groups'");
    return success();
  case KernelKind::max_pool2d_fwd:
  case KernelKind::avg_pool2d_fwd:
  case KernelKind::avg_pool2d_bwd:
  case KernelKind::max_pool2d_bwd:
    if (failed(need(getKind() == KernelKind::max_pool2d_bwd ? 2 : 1,
                    getKind() == KernelKind::max_pool2d_bwd ? 2 : 1)))
      return failure();
    return failure(
        failed(needInts("kernel", 2)) || failed(needInts("strides", 2)) ||
        failed(needInts("padding", 4)) || failed(needInts("dilations", 2)));
  case KernelKind::sdpa_fwd:
  case KernelKind::sdpa_bwd:
    return verifySdpa(*this);
  }
  llvm_unreachable("unknown kernel kind");
}

/// Memory effects of a destination-passing op on memrefs: inputs are read,
/// outputs are read (accumulation) and written.
static void
dpsEffects(DestinationStyleOpInterface op,
           SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
               &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (op.isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

void KernelOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  dpsEffects(*this, effects);
}

/// Memory effects of a collective: those of its buffers, plus
/// communication, an effect of its own so that a collective is never dropped
/// or reordered.
static void
collectiveEffects(DestinationStyleOpInterface op,
                  SmallVectorImpl<SideEffects::EffectInstance<
                      MemoryEffects::Effect>> &effects) {
  dpsEffects(op, effects);
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}

void CrossRankReduceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  collectiveEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// ZeRO-1 sharding
//===----------------------------------------------------------------------===//

/// Checks that `inputs` and `outputs` pair up, one by one, as whole tensors
/// and their shards over `ranks` ranks (`shardsAreOutputs` says which side
/// holds the shards) with one element type.
static LogicalResult verifyShardPairs(Operation *op, ValueRange inputs,
                                      ValueRange outputs, int64_t ranks,
                                      bool shardsAreOutputs) {
  if (inputs.empty())
    return op->emitOpError("needs at least one input");
  if (inputs.size() != outputs.size())
    return op->emitOpError("has ")
           << inputs.size() << " inputs and " << outputs.size()
           << " outputs; expected one output per input";
  for (auto [i, in, out] : llvm::enumerate(inputs, outputs)) {
    auto full = cast<ShapedType>((shardsAreOutputs ? in : out).getType());
    auto shard = cast<ShapedType>((shardsAreOutputs ? out : in).getType());
    if (!full.hasStaticShape() || !shard.hasStaticShape())
      return op->emitOpError("operand pair #") << i << " needs static shapes";
    if (full.getElementType() != shard.getElementType() ||
        !full.getElementType().isF32())
      return op->emitOpError("operand pair #")
             << i << " must be f32 on both sides";
    int64_t expected = (full.getNumElements() + ranks - 1) / ranks;
    if (shard.getRank() != 1 || shard.getDimSize(0) != expected)
      return op->emitOpError("operand pair #")
             << i << ": a shard of " << full.getNumElements()
             << " elements over " << ranks << " ranks has " << expected
             << " elements in one dimension, got " << shard;
  }
  for (auto [res, out] : llvm::zip(op->getResults(), outputs))
    if (res.getType() != out.getType())
      return op->emitOpError("results must have the types of the outputs");
  if (op->getNumResults() != 0 && op->getNumResults() != outputs.size())
    return op->emitOpError("has ") << op->getNumResults() << " results for "
                                   << outputs.size() << " outputs";
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return verifyShardPairs(*this, getInputs(), getOutputs(), getRanks(),
                          /*shardsAreOutputs=*/true);
}

LogicalResult AllGatherOp::verify() {
  return verifyShardPairs(*this, getInputs(), getOutputs(), getRanks(),
                          /*shardsAreOutputs=*/false);
}

LogicalResult ShardOp::verify() {
  return verifyShardPairs(*this, getInputs(), getOutputs(), getRanks(),
                          /*shardsAreOutputs=*/true);
}

void ReduceScatterOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  collectiveEffects(*this, effects);
}

void AllGatherOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  collectiveEffects(*this, effects);
}

void ShardOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  dpsEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// Bufferization
//===----------------------------------------------------------------------===//

namespace {
/// Bufferizes an rt op by swapping tensor operands for their buffers; results
/// are the init buffers (destination passing).
template <typename OpTy>
struct RtBufferizableModel
    : bufferization::DstBufferizableOpInterfaceExternalModel<
          RtBufferizableModel<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto dps = cast<DestinationStyleOpInterface>(op);
    if (dps.hasPureBufferSemantics())
      return success();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(op);
    SmallVector<Value> operands, inits;
    for (OpOperand &operand : op->getOpOperands()) {
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, operand.get(), options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
      if (dps.isDpsInit(&operand))
        inits.push_back(*buffer);
    }
    // The same op on buffers has no results.
    OperationState st(op->getLoc(), op->getName(), operands, TypeRange{},
                      op->getAttrs());
    rewriter.create(st);
    bufferization::replaceOpWithBufferizedValues(rewriter, op, inits);
    return success();
  }
};
} // namespace

void mlir::cleave::rt::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, RtDialect *) {
    KernelOp::attachInterface<RtBufferizableModel<KernelOp>>(*ctx);
    CrossRankReduceOp::attachInterface<RtBufferizableModel<CrossRankReduceOp>>(
        *ctx);
    ReduceScatterOp::attachInterface<RtBufferizableModel<ReduceScatterOp>>(
        *ctx);
    AllGatherOp::attachInterface<RtBufferizableModel<AllGatherOp>>(*ctx);
    ShardOp::attachInterface<RtBufferizableModel<ShardOp>>(*ctx);
  });
}

#define GET_OP_CLASSES
#include "dialects/Runtime/IR/RtOps.cpp.inc"

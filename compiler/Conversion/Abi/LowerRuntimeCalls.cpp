//===- LowerRuntimeCalls.cpp - rt ops become calls through the kernel ABI -===//
//
// The only file of the compiler that calls the kernel ABI. It takes the
// names and signatures from runtime/include/cleave/kernel_abi.h, the header
// the runtime's definitions are compiled against, and checks at compile time
// that the calls it builds match them. Every call site gets an id and
// a complete description in the module's kernel table, so that the runtime
// creates each oneDNN primitive once, when a session starts.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/SchemaAttr.h"
#include "compiler/Artifact/SchemaDict.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/Precision/Bf16Rule.h"
#include "runtime/include/cleave/kernel_abi.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include <type_traits>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVELOWERRUNTIMECALLS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
namespace abi = ::cleave::abi;

namespace {

/// A kernel of the ABI: `void fn(void *ctx, int64_t id, float *...)`.
struct AbiFunction {
  StringLiteral name;
  unsigned numPointers; // after (ctx, id)
};

/// The number of tensor pointers a kernel takes, from its declaration; the
/// lowering passes (ctx, id) and then that many pointers.
template <typename Fn> struct KernelPointers;
template <typename... Tensors>
struct KernelPointers<void(void *, int64_t, Tensors...)> {
  static_assert((std::is_pointer_v<Tensors> && ...),
                "a kernel's arguments after (ctx, id) must be pointers");
  static constexpr unsigned value = sizeof...(Tensors);
};

/// The name of a declared function of the ABI (a typo does not compile).
template <typename Fn> constexpr StringLiteral abiName(StringLiteral name) {
  return name;
}
#define CLEAVE_ABI_NAME(fn) abiName<decltype(fn)>(#fn)
#define CLEAVE_ABI_KERNEL(fn)                                                  \
  AbiFunction { CLEAVE_ABI_NAME(fn), KernelPointers<decltype(fn)>::value }

constexpr AbiFunction kMatmul = CLEAVE_ABI_KERNEL(cleave_kernel_matmul);
constexpr AbiFunction kConvFwd = CLEAVE_ABI_KERNEL(cleave_kernel_conv2d_fwd);
constexpr AbiFunction kConvBwdData =
    CLEAVE_ABI_KERNEL(cleave_kernel_conv2d_bwd_data);
constexpr AbiFunction kConvBwdWeights =
    CLEAVE_ABI_KERNEL(cleave_kernel_conv2d_bwd_weights);
constexpr AbiFunction kPoolFwd = CLEAVE_ABI_KERNEL(cleave_kernel_pool_fwd);
constexpr AbiFunction kPoolBwd = CLEAVE_ABI_KERNEL(cleave_kernel_pool_bwd);
constexpr AbiFunction kSdpaFwd = CLEAVE_ABI_KERNEL(cleave_kernel_sdpa_fwd);
constexpr AbiFunction kSdpaBwd = CLEAVE_ABI_KERNEL(cleave_kernel_sdpa_bwd);

// The collectives: `lowerReduce` calls (ctx, i32 kind, i64 count, ptr
// buffers, ptr sizes), `lowerSharding` (ctx, i32 ranks, i64 count, ptr
// inputs, ptr sizes, ptr outputs).
constexpr StringLiteral kCrossRankReduce =
    CLEAVE_ABI_NAME(cleave_cross_rank_reduce);
static_assert(
    std::is_same_v<decltype(cleave_cross_rank_reduce),
                   void(void *, int32_t, int64_t, float **, const int64_t *)>);
using ShardingFn = void(void *, int32_t, int64_t, const float *const *,
                        const int64_t *, float *const *);
constexpr StringLiteral kReduceScatter = CLEAVE_ABI_NAME(cleave_reduce_scatter);
constexpr StringLiteral kAllGather = CLEAVE_ABI_NAME(cleave_all_gather);
constexpr StringLiteral kShard = CLEAVE_ABI_NAME(cleave_shard);
static_assert(std::is_same_v<decltype(cleave_reduce_scatter), ShardingFn> &&
              std::is_same_v<decltype(cleave_all_gather), ShardingFn> &&
              std::is_same_v<decltype(cleave_shard), ShardingFn>);
// `lowerReduce` passes the rt dialect's enum value as the kind.
static_assert(static_cast<int>(rt::ReduceKind::sum) == CLEAVE_REDUCE_SUM &&
              static_cast<int>(rt::ReduceKind::mean) == CLEAVE_REDUCE_MEAN &&
              static_cast<int>(rt::ReduceKind::adasum) == CLEAVE_REDUCE_ADASUM);

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<MemRefType>(v.getType()).getShape();
}

struct LowerRuntimeCallsPass
    : mlir::cleave::impl::CleaveLowerRuntimeCallsBase<LowerRuntimeCallsPass> {
  using CleaveLowerRuntimeCallsBase::CleaveLowerRuntimeCallsBase;

  /// Whether the warning that the convolutions stay f32 was given.
  bool warnedConvolutions = false;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Attribute> table;
    warnedConvolutions = false;
    WalkResult r = module.walk([&](Operation *op) {
      if (auto k = dyn_cast<rt::KernelOp>(op)) {
        if (failed(lowerKernel(k, table)))
          return WalkResult::interrupt();
      } else if (auto c = dyn_cast<rt::CrossRankReduceOp>(op)) {
        if (failed(lowerReduce(c)))
          return WalkResult::interrupt();
      } else if (auto c = dyn_cast<rt::ReduceScatterOp>(op)) {
        if (failed(lowerSharding(c, kReduceScatter, /*shardsAreOutputs=*/true)))
          return WalkResult::interrupt();
      } else if (auto c = dyn_cast<rt::AllGatherOp>(op)) {
        if (failed(lowerSharding(c, kAllGather, /*shardsAreOutputs=*/false)))
          return WalkResult::interrupt();
      } else if (auto c = dyn_cast<rt::ShardOp>(op)) {
        if (failed(lowerSharding(c, kShard, /*shardsAreOutputs=*/true)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    module->setAttr(rt::RtDialect::kKernelsAttr,
                    ArrayAttr::get(&getContext(), table));
  }

  /// Declares (once) an external function of the ABI.
  func::FuncOp declare(StringRef name, TypeRange args) {
    ModuleOp module = getOperation();
    if (auto f = module.lookupSymbol<func::FuncOp>(name))
      return f;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto f = func::FuncOp::create(b, module.getLoc(), name,
                                  b.getFunctionType(args, {}));
    f.setPrivate();
    return f;
  }

  /// The kernel context: the first argument of the enclosing entry point.
  FailureOr<Value> contextOf(Operation *op) {
    auto f = op->getParentOfType<func::FuncOp>();
    if (!f || f.getNumArguments() == 0 ||
        !isa<LLVM::LLVMPointerType>(f.getArgumentTypes()[0]))
      return op->emitOpError("is not inside an entry point taking the kernel "
                             "context; run cleave-lower-entry-abi first");
    return f.getArgument(0);
  }

  /// A raw pointer to the first element of a contiguous buffer.
  Value pointerTo(OpBuilder &b, Location loc, Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    auto [strides, offset] = type.getStridesAndOffset();
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    if (offset != 0) {
      int64_t bytes = offset * type.getElementTypeBitWidth() / 8;
      base = arith::AddIOp::create(
          b, loc, base, arith::ConstantIndexOp::create(b, loc, bytes));
    }
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
  }

  /// Whether the kernel can read the buffer as dense row-major data.
  static bool isDense(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    if (!memref::isStaticShapeAndContiguousRowMajor(type))
      return false;
    auto [strides, offset] = type.getStridesAndOffset();
    return !ShapedType::isDynamic(offset);
  }

  /// Copies a non-dense operand to a fresh dense buffer (after the call for
  /// outputs, before it for inputs and accumulated outputs). linalg.copy
  /// becomes loops; a memref.copy of a strided view would become a call to
  /// MLIR's runner library, which no artifact can resolve.
  Value densify(OpBuilder &b, Location loc, Value memref, bool isOutput,
                bool readsOutput, Operation *call) {
    if (isDense(memref))
      return memref;
    auto type = cast<MemRefType>(memref.getType());
    Value dense = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()));
    if (!isOutput || readsOutput)
      linalg::CopyOp::create(b, loc, memref, dense);
    if (isOutput) {
      OpBuilder after(call->getContext());
      after.setInsertionPointAfter(call);
      linalg::CopyOp::create(after, loc, dense, memref);
    }
    return dense;
  }

  LogicalResult lowerKernel(rt::KernelOp k, SmallVectorImpl<Attribute> &table) {
    if (!k.hasPureBufferSemantics())
      return k.emitOpError("must be bufferized before it becomes a call");
    auto ctx = contextOf(k);
    if (failed(ctx))
      return failure();
    OpBuilder b(k);
    Location loc = k.getLoc();
    int64_t id = table.size();
    abi::Kernel entry;
    entry.id = id;
    entry.op = toWire(k.getKind());
    if (auto f = k->getParentOfType<func::FuncOp>())
      entry.entry = f.getSymName().str();
    auto ints = [&](StringRef name) {
      SmallVector<int64_t> v = k.getInts(name);
      return std::vector<int64_t>(v.begin(), v.end());
    };
    // The fields a windowed op (convolution, pooling) shares: the NCHW
    // source and the output's spatial size, and its window's geometry.
    auto window = [&](ArrayRef<int64_t> src, ArrayRef<int64_t> dst) {
      entry.n = src[0];
      entry.c = src[1];
      entry.h = src[2];
      entry.w = src[3];
      entry.oh = dst[2];
      entry.ow = dst[3];
      entry.strides = ints("strides");
      entry.padding = ints("padding");
      entry.dilations = ints("dilations");
    };
    auto activation = [&]() {
      auto a = k.getConfig().getAs<StringAttr>("activation");
      std::optional<abi::Activation> parsed = abi::parse<abi::Activation>(
          a ? std::string_view(a.getValue()) : std::string_view("none"));
      if (!parsed)
        return LogicalResult(
            k.emitOpError("has activation ")
            << a << "; the kernels apply "
            << abi::quotedOneOf(abi::enumDesc<abi::Activation>()));
      entry.activation = *parsed;
      return success();
    };
    ValueRange ins = k.getInputs();
    Value out = k.getOutputs()[0];
    bool accumulate = k.getFlag("accumulate");
    AbiFunction fn = kMatmul;
    SmallVector<Value> operands; // memrefs or null, in ABI order

    switch (k.getKind()) {
    case rt::KernelKind::matmul: {
      bool ta = k.getFlag("trans_a"), tb = k.getFlag("trans_b");
      ArrayRef<int64_t> a = shapeOf(ins[0]), bs = shapeOf(ins[1]),
                        c = shapeOf(out);
      bool batched = c.size() == 3;
      entry.batch = batched ? c[0] : 1;
      entry.m = c[c.size() - 2];
      entry.n = c.back();
      entry.k = ta ? a[a.size() - 2] : a.back();
      entry.transA = ta;
      entry.transB = tb;
      entry.bBatched = bs.size() == 3;
      entry.bias = ins.size() > 2;
      if (failed(activation()))
        return failure();
      entry.accumulate = accumulate;
      operands = {ins[0], ins[1], ins.size() > 2 ? ins[2] : Value(), out};
      fn = kMatmul;
      break;
    }
    case rt::KernelKind::conv2d_fwd:
    case rt::KernelKind::conv2d_bwd_data:
    case rt::KernelKind::conv2d_bwd_weights: {
      // Recover src / weight / dst shapes from the operands' roles.
      ArrayRef<int64_t> src, wei, dst;
      if (k.getKind() == rt::KernelKind::conv2d_fwd) {
        src = shapeOf(ins[0]), wei = shapeOf(ins[1]), dst = shapeOf(out);
        operands = {ins[0], ins[1], ins.size() > 2 ? ins[2] : Value(), out};
        fn = kConvFwd;
        entry.bias = ins.size() > 2;
        if (failed(activation()))
          return failure();
      } else if (k.getKind() == rt::KernelKind::conv2d_bwd_data) {
        dst = shapeOf(ins[0]), wei = shapeOf(ins[1]), src = shapeOf(out);
        operands = {ins[0], ins[1], out};
        fn = kConvBwdData;
      } else {
        src = shapeOf(ins[0]), dst = shapeOf(ins[1]), wei = shapeOf(out);
        operands = {ins[0], ins[1], out};
        fn = kConvBwdWeights;
        entry.accumulate = accumulate;
      }
      window(src, dst);
      entry.o = wei[0];
      entry.kh = wei[2];
      entry.kw = wei[3];
      entry.groups = k.getConfig().getAs<IntegerAttr>("groups").getInt();
      break;
    }
    case rt::KernelKind::max_pool2d_fwd:
    case rt::KernelKind::avg_pool2d_fwd:
    case rt::KernelKind::max_pool2d_bwd:
    case rt::KernelKind::avg_pool2d_bwd: {
      bool fwd = k.getKind() == rt::KernelKind::max_pool2d_fwd ||
                 k.getKind() == rt::KernelKind::avg_pool2d_fwd;
      ArrayRef<int64_t> src = fwd ? shapeOf(ins[0]) : shapeOf(out);
      ArrayRef<int64_t> dst = fwd ? shapeOf(out) : shapeOf(ins.back());
      if (fwd) {
        operands = {ins[0], out};
        fn = kPoolFwd;
      } else {
        operands = {k.getKind() == rt::KernelKind::max_pool2d_bwd ? ins[0]
                                                                  : Value(),
                    ins.back(), out};
        fn = kPoolBwd;
      }
      window(src, dst);
      entry.kernel = ints("kernel");
      entry.countIncludePad = k.getFlag("count_include_pad");
      break;
    }
    case rt::KernelKind::sdpa_fwd:
    case rt::KernelKind::sdpa_bwd: {
      bool fwd = k.getKind() == rt::KernelKind::sdpa_fwd;
      ArrayRef<int64_t> q = shapeOf(ins[0]), kv = shapeOf(ins[1]),
                        v = shapeOf(ins[2]);
      entry.batch = q[0];
      entry.seqQ = q[1];
      entry.seqKv = kv[1];
      entry.headDim = q[2];
      entry.valueDim = v[2];
      entry.scale = k.getConfig().getAs<FloatAttr>("scale").getValueAsDouble();
      entry.causal = k.getFlag("causal");
      // After the operands: the mask, then keep with dropout (rt.kernel).
      Value keep;
      if (auto dropout = k.getConfig().getAs<FloatAttr>("dropout")) {
        entry.dropout = dropout.getValueAsDouble();
        keep = ins.back();
      }
      unsigned maskAt = fwd ? 3 : 6;
      Value mask = ins.size() > maskAt + (keep ? 1 : 0) ? ins[maskAt] : Value();
      entry.mask = bool(mask);
      ValueRange outs = k.getOutputs();
      if (fwd) {
        operands = {ins[0], ins[1], ins[2], mask, keep, outs[0], outs[1]};
        fn = kSdpaFwd;
      } else {
        operands = {ins[0], ins[1], ins[2],  mask,    keep,   ins[3],
                    ins[4], ins[5], outs[0], outs[1], outs[2]};
        fn = kSdpaBwd;
      }
      break;
    }
    }
    // Which kernels multiply in bf16: Bf16Rule.h.
    bool convolution = fn.name == kConvFwd.name ||
                       fn.name == kConvBwdData.name ||
                       fn.name == kConvBwdWeights.name;
    if (precision == rt::KernelPrecision::bf16 && convolution &&
        !bf16Convolutions) {
      if (!warnedConvolutions)
        k.emitWarning("precision=bf16 leaves the convolutions in f32 "
                      "(bf16-convolutions=false); the matmuls multiply in "
                      "bf16");
      warnedConvolutions = true;
    }
    // Operands stored in bf16 (cleave-store-bf16): the entry says so, and
    // only a kernel that multiplies in bf16 may read or write them.
    auto storage = [](Value v) -> std::optional<abi::Storage> {
      if (!cast<ShapedType>(v.getType()).getElementType().isBF16())
        return std::nullopt;
      return abi::Storage::bf16;
    };
    switch (k.getKind()) {
    case rt::KernelKind::matmul:
      entry.aType = storage(ins[0]);
      entry.bType = storage(ins[1]);
      break;
    case rt::KernelKind::conv2d_fwd:
      entry.srcType = storage(ins[0]);
      entry.weiType = storage(ins[1]);
      entry.dstType = storage(out);
      break;
    case rt::KernelKind::conv2d_bwd_data:
      entry.diffDstType = storage(ins[0]);
      entry.weiType = storage(ins[1]);
      entry.dstType = storage(out);
      break;
    case rt::KernelKind::conv2d_bwd_weights:
      entry.srcType = storage(ins[0]);
      entry.diffDstType = storage(ins[1]);
      entry.dstType = storage(out);
      break;
    case rt::KernelKind::sdpa_fwd:
    case rt::KernelKind::sdpa_bwd:
      // One storage for every tensor but lse (cuDNN's fused attention), so
      // any of them says it; the check below requires all to agree.
      entry.ioType = storage(ins[0]);
      break;
    default:
      break;
    }
    if (fn.name == kSdpaFwd.name || fn.name == kSdpaBwd.name) {
      // The kernel multiplies in the type it stores, every tensor that may
      // be bf16 (all but the log-sum-exp: rt.kernel's rule) alike.
      const bool bf16 = bool(entry.ioType);
      auto mixed = [&](ValueRange values, auto storable) {
        for (auto [i, v] : llvm::enumerate(values))
          if (storable(i) && bool(storage(v)) != bf16)
            return v;
        return Value();
      };
      Value odd = mixed(ins, [&](unsigned i) { return k.isStorableInBf16(i); });
      if (!odd)
        odd = mixed(k.getOutputs(),
                    [&](unsigned i) { return k.isResultStorableInBf16(i); });
      if (odd)
        return k.emitOpError("stores attention's tensors in two types (")
               << odd.getType() << " beside " << ins[0].getType()
               << "); cuDNN's fused attention takes one";
      if (bf16)
        entry.math = toWire(rt::KernelPrecision::bf16);
    }
    const bool stored = entry.aType || entry.bType || entry.srcType ||
                        entry.diffDstType || entry.weiType || entry.dstType;
    // With bf16-convolution-results a convolution is bf16 exactly where its
    // result is, and then throughout (cuDNN's bf16 tensors).
    bool bf16 = precision == rt::KernelPrecision::bf16 &&
                multipliesInBf16(k, bf16Convolutions, bf16MinMatmulK) &&
                (!convolution || !bf16ConvolutionResults || entry.dstType);
    auto everyOperandStored = [&] {
      switch (k.getKind()) {
      case rt::KernelKind::conv2d_fwd:
        return entry.srcType && entry.weiType && entry.dstType;
      case rt::KernelKind::conv2d_bwd_data:
        return entry.diffDstType && entry.weiType && entry.dstType;
      case rt::KernelKind::conv2d_bwd_weights:
        return entry.srcType && entry.diffDstType && entry.dstType;
      default:
        return true;
      }
    };
    if (bf16 && convolution && bf16ConvolutionResults && !everyOperandStored())
      return k.emitOpError("has a bf16 result but an f32 input; with "
                           "bf16-convolution-results every operand of a "
                           "bf16 convolution is bf16 (cleave-store-bf16 "
                           "convolution-results makes them so)");
    if (bf16)
      entry.math = toWire(rt::KernelPrecision::bf16);
    if (stored && !bf16) {
      if (convolution && bf16ConvolutionResults &&
          precision == rt::KernelPrecision::bf16)
        return k.emitOpError("has an operand stored in bf16 but an f32 "
                             "result; with bf16-convolution-results a "
                             "convolution multiplies in bf16 only with its "
                             "result in bf16 too (cleave-store-bf16 "
                             "convolution-results makes it so)");
      return k.emitOpError("has an operand stored in bf16 but multiplies in "
                           "f32 (precision=bf16")
             << (convolution ? " with bf16-convolutions" : "")
             << " makes it multiply in bf16)";
    }
    table.push_back(abi::toDict(b, entry));

    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    SmallVector<Type> argTypes = {ptr, b.getI64Type()};
    argTypes.append(fn.numPointers, ptr);
    func::FuncOp callee = declare(fn.name, argTypes);
    SmallVector<Value> args = {
        *ctx, arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(id))};
    // The call is created first so that output copies can follow it.
    auto call = func::CallOp::create(b, loc, callee, ValueRange{});
    b.setInsertionPoint(call);
    for (Value m : operands) {
      if (!m) {
        args.push_back(LLVM::ZeroOp::create(b, loc, ptr));
        continue;
      }
      bool isOutput = llvm::is_contained(k.getOutputs(), m);
      Value dense = densify(b, loc, m, isOutput, isOutput && accumulate, call);
      args.push_back(pointerTo(b, loc, dense));
    }
    call->setOperands(args);
    k.erase();
    return success();
  }

  /// Stores `values` (i64) into a new stack array and returns a pointer to
  /// it.
  Value i64Array(OpBuilder &b, Location loc, ArrayRef<Value> values) {
    auto type = MemRefType::get({int64_t(values.size())}, b.getI64Type());
    Value array = memref::AllocaOp::create(b, loc, type);
    for (auto [i, v] : llvm::enumerate(values))
      memref::StoreOp::create(
          b, loc, v, array,
          ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    return pointerTo(b, loc, array);
  }

  /// The address of memref `m` as an i64 (an element of a pointer array).
  Value addressAsI64(OpBuilder &b, Location loc, Value m) {
    return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(),
                                    pointerTo(b, loc, m));
  }

  /// The element count of memref `m` as an i64 constant.
  Value numElements(OpBuilder &b, Location loc, Value m) {
    return arith::ConstantOp::create(
        b, loc,
        b.getI64IntegerAttr(cast<MemRefType>(m.getType()).getNumElements()));
  }

  /// Starts lowering the bufferized collective `op` to a call of `fn`, whose
  /// first argument is the kernel context and the rest `argTypes`: returns
  /// the call (operands still to set) and the context; `b` then inserts
  /// before the call.
  FailureOr<std::pair<func::CallOp, Value>>
  beginCollectiveCall(DestinationStyleOpInterface op, OpBuilder &b,
                      StringRef fn, ArrayRef<Type> argTypes) {
    if (!op.hasPureBufferSemantics())
      return op->emitOpError("must be bufferized before it becomes a call");
    auto ctx = contextOf(op);
    if (failed(ctx))
      return failure();
    SmallVector<Type> types = {LLVM::LLVMPointerType::get(b.getContext())};
    llvm::append_range(types, argTypes);
    b.setInsertionPoint(op);
    auto call = func::CallOp::create(b, op.getLoc(), declare(fn, types),
                                     ValueRange{});
    b.setInsertionPoint(call);
    return std::make_pair(call, *ctx);
  }

  /// rt.reduce_scatter, rt.all_gather and rt.shard become
  /// `fn(ctx, ranks, count, inputs, sizes, outputs)`: arrays of `count`
  /// pointers, and the element counts of the whole tensors (the shards'
  /// sizes follow from them and `ranks`).
  template <typename OpTy>
  LogicalResult lowerSharding(OpTy op, StringRef fn, bool shardsAreOutputs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    auto begun = beginCollectiveCall(op, b, fn,
                                     {b.getI32Type(), b.getI64Type(), ptr,
                                      ptr, ptr});
    if (failed(begun))
      return failure();
    auto [call, ctx] = *begun;
    SmallVector<Value> ins, sizes, outs;
    for (auto [in, out] : llvm::zip(op.getInputs(), op.getOutputs())) {
      sizes.push_back(numElements(b, loc, shardsAreOutputs ? in : out));
      ins.push_back(
          addressAsI64(b, loc, densify(b, loc, in, false, false, call)));
      outs.push_back(
          addressAsI64(b, loc, densify(b, loc, out, true, false, call)));
    }
    call->setOperands({ctx,
                       arith::ConstantOp::create(
                           b, loc, b.getI32IntegerAttr(int32_t(op.getRanks()))),
                       arith::ConstantOp::create(
                           b, loc, b.getI64IntegerAttr(op.getInputs().size())),
                       i64Array(b, loc, ins), i64Array(b, loc, sizes),
                       i64Array(b, loc, outs)});
    op.erase();
    return success();
  }

  /// rt.cross_rank_reduce becomes `fn(ctx, kind, count, buffers, sizes)`:
  /// arrays of `count` pointers and element counts, reduced in place.
  LogicalResult lowerReduce(rt::CrossRankReduceOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    auto begun = beginCollectiveCall(op, b, kCrossRankReduce,
                                     {b.getI32Type(), b.getI64Type(), ptr, ptr});
    if (failed(begun))
      return failure();
    auto [call, ctx] = *begun;
    SmallVector<Value> buffers, sizes;
    for (Value m : op.getOutputs()) {
      buffers.push_back(
          addressAsI64(b, loc, densify(b, loc, m, true, true, call)));
      sizes.push_back(numElements(b, loc, m));
    }
    call->setOperands(
        {ctx,
         arith::ConstantOp::create(
             b, loc, b.getI32IntegerAttr(static_cast<int32_t>(op.getKind()))),
         arith::ConstantOp::create(
             b, loc, b.getI64IntegerAttr(op.getOutputs().size())),
         i64Array(b, loc, buffers), i64Array(b, loc, sizes)});
    op.erase();
    return success();
  }
};

} // namespace

//===- NNOps.cpp - nn dialect ops -----------------------------------------===//
//
// Result type inference, verification and folding of the nn ops. Every op
// infers its result type, so the same code checks hand-written IR, builds ops
// in the importers and autodiff, and re-infers types when a batch is
// specialised.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave::nn;

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

bool mlir::cleave::nn::swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t r = perm.size();
  if (r < 2 || perm[r - 1] != r - 2 || perm[r - 2] != r - 1)
    return false;
  for (int64_t i = 0; i < r - 2; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

std::optional<int64_t> mlir::cleave::nn::normalizeAxis(int64_t axis,
                                                       int64_t rank) {
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  return axis;
}

FailureOr<SmallVector<int64_t>>
mlir::cleave::nn::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                                  std::string *why) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a == b || b == 1) {
      out[i] = a;
    } else if (a == 1) {
      out[i] = b;
    } else if (a == kDyn || b == kDyn) {
      out[i] = a == kDyn ? b : a;
    } else {
      if (why)
        *why = "dimension " + std::to_string(i) + " of the broadcast shape: " +
               std::to_string(a) + " vs " + std::to_string(b);
      return failure();
    }
  }
  return out;
}

int64_t mlir::cleave::nn::windowOutputSize(int64_t in, int64_t kernel,
                                           int64_t stride, int64_t padBegin,
                                           int64_t padEnd, int64_t dilation,
                                           bool ceilMode) {
  if (in == kDyn || kernel == kDyn)
    return kDyn;
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // A window must start inside the input or its leading padding (PyTorch).
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (d == kDyn)
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return s;
}

static RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elt) {
  return RankedTensorType::get(shape, elt);
}

static bool dimsCompatible(int64_t a, int64_t b) {
  return a == b || a == kDyn || b == kDyn;
}

static int64_t mulDims(int64_t a, int64_t b) {
  return a == kDyn || b == kDyn ? kDyn : a * b;
}

static LogicalResult sameElementType(std::optional<Location> loc, Type a,
                                     Type b, StringRef what) {
  if (getElementTypeOrSelf(a) != getElementTypeOrSelf(b))
    return emitOptionalError(loc, what, " must have the same element type, got ",
                             getElementTypeOrSelf(a), " and ",
                             getElementTypeOrSelf(b));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBinary(std::optional<Location> loc, Value lhs,
                                 Value rhs, SmallVectorImpl<Type> &types) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (failed(sameElementType(loc, l, r, "operands")))
    return failure();
  std::string why;
  auto shape = broadcastShapes(l.getShape(), r.getShape(), &why);
  if (failed(shape))
    return emitOptionalError(loc, "operand shapes ", shapeStr(l.getShape()),
                             " and ", shapeStr(r.getShape()),
                             " do not broadcast (", why, ")");
  types.push_back(tensorOf(*shape, l.getElementType()));
  return success();
}

#define CLEAVE_BINARY_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> l, \
                                     Adaptor a, SmallVectorImpl<Type> &t) {    \
    return inferBinary(l, a.getLhs(), a.getRhs(), t);                          \
  }
CLEAVE_BINARY_INFER(AddOp)
CLEAVE_BINARY_INFER(SubOp)
CLEAVE_BINARY_INFER(MulOp)
CLEAVE_BINARY_INFER(DivOp)
CLEAVE_BINARY_INFER(MaximumOp)
CLEAVE_BINARY_INFER(MinimumOp)
CLEAVE_BINARY_INFER(PowFOp)
#undef CLEAVE_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  SmallVector<Type, 1> operands;
  if (failed(inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), operands)))
    return failure();
  types.push_back(tensorOf(cast<RankedTensorType>(operands[0]).getShape(),
                           adaptor.getDtype()));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  types.push_back(input.clone(adaptor.getDtype()));
  return success();
}

bool CastOp::isFloatToFloat() {
  return isa<FloatType>(getInput().getType().getElementType()) &&
         isa<FloatType>(getDtype());
}

LogicalResult CastOp::verify() {
  if (getUnsignedInput() &&
      !isa<IntegerType>(getInput().getType().getElementType()))
    return emitOpError("reads its input as unsigned integers, but the input "
                       "is ")
           << getInput().getType();
  return success();
}

/// Whether converting `from` to `to` keeps every value, so that converting
/// back gives the original: a wider integer (either signedness), or a float
/// whose precision and range hold `from`'s.
static bool isExactWidening(Type from, Type to) {
  if (isa<IntegerType>(from) && isa<IntegerType>(to))
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth();
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  if (!f || !t || f == t)
    return false;
  // More precision and at least the exponent range (so also every
  // subnormal): f16 and bf16 in f32, f32 in f64.
  const llvm::fltSemantics &fs = f.getFloatSemantics();
  const llvm::fltSemantics &ts = t.getFloatSemantics();
  return APFloat::semanticsPrecision(ts) >= APFloat::semanticsPrecision(fs) &&
         APFloat::semanticsMinExponent(ts) <=
             APFloat::semanticsMinExponent(fs) &&
         APFloat::semanticsMaxExponent(ts) >= APFloat::semanticsMaxExponent(fs);
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Narrowing back what a cast widened exactly: the frontends' round trip
  // that keeps a narrow type's value in a wider one.
  if (auto widened = getInput().getDefiningOp<CastOp>())
    if (widened.getInput().getType() == getType() &&
        isExactWidening(getType().getElementType(),
                        widened.getType().getElementType()))
      return widened.getInput();
  return {};
}

/// `tensor<4x3xi32> -> tensor<4x3xf32>`: the result type states the target,
/// so `dtype` is not printed but read off it.
static ParseResult parseCastTypes(OpAsmParser &parser, Type &input,
                                  Type &result, TypeAttr &dtype) {
  if (parser.parseType(input) || parser.parseArrow() ||
      parser.parseType(result))
    return failure();
  dtype = TypeAttr::get(getElementTypeOrSelf(result));
  return success();
}

static void printCastTypes(OpAsmPrinter &p, Operation *, Type input,
                           Type result, TypeAttr) {
  p << input << " -> " << result;
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<Type, 1> values;
  if (failed(inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), values)))
    return failure();
  auto v = cast<RankedTensorType>(values[0]);
  auto c = cast<RankedTensorType>(adaptor.getCondition().getType());
  std::string why;
  auto shape = broadcastShapes(c.getShape(), v.getShape(), &why);
  if (failed(shape))
    return emitOptionalError(loc, "condition shape ", shapeStr(c.getShape()),
                             " and operand shape ", shapeStr(v.getShape()),
                             " do not broadcast (", why, ")");
  types.push_back(tensorOf(*shape, v.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto a = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto b = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (failed(sameElementType(loc, a, b, "operands")))
    return failure();
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ",
                             a.getRank(), " and ", b.getRank());
  if (b.getRank() != 2 && b.getRank() != a.getRank())
    return emitOptionalError(
        loc, "rhs must be a matrix or have the rank of lhs (", a.getRank(),
        "), got rank ", b.getRank());
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  int64_t ar = a.getRank(), br = b.getRank();
  int64_t m = adaptor.getTransposeA() ? as[ar - 1] : as[ar - 2];
  int64_t ka = adaptor.getTransposeA() ? as[ar - 2] : as[ar - 1];
  int64_t kb = adaptor.getTransposeB() ? bs[br - 1] : bs[br - 2];
  int64_t n = adaptor.getTransposeB() ? bs[br - 2] : bs[br - 1];
  if (!dimsCompatible(ka, kb))
    return emitOptionalError(loc, "contraction dimensions differ: lhs ",
                             shapeStr(as), " and rhs ", shapeStr(bs),
                             " contract ", ka, " with ", kb);
  SmallVector<int64_t> shape(as.begin(), as.end() - 2);
  if (br == ar)
    for (int64_t i = 0; i < ar - 2; ++i)
      if (!dimsCompatible(as[i], bs[i]))
        return emitOptionalError(loc, "batch dimension ", i, " differs: ",
                                 as[i], " vs ", bs[i]);
  shape.push_back(m);
  shape.push_back(n);
  types.push_back(tensorOf(shape, a.getElementType()));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  auto w = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (failed(sameElementType(loc, x, w, "input and weight")))
    return failure();
  if (x.getRank() < 1)
    return emitOptionalError(loc, "input must have rank >= 1");
  if (w.getRank() != 2)
    return emitOptionalError(loc, "weight must be [out, in], got rank ",
                             w.getRank());
  if (!dimsCompatible(x.getShape().back(), w.getDimSize(1)))
    return emitOptionalError(loc, "input features (", x.getShape().back(),
                             ") do not match weight [out, in] = ",
                             shapeStr(w.getShape()));
  if (Value bias = adaptor.getBias()) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (failed(sameElementType(loc, x, bt, "input and bias")))
      return failure();
    if (bt.getRank() != 1 || !dimsCompatible(bt.getDimSize(0), w.getDimSize(0)))
      return emitOptionalError(loc, "bias must be [", w.getDimSize(0),
                               "], got ", shapeStr(bt.getShape()));
  }
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = w.getDimSize(0);
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> target = adaptor.getShape();
  int64_t known = 1, inferred = -1;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d == -1) {
      if (inferred >= 0)
        return emitOptionalError(loc, "shape has more than one -1 entry");
      inferred = i;
    } else if (d < 0) {
      return emitOptionalError(loc, "shape entries must be >= 0 or -1, got ",
                               d);
    } else {
      known *= d;
    }
  }
  SmallVector<int64_t> shape(target);
  if (!x.hasStaticShape()) {
    if (inferred >= 0)
      shape[inferred] = kDyn;
  } else {
    int64_t count = x.getNumElements();
    if (inferred >= 0) {
      if (known == 0 || count % known != 0)
        return emitOptionalError(loc, "cannot reshape ", shapeStr(x.getShape()),
                                 " into ", shapeStr(target));
      shape[inferred] = count / known;
    } else if (known != count) {
      return emitOptionalError(loc, "cannot reshape ", shapeStr(x.getShape()),
                               " (", count, " elements) into ",
                               shapeStr(target), " (", known, " elements)");
    }
  }
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  // I64Attr accessors return uint64_t: read the axis as signed.
  int64_t given = adaptor.getAxis();
  int64_t axis = given < 0 ? given + x.getRank() : given;
  if (axis < 0 || axis > x.getRank())
    return emitOptionalError(loc, "axis ", given, " out of range [",
                             -x.getRank(), ", ", x.getRank(),
                             "] for rank ", x.getRank());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    int64_t &part = i < axis ? outer : inner;
    part = mulDims(part, x.getDimSize(i));
  }
  types.push_back(tensorOf({outer, inner}, x.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if ((int64_t)perm.size() != x.getRank())
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries for a rank-", x.getRank(), " input");
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return emitOptionalError(loc, "permutation ", shapeStr(perm),
                               " is not a permutation of [0, ", x.getRank(),
                               ")");
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = cast<RankedTensorType>(adaptor.getInputs()[0].getType());
  int64_t given = adaptor.getAxis();
  auto axis = normalizeAxis(given, first.getRank());
  if (!axis)
    return emitOptionalError(loc, "axis ", given, " out of range for rank ",
                             first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(adaptor.getInputs().drop_front())) {
    auto t = cast<RankedTensorType>(v.getType());
    if (failed(sameElementType(loc, first, t, "inputs")))
      return failure();
    if (t.getRank() != first.getRank())
      return emitOptionalError(loc, "input ", i + 1, " has rank ", t.getRank(),
                               ", expected ", first.getRank());
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == *axis) {
        shape[d] = shape[d] == kDyn || t.getDimSize(d) == kDyn
                       ? kDyn
                       : shape[d] + t.getDimSize(d);
      } else if (!dimsCompatible(shape[d], t.getDimSize(d))) {
        return emitOptionalError(loc, "input ", i + 1, " has shape ",
                                 shapeStr(t.getShape()),
                                 ", which differs from ",
                                 shapeStr(first.getShape()),
                                 " outside the concatenation axis");
      }
    }
  }
  types.push_back(tensorOf(shape, first.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> starts = adaptor.getStarts(), sizes = adaptor.getSizes(),
                    strides = adaptor.getStrides();
  int64_t rank = x.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)sizes.size() != rank ||
      (int64_t)strides.size() != rank)
    return emitOptionalError(loc, "starts, sizes and strides need one entry "
                                  "per dimension (",
                             rank, ")");
  for (int64_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || sizes[d] < -1 || strides[d] < 1)
      return emitOptionalError(
          loc, "dimension ", d,
          ": start must be >= 0, size >= 0 or -1 and stride >= 1");
    int64_t dim = x.getDimSize(d);
    if (dim != kDyn && sizes[d] > 0 &&
        starts[d] + (sizes[d] - 1) * strides[d] >= dim)
      return emitOptionalError(loc, "dimension ", d, ": slice [", starts[d],
                               " + ", sizes[d], " x ", strides[d],
                               ") exceeds the size ", dim);
    if (dim != kDyn && sizes[d] == -1 && starts[d] > dim)
      return emitOptionalError(loc, "dimension ", d, ": start ", starts[d],
                               " exceeds the size ", dim);
  }
  types.push_back(
      tensorOf(SliceOp::resultShape(x.getShape(), starts, sizes, strides),
               x.getElementType()));
  return success();
}

SmallVector<int64_t> SliceOp::resultShape(ArrayRef<int64_t> input,
                                          ArrayRef<int64_t> starts,
                                          ArrayRef<int64_t> sizes,
                                          ArrayRef<int64_t> strides) {
  SmallVector<int64_t> shape(sizes);
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (size != -1)
      continue;
    int64_t dim = input[d];
    size = dim == kDyn
               ? kDyn
               : (std::max<int64_t>(dim - starts[d], 0) + strides[d] - 1) /
                     strides[d];
  }
  return shape;
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> starts = adaptor.getStarts(),
                    strides = adaptor.getStrides(), shape = adaptor.getShape();
  int64_t rank = x.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)strides.size() != rank ||
      (int64_t)shape.size() != rank)
    return emitOptionalError(loc, "starts, strides and shape need one entry "
                                  "per dimension (",
                             rank, ")");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = x.getDimSize(d);
    if (starts[d] < 0 || strides[d] < 1 || shape[d] < 0)
      return emitOptionalError(
          loc, "dimension ", d,
          ": start and size must be >= 0 and stride >= 1");
    if (dim != kDyn && dim > 0 && starts[d] + (dim - 1) * strides[d] >= shape[d])
      return emitOptionalError(loc, "dimension ", d, ": ", dim,
                               " elements placed from ", starts[d],
                               " with stride ", strides[d],
                               " do not fit in size ", shape[d]);
  }
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  if ((int64_t)shape.size() < x.getRank())
    return emitOptionalError(loc, "cannot broadcast rank ", x.getRank(),
                             " to rank ", shape.size());
  Value source = adaptor.getBatchSource();
  if (llvm::any_of(shape, [&](int64_t d) { return d < (source ? -1 : 0); }))
    return emitOptionalError(loc, "shape entries must be >= 0",
                             source ? " or -1" : "", ", got ", shapeStr(shape));
  if (source && cast<RankedTensorType>(source.getType()).getRank() < 1)
    return emitOptionalError(loc, "the batch source must have a dimension 0");
  // -1 is the batch size: dimension 0 of the batch source.
  SmallVector<int64_t> resolved(shape);
  for (int64_t &d : resolved)
    if (d == -1)
      d = cast<RankedTensorType>(source.getType()).getDimSize(0);
  shape = resolved;
  int64_t off = shape.size() - x.getRank();
  for (int64_t d = 0; d < x.getRank(); ++d) {
    int64_t in = x.getDimSize(d);
    if (in != 1 && !dimsCompatible(in, shape[off + d]))
      return emitOptionalError(loc, "cannot broadcast ", shapeStr(x.getShape()),
                               " to ", shapeStr(shape));
  }
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Checks `axes` against `rank` and returns the normalised, sorted list
/// (every axis when `axes` is empty).
static FailureOr<SmallVector<int64_t>>
reducedAxes(std::optional<Location> loc, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i)
      out.push_back(i);
    return out;
  }
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return emitOptionalError(loc, "axis ", a, " out of range for rank ",
                               rank);
    if (!seen.insert(*n).second)
      return emitOptionalError(loc, "axis ", a, " listed twice");
    out.push_back(*n);
  }
  llvm::sort(out);
  return out;
}

static SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> axes,
                                         bool keepdims) {
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < (int64_t)shape.size(); ++d) {
    if (llvm::is_contained(axes, d)) {
      if (keepdims)
        out.push_back(1);
    } else {
      out.push_back(shape[d]);
    }
  }
  return out;
}

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(input.getType());
  auto norm = reducedAxes(loc, axes, x.getRank());
  if (failed(norm))
    return failure();
  types.push_back(
      tensorOf(reducedShape(x.getShape(), *norm, keepdims), x.getElementType()));
  return success();
}

#define CLEAVE_REDUCE(OP)                                                      \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> l, \
                                     Adaptor a, SmallVectorImpl<Type> &t) {    \
    return inferReduce(l, a.getInput(), a.getAxes(), a.getKeepdims(), t);      \
  }                                                                            \
  SmallVector<int64_t> OP::getReducedAxes() {                                  \
    return *reducedAxes(std::nullopt, getAxes(),                               \
                        getInput().getType().getRank());                       \
  }
CLEAVE_REDUCE(ReduceSumOp)
CLEAVE_REDUCE(ReduceMeanOp)
CLEAVE_REDUCE(ReduceMaxOp)
#undef CLEAVE_REDUCE

SmallVector<int64_t> ReduceMaxGradOp::getReducedAxes() {
  return *reducedAxes(std::nullopt, getAxes(), getInput().getType().getRank());
}

LogicalResult ReduceMaxGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  SmallVector<Type> reduced;
  if (failed(inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),
                         adaptor.getKeepdims(), reduced)))
    return failure();
  auto g = cast<RankedTensorType>(adaptor.getGrad().getType());
  auto r = cast<RankedTensorType>(reduced.front());
  if (failed(sameElementType(loc, g, r, "grad and input")))
    return failure();
  if (g.getRank() != r.getRank() ||
      !llvm::all_of(llvm::zip(g.getShape(), r.getShape()), [](auto p) {
        return dimsCompatible(std::get<0>(p), std::get<1>(p));
      }))
    return emitOptionalError(loc, "grad has shape ", shapeStr(g.getShape()),
                             ", expected the reduction's ",
                             shapeStr(r.getShape()));
  types.push_back(adaptor.getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Clamp
//===----------------------------------------------------------------------===//

static LogicalResult verifyClampBounds(Operation *op, APFloat min,
                                       APFloat max) {
  if (min.isNaN() || max.isNaN())
    return op->emitOpError("bounds must not be NaN");
  if (min.compare(max) == APFloat::cmpGreaterThan)
    return op->emitOpError("min ")
           << min.convertToDouble() << " is greater than max "
           << max.convertToDouble();
  return success();
}

LogicalResult ClampOp::verify() {
  return verifyClampBounds(*this, getMin(), getMax());
}

LogicalResult ClampGradOp::verify() {
  return verifyClampBounds(*this, getMin(), getMax());
}

//===----------------------------------------------------------------------===//
// Softmax and losses
//===----------------------------------------------------------------------===//

static LogicalResult verifySoftmaxAxis(Operation *op, int64_t axis,
                                       RankedTensorType type) {
  if (!normalizeAxis(axis, type.getRank()))
    return op->emitOpError("axis ")
           << axis << " out of range for rank " << type.getRank();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getAxis(), getInput().getType());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getAxis(), getInput().getType());
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Checks that the leading dimensions of `shapes` agree pairwise (a dynamic
/// size agrees with any).
static LogicalResult checkBatchDims(std::optional<Location> loc,
                                    ArrayRef<ArrayRef<int64_t>> shapes,
                                    ArrayRef<StringRef> names) {
  for (size_t a = 0; a < shapes.size(); ++a)
    for (size_t b = a + 1; b < shapes.size(); ++b)
      for (auto [i, d] : llvm::enumerate(shapes[b].drop_back(2)))
        if (!dimsCompatible(shapes[a][i], d))
          return emitOptionalError(
              loc, "batch dimension ", i, " differs: ", names[a], " ",
              shapeStr(shapes[a]), ", ", names[b], " ", shapeStr(shapes[b]));
  return success();
}

FailureOr<SmallVector<int64_t>>
mlir::cleave::nn::attentionResultShape(std::optional<Location> loc,
                                       RankedTensorType q, RankedTensorType k,
                                       RankedTensorType v) {
  if (failed(sameElementType(loc, q, k, "query and key")) ||
      failed(sameElementType(loc, q, v, "query and value")))
    return failure();
  int64_t rank = q.getRank();
  if (rank < 2 || k.getRank() != rank || v.getRank() != rank)
    return emitOptionalError(
        loc, "query, key and value must have one rank >= 2, got ", rank, ", ",
        k.getRank(), " and ", v.getRank());
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  if (!dimsCompatible(qs.back(), ks.back()))
    return emitOptionalError(loc, "query ", shapeStr(qs), " and key ",
                             shapeStr(ks), " differ in the head dimension");
  if (!dimsCompatible(ks[rank - 2], vs[rank - 2]))
    return emitOptionalError(loc, "key ", shapeStr(ks), " and value ",
                             shapeStr(vs), " differ in length");
  if (failed(checkBatchDims(loc, {qs, ks, vs}, {"query", "key", "value"})))
    return failure();
  // The query's leading dimensions, as nn.matmul keeps its lhs's: the
  // decomposition's type.
  SmallVector<int64_t> shape(qs.drop_back(2));
  shape.push_back(qs[rank - 2]);
  shape.push_back(vs.back());
  return shape;
}

/// The result type of attention over `query`, `key` and `value`.
static FailureOr<RankedTensorType>
attentionResultType(std::optional<Location> loc, Value query, Value key,
                    Value value) {
  auto q = cast<RankedTensorType>(query.getType());
  FailureOr<SmallVector<int64_t>> shape =
      attentionResultShape(loc, q, cast<RankedTensorType>(key.getType()),
                           cast<RankedTensorType>(value.getType()));
  if (failed(shape))
    return failure();
  return tensorOf(*shape, q.getElementType());
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> result = attentionResultType(
      loc, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
  if (failed(result))
    return failure();
  types.push_back(*result);
  return success();
}

LogicalResult mlir::cleave::nn::verifyAttentionMask(
    ArrayRef<int64_t> scores, Type elementType, RankedTensorType mask,
    function_ref<InFlightDiagnostic()> emitError) {
  auto fail = [&]() -> InFlightDiagnostic {
    return emitError ? emitError() : InFlightDiagnostic();
  };
  if (mask.getElementType() != elementType)
    return fail() << "mask must have the element type of query, got "
                  << mask.getElementType();
  ArrayRef<int64_t> ms = mask.getShape();
  bool broadcasts = ms.size() <= scores.size();
  for (size_t i = 0; broadcasts && i < ms.size(); ++i) {
    int64_t d = scores[scores.size() - ms.size() + i];
    broadcasts = ms[i] == 1 || dimsCompatible(ms[i], d);
  }
  if (!broadcasts)
    return fail() << "mask " << shapeStr(ms)
                  << " does not broadcast to the scores " << shapeStr(scores);
  // Added to the scores, a static size would make theirs static too.
  for (size_t i = 0; i < ms.size(); ++i) {
    size_t at = scores.size() - ms.size() + i;
    if (scores[at] == kDyn && ms[i] != kDyn && ms[i] != 1)
      return fail() << "mask " << shapeStr(ms) << " fixes dimension " << at
                    << " of the scores " << shapeStr(scores)
                    << ", which the query and key leave dynamic";
  }
  return success();
}

SmallVector<int64_t> AttentionOp::getScoresShape() {
  SmallVector<int64_t> shape(getType().getShape().drop_back());
  shape.push_back(getKey().getType().getShape().drop_back().back());
  return shape;
}

/// The scores' shape of attention over `query` ([..., T, D]) and `key`
/// ([..., S, D]): `[..., T, S]`.
static SmallVector<int64_t> scoresShape(Value query, Value key) {
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(query.getType()).getShape().drop_back());
  shape.push_back(
      cast<RankedTensorType>(key.getType()).getShape().drop_back().back());
  return shape;
}

/// The checks of nn.attention and its fused forms: a finite non-zero scale,
/// static lengths for `causal`, a mask that broadcasts to the scores.
static LogicalResult
verifyAttention(function_ref<InFlightDiagnostic()> emitError,
                std::optional<double> scale, bool scaleIsDivisor, bool causal,
                ArrayRef<int64_t> scores, Type elementType, Value mask) {
  if (scale) {
    if (!std::isfinite(*scale) || *scale == 0)
      return emitError() << "scale must be finite and non-zero, got " << *scale;
  } else if (scaleIsDivisor) {
    return emitError() << "scale_is_divisor needs a scale";
  }
  int64_t t = scores[scores.size() - 2], s = scores.back();
  if (causal && (t == kDyn || s == kDyn))
    return emitError() << "a causal mask needs static query and key lengths, "
                          "got scores "
                       << shapeStr(scores);
  if (mask)
    return verifyAttentionMask(
        scores, elementType, cast<RankedTensorType>(mask.getType()), emitError);
  return success();
}

/// The dropout ratio of nn.attention and its fused forms: in [0, 1).
static LogicalResult
verifyDropoutRatio(function_ref<InFlightDiagnostic()> emitError,
                   const APFloat &ratio) {
  double r = ratio.convertToDouble();
  if (!(r >= 0 && r < 1))
    return emitError() << "dropout_ratio must be in [0, 1), got " << r;
  return success();
}

LogicalResult AttentionOp::verify() {
  std::optional<APFloat> ratio = getDropoutRatio();
  if (static_cast<bool>(getSeed()) != ratio.has_value())
    return emitOpError("dropout needs both a seed and a dropout_ratio, got ")
           << (getSeed() ? "a seed only" : "a dropout_ratio only");
  if (ratio &&
      failed(verifyDropoutRatio([&] { return emitOpError(); }, *ratio)))
    return failure();
  return verifyAttention([&] { return emitOpError(); }, getScaleValue(),
                         getScaleIsDivisor(), getCausal(), getScoresShape(),
                         getType().getElementType(), getMask());
}

/// The row statistics' type of attention with result type `result`
/// ([..., T, Dv]): [..., T].
static RankedTensorType lseType(RankedTensorType result) {
  return tensorOf(result.getShape().drop_back(), result.getElementType());
}

LogicalResult FusedAttentionOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> result = attentionResultType(
      loc, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
  if (failed(result))
    return failure();
  types.push_back(*result);
  types.push_back(lseType(*result));
  return success();
}

/// The dropout of the fused ops: `keep` of the scores' shape and element
/// type, with a ratio in [0, 1), both or neither.
static LogicalResult
verifyFusedDropout(function_ref<InFlightDiagnostic()> emitError, Value keep,
                   std::optional<APFloat> ratio, ArrayRef<int64_t> scores,
                   Type elementType) {
  if (static_cast<bool>(keep) != ratio.has_value())
    return emitError() << "dropout needs both keep and a dropout_ratio, got "
                       << (keep ? "keep only" : "a dropout_ratio only");
  if (!keep)
    return success();
  if (failed(verifyDropoutRatio(emitError, *ratio)))
    return failure();
  auto type = cast<RankedTensorType>(keep.getType());
  if (type.getShape() != scores || type.getElementType() != elementType)
    return emitError() << "keep must be "
                       << RankedTensorType::get(scores, elementType)
                       << " (the scores), got " << type;
  return success();
}

LogicalResult FusedAttentionOp::verify() {
  SmallVector<int64_t> scores = scoresShape(getQuery(), getKey());
  Type elt = getResult().getType().getElementType();
  if (failed(verifyFusedDropout([&] { return emitOpError(); }, getKeep(),
                                getDropoutRatio(), scores, elt)))
    return failure();
  return verifyAttention([&] { return emitOpError(); }, getScaleValue(),
                         getScaleIsDivisor(), getCausal(), scores, elt,
                         getMask());
}

bool FusedAttentionOp::isDifferentiableOperand(unsigned index) {
  // The fused kernel adds a constant mask and multiplies by a drawn keep
  // mask; it has no gradient to give either.
  return index < 3;
}

LogicalResult
FusedAttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getQuery().getType());
  types.push_back(adaptor.getKey().getType());
  types.push_back(adaptor.getValue().getType());
  return success();
}

LogicalResult FusedAttentionGradOp::verify() {
  FailureOr<RankedTensorType> result =
      attentionResultType(getLoc(), getQuery(), getKey(), getValue());
  if (failed(result))
    return failure();
  if (getResult().getType() != *result || getResultGrad().getType() != *result)
    return emitOpError("result and result_grad must be ")
           << *result << ", got " << getResult().getType() << " and "
           << getResultGrad().getType();
  if (getLse().getType() != lseType(*result))
    return emitOpError("lse must be ")
           << lseType(*result) << ", got " << getLse().getType();
  SmallVector<int64_t> scores = scoresShape(getQuery(), getKey());
  if (failed(verifyFusedDropout([&] { return emitOpError(); }, getKeep(),
                                getDropoutRatio(), scores,
                                result->getElementType())))
    return failure();
  return verifyAttention([&] { return emitOpError(); }, getScaleValue(),
                         getScaleIsDivisor(), getCausal(), scores,
                         result->getElementType(), getMask());
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto l = cast<RankedTensorType>(adaptor.getLabels().getType());
  int64_t classes = adaptor.getNumClasses();
  if (classes < 1)
    return emitOptionalError(loc, "num_classes must be >= 1, got ", classes);
  SmallVector<int64_t> shape(l.getShape());
  shape.push_back(classes);
  types.push_back(tensorOf(shape, adaptor.getDtype()));
  return success();
}

static Type lossResultType(int64_t batch, Type elt, Reduction r) {
  if (r == Reduction::none)
    return tensorOf({batch}, elt);
  return tensorOf({}, elt);
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getLogits().getType());
  auto l = cast<RankedTensorType>(adaptor.getLabels().getType());
  if (x.getRank() != 2)
    return emitOptionalError(loc, "logits must be [batch, classes], got ",
                             shapeStr(x.getShape()));
  if (l.getRank() != 1 || !dimsCompatible(l.getDimSize(0), x.getDimSize(0)))
    return emitOptionalError(loc, "labels must be [", x.getDimSize(0),
                             "] to match the logits, got ",
                             shapeStr(l.getShape()));
  types.push_back(
      lossResultType(x.getDimSize(0), x.getElementType(), adaptor.getReduction()));
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  auto t = cast<RankedTensorType>(adaptor.getTarget().getType());
  if (failed(sameElementType(loc, x, t, "input and target")))
    return failure();
  if (x.getRank() < 1)
    return emitOptionalError(loc, "input must have a batch dimension");
  if (x.getRank() != t.getRank() ||
      !llvm::all_of(llvm::zip(x.getShape(), t.getShape()), [](auto p) {
        return dimsCompatible(std::get<0>(p), std::get<1>(p));
      }))
    return emitOptionalError(loc, "input ", shapeStr(x.getShape()),
                             " and target ", shapeStr(t.getShape()),
                             " must have the same shape");
  types.push_back(
      lossResultType(x.getDimSize(0), x.getElementType(), adaptor.getReduction()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Checks that `values` is a pair of sizes >= 1 (kernel or input size).
static LogicalResult checkPositivePair(std::optional<Location> loc,
                                       StringRef name,
                                       ArrayRef<int64_t> values) {
  if (values.size() != 2 ||
      llvm::any_of(values, [](int64_t v) { return v < 1; }))
    return emitOptionalError(loc, name, " must be two values >= 1, got ",
                             shapeStr(values));
  return success();
}

/// Checks the 2-D window attributes shared by convolutions and pooling.
static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> padding,
                                      ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || llvm::any_of(strides, [](int64_t s) {
        return s < 1;
      }))
    return emitOptionalError(loc, "strides must be two values >= 1, got ",
                             shapeStr(strides));
  if (padding.size() != 4 || llvm::any_of(padding, [](int64_t p) {
        return p < 0;
      }))
    return emitOptionalError(
        loc, "padding must be [top, left, bottom, right] with values >= 0, got ",
        shapeStr(padding));
  if (dilations.size() != 2 || llvm::any_of(dilations, [](int64_t d) {
        return d < 1;
      }))
    return emitOptionalError(loc, "dilations must be two values >= 1, got ",
                             shapeStr(dilations));
  return success();
}

static SmallVector<int64_t, 2>
windowOutput(ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
             ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
             ArrayRef<int64_t> dilations, bool ceilMode) {
  return {windowOutputSize(in[0], kernel[0], strides[0], padding[0],
                           padding[2], dilations[0], ceilMode),
          windowOutputSize(in[1], kernel[1], strides[1], padding[1],
                           padding[3], dilations[1], ceilMode)};
}

/// Verifies a convolution's operands and returns its output shape.
static FailureOr<SmallVector<int64_t>>
convOutputShape(std::optional<Location> loc, RankedTensorType x,
                ArrayRef<int64_t> wShape, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations,
                int64_t groups) {
  if (failed(checkWindowAttrs(loc, strides, padding, dilations)))
    return failure();
  if (x.getRank() != 4)
    return emitOptionalError(loc, "input must be NCHW (rank 4), got ",
                             shapeStr(x.getShape()));
  if (wShape.size() != 4)
    return emitOptionalError(loc, "weight must be OIHW (rank 4), got ",
                             shapeStr(wShape));
  if (groups < 1)
    return emitOptionalError(loc, "groups must be >= 1, got ", groups);
  int64_t c = x.getDimSize(1), o = wShape[0];
  if (c != kDyn && c % groups != 0)
    return emitOptionalError(loc, "input channels (", c,
                             ") not divisible by groups (", groups, ")");
  if (o != kDyn && o % groups != 0)
    return emitOptionalError(loc, "output channels (", o,
                             ") not divisible by groups (", groups, ")");
  if (c != kDyn && wShape[1] != kDyn && wShape[1] * groups != c)
    return emitOptionalError(loc, "weight ", shapeStr(wShape), " expects ",
                             wShape[1] * groups, " input channels, input has ",
                             c);
  auto hw = windowOutput(x.getShape().drop_front(2), wShape.drop_front(2),
                         strides, padding, dilations, false);
  if ((hw[0] != kDyn && hw[0] < 1) || (hw[1] != kDyn && hw[1] < 1))
    return emitOptionalError(loc, "kernel ", shapeStr(wShape.drop_front(2)),
                             " does not fit the padded input ",
                             shapeStr(x.getShape()));
  return SmallVector<int64_t>{x.getDimSize(0), o, hw[0], hw[1]};
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  auto w = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (failed(sameElementType(loc, x, w, "input and weight")))
    return failure();
  auto shape = convOutputShape(loc, x, w.getShape(), adaptor.getStrides(),
                               adaptor.getPadding(), adaptor.getDilations(),
                               adaptor.getGroups());
  if (failed(shape))
    return failure();
  if (Value bias = adaptor.getBias()) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (failed(sameElementType(loc, x, bt, "input and bias")))
      return failure();
    if (bt.getRank() != 1 || !dimsCompatible(bt.getDimSize(0), w.getDimSize(0)))
      return emitOptionalError(loc, "bias must be [", w.getDimSize(0),
                               "], got ", shapeStr(bt.getShape()));
  }
  types.push_back(tensorOf(*shape, x.getElementType()));
  return success();
}

/// Checks that a cotangent has the shape the forward op produces.
static LogicalResult checkGradShape(std::optional<Location> loc,
                                    RankedTensorType grad,
                                    ArrayRef<int64_t> expected) {
  if (grad.getRank() != (int64_t)expected.size() ||
      !llvm::all_of(llvm::zip(grad.getShape(), expected), [](auto p) {
        return dimsCompatible(std::get<0>(p), std::get<1>(p));
      }))
    return emitOptionalError(loc, "grad has shape ", shapeStr(grad.getShape()),
                             ", but the forward op produces ",
                             shapeStr(expected));
  return success();
}

LogicalResult Conv2DGradInputOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto g = cast<RankedTensorType>(adaptor.getGrad().getType());
  auto w = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (failed(sameElementType(loc, g, w, "grad and weight")))
    return failure();
  if (g.getRank() != 4 || w.getRank() != 4)
    return emitOptionalError(loc, "grad and weight must have rank 4, got ",
                             shapeStr(g.getShape()), " and ",
                             shapeStr(w.getShape()));
  if (failed(checkPositivePair(loc, "input_size", adaptor.getInputSize())))
    return failure();
  SmallVector<int64_t> in = {g.getDimSize(0),
                             mulDims(w.getDimSize(1), adaptor.getGroups()),
                             adaptor.getInputSize()[0],
                             adaptor.getInputSize()[1]};
  auto fwd = convOutputShape(loc, tensorOf(in, g.getElementType()),
                             w.getShape(), adaptor.getStrides(),
                             adaptor.getPadding(), adaptor.getDilations(),
                             adaptor.getGroups());
  if (failed(fwd) || failed(checkGradShape(loc, g, *fwd)))
    return failure();
  types.push_back(tensorOf(in, g.getElementType()));
  return success();
}

LogicalResult Conv2DGradWeightOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto g = cast<RankedTensorType>(adaptor.getGrad().getType());
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  if (failed(sameElementType(loc, g, x, "grad and input")))
    return failure();
  if (g.getRank() != 4 || x.getRank() != 4)
    return emitOptionalError(loc, "grad and input must have rank 4, got ",
                             shapeStr(g.getShape()), " and ",
                             shapeStr(x.getShape()));
  if (failed(checkPositivePair(loc, "kernel_size", adaptor.getKernelSize())))
    return failure();
  int64_t groups = adaptor.getGroups();
  int64_t c = x.getDimSize(1);
  SmallVector<int64_t> wShape = {g.getDimSize(1),
                                 c == kDyn || groups < 1 ? kDyn : c / groups,
                                 adaptor.getKernelSize()[0],
                                 adaptor.getKernelSize()[1]};
  auto fwd = convOutputShape(loc, x, wShape, adaptor.getStrides(),
                             adaptor.getPadding(), adaptor.getDilations(),
                             groups);
  if (failed(fwd) || failed(checkGradShape(loc, g, *fwd)))
    return failure();
  types.push_back(tensorOf(wShape, g.getElementType()));
  return success();
}

/// Verifies pooling attributes on an NCHW input and returns the output shape.
static FailureOr<SmallVector<int64_t>>
poolOutputShape(std::optional<Location> loc, ArrayRef<int64_t> in,
                ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations,
                bool ceilMode) {
  if (in.size() != 4)
    return emitOptionalError(loc, "input must be NCHW (rank 4), got ",
                             shapeStr(in));
  if (failed(checkPositivePair(loc, "kernel_size", kernel)))
    return failure();
  SmallVector<int64_t> effStrides(strides.empty() ? kernel : strides);
  if (failed(checkWindowAttrs(loc, effStrides, padding, dilations)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (padding[i] * 2 > kernel[i] || padding[i + 2] * 2 > kernel[i])
      return emitOptionalError(loc, "padding must be at most half the kernel "
                                    "size, got ",
                               shapeStr(padding), " for kernel ",
                               shapeStr(kernel));
  auto hw = windowOutput(in.drop_front(2), kernel, effStrides, padding,
                         dilations, ceilMode);
  if ((hw[0] != kDyn && hw[0] < 1) || (hw[1] != kDyn && hw[1] < 1))
    return emitOptionalError(loc, "window ", shapeStr(kernel),
                             " does not fit the input ", shapeStr(in));
  return SmallVector<int64_t>{in[0], in[1], hw[0], hw[1]};
}

#define CLEAVE_EFFECTIVE_STRIDES(OP)                                           \
  SmallVector<int64_t> OP::getEffectiveStrides() {                             \
    return SmallVector<int64_t>(getStrides().empty() ? getKernelSize()         \
                                                     : getStrides());          \
  }
CLEAVE_EFFECTIVE_STRIDES(MaxPool2DOp)
CLEAVE_EFFECTIVE_STRIDES(MaxPool2DGradOp)
CLEAVE_EFFECTIVE_STRIDES(AvgPool2DOp)
CLEAVE_EFFECTIVE_STRIDES(AvgPool2DGradOp)
#undef CLEAVE_EFFECTIVE_STRIDES

/// The forward poolings' one rule: the window's output shape of the
/// input, in the input's element type.
template <typename Adaptor>
static LogicalResult inferPoolResult(std::optional<Location> loc, Adaptor a,
                                     SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(a.getInput().getType());
  auto shape = poolOutputShape(loc, x.getShape(), a.getKernelSize(),
                               a.getStrides(), a.getPadding(),
                               a.getDilations(), a.getCeilMode());
  if (failed(shape))
    return failure();
  types.push_back(tensorOf(*shape, x.getElementType()));
  return success();
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &types) {
  return inferPoolResult(loc, a, types);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &types) {
  return inferPoolResult(loc, a, types);
}

LogicalResult MaxPool2DGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(a.getInput().getType());
  auto g = cast<RankedTensorType>(a.getGrad().getType());
  if (failed(sameElementType(loc, g, x, "grad and input")))
    return failure();
  auto shape = poolOutputShape(loc, x.getShape(), a.getKernelSize(),
                               a.getStrides(), a.getPadding(),
                               a.getDilations(), a.getCeilMode());
  if (failed(shape) || failed(checkGradShape(loc, g, *shape)))
    return failure();
  types.push_back(x);
  return success();
}

LogicalResult AvgPool2DGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &types) {
  auto g = cast<RankedTensorType>(a.getGrad().getType());
  if (g.getRank() != 4)
    return emitOptionalError(loc, "grad must have rank 4, got ",
                             shapeStr(g.getShape()));
  if (failed(checkPositivePair(loc, "input_size", a.getInputSize())))
    return failure();
  SmallVector<int64_t> in = {g.getDimSize(0), g.getDimSize(1),
                             a.getInputSize()[0], a.getInputSize()[1]};
  auto shape = poolOutputShape(loc, in, a.getKernelSize(), a.getStrides(),
                               a.getPadding(), a.getDilations(),
                               a.getCeilMode());
  if (failed(shape) || failed(checkGradShape(loc, g, *shape)))
    return failure();
  types.push_back(tensorOf(in, g.getElementType()));
  return success();
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(a.getInput().getType());
  if (x.getRank() < 3)
    return emitOptionalError(loc, "input must be [N, C, spatial...], got ",
                             shapeStr(x.getShape()));
  SmallVector<int64_t> shape(x.getShape());
  for (int64_t d = 2; d < x.getRank(); ++d)
    shape[d] = 1;
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation, dropout, embedding
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(a.getInput().getType());
  if (x.getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, ...], got ",
                             shapeStr(x.getShape()));
  int64_t c = x.getDimSize(1);
  // Named arrays: an ArrayRef of a braced list in the range expression would
  // dangle before the loop body runs.
  StringRef names[] = {"scale", "bias", "running_mean", "running_var"};
  Value values[] = {a.getScale(), a.getBias(), a.getRunningMean(),
                    a.getRunningVar()};
  for (auto [name, v] : llvm::zip_equal(names, values)) {
    auto t = cast<RankedTensorType>(v.getType());
    if (failed(sameElementType(loc, x, t, "input and " + name.str())))
      return failure();
    if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), c))
      return emitOptionalError(loc, name, " must be [", c, "], got ",
                               shapeStr(t.getShape()));
  }
  if (Value w = a.getSampleWeights()) {
    auto t = cast<RankedTensorType>(w.getType());
    if (failed(sameElementType(loc, x, t, "input and sample_weights")))
      return failure();
    if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), x.getDimSize(0)))
      return emitOptionalError(loc, "sample_weights must be [",
                               x.getDimSize(0), "] (one per sample), got ",
                               shapeStr(t.getShape()));
  }
  double momentum = a.getMomentum().convertToDouble();
  if (!(momentum >= 0 && momentum <= 1))
    return emitOptionalError(loc, "momentum must be in [0, 1], got ",
                             momentum);
  if (!(a.getEpsilon().convertToDouble() >= 0))
    return emitOptionalError(loc, "epsilon must be >= 0, got ",
                             a.getEpsilon().convertToDouble());
  types.push_back(x);
  types.push_back(a.getRunningMean().getType());
  types.push_back(a.getRunningVar().getType());
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &types) {
  auto x = cast<RankedTensorType>(a.getInput().getType());
  int64_t given = a.getAxis();
  auto axis = normalizeAxis(given, x.getRank());
  if (!axis)
    return emitOptionalError(loc, "axis ", given, " out of range for rank ",
                             x.getRank());
  if (!(a.getEpsilon().convertToDouble() >= 0))
    return emitOptionalError(loc, "epsilon must be >= 0, got ",
                             a.getEpsilon().convertToDouble());
  ArrayRef<int64_t> trailing = x.getShape().drop_front(*axis);
  StringRef names[] = {"scale", "bias"};
  Value values[] = {a.getScale(), a.getBias()};
  for (auto [name, v] : llvm::zip_equal(names, values)) {
    if (!v)
      continue;
    auto t = cast<RankedTensorType>(v.getType());
    if (failed(sameElementType(loc, x, t, "input and " + name.str())))
      return failure();
    if (t.getRank() != (int64_t)trailing.size() ||
        !llvm::all_of(llvm::zip(t.getShape(), trailing), [](auto p) {
          return dimsCompatible(std::get<0>(p), std::get<1>(p));
        }))
      return emitOptionalError(loc, name, " must have the normalised shape ",
                               shapeStr(trailing), ", got ",
                               shapeStr(t.getShape()));
  }
  types.push_back(x);
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &types) {
  double ratio = a.getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOptionalError(loc, "ratio must be in [0, 1), got ", ratio);
  types.push_back(a.getInput().getType());
  return success();
}

/// The SplitMix64 finaliser: cheap, stateless, and easy to reproduce in
/// generated code.
static uint64_t splitMix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t DropoutOp::streamKey(uint64_t seed, uint64_t stream) {
  return splitMix64(splitMix64(seed) ^ (stream * 0xD1B54A32D192ED03ULL));
}

bool DropoutOp::keeps(uint64_t key, uint64_t index, double ratio) {
  // The top 24 bits of the hash as a uniform number in [0, 1).
  uint64_t z = splitMix64(key + index);
  double u = static_cast<double>(z >> 40) * (1.0 / 16777216.0);
  return u >= ratio;
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &types) {
  auto ids = cast<RankedTensorType>(a.getIndices().getType());
  auto table = cast<RankedTensorType>(a.getTable().getType());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "table must be [num_embeddings, dim], got ",
                             shapeStr(table.getShape()));
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(tensorOf(shape, table.getElementType()));
  return success();
}

LogicalResult EmbeddingGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &types) {
  auto g = cast<RankedTensorType>(a.getGrad().getType());
  auto ids = cast<RankedTensorType>(a.getIndices().getType());
  if (g.getRank() != ids.getRank() + 1 ||
      !llvm::all_of(llvm::zip(ids.getShape(), g.getShape()), [](auto p) {
        return dimsCompatible(std::get<0>(p), std::get<1>(p));
      }))
    return emitOptionalError(loc, "grad ", shapeStr(g.getShape()),
                             " must be the indices' shape ",
                             shapeStr(ids.getShape()), " plus one dimension");
  int64_t rows = a.getNumEmbeddings();
  if (rows < 1)
    return emitOptionalError(loc, "num_embeddings must be >= 1, got ", rows);
  types.push_back(tensorOf({rows, g.getShape().back()}, g.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Folders and canonicalization patterns
//===----------------------------------------------------------------------===//

/// Whether `attr` is a splat of exactly `value`; -0.0 and +0.0 differ.
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  return splat && isa<FloatType>(splat.getElementType()) &&
         splat.getSplatValue<APFloat>().isExactlyValue(value);
}

/// Folds `lhs op rhs` to the operand that is not the splat `neutral` when that
/// operand already has the result type (the splat does not broadcast it).
static OpFoldResult foldNeutralOperand(Value result, Value lhs, Value rhs,
                                       Attribute lhsAttr, Attribute rhsAttr,
                                       double neutral, bool commutative) {
  if (isSplatOf(rhsAttr, neutral) && lhs.getType() == result.getType())
    return lhs;
  if (commutative && isSplatOf(lhsAttr, neutral) &&
      rhs.getType() == result.getType())
    return rhs;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldNeutralOperand(getResult(), getLhs(), getRhs(), adaptor.getLhs(),
                            adaptor.getRhs(), -0.0, /*commutative=*/true);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldNeutralOperand(getResult(), getLhs(), getRhs(), adaptor.getLhs(),
                            adaptor.getRhs(), 0.0, /*commutative=*/false);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldNeutralOperand(getResult(), getLhs(), getRhs(), adaptor.getLhs(),
                            adaptor.getRhs(), 1.0, /*commutative=*/true);
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Only the element count of an intermediate shape matters: reshape the
  // original input directly.
  Operation *def = getInput().getDefiningOp();
  if (!isa_and_nonnull<ReshapeOp, FlattenOp>(def))
    return {};
  Value source = def->getOperand(0);
  if (source.getType() == getType())
    return source;
  // A -1 entry resolved against a dynamic source would give a less static
  // type than the current result.
  if (!cast<RankedTensorType>(source.getType()).hasStaticShape() &&
      llvm::is_contained(getShape(), -1))
    return {};
  getInputMutable().assign(source);
  return getResult();
}

OpFoldResult FlattenOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (llvm::equal(getPermutation(), llvm::seq<int64_t>(0, getType().getRank())))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // Result dimension i is inner's dimension perm[i], i.e. the source's
  // dimension innerPerm[perm[i]].
  SmallVector<int64_t> composed;
  for (int64_t p : getPermutation())
    composed.push_back(inner.getPermutation()[p]);
  if (llvm::equal(composed, llvm::seq<int64_t>(0, getType().getRank())))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPermutation(composed);
  return getResult();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

/// Whether a slice or pad with `starts` and `strides` from `input` to
/// `result` moves no element: it is the identity.
static bool isIdentityPlacement(Value input, Value result,
                                ArrayRef<int64_t> starts,
                                ArrayRef<int64_t> strides) {
  return input.getType() == result.getType() &&
         llvm::all_of(starts, [](int64_t v) { return v == 0; }) &&
         llvm::all_of(strides, [](int64_t v) { return v == 1; });
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (isIdentityPlacement(getInput(), getResult(), getStarts(), getStrides()))
    return getInput();
  // Once specialised, the input is static: write the -1 sizes out.
  if (llvm::is_contained(getSizes(), -1) &&
      getInput().getType().hasStaticShape()) {
    setSizes(getType().getShape());
    return getResult();
  }
  return {};
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (isIdentityPlacement(getInput(), getResult(), getStarts(), getStrides()))
    return getInput();
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  // Once specialised, the batch size is known: drop its source.
  if (getBatchSource() && getType().hasStaticShape()) {
    setShape(getType().getShape());
    getBatchSourceMutable().clear();
    return getResult();
  }
  if (getInput().getType() == getType())
    return getInput();
  // Broadcasting is transitive: broadcast the original input directly.
  if (auto inner = getInput().getDefiningOp<BroadcastToOp>()) {
    if (inner.getInput().getType() == getType())
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  if (getRatio().isZero())
    return getInput();
  return {};
}

namespace {

/// Replaces a shape op (reshape, flatten, transpose, broadcast_to) of a splat
/// constant by a splat constant of the result type.
template <typename OpTy>
struct FoldShapeOfSplat : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    SplatElementsAttr splat;
    if (!matchPattern(op.getInput(), m_Constant(&splat)))
      return rewriter.notifyMatchFailure(op, "input is not a splat constant");
    RankedTensorType type = op.getType();
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "result shape is not static");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, splat.resizeSplat(type));
    return success();
  }
};

/// Rewrites a reduction over size-1 dimensions only, without keepdims, to an
/// nn.reshape: it keeps every element and only drops the dimensions.
template <typename OpTy>
struct ReduceUnitDimsToReshape : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType input = op.getInput().getType();
    if (!llvm::all_of(op.getReducedAxes(), [&](int64_t axis) {
          return input.getDimSize(axis) == 1;
        }))
      return rewriter.notifyMatchFailure(op, "reduces a dimension of size "
                                             "other than 1");
    SmallVector<int64_t> shape(op.getType().getShape());
    if (llvm::count(shape, ShapedType::kDynamic) > 1)
      return rewriter.notifyMatchFailure(op, "more than one dynamic dimension");
    for (int64_t &d : shape)
      if (d == ShapedType::kDynamic)
        d = -1;
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getInput(), shape);
    return success();
  }
};

} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<FoldShapeOfSplat<ReshapeOp>>(context);
}

void FlattenOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<FoldShapeOfSplat<FlattenOp>>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<FoldShapeOfSplat<TransposeOp>>(context);
}

void BroadcastToOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                                MLIRContext *context) {
  patterns.add<FoldShapeOfSplat<BroadcastToOp>>(context);
}

/// A reduction whose result type is its input type reduced only size-1
/// dimensions with keepdims (or a rank-0 input): it is the identity.
#define CLEAVE_REDUCE_FOLD(OP)                                                 \
  OpFoldResult OP::fold(FoldAdaptor) {                                         \
    if (getInput().getType() == getType())                                     \
      return getInput();                                                       \
    return {};                                                                 \
  }                                                                            \
  void OP::getCanonicalizationPatterns(RewritePatternSet &patterns,            \
                                       MLIRContext *context) {                 \
    patterns.add<ReduceUnitDimsToReshape<OP>>(context);                        \
  }
CLEAVE_REDUCE_FOLD(ReduceSumOp)
CLEAVE_REDUCE_FOLD(ReduceMeanOp)
CLEAVE_REDUCE_FOLD(ReduceMaxOp)
#undef CLEAVE_REDUCE_FOLD

#define GET_OP_CLASSES
#include "dialects/NN/IR/NNOps.cpp.inc"

//===- Constructors.cpp - Tensors made from constants and shapes ----------===//
//
// Constant, ConstantOfShape and Range fold at compile time, or broadcast over
// the batch of a data input when their shape or length holds the batch size;
// Expand, Tile, Trilu and Pad build their results from broadcasts, constant
// masks and concatenations.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

using Kind = ImportedValue::Kind;

namespace {

LogicalResult importConstant(NodeImporter &n) {
  if (failed(n.checkAttrs(
          {"value", "value_float", "value_floats", "value_int", "value_ints"})))
    return failure();
  if (n.getNode().attribute_size() != 1)
    return n.emitError() << "Constant needs exactly one value attribute";
  const onnx::AttributeProto &a = n.getNode().attribute(0);
  OpBuilder &b = n.getBuilder();
  DenseElementsAttr value;
  if (a.name() == "value") {
    if (a.type() != onnx::AttributeProto::TENSOR)
      return n.emitError() << "Constant attribute 'value' must be a tensor";
    FailureOr<DenseElementsAttr> t =
        n.getGraph().convertTensor(a.t(), n.getLoc());
    if (failed(t))
      return failure();
    value = *t;
  } else if (a.name() == "value_float" &&
             a.type() == onnx::AttributeProto::FLOAT) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   a.f());
  } else if (a.name() == "value_floats" &&
             a.type() == onnx::AttributeProto::FLOATS) {
    SmallVector<float> fs(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)fs.size()}, b.getF32Type()),
        ArrayRef<float>(fs));
  } else if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   a.i());
  } else if (a.name() == "value_ints" &&
             a.type() == onnx::AttributeProto::INTS) {
    SmallVector<int64_t> is(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)is.size()}, b.getI64Type()),
        ArrayRef<int64_t>(is));
  } else {
    return n.emitError() << "Constant attribute '" << a.name()
                         << "' has the wrong type";
  }
  n.setOutput(0, ImportedValue::ofConstant(value));
  return success();
}

/// Range folds: start, limit and delta must be compile-time numbers (a
/// length that depends on the batch size has no nn form). Integer ranges
/// become shape values, as positions for an embedding or a mask.
LogicalResult importRange(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  constexpr int64_t kMaxFolded = 1 << 16;
  ImportedValue &first = n.input(0);
  bool integer = first.kind == Kind::Symbolic;
  if (integer) {
    static constexpr StringLiteral kNames[] = {"start", "limit", "delta"};
    SmallVector<int64_t> bounds;
    SmallVector<SymInt> symbolic;
    for (auto [i, what] : llvm::enumerate(kNames)) {
      auto v = n.symbolicInts(i, what);
      if (failed(v))
        return failure();
      if (v->size() != 1)
        return n.emitError()
               << "Range " << what << " " << ArrayRef(*v) << " is not a scalar";
      symbolic.push_back((*v)[0]);
      bounds.push_back((*v)[0].coeff);
    }
    if (llvm::any_of(symbolic, [](SymInt v) { return !v.isConstant(); }))
      return importBatchRange(n, symbolic[0], symbolic[1], symbolic[2]);
    int64_t start = bounds[0], limit = bounds[1], delta = bounds[2];
    if (delta == 0)
      return n.emitError() << "Range delta is 0";
    int64_t count = std::max<int64_t>(
        0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
    if (count > kMaxFolded)
      return n.emitError() << "Range of " << count
                           << " elements is too large to fold";
    SmallVector<SymInt> out;
    for (int64_t k = 0; k < count; ++k)
      out.push_back(SymInt::constant(start + k * delta));
    n.setOutput(0, ImportedValue::ofSymbolic(out, /*scalar=*/false,
                                             first.symbolicType));
    return success();
  }
  FailureOr<DenseElementsAttr> startAttr = n.constant(0, "start");
  FailureOr<double> start = n.constantScalar(0, "start");
  FailureOr<double> limit = n.constantScalar(1, "limit");
  FailureOr<double> delta = n.constantScalar(2, "delta");
  if (failed(startAttr) || failed(start) || failed(limit) || failed(delta))
    return failure();
  auto elt = dyn_cast<FloatType>(startAttr->getElementType());
  if (!elt)
    return n.emitError() << "Range of " << startAttr->getElementType()
                         << " is not supported";
  if (*delta == 0)
    return n.emitError() << "Range delta is 0";
  double count = std::max(0.0, std::ceil((*limit - *start) / *delta));
  if (count > kMaxFolded)
    return n.emitError() << "Range of " << count
                         << " elements is too large to fold";
  SmallVector<APFloat> out;
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
    APFloat v(*start + k * *delta);
    bool lost;
    v.convert(elt.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    out.push_back(v);
  }
  auto type = RankedTensorType::get({static_cast<int64_t>(out.size())}, elt);
  n.setOutput(0, ImportedValue::ofConstant(DenseElementsAttr::get(type, out)));
  return success();
}

/// Broadcasts `v`, of shape `in` up to the batch size B, to `out` as numpy
/// does (`in` aligned at the end). nn.broadcast_to's -1 stands for B itself:
/// an entry k * B (heads * B in nn.MultiheadAttention's key padding mask)
/// is broadcast as the two axes [B, k] and merged back by a reshape, so the
/// result still specialises with the batch.
FailureOr<Value> broadcastSymbolic(NodeImporter &n, Value v,
                                   ArrayRef<SymInt> in, ArrayRef<SymInt> out,
                                   StringRef what) {
  size_t rank = out.size();
  SmallVector<SymInt> aligned(rank - in.size(), SymInt::constant(1));
  aligned.append(in.begin(), in.end());
  SmallVector<SymInt> splitIn;
  SmallVector<int64_t> target;
  bool split = false;
  for (auto [a, d] : llvm::zip_equal(aligned, out)) {
    if (d.isConstant()) {
      target.push_back(d.coeff);
      splitIn.push_back(a);
      continue;
    }
    if (d.power != 1 || d.coeff < 1)
      return n.emitError() << what << " to [" << out
                           << "] is not supported: a batch-dependent size "
                              "other than a multiple of B (B is the batch "
                              "size)";
    if (d.coeff == 1) {
      target.push_back(-1);
      splitIn.push_back(a);
      continue;
    }
    split = true;
    target.append({-1, d.coeff});
    if (a == d)
      splitIn.append({SymInt::batch(), SymInt::constant(d.coeff)});
    else
      splitIn.append({SymInt::constant(1), SymInt::constant(1)});
  }
  if (split && cast<RankedTensorType>(v.getType()).getRank() > 0) {
    FailureOr<Value> r = n.reshape(v, splitIn);
    if (failed(r))
      return failure();
    v = *r;
  }
  Value source;
  if (llvm::is_contained(target, -1)) {
    source = n.getGraph().batchSource();
    if (!source)
      return n.emitError() << what
                           << " to a batch-dependent shape needs a data "
                              "input with a batch dimension";
  }
  FailureOr<nn::BroadcastToOp> op =
      n.create<nn::BroadcastToOp>(v, target, source);
  if (failed(op))
    return failure();
  if (!split)
    return op->getResult();
  return n.reshape(op->getResult(), out);
}

/// ConstantOfShape of a compile-time shape is a splat constant; a float one
/// whose shape holds the batch size (`torch.zeros(x.size(0), ...)` in
/// `forward`) is the scalar broadcast over the batch of a data input.
LogicalResult importConstantOfShape(NodeImporter &n) {
  if (failed(n.checkAttrs({"value"})))
    return failure();
  auto dims = n.symbolicInts(0, "shape");
  if (failed(dims))
    return failure();
  for (SymInt d : *dims)
    if (d.isConstant() && d.coeff <= 0)
      return n.emitError() << "ConstantOfShape to [" << ArrayRef(*dims)
                           << "]: empty tensors are not supported";
  if (failed(product(*dims)))
    return n.emitError() << "ConstantOfShape to [" << ArrayRef(*dims)
                         << "]: the element count overflows";
  OpBuilder &b = n.getBuilder();
  DenseElementsAttr value =
      DenseElementsAttr::get(RankedTensorType::get({1}, b.getF32Type()), 0.0f);
  if (const onnx::AttributeProto *attr = n.getAttr("value")) {
    if (attr->type() != onnx::AttributeProto::TENSOR)
      return n.emitError() << "ConstantOfShape value must be a tensor";
    auto t = n.getGraph().convertTensor(attr->t(), n.getLoc());
    if (failed(t))
      return failure();
    if (t->getNumElements() != 1)
      return n.emitError() << "ConstantOfShape value must hold one element";
    value = *t;
  }
  Attribute element = value.getValues<Attribute>()[0];
  std::optional<SmallVector<int64_t>> shape = staticDims(*dims);
  // Integer vectors become shape values, one entry each: real ones are short.
  constexpr int64_t kMaxShapeValue = 1 << 12;
  if (shape && shape->size() == 1 && !isa<FloatType>(value.getElementType()) &&
      (*shape)[0] > kMaxShapeValue)
    return n.emitError() << "ConstantOfShape of " << (*shape)[0]
                         << " integers is not supported (a shape value of at "
                            "most "
                         << kMaxShapeValue << " entries)";
  if (shape) {
    auto type = RankedTensorType::get(*shape, value.getElementType());
    n.setOutput(
        0, ImportedValue::ofConstant(DenseElementsAttr::get(type, element)));
    return success();
  }
  if (!isa<FloatType>(value.getElementType()))
    return n.emitError() << "ConstantOfShape of " << value.getElementType()
                         << " to the batch-dependent shape [" << ArrayRef(*dims)
                         << "] is not supported: nn has no integer tensors";
  Value scalar = n.getGraph().materialize(
      DenseElementsAttr::get(RankedTensorType::get({}, value.getElementType()),
                             element),
      n.getLoc());
  FailureOr<Value> filled =
      broadcastSymbolic(n, scalar, {}, *dims, "ConstantOfShape");
  if (failed(filled))
    return failure();
  n.setOutput(0, *filled);
  return success();
}

/// Expand broadcasts to the numpy broadcast of the input's shape and the
/// target. A target entry that is the batch size takes it from a data
/// input (`nn.broadcast_to ... batch_of`): PyTorch's `expand(n, -1, -1)` of
/// a class token.
LogicalResult importExpand(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  auto target = n.symbolicInts(1, "shape");
  if (failed(target))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  size_t rank = std::max(in->size(), target->size());
  SmallVector<SymInt> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    SymInt a = i + in->size() < rank ? SymInt::constant(1)
                                     : (*in)[i + in->size() - rank];
    SymInt t = i + target->size() < rank ? SymInt::constant(1)
                                         : (*target)[i + target->size() - rank];
    if (a == t || t == SymInt::constant(1))
      out[i] = a;
    else if (a == SymInt::constant(1))
      out[i] = t;
    else
      return n.emitError() << "Expand of [" << ArrayRef(*in) << "] to ["
                           << ArrayRef(*target)
                           << "]: the shapes do not broadcast (B is the "
                              "batch size)";
  }
  FailureOr<Value> value = n.floatTensor(0);
  if (failed(value))
    return failure();
  if (ArrayRef(out) == ArrayRef(*in)) {
    n.setOutput(0, *value);
    return success();
  }
  FailureOr<Value> expanded = broadcastSymbolic(n, *value, *in, out, "Expand");
  if (failed(expanded))
    return failure();
  n.setOutput(0, *expanded);
  return success();
}

/// Tile with constant repeats: each repeated axis gets a size-1 axis
/// before it, broadcast to the repeat count and merged back by a reshape.
/// Its gradient (broadcast_to's) sums over the repeats. The batch axis
/// cannot be repeated: the result would be a multiple of the batch.
LogicalResult importTile(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  auto repeats = n.constantInts(1, "repeats");
  if (failed(repeats))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  if (repeats->size() != in->size())
    return n.emitError() << "Tile repeats [" << ArrayRef(*repeats)
                         << "] do not match rank " << in->size();
  SmallVector<SymInt> expanded, tiled;
  SmallVector<int64_t> target;
  for (auto [d, r] : llvm::zip_equal(*in, *repeats)) {
    if (r < 1)
      return n.emitError() << "Tile repeats [" << ArrayRef(*repeats)
                           << "] must be positive";
    if (r != 1 && !d.isConstant())
      return n.emitError() << "Tile of the batch-dependent dimension " << d
                           << " is not supported (B is the batch size)";
    if (r != 1) {
      expanded.push_back(SymInt::constant(1));
      target.push_back(r);
      tiled.push_back(SymInt::constant(r * d.coeff));
    } else {
      tiled.push_back(d);
    }
    expanded.push_back(d);
    if (d.isConstant())
      target.push_back(d.coeff);
    else if (d == SymInt::batch())
      target.push_back(-1);
    else
      return n.emitError() << "Tile of a tensor of shape [" << ArrayRef(*in)
                           << "] is not supported (B is the batch size)";
  }
  FailureOr<Value> value = n.floatTensor(0);
  if (failed(value))
    return failure();
  if (llvm::all_of(*repeats, [](int64_t r) { return r == 1; })) {
    n.setOutput(0, *value);
    return success();
  }
  FailureOr<Value> spread = n.reshape(*value, expanded);
  if (failed(spread))
    return failure();
  Value source;
  if (llvm::is_contained(target, -1)) {
    source = n.getGraph().batchSource();
    if (!source)
      return n.emitError() << "Tile of a batched tensor needs a data input "
                              "with a batch dimension";
  }
  FailureOr<nn::BroadcastToOp> copies =
      n.create<nn::BroadcastToOp>(*spread, target, source);
  if (failed(copies))
    return failure();
  FailureOr<Value> r = n.reshape(copies->getResult(), tiled);
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

/// Whether Trilu keeps element (i, j): on or above diagonal k (upper), on
/// or below it (lower).
bool triluKeeps(bool upper, int64_t k, int64_t i, int64_t j) {
  return upper ? j - i >= k : j - i <= k;
}

/// Trilu of a constant folds (a causal mask built in `forward`, as
/// `torch.triu(torch.ones(t, t), 1)` exports it); of a run-time tensor it
/// selects the kept triangle with `nn.where` against a constant mask, so
/// the gradient reaches only the kept elements.
LogicalResult importTrilu(NodeImporter &n) {
  if (failed(n.checkAttrs({"upper"})))
    return failure();
  FailureOr<int64_t> upper = n.getInt("upper", 1);
  if (failed(upper))
    return failure();
  int64_t k = 0;
  if (n.hasInput(1)) {
    auto given = n.constantInts(1, "k");
    if (failed(given))
      return failure();
    if (given->size() != 1)
      return n.emitError() << "Trilu k must be one integer";
    k = (*given)[0];
  }
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  int64_t rank = in->size();
  if (rank < 2)
    return n.emitError() << "Trilu of rank " << rank << " (at least 2)";
  SymInt rowsSym = (*in)[rank - 2], colsSym = (*in)[rank - 1];
  if (!rowsSym.isConstant() || !colsSym.isConstant())
    return n.emitError() << "Trilu over the batch-dependent matrix [" << rowsSym
                         << ", " << colsSym
                         << "] is not supported (B is the batch size)";
  int64_t rows = rowsSym.coeff, cols = colsSym.coeff;
  if (rows == 0 || cols == 0)
    return n.emitError() << "Trilu of an empty " << rows << "x" << cols
                         << " matrix: empty tensors are not supported";
  constexpr int64_t kMaxFolded = 1 << 24;
  if (rows * cols > kMaxFolded)
    return n.emitError() << "Trilu of a " << rows << "x" << cols
                         << " matrix is too large to fold";
  if (x.kind == Kind::Constant) {
    DenseElementsAttr c = x.constant;
    if (c.getNumElements() > kMaxFolded)
      return n.emitError() << "Trilu of a constant of " << c.getNumElements()
                           << " elements is too large to fold";
    Type elt = c.getElementType();
    Attribute zero = elementAttr(elt, 0.0);
    SmallVector<Attribute> out;
    int64_t index = 0;
    for (Attribute v : c.getValues<Attribute>()) {
      int64_t j = index % cols, i = index / cols % rows;
      out.push_back(triluKeeps(*upper, k, i, j) ? v : zero);
      ++index;
    }
    n.setOutput(
        0, ImportedValue::ofConstant(DenseElementsAttr::get(c.getType(), out)));
    return success();
  }
  FailureOr<Value> value = n.numericTensor(0);
  if (failed(value))
    return failure();
  Type elt = cast<RankedTensorType>(value->getType()).getElementType();
  SmallVector<Attribute> mask;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(elementAttr(elt, triluKeeps(*upper, k, i, j)));
  GraphImporter &g = n.getGraph();
  Value keep = g.materialize(
      DenseElementsAttr::get(RankedTensorType::get({rows, cols}, elt), mask),
      n.getLoc());
  Value zero =
      g.materialize(DenseElementsAttr::get(RankedTensorType::get({}, elt),
                                           elementAttr(elt, 0.0)),
                    n.getLoc());
  return n.createOutput<nn::WhereOp>(keep, *value, zero);
}

/// A block of `value` shaped as `like` with dimension `axis` of size
/// `size`: a constant, or broadcast over the batch of a data input when
/// `like` is batched.
FailureOr<Value> fillBlock(NodeImporter &n, Value like, int64_t axis,
                           int64_t size, double value) {
  auto type = cast<RankedTensorType>(like.getType());
  Type elt = type.getElementType();
  GraphImporter &g = n.getGraph();
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = size;
  if (type.hasStaticShape())
    return g.materialize(
        DenseElementsAttr::get(RankedTensorType::get(shape, elt),
                               elementAttr(elt, value)),
        n.getLoc());
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = -1;
  Value source = g.batchSource();
  if (!source)
    return n.emitError() << "Pad of a batched tensor needs a data input with "
                            "a batch dimension";
  Value scalar =
      g.materialize(DenseElementsAttr::get(RankedTensorType::get({}, elt),
                                           elementAttr(elt, value)),
                    n.getLoc());
  auto op = n.create<nn::BroadcastToOp>(scalar, shape, source);
  if (failed(op))
    return failure();
  return op->getResult();
}

/// Pad in mode constant, reflect or edge, with constant pads (and, from
/// opset 18, axes): each padded axis is a concatenation of the input with
/// what goes before and after it: blocks of the constant, single-element
/// slices mirrored about the edge (reflect) or repeated (edge). The
/// gradient is concat's (slices), folded back onto the mirrored or
/// repeated elements by the slices' own gradients. Negative pads (crops)
/// and padding the batch axis are refused.
LogicalResult importPad(NodeImporter &n) {
  if (failed(n.checkAttrs({"mode"})))
    return failure();
  FailureOr<std::string> mode = n.getString("mode", "constant");
  if (failed(mode))
    return failure();
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge")
    return n.emitError() << "Pad mode '" << *mode
                         << "' is not supported (constant, reflect, edge)";
  auto pads = n.constantInts(1, "pads");
  if (failed(pads))
    return failure();
  double fill = 0.0;
  if (n.hasInput(2)) {
    FailureOr<double> given = n.constantScalar(2, "constant_value");
    if (failed(given))
      return failure();
    fill = *given;
  }
  FailureOr<Value> x = n.numericTensor(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (n.hasInput(3)) {
    auto given = n.constantInts(3, "axes");
    if (failed(given))
      return failure();
    for (int64_t axis : *given) {
      std::optional<int64_t> a = normalizeAxis(axis, rank);
      if (!a || llvm::is_contained(axes, *a))
        return n.emitError() << "Pad axes [" << ArrayRef(*given)
                             << "] are invalid for rank " << rank;
      axes.push_back(*a);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  int64_t count = axes.size();
  if ((int64_t)pads->size() != 2 * count)
    return n.emitError() << "Pad pads [" << ArrayRef(*pads) << "] need "
                         << 2 * count << " entries";
  Value y = *x;
  for (int64_t i = 0; i < count; ++i) {
    // A plain local: the lambdas below capture it (C++17 cannot capture a
    // structured binding).
    int64_t axis = axes[i];
    int64_t before = (*pads)[i], after = (*pads)[i + count];
    if (before == 0 && after == 0)
      continue;
    if (before < 0 || after < 0)
      return n.emitError() << "Pad pads [" << ArrayRef(*pads)
                           << "]: negative pads (crops) are not supported";
    if (type.isDynamicDim(axis))
      return n.emitError() << "Pad of the batch-dependent dimension " << axis
                           << " is not supported";
    int64_t dim = type.getDimSize(axis);
    if (*mode == "reflect" && (before >= dim || after >= dim))
      return n.emitError() << "Pad reflect of " << before << " and " << after
                           << " along a dimension of size " << dim
                           << " (at most " << dim - 1 << ")";
    if (*mode == "constant") {
      FailureOr<Value> padded = padWith(n, y, axis, before, after, fill);
      if (failed(padded))
        return failure();
      y = *padded;
      continue;
    }
    SmallVector<Value> parts;
    auto element = [&](int64_t index) {
      return sliceAxes(n, y, {{axis, {index, 1, 1}}});
    };
    auto side = [&](int64_t width, bool first) -> LogicalResult {
      for (int64_t k = 0; k < width; ++k) {
        // Element k of the padding, counted outwards from the input.
        int64_t source = *mode == "edge" ? (first ? 0 : dim - 1)
                         : first         ? k + 1
                                         : dim - 2 - k;
        FailureOr<Value> v = element(source);
        if (failed(v))
          return failure();
        parts.push_back(*v);
      }
      // Before the input the padding runs inwards.
      if (first)
        std::reverse(parts.end() - width, parts.end());
      return success();
    };
    if (failed(side(before, true)))
      return failure();
    parts.push_back(y);
    if (failed(side(after, false)))
      return failure();
    auto op =
        n.create<nn::ConcatOp>(ValueRange(parts), static_cast<uint64_t>(axis));
    if (failed(op))
      return failure();
    y = op->getResult();
  }
  n.setOutput(0, y);
  return success();
}

} // namespace

FailureOr<Value> importer::padWith(NodeImporter &n, Value x, int64_t axis,
                                   int64_t before, int64_t after,
                                   double value) {
  SmallVector<Value> parts;
  auto block = [&](int64_t width) -> LogicalResult {
    if (width == 0)
      return success();
    FailureOr<Value> filled = fillBlock(n, x, axis, width, value);
    if (failed(filled))
      return failure();
    parts.push_back(*filled);
    return success();
  };
  if (failed(block(before)))
    return failure();
  parts.push_back(x);
  if (failed(block(after)))
    return failure();
  if (parts.size() == 1)
    return x;
  auto op =
      n.create<nn::ConcatOp>(ValueRange(parts), static_cast<uint64_t>(axis));
  if (failed(op))
    return failure();
  return op->getResult();
}

FailureOr<Value> importer::filledLike(NodeImporter &n, Value like,
                                      double value) {
  auto type = cast<RankedTensorType>(like.getType());
  if (type.getRank() == 0)
    return n.getGraph().materialize(
        DenseElementsAttr::get(type, elementAttr(type.getElementType(), value)),
        n.getLoc());
  int64_t last = type.getRank() - 1;
  return fillBlock(n, like, last, type.getDimSize(last), value);
}

void importer::populateConstructorImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  constexpr unsigned second = 1u << 1;
  addImporter(table, "Constant", importConstant)
      .describe("folded at compile time");
  addImporter(table, "ConstantOfShape", importConstantOfShape)
      .constants(1u)
      .describe(
          "a constant shape (folded), or a float one whose shape holds the "
          "batch size (`torch.zeros(x.size(0), ...)`), broadcast over the "
          "batch of a data input");
  addImporter(table, "Range", importRange)
      .constants(0b111)
      .describe(
          "folded when start, limit and delta are compile-time numbers "
          "(integer ranges become shape values); `Range(0, k * B, k)` over the "
          "batch size B (`torch.arange(x.size(0))`) is `nn.iota` over a data "
          "input's batch");
  addImporter(table, "Expand", importExpand)
      .constants(second)
      .describe(
          "a shape that folds to constants up to the batch size; a target "
          "entry equal to the batch size takes it from a data input "
          "(`cls_token.expand(n, -1, -1)`)");
  addImporter(table, "Tile", importTile)
      .constants(second)
      .describe("constant repeats, not of the batch axis: a reshape, "
                "`nn.broadcast_to` and a reshape, whose gradient sums over the "
                "repeats");
  addImporter(table, "Trilu", importTrilu)
      .since(14)
      .constants(second)
      .describe(
          "a constant `k`; folded on constants (a causal mask built in "
          "`forward` with `torch.triu`), on run-time tensors an `nn.where` "
          "against a constant mask over the last two (static) dimensions; "
          "float, int32 and int64 tensors");
  addImporter(table, "Pad", importPad)
      .constants(0b1110)
      .describe(
          "modes `constant` (any constant value), `reflect` and `edge`; "
          "constant non-negative pads (and `axes`, opset 18) on static axes: a "
          "concatenation with constant blocks or single-element slices, whose "
          "gradient folds back onto the input; float, int32 and int64 tensors");
}

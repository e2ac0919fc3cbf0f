//===- Logic.cpp - Comparisons, logic and Where ---------------------------===//
//
// Comparisons and the logical ops fold on shape values (`expand`'s -1
// handling) and on constants of any rank (masks); with a run-time operand
// they are f32 masks (`nn.compare`, combined by `nn.mul` and `nn.maximum`),
// which `nn.where` takes as its condition.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

using Kind = ImportedValue::Kind;

namespace {

/// The values `coeff * B^power` can take for a batch size B >= 1.
struct Interval {
  std::optional<int64_t> lo, hi; // none: unbounded
};

Interval possibleValues(SymInt v) {
  if (v.isConstant())
    return {v.coeff, v.coeff};
  if (v.coeff > 0)
    return {v.coeff, std::nullopt};
  return {std::nullopt, v.coeff};
}

/// The comparisons, and the logical ops on booleans that fold the same way.
enum class Compare {
  Equal,
  Less,
  Greater,
  LessOrEqual,
  GreaterOrEqual,
  And,
  Or,
  Xor
};

/// `a <op> b` for every batch size, or std::nullopt if it depends on it.
std::optional<bool> compareSym(Compare op, SymInt a, SymInt b) {
  if (op == Compare::Greater)
    return compareSym(Compare::Less, b, a);
  if (op == Compare::LessOrEqual || op == Compare::GreaterOrEqual) {
    std::optional<bool> r = op == Compare::LessOrEqual
                                ? compareSym(Compare::Less, b, a)
                                : compareSym(Compare::Less, a, b);
    if (!r)
      return std::nullopt;
    return !*r;
  }
  Interval x = possibleValues(a), y = possibleValues(b);
  bool below = x.hi && y.lo && *x.hi < *y.lo; // a < b always
  bool above = x.lo && y.hi && *x.lo > *y.hi; // a > b always
  if (op == Compare::Equal) {
    if (a == b)
      return true;
    if (below || above)
      return false;
    return std::nullopt;
  }
  if (below)
    return true;
  if (x.lo && y.hi && *x.lo >= *y.hi)
    return false;
  return std::nullopt;
}

/// The integer entries of input `i` (a shape value or an integer constant)
/// and whether it is a scalar; failure for run-time tensors and floats.
FailureOr<std::pair<SmallVector<SymInt>, bool>> shapeInts(NodeImporter &n,
                                                          unsigned i) {
  ImportedValue &v = n.input(i);
  if (v.kind == Kind::Symbolic)
    return std::make_pair(v.symbolic, v.scalar);
  if (v.kind == Kind::Constant && v.constant.getType().getRank() <= 1 &&
      v.constant.getElementType().isInteger(1)) {
    SmallVector<SymInt> out;
    for (bool b : v.constant.getValues<bool>())
      out.push_back(SymInt::constant(b));
    return std::make_pair(out, v.constant.getType().getRank() == 0);
  }
  return n.emitError() << n.getOpType() << " input '" << n.inputName(i)
                       << "' is supported when it is a shape value (integers "
                          "of rank 0 or 1 known up to the batch size), not "
                       << (v.kind == Kind::Tensor ? "a run-time tensor"
                                                  : "this constant");
}

/// Entry `i` of a rank-0/1 value broadcast to `size` entries.
SymInt entry(ArrayRef<SymInt> v, size_t i) { return v[v.size() == 1 ? 0 : i]; }

/// The common size of rank-0/1 operands that broadcast, or failure.
FailureOr<size_t> broadcastSize(NodeImporter &n,
                                ArrayRef<ArrayRef<SymInt>> operands) {
  size_t size = 1;
  for (ArrayRef<SymInt> v : operands)
    size = std::max(size, v.size());
  for (ArrayRef<SymInt> v : operands)
    if (v.size() != size && v.size() != 1)
      return n.emitError() << n.getOpType()
                           << " operands do not broadcast: sizes " << v.size()
                           << " and " << size;
  return size;
}

DenseElementsAttr boolVector(NodeImporter &n, ArrayRef<bool> bits,
                             bool scalar) {
  SmallVector<int64_t> shape;
  if (!scalar)
    shape.push_back(bits.size());
  return DenseElementsAttr::get(
      RankedTensorType::get(shape, n.getBuilder().getI1Type()), bits);
}

/// Row-major strides of `in` read at the indices of the broadcast `out`
/// (0 along broadcast dimensions).
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> out) {
  SmallVector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (int64_t d = in.size() - 1; d >= 0; --d) {
    if (in[d] != 1)
      strides[d + out.size() - in.size()] = stride;
    stride *= in[d];
  }
  return strides;
}

/// `a <op> b` elementwise on constants of any rank, with broadcasting (a
/// mask built from a registered buffer).
FailureOr<DenseElementsAttr> compareConstants(NodeImporter &n, Compare op,
                                              DenseElementsAttr a,
                                              DenseElementsAttr b) {
  auto shape =
      nn::broadcastShapes(a.getType().getShape(), b.getType().getShape());
  if (failed(shape))
    return n.emitError() << n.getOpType() << " operands of types "
                         << a.getType() << " and " << b.getType()
                         << " do not broadcast";
  auto resultType = RankedTensorType::get(*shape, n.getBuilder().getI1Type());
  auto holds = [&](double u, double v) {
    switch (op) {
    case Compare::Equal:
      return u == v;
    case Compare::Less:
      return u < v;
    case Compare::Greater:
      return u > v;
    case Compare::LessOrEqual:
      return u <= v;
    case Compare::GreaterOrEqual:
      return u >= v;
    case Compare::And:
      return u != 0 && v != 0;
    case Compare::Or:
      return u != 0 || v != 0;
    case Compare::Xor:
      return (u != 0) != (v != 0);
    }
    llvm_unreachable("unknown comparison");
  };
  // A splat (ConstantOfShape's) is read once, with stride 0.
  auto values = [&](DenseElementsAttr attr, SmallVector<int64_t> &strides) {
    Type f64 = Float64Type::get(attr.getContext());
    SmallVector<double> out;
    if (attr.isSplat()) {
      DenseElementsAttr one =
          attr.resizeSplat(RankedTensorType::get({}, attr.getElementType()));
      out.push_back((*castElements(one, f64).getValues<APFloat>().begin())
                        .convertToDouble());
      strides.assign(shape->size(), 0);
      return out;
    }
    for (const APFloat &v : castElements(attr, f64).getValues<APFloat>())
      out.push_back(v.convertToDouble());
    strides = broadcastStrides(attr.getType().getShape(), *shape);
    return out;
  };
  SmallVector<int64_t> sa, sb;
  SmallVector<double> x = values(a, sa), y = values(b, sb);
  if (a.isSplat() && b.isSplat())
    return DenseElementsAttr::get(resultType, holds(x[0], y[0]));
  // Folding writes every element: refuse what no real mask needs.
  constexpr int64_t kMaxFolded = 1 << 24;
  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d > kMaxFolded || count * d > kMaxFolded)
      return n.emitError() << n.getOpType() << " of constants broadcast to "
                           << resultType << " is too large to fold";
    count *= d;
  }
  SmallVector<bool> bits;
  SmallVector<int64_t> index(shape->size(), 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      ia += index[d] * sa[d];
      ib += index[d] * sb[d];
    }
    bits.push_back(holds(x[ia], y[ib]));
    for (int64_t d = index.size() - 1; d >= 0 && ++index[d] == (*shape)[d]; --d)
      index[d] = 0;
  }
  return DenseElementsAttr::get(resultType, bits);
}

/// Run-time boolean input `i`: the mask of a comparison (or of Not, And, Or
/// of comparisons), the only run-time booleans the importer makes.
FailureOr<Value> runtimeMask(NodeImporter &n, unsigned i) {
  FailureOr<Value> v = n.tensor(i);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (type.getElementType() != maskType(n))
    return n.emitError() << n.getOpType() << " input '" << n.inputName(i)
                         << "' is a run-time boolean of type " << type
                         << " that no comparison computed";
  return v;
}

/// Boolean input `i` of a logical op as a mask: a run-time mask, or a
/// compile-time boolean materialised as one.
FailureOr<Value> booleanMask(NodeImporter &n, unsigned i) {
  ImportedValue &x = n.input(i);
  if (x.kind == Kind::Tensor)
    return runtimeMask(n, i);
  if (x.kind != Kind::Constant || !x.constant.getElementType().isInteger(1))
    return n.emitError() << n.getOpType() << " input '" << n.inputName(i)
                         << "' must be a boolean tensor";
  return n.getGraph().materialize(castElements(x.constant, maskType(n)),
                                  n.getLoc());
}

/// `a <op> b` on run-time tensors: an `nn.compare` mask.
LogicalResult runtimeCompare(NodeImporter &n, Compare op) {
  // An integer constant against a run-time integer carried in float
  // (`lengths == 0`) takes the carrier's type.
  auto operand = [&](unsigned i) -> FailureOr<Value> {
    FailureOr<Value> carried = carriedConstant(n, i, n.input(1 - i));
    if (failed(carried) || *carried)
      return carried;
    return n.tensor(i);
  };
  FailureOr<Value> a = operand(0);
  if (failed(a))
    return failure();
  FailureOr<Value> b = operand(1);
  if (failed(b))
    return failure();
  for (Value v : {*a, *b})
    if (cast<RankedTensorType>(v.getType()).getElementType().isInteger(1))
      return n.emitError() << n.getOpType()
                           << " of boolean tensors at run time is not "
                              "supported (compare numbers)";
  nn::ComparePredicate pred;
  switch (op) {
  case Compare::Equal:
    pred = nn::ComparePredicate::eq;
    break;
  case Compare::Less:
    pred = nn::ComparePredicate::lt;
    break;
  case Compare::Greater:
    pred = nn::ComparePredicate::gt;
    break;
  case Compare::LessOrEqual:
    pred = nn::ComparePredicate::le;
    break;
  case Compare::GreaterOrEqual:
    pred = nn::ComparePredicate::ge;
    break;
  case Compare::And:
  case Compare::Or:
  case Compare::Xor:
    llvm_unreachable("logical ops combine masks");
  }
  return n.createOutput<nn::CompareOp>(
      nn::ComparePredicateAttr::get(n.getBuilder().getContext(), pred), *a, *b,
      TypeAttr::get(maskType(n)));
}

/// Equal, Less, Greater, LessOrEqual and GreaterOrEqual fold on shape values
/// (`x.expand(n, -1, -1)` exports `Where(Equal(shape, -1), 1, shape)`) and
/// on constants; a comparison whose answer depends on the batch size is
/// refused. With a run-time operand (a padding mask `ids == 0`) it is an
/// `nn.compare`, which carries no gradient.
template <Compare op> LogicalResult importCompare(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  if (n.input(0).kind == Kind::Tensor || n.input(1).kind == Kind::Tensor)
    return runtimeCompare(n, op);
  if (n.input(0).kind == Kind::Constant || n.input(1).kind == Kind::Constant) {
    FailureOr<DenseElementsAttr> a = n.constant(0, "operand");
    if (failed(a))
      return failure();
    FailureOr<DenseElementsAttr> b = n.constant(1, "operand");
    if (failed(b))
      return failure();
    FailureOr<DenseElementsAttr> r = compareConstants(n, op, *a, *b);
    if (failed(r))
      return failure();
    n.setOutput(0, ImportedValue::ofConstant(*r));
    return success();
  }
  auto a = shapeInts(n, 0);
  if (failed(a))
    return failure();
  auto b = shapeInts(n, 1);
  if (failed(b))
    return failure();
  auto size = broadcastSize(n, {a->first, b->first});
  if (failed(size))
    return failure();
  SmallVector<bool> bits;
  for (size_t i = 0; i < *size; ++i) {
    SymInt x = entry(a->first, i), y = entry(b->first, i);
    std::optional<bool> r = compareSym(op, x, y);
    if (!r)
      return n.emitError() << n.getOpType() << " of " << x << " and " << y
                           << " depends on the batch size B";
    bits.push_back(*r);
  }
  n.setOutput(0, ImportedValue::ofConstant(
                     boolVector(n, bits, a->second && b->second)));
  return success();
}

LogicalResult importNot(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  ImportedValue &x = n.input(0);
  if (x.kind == Kind::Tensor) {
    // A run-time boolean is a mask of 0 and 1: its negation is `mask == 0`.
    FailureOr<Value> mask = runtimeMask(n, 0);
    if (failed(mask))
      return failure();
    Value zero = n.getGraph().materialize(
        DenseElementsAttr::get(RankedTensorType::get({}, maskType(n)), 0.0f),
        n.getLoc());
    return n.createOutput<nn::CompareOp>(
        nn::ComparePredicateAttr::get(n.getBuilder().getContext(),
                                      nn::ComparePredicate::eq),
        *mask, zero, TypeAttr::get(maskType(n)));
  }
  if (x.kind != Kind::Constant || !x.constant.getElementType().isInteger(1))
    return n.emitError() << "Not is supported on booleans, not on shape "
                            "values";
  SmallVector<bool> bits;
  for (bool b : x.constant.getValues<bool>())
    bits.push_back(!b);
  n.setOutput(0, ImportedValue::ofConstant(
                     DenseElementsAttr::get(x.constant.getType(), bits)));
  return success();
}

/// And and Or fold on compile-time booleans of any rank, with broadcasting
/// (masks combined from constant masks). With a run-time operand they
/// combine 0/1 masks: `nn.mul` (and) and `nn.maximum` (or).
template <Compare op> LogicalResult importLogical(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  if (n.input(0).kind == Kind::Tensor || n.input(1).kind == Kind::Tensor) {
    FailureOr<Value> a = booleanMask(n, 0);
    if (failed(a))
      return failure();
    FailureOr<Value> b = booleanMask(n, 1);
    if (failed(b))
      return failure();
    if (op == Compare::And)
      return n.createOutput<nn::MulOp>(*a, *b);
    if (op == Compare::Xor)
      return n.createOutput<nn::CompareOp>(
          nn::ComparePredicateAttr::get(n.getBuilder().getContext(),
                                        nn::ComparePredicate::ne),
          *a, *b, TypeAttr::get(maskType(n)));
    return n.createOutput<nn::MaximumOp>(*a, *b);
  }
  for (unsigned i : {0u, 1u}) {
    ImportedValue &x = n.input(i);
    if (x.kind != Kind::Constant || !x.constant.getElementType().isInteger(1))
      return n.emitError() << n.getOpType()
                           << " is supported on compile-time booleans, not "
                              "on run-time tensors";
  }
  FailureOr<DenseElementsAttr> r =
      compareConstants(n, op, n.input(0).constant, n.input(1).constant);
  if (failed(r))
    return failure();
  n.setOutput(0, ImportedValue::ofConstant(*r));
  return success();
}

/// A compile-time boolean mask as a float tensor of `elt` (1 where it
/// holds), the condition nn.where takes; a run-time boolean is already such
/// a mask (of `maskType`).
FailureOr<Value> floatMask(NodeImporter &n, unsigned i, Type elt) {
  ImportedValue &c = n.input(i);
  if (c.kind == Kind::Tensor)
    return runtimeMask(n, i);
  FailureOr<DenseElementsAttr> bits = n.constant(i, "condition");
  if (failed(bits))
    return failure();
  return n.getGraph().materialize(castElements(*bits, elt), n.getLoc());
}

/// Where: a selection between shape values folds; between tensors, with a
/// compile-time condition (masked_fill with a constant mask, a causal
/// attention mask), it is an nn.where.
LogicalResult importWhere(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  bool values = llvm::all_of(ArrayRef<unsigned>{1, 2}, [&](unsigned i) {
    return n.input(i).kind == Kind::Symbolic;
  });
  if (!values) {
    FailureOr<Value> x = n.numericTensor(1);
    if (failed(x))
      return failure();
    FailureOr<Value> y = n.numericTensor(2);
    if (failed(y))
      return failure();
    Type elt = cast<RankedTensorType>(x->getType()).getElementType();
    FailureOr<Value> mask = floatMask(n, 0, elt);
    if (failed(mask))
      return failure();
    return n.createOutput<nn::WhereOp>(*mask, *x, *y);
  }
  auto cond = shapeInts(n, 0);
  if (failed(cond))
    return failure();
  auto x = shapeInts(n, 1);
  if (failed(x))
    return failure();
  auto y = shapeInts(n, 2);
  if (failed(y))
    return failure();
  auto size = broadcastSize(n, {cond->first, x->first, y->first});
  if (failed(size))
    return failure();
  SmallVector<SymInt> out;
  for (size_t i = 0; i < *size; ++i)
    out.push_back(entry(cond->first, i).coeff ? entry(x->first, i)
                                              : entry(y->first, i));
  n.setOutput(
      0, ImportedValue::ofSymbolic(out, cond->second && x->second && y->second,
                                   n.input(1).symbolicType));
  return success();
}

} // namespace

void importer::populateLogicImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  const char *compareNotes =
      "folded on shape values (`expand`'s `-1` handling) and on constants of "
      "any rank (a mask; a comparison that depends on the batch size is "
      "refused); with a run-time operand (a padding mask `ids == 0`), an "
      "`nn.compare` mask of 0 and 1 in f32, which carries no gradient";
  addImporter(table, "Equal", importCompare<Compare::Equal>)
      .constants(0b11)
      .describe(compareNotes);
  addImporter(table, "Less", importCompare<Compare::Less>)
      .constants(0b11)
      .describe(compareNotes);
  addImporter(table, "Greater", importCompare<Compare::Greater>)
      .constants(0b11)
      .describe(compareNotes);
  addImporter(table, "LessOrEqual", importCompare<Compare::LessOrEqual>)
      .constants(0b11)
      .describe(compareNotes);
  addImporter(table, "GreaterOrEqual", importCompare<Compare::GreaterOrEqual>)
      .constants(0b11)
      .describe(compareNotes);
  addImporter(table, "Not", importNot)
      .constants(1u)
      .describe("folded on compile-time booleans; on a run-time mask, "
                "`nn.compare` `eq` 0");
  addImporter(table, "And", importLogical<Compare::And>)
      .constants(0b11)
      .describe(
          "folded on compile-time booleans of any rank, with broadcasting; on "
          "run-time masks, `nn.mul`");
  addImporter(table, "Or", importLogical<Compare::Or>)
      .constants(0b11)
      .describe(
          "folded on compile-time booleans of any rank, with broadcasting; on "
          "run-time masks, `nn.maximum`");
  addImporter(table, "Xor", importLogical<Compare::Xor>)
      .constants(0b11)
      .describe(
          "folded on compile-time booleans of any rank, with broadcasting; on "
          "run-time masks, `nn.compare <ne>`");
  addImporter(table, "Where", importWhere)
      .constants(1u)
      .describe(
          "folded on shape values; between tensors, a compile-time condition "
          "(`masked_fill` with a constant mask, `-inf` fills) or a run-time "
          "one computed by comparisons (a padding mask from the token ids) "
          "gives `nn.where`, whose gradient reaches only the selected side. A "
          "registered buffer that only views (`Slice`, `Reshape`, ...) and "
          "comparisons read, such as a causal mask, stays a constant and "
          "folds. A boolean graph input is such an f32 mask. The values are "
          "float, int32 or int64");
}

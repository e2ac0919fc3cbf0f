//===- Cast.cpp - Cast and CastLike ---------------------------------------===//
//
// Casts fold on constants and shape values; of run-time tensors they are
// `nn.cast` (to and from the narrow types through their f32 carriers), a
// mask `x != 0` for bool, or nothing for integers computed from masks, which
// float tensors carry exactly (see Gather.cpp).
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include "llvm/ADT/APSInt.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

using Kind = ImportedValue::Kind;

DenseElementsAttr importer::castElements(DenseElementsAttr attr, Type elt) {
  auto type = attr.getType().clone(elt);
  // A splat (ConstantOfShape's) converts once, whatever its size.
  if (attr.isSplat() && attr.getNumElements() > 1) {
    DenseElementsAttr one = castElements(
        attr.resizeSplat(RankedTensorType::get({}, attr.getElementType())),
        elt);
    return one.resizeSplat(type);
  }
  Type from = attr.getElementType();
  if (auto ft = dyn_cast<FloatType>(elt)) {
    SmallVector<APFloat> out;
    if (isa<FloatType>(from)) {
      for (APFloat v : attr.getValues<APFloat>()) {
        bool lost;
        v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        out.push_back(v);
      }
    } else {
      for (const APInt &v : attr.getValues<APInt>()) {
        APFloat f(ft.getFloatSemantics());
        f.convertFromAPInt(v, /*IsSigned=*/!from.isInteger(1),
                           APFloat::rmNearestTiesToEven);
        out.push_back(f);
      }
    }
    return DenseElementsAttr::get(type, out);
  }
  if (elt.isInteger(1)) {
    SmallVector<bool> bits;
    if (isa<FloatType>(from))
      for (const APFloat &v : attr.getValues<APFloat>())
        bits.push_back(!v.isZero());
    else
      for (const APInt &v : attr.getValues<APInt>())
        bits.push_back(!v.isZero());
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  unsigned width = elt.getIntOrFloatBitWidth();
  SmallVector<APInt> out;
  if (isa<FloatType>(from)) {
    for (const APFloat &v : attr.getValues<APFloat>()) {
      APSInt i(width, /*isUnsigned=*/false);
      bool exact;
      v.convertToInteger(i, APFloat::rmTowardZero, &exact);
      out.push_back(i);
    }
  } else {
    for (const APInt &v : attr.getValues<APInt>())
      out.push_back(from.isInteger(1) ? v.zext(width) : v.sextOrTrunc(width));
  }
  return DenseElementsAttr::get(type, out);
}

namespace {

/// Whether `nn.cast` converts between `from` and `to`.
bool castable(Type from, Type to) {
  auto supported = [](Type t) {
    return t.isF32() || t.isF64() || t.isSignlessInteger(32) ||
           t.isSignlessInteger(64);
  };
  return supported(from) && supported(to);
}

/// Input 0 of a Cast or CastLike node converted to `elt`.
LogicalResult castTo(NodeImporter &n, Type elt) {
  ImportedValue &x = n.input(0);
  switch (x.kind) {
  case Kind::Tensor: {
    Type from = cast<RankedTensorType>(x.tensor.getType()).getElementType();
    // To bool: `x != 0` as a mask, the run-time boolean's form (masked_fill
    // exports its boolean mask through such a Cast, after an Unsqueeze); a
    // comparison's mask, viewed or not, already is one.
    if (elt.isInteger(1)) {
      Value source = x.tensor;
      while (auto view = source.getDefiningOp<nn::ReshapeOp>())
        source = view.getInput();
      if (source.getDefiningOp<nn::CompareOp>()) {
        n.setOutput(0, x.tensor);
        return success();
      }
      OpBuilder &b = n.getBuilder();
      Value zero = n.getGraph().materialize(
          DenseElementsAttr::get(RankedTensorType::get({}, from),
                                 b.getZeroAttr(from)),
          n.getLoc());
      return n.createOutput<nn::CompareOp>(
          nn::ComparePredicateAttr::get(b.getContext(),
                                        nn::ComparePredicate::ne),
          x.tensor, zero, TypeAttr::get(maskType(n)));
    }
    // To an integer type: a float tensor holding integers (a count of a
    // mask's entries) stays the float tensor that carries it (Gather.cpp).
    if (isa<FloatType>(from) && elt.isSignlessInteger() &&
        isIntegerValued(x.tensor)) {
      n.setOutput(0, x.tensor);
      return success();
    }
    // From such a carrier back to its own float type.
    if (isa<FloatType>(elt) && elt == from) {
      n.setOutput(0, x.tensor);
      return success();
    }
    if (from == elt) {
      n.setOutput(0, x.tensor);
      return success();
    }
    // Between f32, f64, i32 and i64: `nn.cast` (floats to integers truncate
    // toward zero; a float-to-float cast passes the gradient back).
    if (!castable(from, elt))
      return n.emitError() << "Cast of a run-time tensor from " << from
                           << " to " << elt
                           << " is not supported (f32, f64, i32 and i64 "
                              "convert)";
    return n.createOutput<nn::CastOp>(x.tensor, TypeAttr::get(elt));
  }
  case Kind::Constant:
    n.setOutput(0, ImportedValue::ofConstant(castElements(x.constant, elt)));
    return success();
  case Kind::Symbolic:
    if (elt.isSignlessInteger() && !elt.isInteger(1)) {
      n.setOutput(0, ImportedValue::ofSymbolic(x.symbolic, x.scalar, elt));
      return success();
    }
    FailureOr<DenseElementsAttr> value = n.constant(0, "input");
    if (failed(value))
      return failure();
    n.setOutput(0, ImportedValue::ofConstant(castElements(*value, elt)));
    return success();
  }
  llvm_unreachable("unknown value kind");
}

/// Cast to a narrow type: rounded (or truncated) once, from the input to the
/// narrow type, and held in its carrier (GraphImporter::narrowOutputs marks
/// the result).
LogicalResult castToNarrow(NodeImporter &n, const NarrowType &narrow) {
  ImportedValue &x = n.input(0);
  if (x.kind == Kind::Tensor) {
    Value v = x.tensor;
    // Float to integer goes through the carrier, so that out-of-range values
    // wrap as the carrier's do.
    if (isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType()) &&
        isa<IntegerType>(narrow.storage)) {
      FailureOr<nn::CastOp> wide =
          n.create<nn::CastOp>(v, TypeAttr::get(narrow.carrier), UnitAttr());
      if (failed(wide))
        return failure();
      v = *wide;
    }
    FailureOr<nn::CastOp> stored =
        n.create<nn::CastOp>(v, TypeAttr::get(narrow.storage), UnitAttr());
    if (failed(stored))
      return failure();
    return n.createOutput<nn::CastOp>(
        *stored, TypeAttr::get(narrow.carrier),
        narrow.isUnsigned ? n.getBuilder().getUnitAttr() : UnitAttr());
  }
  std::optional<DenseElementsAttr> values;
  if (x.kind == Kind::Constant)
    values = x.constant;
  else if (FailureOr<DenseElementsAttr> c = n.constant(0, "input");
           succeeded(c))
    values = *c;
  else
    return failure();
  n.setOutput(0, ImportedValue::ofConstant(
                     toNarrowValues(*values, /*isUnsigned=*/false, narrow)));
  return success();
}

LogicalResult importCast(NodeImporter &n) {
  // `saturate` (opset 19) only governs conversions to float8 types, which
  // convertElementType refuses.
  if (failed(n.checkAttrs({"to", "saturate"})))
    return failure();
  FailureOr<int64_t> to = n.getInt("to");
  if (failed(to))
    return failure();
  if (std::optional<NarrowType> narrow =
          getNarrowType(n.getContext(), static_cast<int32_t>(*to)))
    return castToNarrow(n, *narrow);
  Type elt = n.getGraph().convertElementType(*to);
  if (!elt)
    return n.emitError() << "Cast to ONNX data type " << *to
                         << " is not supported";
  return castTo(n, elt);
}

/// CastLike: Cast to the element type of input 1 (whose values are unused).
LogicalResult importCastLike(NodeImporter &n) {
  if (failed(n.checkAttrs({"saturate"})))
    return failure();
  if (!n.hasInput(1))
    return n.emitError() << "CastLike needs a second input";
  ImportedValue &like = n.input(1);
  if (std::optional<NarrowType> narrow =
          getNarrowType(n.getContext(), like.narrow))
    return castToNarrow(n, *narrow);
  Type elt;
  switch (like.kind) {
  case Kind::Tensor:
    elt = cast<RankedTensorType>(like.tensor.getType()).getElementType();
    break;
  case Kind::Constant:
    elt = like.constant.getElementType();
    break;
  case Kind::Symbolic:
    elt = like.symbolicType;
    break;
  }
  return castTo(n, elt);
}

} // namespace

void importer::populateCastImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  addImporter(table, "Cast", importCast)
      .describe(
          "folded at compile time; of a run-time tensor between f32, f64, i32 "
          "and i64 (`nn.cast`; floats to integers truncate toward zero), to "
          "and from int8, uint8, int16, uint16, uint32, float16 and bfloat16 "
          "(rounding once, to nearest even; integers wrap), or to bool: the "
          "mask `x != 0` (`nn.compare`); of a mask or of integers computed "
          "from masks to an integer type (`(ids != 0).sum(1)`): the same float "
          "tensor, which carries them exactly (see `Gather`)");
  addImporter(table, "CastLike", importCastLike)
      .since(15)
      .constants(0b10)
      .describe("`Cast` to the second input's element type");
}

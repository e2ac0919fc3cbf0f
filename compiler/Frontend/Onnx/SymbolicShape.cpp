//===- SymbolicShape.cpp - Shapes of run-time tensors, up to B ------------===//
//
// Integers known up to the batch size B (`SymInt`: `coeff * B^power`), their
// arithmetic, and the shape of a run-time tensor in them, read back through
// the nn ops that made it:
// exporters compute reshape targets at run time (`Shape`, `Gather`,
// `Unsqueeze`, `Concat`) even when every dimension but the batch is static,
// and the shape importers fold such computations on these integers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

//===----------------------------------------------------------------------===//
// SymInt
//===----------------------------------------------------------------------===//

/// Keeps zero in one form so equal values compare equal.
static SymInt normalized(int64_t coeff, int64_t power) {
  return coeff == 0 ? SymInt::constant(0) : SymInt{coeff, power};
}

llvm::raw_ostream &importer::operator<<(llvm::raw_ostream &os, SymInt v) {
  if (v.isConstant())
    return os << v.coeff;
  if (v.coeff != 1)
    os << v.coeff << "*";
  os << "B";
  if (v.power != 1)
    os << "^" << v.power;
  return os;
}

Diagnostic &importer::operator<<(Diagnostic &diag, SymInt v) {
  std::string text;
  llvm::raw_string_ostream(text) << v;
  return diag << text;
}

FailureOr<SymInt> importer::add(SymInt a, SymInt b) {
  if (a.coeff == 0)
    return b;
  if (b.coeff == 0)
    return a;
  int64_t sum;
  if (a.power != b.power || llvm::AddOverflow(a.coeff, b.coeff, sum))
    return failure();
  return normalized(sum, a.power);
}

FailureOr<SymInt> importer::sub(SymInt a, SymInt b) {
  if (b.coeff == std::numeric_limits<int64_t>::min())
    return failure();
  return add(a, SymInt{-b.coeff, b.power});
}

FailureOr<SymInt> importer::mul(SymInt a, SymInt b) {
  int64_t product, power;
  if (llvm::MulOverflow(a.coeff, b.coeff, product) ||
      llvm::AddOverflow(a.power, b.power, power))
    return failure();
  return normalized(product, power);
}

FailureOr<SymInt> importer::div(SymInt a, SymInt b) {
  if (b.coeff == 0 ||
      (a.coeff == std::numeric_limits<int64_t>::min() && b.coeff == -1))
    return failure();
  if (a.coeff == 0)
    return SymInt::constant(0);
  // Between compile-time integers this is ONNX's truncating division; with
  // the batch size involved only an exact quotient is known.
  if (a.isConstant() && b.isConstant())
    return SymInt::constant(a.coeff / b.coeff);
  if (a.power < b.power || a.coeff % b.coeff != 0)
    return failure();
  return normalized(a.coeff / b.coeff, a.power - b.power);
}

//===----------------------------------------------------------------------===//
// Symbolic shapes of run-time tensors
//===----------------------------------------------------------------------===//

FailureOr<SymInt> importer::product(ArrayRef<SymInt> dims) {
  SymInt p = SymInt::constant(1);
  for (SymInt d : dims) {
    FailureOr<SymInt> next = mul(p, d);
    if (failed(next))
      return failure();
    p = *next;
  }
  return p;
}

/// Exact quotient, also between compile-time integers.
static FailureOr<SymInt> exactDiv(SymInt a, SymInt b) {
  FailureOr<SymInt> q = div(a, b);
  if (failed(q))
    return failure();
  FailureOr<SymInt> back = mul(*q, b);
  if (failed(back) || !(*back == a))
    return failure();
  return q;
}

FailureOr<SymInt> importer::exactRatio(ArrayRef<SymInt> dividend,
                                       ArrayRef<SymInt> divisor) {
  FailureOr<SymInt> a = product(dividend), b = product(divisor);
  if (failed(a) || failed(b))
    return failure();
  return exactDiv(*a, *b);
}

FailureOr<SmallVector<SymInt>> GraphImporter::symbolicShape(Value v,
                                                            Location loc) {
  if (auto it = symbolicShapes.find(v); it != symbolicShapes.end())
    return it->second;
  // Failures are not kept: each query reports its own error.
  FailureOr<SmallVector<SymInt>> shape = computeSymbolicShape(v, loc);
  if (succeeded(shape))
    symbolicShapes[v] = *shape;
  return shape;
}

FailureOr<SmallVector<SymInt>>
GraphImporter::computeSymbolicShape(Value v, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<SymInt> shape;
  for (int64_t d : type.getShape())
    shape.push_back(SymInt::constant(ShapedType::isDynamic(d) ? -1 : d));
  if (type.hasStaticShape())
    return shape;
  auto fail = [&]() -> FailureOr<SmallVector<SymInt>> {
    return mlir::emitError(loc) << "cannot tell the dynamic dimensions of "
                                << type << " in terms of the batch size";
  };
  // Fills the dynamic dimensions of `shape` from `from`, which has the same
  // rank and the same dimensions.
  auto sameAs = [&](Value from) -> FailureOr<SmallVector<SymInt>> {
    if (cast<RankedTensorType>(from.getType()).getShape() != type.getShape())
      return fail();
    return symbolicShape(from, loc);
  };

  if (auto arg = dyn_cast<BlockArgument>(v)) {
    // Data inputs: only dimension 0 may be dynamic, and it is the batch.
    for (auto [i, d] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(d) && i != 0)
        return fail();
    shape[0] = SymInt::batch();
    return shape;
  }

  Operation *op = v.getDefiningOp();
  auto operandShape = [&](unsigned i) {
    return symbolicShape(op->getOperand(i), loc);
  };
  using Result = FailureOr<SmallVector<SymInt>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([&](nn::ReshapeOp r) -> Result {
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        SmallVector<SymInt> known;
        int64_t inferred = -1;
        for (auto [i, d] : llvm::enumerate(r.getShape())) {
          if (d == -1)
            inferred = i;
          else
            known.push_back(SymInt::constant(d));
          shape[i] = SymInt::constant(d);
        }
        if (inferred < 0)
          return fail();
        FailureOr<SymInt> q = exactRatio(*in, known);
        if (failed(q))
          return fail();
        shape[inferred] = *q;
        return shape;
      })
      .Case([&](nn::FlattenOp f) -> Result {
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        int64_t axis = static_cast<int64_t>(f.getAxis());
        if (axis < 0)
          axis += in->size();
        FailureOr<SymInt> outer = product(ArrayRef(*in).take_front(axis));
        FailureOr<SymInt> inner = product(ArrayRef(*in).drop_front(axis));
        if (failed(outer) || failed(inner))
          return fail();
        return SmallVector<SymInt>{*outer, *inner};
      })
      .Case([&](nn::TransposeOp t) -> Result {
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        SmallVector<SymInt> out;
        for (int64_t p : t.getPermutation())
          out.push_back((*in)[p]);
        return out;
      })
      .Case([&](nn::ConcatOp c) -> Result {
        int64_t axis = static_cast<int64_t>(c.getAxis());
        if (axis < 0)
          axis += type.getRank();
        SmallVector<SymInt> out;
        for (auto [i, input] : llvm::enumerate(c.getInputs())) {
          auto in = symbolicShape(input, loc);
          if (failed(in))
            return failure();
          if (i == 0) {
            out = *in;
            continue;
          }
          FailureOr<SymInt> sum = add(out[axis], (*in)[axis]);
          if (failed(sum))
            return fail();
          out[axis] = *sum;
        }
        return out;
      })
      .Case([&](nn::SliceOp s) -> Result {
        // The importer leaves only whole dynamic dimensions (-1 sizes from
        // 0 with stride 1).
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        for (int64_t d = 0; d < type.getRank(); ++d) {
          if (!type.isDynamicDim(d))
            continue;
          if (s.getStarts()[d] != 0 || s.getStrides()[d] != 1)
            return fail();
          shape[d] = (*in)[d];
        }
        return shape;
      })
      .Case([&](nn::BroadcastToOp b) -> Result {
        // -1 is the batch size (see importExpand).
        for (auto [d, size] : llvm::enumerate(b.getShape()))
          if (size == -1)
            shape[d] = SymInt::batch();
        return shape;
      })
      .Case([&](nn::MatmulOp m) -> Result {
        auto lhs = operandShape(0), rhs = operandShape(1);
        if (failed(lhs) || failed(rhs))
          return failure();
        size_t lr = lhs->size(), rr = rhs->size();
        SmallVector<SymInt> out(lhs->begin(), lhs->end() - 2);
        out.push_back(m.getTransposeA() ? (*lhs)[lr - 1] : (*lhs)[lr - 2]);
        out.push_back(m.getTransposeB() ? (*rhs)[rr - 2] : (*rhs)[rr - 1]);
        return out;
      })
      .Case([&](nn::LinearOp l) -> Result {
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        in->back() = shape.back();
        return in;
      })
      .Case([&](nn::EmbeddingOp e) -> Result {
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        in->push_back(shape.back());
        return in;
      })
      .Case([&](nn::GatherOp g) -> Result {
        auto in = operandShape(0), ids = operandShape(1);
        if (failed(in) || failed(ids))
          return failure();
        int64_t axis = g.getAxis();
        SmallVector<SymInt> out(in->begin(), in->begin() + axis);
        out.append(ids->begin(), ids->end());
        out.append(in->begin() + axis + 1, in->end());
        return out;
      })
      .Case([&](nn::GatherElementsOp) { return operandShape(1); })
      .Case([&](nn::IotaOp i) -> Result {
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        return SmallVector<SymInt>{(*in)[i.getAxis()]};
      })
      .Case<nn::ReduceSumOp, nn::ReduceMeanOp, nn::ReduceMaxOp>(
          [&](auto r) -> Result {
            auto in = operandShape(0);
            if (failed(in))
              return failure();
            SmallVector<int64_t> axes = r.getReducedAxes();
            SmallVector<SymInt> out;
            for (auto [i, d] : llvm::enumerate(*in)) {
              if (!llvm::is_contained(axes, (int64_t)i))
                out.push_back(d);
              else if (r.getKeepdims())
                out.push_back(SymInt::constant(1));
            }
            return out;
          })
      .Case<nn::Conv2DOp, nn::Conv2DGradInputOp, nn::MaxPool2DOp,
            nn::AvgPool2DOp, nn::GlobalAvgPoolOp>([&](auto) -> Result {
        // Only the batch dimension can be dynamic: spatial sizes are static.
        auto in = operandShape(0);
        if (failed(in))
          return failure();
        for (int64_t d = 1; d < type.getRank(); ++d)
          if (type.isDynamicDim(d))
            return fail();
        shape[0] = (*in)[0];
        return shape;
      })
      .Case<nn::BatchNormOp, nn::LayerNormOp, nn::SoftmaxOp, nn::LogSoftmaxOp,
            nn::DropoutOp>([&](auto) { return sameAs(op->getOperand(0)); })
      .Default([&](Operation *other) -> Result {
        if (other->hasTrait<nn::Elementwise>()) {
          // Numpy broadcasting: a dynamic result dimension comes from an
          // operand whose aligned dimension is dynamic.
          for (Value operand : other->getOperands()) {
            auto t = cast<RankedTensorType>(operand.getType());
            int64_t offset = type.getRank() - t.getRank();
            auto in = symbolicShape(operand, loc);
            if (failed(in))
              return failure();
            for (int64_t d = 0; d < t.getRank(); ++d)
              if (t.isDynamicDim(d) && type.isDynamicDim(d + offset))
                shape[d + offset] = (*in)[d];
          }
          return shape;
        }
        if (other->hasTrait<OpTrait::SameOperandsAndResultType>())
          return sameAs(other->getOperand(0));
        return fail();
      });
}

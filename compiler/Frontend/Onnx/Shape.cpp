//===- Shape.cpp - Constants, shapes, reshapes, slicing and gathers -------===//
//
// Exporters compute reshape targets at run time (`Shape`, `Gather`,
// `Unsqueeze`, `Concat`) even when every dimension but the batch is static.
// These importers fold such computations on integers known up to the batch
// size, so only the tensor ops themselves reach the nn graph.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

using Kind = ImportedValue::Kind;

//===----------------------------------------------------------------------===//
// Symbolic shapes of run-time tensors
//===----------------------------------------------------------------------===//

static FailureOr<SymInt> product(ArrayRef<SymInt> dims) {
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

/// `product(dividend) / product(divisor)`, exactly.
static FailureOr<SymInt> exactRatio(ArrayRef<SymInt> dividend,
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

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// The shape of an imported value of any kind, up to the batch size.
FailureOr<SmallVector<SymInt>> shapeOf(NodeImporter &n, ImportedValue &v) {
  switch (v.kind) {
  case Kind::Tensor:
    return n.getGraph().symbolicShape(v.tensor, n.getLoc());
  case Kind::Constant: {
    SmallVector<SymInt> shape;
    for (int64_t d : v.constant.getType().getShape())
      shape.push_back(SymInt::constant(d));
    return shape;
  }
  case Kind::Symbolic:
    if (v.scalar)
      return SmallVector<SymInt>{};
    return SmallVector<SymInt>{SymInt::constant(v.symbolic.size())};
  }
  llvm_unreachable("unknown value kind");
}

/// Static dimensions of `shape`, or failure if one depends on the batch.
std::optional<SmallVector<int64_t>> staticDims(ArrayRef<SymInt> shape) {
  SmallVector<int64_t> dims;
  for (SymInt s : shape) {
    if (!s.isConstant())
      return std::nullopt;
    dims.push_back(s.coeff);
  }
  return dims;
}

/// Gives `v` a new shape: an `nn.reshape` of a tensor, a folded constant or
/// shape value.
LogicalResult setReshaped(NodeImporter &n, ImportedValue &v,
                          ArrayRef<SymInt> shape) {
  if (v.kind == Kind::Tensor) {
    FailureOr<Value> r = n.reshape(v.tensor, shape);
    if (failed(r))
      return failure();
    n.setOutput(0, *r);
    return success();
  }
  std::optional<SmallVector<int64_t>> dims = staticDims(shape);
  assert(dims && "constants have static shapes");
  if (v.kind == Kind::Constant) {
    n.setOutput(0, ImportedValue::ofConstant(
                       v.constant.reshape(v.constant.getType().clone(*dims))));
    return success();
  }
  if (dims->size() > 1) {
    // Compile-time integers of higher rank are constants (positions
    // unsqueezed into a row and a column of a mask).
    if (!llvm::all_of(v.symbolic, [](SymInt d) { return d.isConstant(); }))
      return n.emitError() << "reshaping the shape value '" << n.inputName(0)
                           << "' to rank " << dims->size()
                           << " is not supported";
    FailureOr<DenseElementsAttr> values = n.constant(0, "input");
    if (failed(values))
      return failure();
    n.setOutput(0, ImportedValue::ofConstant(
                       values->reshape(values->getType().clone(*dims))));
    return success();
  }
  n.setOutput(
      0, ImportedValue::ofSymbolic(v.symbolic, dims->empty(), v.symbolicType));
  return success();
}

/// One axis of an ONNX Slice, clamped as ONNX does, with a positive step.
struct SliceRange {
  int64_t start, size, step;
};

/// The range of a Slice along a dimension of size `dim`. It may select no
/// element (`allowEmpty`) only in a shape value: nn has no empty tensors.
FailureOr<SliceRange> clampSlice(NodeImporter &n, int64_t dim, int64_t start,
                                 int64_t end, int64_t step,
                                 bool allowEmpty = false) {
  if (step <= 0)
    return n.emitError() << n.getOpType() << " step " << step
                         << " is not supported; steps must be positive";
  auto clamp = [dim](int64_t x) {
    if (x < 0)
      x = x < -dim ? 0 : x + dim;
    return std::min(x, dim);
  };
  start = clamp(start);
  end = clamp(end);
  int64_t size = end > start ? (end - start - 1) / step + 1 : 0;
  if (size == 0 && !allowEmpty)
    return n.emitError() << n.getOpType()
                         << " selects no element; empty tensors are not "
                            "supported";
  return SliceRange{start, size, step};
}

/// `nn.slice` of `x` taking `ranges` along the given axes and all of every
/// other axis. The axes sliced must be static; a dynamic (batch) dimension
/// that is not sliced is kept whole with a -1 size, which specialisation
/// resolves.
FailureOr<Value> sliceAxes(NodeImporter &n, Value x,
                           ArrayRef<std::pair<int64_t, SliceRange>> ranges) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), strides(type.getRank(), 1);
  SmallVector<int64_t> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(ShapedType::isDynamic(d) ? -1 : d);
  for (auto [axis, range] : ranges) {
    assert(!type.isDynamicDim(axis) && "slicing a dynamic dimension");
    starts[axis] = range.start;
    sizes[axis] = range.size;
    strides[axis] = range.step;
  }
  auto op = n.create<nn::SliceOp>(x, starts, sizes, strides);
  if (failed(op))
    return failure();
  return op->getResult();
}

/// The elements of `attr` that `ranges` select (all of every other axis).
DenseElementsAttr
sliceConstant(DenseElementsAttr attr,
              ArrayRef<std::pair<int64_t, SliceRange>> ranges) {
  ArrayRef<int64_t> in = attr.getType().getShape();
  int64_t rank = in.size();
  SmallVector<int64_t> starts(rank, 0), sizes(in), steps(rank, 1);
  for (auto [axis, range] : ranges) {
    starts[axis] = range.start;
    sizes[axis] = range.size;
    steps[axis] = range.step;
  }
  if (attr.isSplat())
    return attr.resizeSplat(attr.getType().clone(sizes));
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * in[d + 1];
  auto all = attr.getValues<Attribute>();
  SmallVector<Attribute> out;
  SmallVector<int64_t> index(rank, 0);
  int64_t count = 1;
  for (int64_t s : sizes)
    count *= s;
  for (int64_t k = 0; k < count; ++k) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += (starts[d] + index[d] * steps[d]) * strides[d];
    out.push_back(all[flat]);
    for (int64_t d = rank - 1; d >= 0 && ++index[d] == sizes[d]; --d)
      index[d] = 0;
  }
  return DenseElementsAttr::get(attr.getType().clone(sizes), out);
}

//===----------------------------------------------------------------------===//
// Importers
//===----------------------------------------------------------------------===//

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

LogicalResult importIdentity(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  ImportedValue copy = n.input(0);
  n.setOutput(0, std::move(copy));
  return success();
}

LogicalResult importShape(NodeImporter &n) {
  if (failed(n.checkAttrs({"start", "end"})))
    return failure();
  auto shape = shapeOf(n, n.input(0));
  if (failed(shape))
    return failure();
  int64_t rank = shape->size();
  auto clamp = [rank](int64_t x) {
    if (x < 0)
      x += rank;
    return std::clamp<int64_t>(x, 0, rank);
  };
  FailureOr<int64_t> start = n.getInt("start", 0);
  FailureOr<int64_t> end = n.getInt("end", rank);
  if (failed(start) || failed(end))
    return failure();
  int64_t s = clamp(*start), e = std::max(clamp(*end), s);
  n.setOutput(0, ImportedValue::ofSymbolic(ArrayRef(*shape).slice(s, e - s),
                                           /*scalar=*/false,
                                           n.getBuilder().getI64Type()));
  return success();
}

/// Size: the number of elements, known up to the batch size.
LogicalResult importSize(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  auto shape = shapeOf(n, n.input(0));
  if (failed(shape))
    return failure();
  SymInt size = SymInt::constant(1);
  for (SymInt d : *shape) {
    FailureOr<SymInt> product = mul(size, d);
    if (failed(product))
      return n.emitError() << "Size of a tensor of " << size << " * " << d
                           << " elements (B is the batch size) overflows";
    size = *product;
  }
  n.setOutput(0, ImportedValue::ofSymbolic({size}, /*scalar=*/true,
                                           n.getBuilder().getI64Type()));
  return success();
}

LogicalResult importReshape(NodeImporter &n) {
  if (failed(n.checkAttrs({"allowzero"})))
    return failure();
  FailureOr<int64_t> allowZero = n.getInt("allowzero", 0);
  auto target = n.symbolicInts(1, "shape");
  if (failed(allowZero) || failed(target))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  SmallVector<SymInt> out(*target);
  int64_t inferred = -1;
  for (auto [i, t] : llvm::enumerate(*target)) {
    if (!t.isConstant() || t.coeff > 0)
      continue;
    if (t.coeff == 0 && !*allowZero) {
      // 0 copies the input dimension.
      if (i >= in->size())
        return n.emitError() << "Reshape target [" << ArrayRef(*target)
                             << "] copies dimension " << i << " of a rank-"
                             << in->size() << " input";
      out[i] = (*in)[i];
    } else if (t.coeff == 0) {
      return n.emitError() << "Reshape to an empty tensor is not supported";
    } else if (t.coeff == -1 && inferred < 0) {
      inferred = i;
    } else {
      return n.emitError() << "Reshape target [" << ArrayRef(*target)
                           << "] is invalid";
    }
  }
  if (inferred >= 0) {
    SmallVector<SymInt> known(out);
    known.erase(known.begin() + inferred);
    FailureOr<SymInt> q = exactRatio(*in, known);
    if (failed(q))
      return n.emitError() << "cannot reshape [" << ArrayRef(*in) << "] to ["
                           << ArrayRef(*target) << "] (B is the batch size)";
    out[inferred] = *q;
  }
  FailureOr<SymInt> before = product(*in), after = product(out);
  if (failed(before) || failed(after) || !(*before == *after))
    return n.emitError() << "cannot reshape [" << ArrayRef(*in) << "] to ["
                         << ArrayRef(out)
                         << "]: the element counts differ (B is the batch "
                            "size)";
  return setReshaped(n, x, out);
}

LogicalResult importFlatten(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis", 1);
  if (failed(axis))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  int64_t rank = in->size();
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a > rank)
    return n.emitError() << "Flatten axis " << *axis
                         << " is out of range for rank " << rank;
  if (x.kind != Kind::Tensor) {
    // Constants and shape values have static shapes.
    FailureOr<SymInt> outer = product(ArrayRef(*in).take_front(a));
    FailureOr<SymInt> inner = product(ArrayRef(*in).drop_front(a));
    if (failed(outer) || failed(inner))
      return n.emitError() << "Flatten of a tensor that is too large";
    return setReshaped(n, x, {*outer, *inner});
  }
  return n.createOutput<nn::FlattenOp>(x.tensor, static_cast<uint64_t>(a));
}

LogicalResult importTranspose(NodeImporter &n) {
  if (failed(n.checkAttrs({"perm"})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  FailureOr<SmallVector<int64_t>> perm = n.getInts("perm", ArrayRef(reversed));
  if (failed(perm))
    return failure();
  return n.createOutput<nn::TransposeOp>(*x, *perm);
}

/// `x` reshaped to `split`, transposed by `perm`, and reshaped to `out`:
/// DepthToSpace and SpaceToDepth, which move blocks between the channels and
/// the image.
LogicalResult rearrange(NodeImporter &n, Value x, ArrayRef<SymInt> split,
                        ArrayRef<int64_t> perm, ArrayRef<SymInt> out) {
  FailureOr<Value> blocks = n.reshape(x, split);
  if (failed(blocks))
    return failure();
  FailureOr<nn::TransposeOp> moved = n.create<nn::TransposeOp>(*blocks, perm);
  if (failed(moved))
    return failure();
  FailureOr<Value> y = n.reshape(moved->getResult(), out);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

/// The NCHW shape of `x`, the input of DepthToSpace (`toSpace`) or
/// SpaceToDepth, and the node's `blocksize`, checked to divide the channels
/// (by its square) or the height and width.
FailureOr<std::pair<SmallVector<SymInt>, int64_t>>
blockShape(NodeImporter &n, Value x, bool toSpace) {
  FailureOr<int64_t> block = n.getInt("blocksize");
  if (failed(block))
    return failure();
  FailureOr<SmallVector<SymInt>> shape =
      n.getGraph().symbolicShape(x, n.getLoc());
  if (failed(shape))
    return failure();
  if (shape->size() != 4)
    return n.emitError() << n.getOpType()
                         << " is supported on NCHW images, got " << x.getType();
  if (!(*shape)[1].isConstant() || !(*shape)[2].isConstant() ||
      !(*shape)[3].isConstant())
    return n.emitError() << n.getOpType()
                         << " needs the channels, height and width of "
                         << x.getType() << " known at compile time";
  if (*block < 1)
    return n.emitError() << n.getOpType() << " blocksize " << *block
                         << " must be positive";
  auto divides = [&](SymInt d) {
    return d.isConstant() &&
           d.coeff % (toSpace ? *block * *block : *block) == 0;
  };
  bool ok = toSpace ? divides((*shape)[1])
                    : divides((*shape)[2]) && divides((*shape)[3]);
  if (!ok)
    return n.emitError() << n.getOpType() << " blocksize " << *block
                         << " does not divide the "
                         << (toSpace ? "channels" : "height and width")
                         << " of " << x.getType();
  return std::make_pair(*shape, *block);
}

/// DepthToSpace: channel blocks become `blocksize` x `blocksize` pixels,
/// depth-column-row (DCR, the default) or column-row-depth (CRD, PyTorch's
/// `pixel_shuffle`) ordered.
LogicalResult importDepthToSpace(NodeImporter &n) {
  if (failed(n.checkAttrs({"blocksize", "mode"})))
    return failure();
  FailureOr<std::string> mode = n.getString("mode", "DCR");
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(mode) || failed(x))
    return failure();
  if (*mode != "DCR" && *mode != "CRD")
    return n.emitError() << "DepthToSpace mode '" << *mode
                         << "' is not supported (expected DCR or CRD)";
  auto shape = blockShape(n, *x, /*toSpace=*/true);
  if (failed(shape))
    return failure();
  auto [dims, block] = *shape;
  SymInt batch = dims[0], b = SymInt::constant(block);
  int64_t c = dims[1].coeff, h = dims[2].coeff, w = dims[3].coeff;
  SymInt depth = SymInt::constant(c / (block * block));
  SmallVector<SymInt> out = {batch, depth, SymInt::constant(h * block),
                             SymInt::constant(w * block)};
  if (*mode == "DCR")
    return rearrange(n, *x, {batch, b, b, depth, dims[2], dims[3]},
                     {0, 3, 4, 1, 5, 2}, out);
  return rearrange(n, *x, {batch, depth, b, b, dims[2], dims[3]},
                   {0, 1, 4, 2, 5, 3}, out);
}

/// SpaceToDepth: `blocksize` x `blocksize` pixels become channels, the
/// inverse of DepthToSpace in DCR mode.
LogicalResult importSpaceToDepth(NodeImporter &n) {
  if (failed(n.checkAttrs({"blocksize"})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  auto shape = blockShape(n, *x, /*toSpace=*/false);
  if (failed(shape))
    return failure();
  auto [dims, block] = *shape;
  SymInt batch = dims[0], b = SymInt::constant(block);
  int64_t c = dims[1].coeff, h = dims[2].coeff, w = dims[3].coeff;
  SymInt rows = SymInt::constant(h / block), cols = SymInt::constant(w / block);
  return rearrange(n, *x, {batch, dims[1], rows, b, cols, b},
                   {0, 3, 5, 1, 2, 4},
                   {batch, SymInt::constant(c * block * block), rows, cols});
}

LogicalResult importConcat(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis");
  if (failed(axis))
    return failure();
  if (n.getNumInputs() == 0)
    return n.emitError() << "Concat needs inputs";
  bool allSymbolic = true;
  for (unsigned i = 0; i < n.getNumInputs(); ++i)
    allSymbolic &= n.hasInput(i) && n.input(i).kind == Kind::Symbolic;
  if (allSymbolic) {
    SmallVector<SymInt> out;
    for (unsigned i = 0; i < n.getNumInputs(); ++i) {
      ImportedValue &v = n.input(i);
      if (v.scalar)
        return n.emitError() << "Concat of a scalar";
      out.append(v.symbolic);
    }
    n.setOutput(0, ImportedValue::ofSymbolic(out, /*scalar=*/false,
                                             n.input(0).symbolicType));
    return success();
  }
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < n.getNumInputs(); ++i) {
    FailureOr<Value> v = n.floatTensor(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  int64_t rank = cast<RankedTensorType>(inputs[0].getType()).getRank();
  std::optional<int64_t> a = normalizeAxis(*axis, rank);
  if (!a)
    return n.emitError() << "Concat axis " << *axis
                         << " is out of range for rank " << rank;
  return n.createOutput<nn::ConcatOp>(ValueRange(inputs),
                                      static_cast<uint64_t>(*a));
}

LogicalResult importSlice(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  // Bounds may depend on the batch size (`x[:x.size(0)]`); such a bound must
  // then cover the whole batch dimension.
  auto starts = n.symbolicInts(1, "starts");
  auto ends = n.symbolicInts(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  int64_t rank = in->size();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  for (int64_t i = 0; i < (int64_t)starts->size(); ++i)
    axes.push_back(i);
  if (n.hasInput(3)) {
    auto given = n.constantInts(3, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (n.hasInput(4)) {
    auto given = n.constantInts(4, "steps");
    if (failed(given))
      return failure();
    steps = *given;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return n.emitError() << "Slice starts, ends, axes and steps differ in "
                            "length";

  // Resolves the bounds along `axis`, of symbolic size `dim`: a range of a
  // static dimension, or std::nullopt for the whole of a batch-dependent
  // one (start 0, end at or past its size, step 1).
  auto rangeOf = [&](size_t i, int64_t axis, SymInt dim,
                     bool allowEmpty) -> FailureOr<std::optional<SliceRange>> {
    SymInt start = (*starts)[i], end = (*ends)[i];
    int64_t step = steps[i];
    if (dim.isConstant()) {
      // A bound in terms of B on a static dimension cannot be clamped.
      if (!start.isConstant() || !end.isConstant())
        return n.emitError()
               << "Slice bounds [" << start << ", " << end << ") of dimension "
               << axis << " of size " << dim << " depend on the batch size B";
      FailureOr<SliceRange> r =
          clampSlice(n, dim.coeff, start.coeff, end.coeff, step, allowEmpty);
      if (failed(r))
        return failure();
      return std::optional<SliceRange>(*r);
    }
    // INT64_MAX (PyTorch's `x[a:]`) or B itself reaches the end.
    bool fromStart = start == SymInt::constant(0);
    bool toEnd =
        end == dim ||
        (end.isConstant() && end.coeff == std::numeric_limits<int64_t>::max());
    if (!fromStart || !toEnd || step != 1)
      return n.emitError()
             << "Slice [" << start << ":" << end << ":" << step
             << "] of dimension " << axis << " of size " << dim
             << " is not supported: along a batch-dependent dimension only "
                "the whole dimension can be taken (B is the batch size)";
    return std::optional<SliceRange>();
  };

  if (x.kind == Kind::Symbolic) {
    if (starts->size() != 1 || !normalizeAxis(axes[0], 1))
      return n.emitError() << "Slice of a shape value must be along axis 0";
    auto range = rangeOf(0, 0, SymInt::constant(x.symbolic.size()),
                         /*allowEmpty=*/true);
    if (failed(range))
      return failure();
    SmallVector<SymInt> out;
    for (int64_t k = 0; k < (*range)->size; ++k)
      out.push_back(x.symbolic[(*range)->start + k * (*range)->step]);
    n.setOutput(
        0, ImportedValue::ofSymbolic(out, /*scalar=*/false, x.symbolicType));
    return success();
  }

  SmallVector<std::pair<int64_t, SliceRange>> ranges;
  SmallVector<int64_t> seen;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a || llvm::is_contained(seen, *a))
      return n.emitError() << "Slice axes [" << ArrayRef(axes)
                           << "] are invalid for rank " << rank;
    seen.push_back(*a);
    auto range = rangeOf(i, *a, (*in)[*a], /*allowEmpty=*/false);
    if (failed(range))
      return failure();
    if (*range)
      ranges.push_back({*a, **range});
  }
  // A view of a constant (a registered mask) folds.
  if (x.kind == Kind::Constant) {
    n.setOutput(0,
                ImportedValue::ofConstant(sliceConstant(x.constant, ranges)));
    return success();
  }
  FailureOr<Value> value = n.floatTensor(0);
  if (failed(value))
    return failure();
  FailureOr<Value> sliced = sliceAxes(n, *value, ranges);
  if (failed(sliced))
    return failure();
  n.setOutput(0, *sliced);
  return success();
}

/// Split into sizes given as an input, into `num_outputs` parts (opset 18:
/// each ceil(dim / num_outputs), the last one smaller), or into as many
/// equal parts as the node has outputs.
LogicalResult importSplit(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis", "num_outputs"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis", 0);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(axis) || failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::optional<int64_t> a = normalizeAxis(*axis, type.getRank());
  if (!a)
    return n.emitError() << "Split axis " << *axis
                         << " is out of range for rank " << type.getRank();
  if (type.isDynamicDim(*a))
    return n.emitError() << "Split along dynamic dimension " << *a
                         << " is not supported";
  int64_t dim = type.getDimSize(*a), parts = n.getNumOutputs();
  SmallVector<int64_t> sizes;
  if (n.hasInput(1)) {
    if (n.hasAttr("num_outputs"))
      return n.emitError() << "Split has both a split input and num_outputs";
    auto given = n.constantInts(1, "split");
    if (failed(given))
      return failure();
    sizes = *given;
  } else if (n.hasAttr("num_outputs")) {
    FailureOr<int64_t> count = n.getInt("num_outputs");
    if (failed(count))
      return failure();
    if (*count != parts)
      return n.emitError() << "Split num_outputs " << *count
                           << " differs from its " << parts << " outputs";
    if (parts <= 0 || parts > dim)
      return n.emitError() << "Split of size " << dim << " into " << parts
                           << " parts";
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t start = 0; start < dim; start += chunk)
      sizes.push_back(std::min(chunk, dim - start));
  } else {
    if (parts == 0 || dim % parts != 0)
      return n.emitError() << "Split of size " << dim << " into " << parts
                           << " equal parts";
    sizes.assign(parts, dim / parts);
  }
  int64_t total = 0;
  bool positive = true;
  for (int64_t s : sizes) {
    positive &= s > 0 && s <= dim;
    total += positive ? s : 0;
  }
  if (!positive || (int64_t)sizes.size() != parts || total != dim)
    return n.emitError() << "Split sizes [" << ArrayRef(sizes)
                         << "] do not partition dimension " << *a << " of size "
                         << dim << " into " << parts << " outputs";
  int64_t start = 0;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    FailureOr<Value> part = sliceAxes(n, *x, {{*a, {start, size, 1}}});
    if (failed(part))
      return failure();
    n.setOutput(i, *part);
    start += size;
  }
  return success();
}

LogicalResult importSqueeze(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  int64_t rank = in->size();
  SmallVector<bool> drop(rank, false);
  if (n.hasInput(1)) {
    auto axes = n.constantInts(1, "axes");
    if (failed(axes))
      return failure();
    for (int64_t axis : *axes) {
      std::optional<int64_t> a = normalizeAxis(axis, rank);
      if (!a)
        return n.emitError() << "Squeeze axis " << axis
                             << " is out of range for rank " << rank;
      if (!((*in)[*a] == SymInt::constant(1)))
        return n.emitError() << "Squeeze of dimension " << *a << " of size "
                             << (*in)[*a] << " (B is the batch size)";
      drop[*a] = true;
    }
  } else {
    // Without axes every size-1 dimension goes; a batch dimension is never
    // assumed to be 1.
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = (*in)[d] == SymInt::constant(1);
  }
  SmallVector<SymInt> out;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      out.push_back((*in)[d]);
  return setReshaped(n, x, out);
}

LogicalResult importUnsqueeze(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  auto axes = n.constantInts(1, "axes");
  if (failed(axes))
    return failure();
  ImportedValue &x = n.input(0);
  auto in = shapeOf(n, x);
  if (failed(in))
    return failure();
  int64_t rank = in->size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a || inserted[*a])
      return n.emitError() << "Unsqueeze axes [" << ArrayRef(*axes)
                           << "] are invalid for rank " << in->size();
    inserted[*a] = true;
  }
  SmallVector<SymInt> out;
  auto next = in->begin();
  for (int64_t d = 0; d < rank; ++d)
    out.push_back(inserted[d] ? SymInt::constant(1) : *next++);
  return setReshaped(n, x, out);
}

/// Gather: a lookup with run-time indices (importRunTimeGather), slicing
/// with constant indices, or an element of a shape value.
LogicalResult importGather(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis", 0);
  if (failed(axis))
    return failure();
  ImportedValue &data = n.input(0);
  ImportedValue &indices = n.input(1);

  if (indices.kind == Kind::Tensor)
    return importRunTimeGather(n, *axis);

  auto ids = n.constantInts(1, "indices");
  if (failed(ids))
    return failure();
  bool scalarIndex = indices.scalar;
  auto in = shapeOf(n, data);
  if (failed(in))
    return failure();
  int64_t rank = in->size();
  std::optional<int64_t> a = normalizeAxis(*axis, rank);
  if (!a)
    return n.emitError() << "Gather axis " << *axis
                         << " is out of range for rank " << rank;
  if (!(*in)[*a].isConstant())
    return n.emitError() << "Gather along the batch dimension is not "
                            "supported";
  int64_t dim = (*in)[*a].coeff;
  for (int64_t &id : *ids) {
    if (id < -dim || id >= dim)
      return n.emitError() << "Gather index " << id
                           << " is out of range for a dimension of size "
                           << dim;
    if (id < 0)
      id += dim;
  }

  if (data.kind == Kind::Symbolic) {
    SmallVector<SymInt> out;
    for (int64_t id : *ids)
      out.push_back(data.symbolic[id]);
    n.setOutput(0,
                ImportedValue::ofSymbolic(out, scalarIndex, data.symbolicType));
    return success();
  }

  // Constant indices select a strided range of the axis.
  if (ids->empty())
    return n.emitError() << "Gather with no index";
  int64_t step = ids->size() > 1 ? (*ids)[1] - (*ids)[0] : 1;
  for (size_t i = 1; i < ids->size(); ++i)
    if ((*ids)[i] - (*ids)[i - 1] != step || step <= 0)
      return n.emitError() << "Gather with constant indices [" << ArrayRef(*ids)
                           << "] is supported when they are increasing with "
                              "a constant step";
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  FailureOr<Value> sliced =
      sliceAxes(n, *x, {{*a, {(*ids)[0], (int64_t)ids->size(), step}}});
  if (failed(sliced))
    return failure();
  if (!scalarIndex) {
    n.setOutput(0, *sliced);
    return success();
  }
  // A scalar index drops the axis.
  SmallVector<SymInt> out(*in);
  out.erase(out.begin() + *a);
  FailureOr<Value> r = n.reshape(*sliced, out);
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

} // namespace

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

/// The mask type of run-time booleans: nn has no boolean tensors, so a
/// comparison of run-time tensors is an f32 mask (1 where it holds), which
/// nn.where takes as its condition and nn.mul/nn.maximum combine.
Type maskType(NodeImporter &n) { return n.getBuilder().getF32Type(); }

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

//===----------------------------------------------------------------------===//
// Comparisons and selections on shape values
//===----------------------------------------------------------------------===//

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

void importer::populateShapeImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  constexpr unsigned second = 1u << 1;
  const char *foldedShapeNotes =
      "shapes must fold to constants up to the batch dimension";
  const char *compareNotes =
      "folded on shape values (`expand`'s `-1` handling) and on constants of "
      "any rank (a mask; a comparison that depends on the batch size is "
      "refused); with a run-time operand (a padding mask `ids == 0`), an "
      "`nn.compare` mask of 0 and 1 in f32, which carries no gradient";
  addImporter(table, "Constant", importConstant)
      .describe("folded at compile time");
  addImporter(table, "Identity", importIdentity);
  // Shape reads only the static type of its input.
  addImporter(table, "Shape", importShape)
      .constants(1u)
      .describe("folded at compile time, `start` and `end` included");
  addImporter(table, "Size", importSize)
      .constants(1u)
      .describe("folded at compile time, in the batch size too");
  addImporter(table, "Reshape", importReshape)
      .constants(second)
      .describe(foldedShapeNotes);
  addImporter(table, "Flatten", importFlatten).describe(foldedShapeNotes);
  addImporter(table, "Transpose", importTranspose).describe(foldedShapeNotes);
  addImporter(table, "DepthToSpace", importDepthToSpace)
      .describe(
          "NCHW, `DCR` and `CRD` modes: a reshape, a transpose and a reshape");
  addImporter(table, "SpaceToDepth", importSpaceToDepth)
      .describe("NCHW: a reshape, a transpose and a reshape");
  addImporter(table, "Concat", importConcat).describe(foldedShapeNotes);
  addImporter(table, "Slice", importSlice)
      .constants(0b11110)
      .describe(
          "bounds that fold to constants; on shape values and on any tensor "
          "along static axes. A batch-dependent axis (the batch, in any "
          "position: attention runs sequence-first) is taken whole: a `Slice` "
          "of it must run from 0 to its end (`x.size(0)` or 2^63-1) with "
          "step 1");
  addImporter(table, "Split", importSplit)
      .constants(second)
      .describe(
          "along a static axis, into constant sizes given as an input, into "
          "`num_outputs` parts (opset 18: each ceil(size / num_outputs), the "
          "last smaller) or into as many equal parts as it has outputs");
  addImporter(table, "Squeeze", importSqueeze)
      .constants(second)
      .describe(foldedShapeNotes);
  addImporter(table, "Unsqueeze", importUnsqueeze)
      .constants(second)
      .describe(foldedShapeNotes);
  addImporter(table, "Gather", importGather)
      .constants(second)
      .describe(
          "constant indices on a non-batch axis (a slice); run-time indices on "
          "axis 0 of a float initializer (`nn.Embedding`: `nn.embedding`) or "
          "on any axis of any tensor (`x[torch.arange(B), lengths - 1]`: "
          "`nn.gather`, whose gradient is a scatter-add). Negative indices "
          "count from the end. Run-time indices are an integer input or "
          "integers computed from masks: `Cast` of a mask to an integer type, "
          "`ReduceSum`, `Add`/`Sub`/`Mul` with constants and "
          "`Range(0, k * B, k)` are carried as exact floats (below 2^24)");
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
  addImporter(table, "ConstantOfShape", importConstantOfShape)
      .constants(1u)
      .describe(
          "a constant shape (folded), or a float one whose shape holds the "
          "batch size (`torch.zeros(x.size(0), ...)`), broadcast over the "
          "batch of a data input");
  addImporter(table, "Expand", importExpand)
      .constants(second)
      .describe(
          "a shape that folds to constants up to the batch size; a target "
          "entry equal to the batch size takes it from a data input "
          "(`cls_token.expand(n, -1, -1)`)");
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
  addImporter(table, "Range", importRange)
      .constants(0b111)
      .describe(
          "folded when start, limit and delta are compile-time numbers "
          "(integer ranges become shape values); `Range(0, k * B, k)` over the "
          "batch size B (`torch.arange(x.size(0))`) is `nn.iota` over a data "
          "input's batch");
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

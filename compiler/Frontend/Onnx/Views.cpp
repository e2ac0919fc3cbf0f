//===- Views.cpp - Shape values, reshapes, slices and joins ---------------===//
//
// Shape and Size fold to shape values; the reshapes (Reshape, Flatten,
// Squeeze, Unsqueeze, DepthToSpace, SpaceToDepth), Transpose, Slice, Split
// and Concat fold on constants and shape values and become nn views of
// run-time tensors, their shapes known up to the batch size.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

using Kind = ImportedValue::Kind;

FailureOr<SmallVector<SymInt>> importer::shapeOf(NodeImporter &n,
                                                 ImportedValue &v) {
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

std::optional<SmallVector<int64_t>>
importer::staticDims(ArrayRef<SymInt> shape) {
  SmallVector<int64_t> dims;
  for (SymInt s : shape) {
    if (!s.isConstant())
      return std::nullopt;
    dims.push_back(s.coeff);
  }
  return dims;
}

FailureOr<Value>
importer::sliceAxes(NodeImporter &n, Value x,
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

namespace {

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

} // namespace

void importer::populateViewImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  constexpr unsigned second = 1u << 1;
  const char *foldedShapeNotes =
      "shapes must fold to constants up to the batch dimension";
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
}

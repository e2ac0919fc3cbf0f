//===- Gather.cpp - Gather and GatherElements -----------------------------===//
//
// Gather with constant indices (a slice, or an element of a shape value) or
// with run-time indices on an activation (`x[torch.arange(B), i]` exports a
// flattening and such a Gather), GatherElements (`torch.gather`), and the
// run-time integer arithmetic that computes their indices.
//
// nn has no integer arithmetic on run-time tensors: nn.compare's masks are
// floats, and so are the integers computed from them (`(ids != 0).sum(1)`,
// a sequence length). The importer carries such an ONNX integer tensor as
// the float tensor that computes it, exact below 2^24, and lets it reach a
// gather's indices; a Cast of any other float tensor to an integer type
// (a truncation) is refused.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

using Kind = ImportedValue::Kind;

bool importer::isIntegerValued(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return false;
  if (type.getElementType().isSignlessInteger())
    return true;
  Operation *op = v.getDefiningOp();
  if (!op)
    return false; // a float data input
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return llvm::all_of(attr.getValues<APFloat>(),
                        [](const APFloat &x) { return x.isInteger(); });
  auto all = [](ValueRange operands) {
    return llvm::all_of(operands, [](Value o) { return isIntegerValued(o); });
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<nn::CompareOp, nn::IotaOp>([](auto) { return true; })
      .Case<nn::AddOp, nn::SubOp, nn::MulOp, nn::MaximumOp, nn::MinimumOp,
            nn::NegOp, nn::ReduceSumOp, nn::ReduceMaxOp, nn::ReshapeOp,
            nn::FlattenOp, nn::TransposeOp, nn::SliceOp, nn::ConcatOp,
            nn::PadOp>([&](Operation *o) { return all(o->getOperands()); })
      .Case([](nn::BroadcastToOp b) { return isIntegerValued(b.getInput()); })
      .Case([](nn::WhereOp w) {
        return isIntegerValued(w.getLhs()) && isIntegerValued(w.getRhs());
      })
      .Case<nn::GatherOp, nn::GatherElementsOp>(
          [](auto g) { return isIntegerValued(g.getInput()); })
      .Default([](Operation *) { return false; });
}

FailureOr<Value> importer::carriedConstant(NodeImporter &n, unsigned i,
                                           ImportedValue &other) {
  if (!n.isConstant(i) || other.kind != Kind::Tensor)
    return Value();
  auto type = cast<RankedTensorType>(other.tensor.getType());
  if (!isa<FloatType>(type.getElementType()) || !isIntegerValued(other.tensor))
    return Value();
  FailureOr<DenseElementsAttr> c = n.constant(i, "operand");
  if (failed(c))
    return failure();
  Type elt = c->getElementType();
  if (!elt.isSignlessInteger() || elt.isInteger(1))
    return Value();
  return n.getGraph().materialize(castElements(*c, type.getElementType()),
                                  n.getLoc());
}

/// Whether `v` is a trainable initializer (an embedding table).
static bool isParameter(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return false;
  auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return f && f.getArgAttr(arg.getArgNumber(), train::TrainDialect::kParamAttr);
}

/// Input `i` as gather indices into an axis of `size` entries (dynamic:
/// unknown): a run-time integer tensor, a float one holding integers (see
/// the file comment), or constant integers, which must lie in
/// [-size, size).
static FailureOr<Value> gatherIndices(NodeImporter &n, unsigned i,
                                      int64_t size) {
  if (n.isConstant(i) && !ShapedType::isDynamic(size)) {
    FailureOr<DenseElementsAttr> c = n.constant(i, "indices");
    if (failed(c))
      return failure();
    if (c->getElementType().isSignlessInteger())
      for (const APInt &v : c->getValues<APInt>())
        if (int64_t id = v.getSExtValue(); id < -size || id >= size)
          return n.emitError()
                 << n.getOpType() << " index " << id
                 << " is out of range for an axis of size " << size;
  }
  FailureOr<Value> ids = n.tensor(i);
  if (failed(ids))
    return failure();
  if (!isIntegerValued(*ids))
    return n.emitError() << n.getOpType() << " indices ('" << n.inputName(i)
                         << "') of type " << ids->getType()
                         << " are not integers: only integer inputs and "
                            "integers computed from masks, constants and "
                            "positions are supported";
  return ids;
}

LogicalResult importer::importRunTimeGather(NodeImporter &n, int64_t axis) {
  FailureOr<Value> data = n.floatTensor(0);
  if (failed(data))
    return failure();
  auto type = cast<RankedTensorType>(data->getType());
  std::optional<int64_t> a = normalizeAxis(axis, type.getRank());
  if (!a)
    return n.emitError() << "Gather axis " << axis
                         << " is out of range for rank " << type.getRank();
  FailureOr<Value> ids = gatherIndices(n, 1, type.getDimSize(*a));
  if (failed(ids))
    return failure();
  int64_t rank = type.getRank();
  // A lookup in a trainable table keeps nn.embedding, whose indices the
  // runtime checks against the table when they are a data input.
  if (*a == 0 && rank == 2 && isParameter(*data) &&
      isa<IntegerType>(cast<RankedTensorType>(ids->getType()).getElementType()))
    return n.createOutput<nn::EmbeddingOp>(*ids, *data);
  return n.createOutput<nn::GatherOp>(*data, *ids, static_cast<uint64_t>(*a));
}

namespace {

/// GatherElements (`torch.gather`): nn.gather_elements.
LogicalResult importGatherElements(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis", 0);
  if (failed(axis))
    return failure();
  FailureOr<Value> data = n.floatTensor(0);
  if (failed(data))
    return failure();
  auto type = cast<RankedTensorType>(data->getType());
  std::optional<int64_t> a = normalizeAxis(*axis, type.getRank());
  if (!a)
    return n.emitError() << "GatherElements axis " << *axis
                         << " is out of range for rank " << type.getRank();
  FailureOr<Value> ids = gatherIndices(n, 1, type.getDimSize(*a));
  if (failed(ids))
    return failure();
  return n.createOutput<nn::GatherElementsOp>(*data, *ids,
                                              static_cast<uint64_t>(*a));
}

} // namespace

LogicalResult importer::importBatchRange(NodeImporter &n, SymInt start,
                                         SymInt limit, SymInt delta) {
  // Range(0, k * B, k): k times the positions along the batch of a data
  // input (`torch.arange(x.size(0))`, or `arange(0, B * T, T)`, the first
  // row of each sample of a flattened [B * T, ...] tensor).
  if (!(start == SymInt::constant(0)) || !delta.isConstant() ||
      delta.coeff == 0 || limit.isConstant() || limit.power != 1 ||
      limit.coeff != delta.coeff)
    return n.emitError() << "Range(" << start << ", " << limit << ", " << delta
                         << ") is not supported: a range whose bounds depend "
                            "on the batch size B must be Range(0, k * B, k)";
  Value source = n.getGraph().batchSource();
  if (!source)
    return n.emitError() << "Range over the batch needs a data input with a "
                            "batch dimension";
  OpBuilder &b = n.getBuilder();
  auto iota = n.create<nn::IotaOp>(source, static_cast<uint64_t>(0),
                                   Type(b.getF32Type()));
  if (failed(iota))
    return failure();
  Value positions = iota->getResult();
  if (delta.coeff != 1) {
    Value k = n.getGraph().materialize(
        DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                               static_cast<float>(delta.coeff)),
        n.getLoc());
    auto scaled = n.create<nn::MulOp>(positions, k);
    if (failed(scaled))
      return failure();
    positions = scaled->getResult();
  }
  n.setOutput(0, positions);
  return success();
}

namespace {

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

void importer::populateGatherImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  constexpr unsigned second = 1u << 1;
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
  addImporter(table, "GatherElements", importGatherElements)
      .describe(
          "`torch.gather`: `nn.gather_elements`, any axis, negative indices "
          "counting from the end; indices a run-time integer input, constants, "
          "or integers computed from masks (see Gather). The gradient is a "
          "scatter-add");
}

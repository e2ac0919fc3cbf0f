//===- Importer.h - Internals shared by the ONNX op importers ---*- C++ -*-===//
//
// The graph importer's state and the per-node interface the op importers
// (split by theme across files) are written against. Private to the
// CleaveOnnxImporter library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_FRONTEND_ONNX_IMPORTER_H
#define CLEAVE_COMPILER_FRONTEND_ONNX_IMPORTER_H

#include "compiler/Frontend/Onnx/OnnxImporter.h"

#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <limits>
#include <optional>

namespace mlir::cleave::importer {

//===----------------------------------------------------------------------===//
// Integers known up to the batch size
//===----------------------------------------------------------------------===//

/// An integer `coeff * B^power`, where B is the model's dynamic batch size.
/// Shape computations (`Shape`, `Gather`, `Concat`, arithmetic) are folded on
/// these, so a reshape target built from `x.size(0)` stays exact whatever
/// batch size the model is later specialised to.
struct SymInt {
  int64_t coeff = 0;
  int64_t power = 0;

  static SymInt constant(int64_t value) { return {value, 0}; }
  static SymInt batch() { return {1, 1}; }
  bool isConstant() const { return power == 0 || coeff == 0; }
  bool operator==(const SymInt &other) const {
    return coeff == other.coeff &&
           (isConstant() ? other.isConstant() : power == other.power);
  }
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, SymInt value);
Diagnostic &operator<<(Diagnostic &diag, SymInt value);

/// Arithmetic that stays within `coeff * B^power`; failure otherwise (a sum
/// of different powers, an inexact division, an overflow).
FailureOr<SymInt> add(SymInt a, SymInt b);
FailureOr<SymInt> sub(SymInt a, SymInt b);
FailureOr<SymInt> mul(SymInt a, SymInt b);
FailureOr<SymInt> div(SymInt a, SymInt b);

//===----------------------------------------------------------------------===//
// What the importer knows about an ONNX value
//===----------------------------------------------------------------------===//

/// An ONNX value is a run-time tensor, a compile-time constant, or a rank-0
/// or rank-1 integer tensor whose entries are known up to the batch size.
/// Integer constants of rank <= 1 are kept in the symbolic form, so every
/// shape computation folds on one representation.
struct ImportedValue {
  enum class Kind { Tensor, Constant, Symbolic };
  Kind kind = Kind::Tensor;
  Value tensor;
  DenseElementsAttr constant;
  SmallVector<SymInt> symbolic;
  /// The symbolic value is rank 0 (a scalar) rather than rank 1.
  bool scalar = false;
  /// The ONNX element type of a symbolic value (an integer type).
  Type symbolicType;
  /// The ONNX data type (UINT8, FLOAT16, ...) of a value of a narrow type,
  /// which the importer holds in its carrier type (see NarrowType); 0 for
  /// the types nn computes in.
  int32_t narrow = 0;

  static ImportedValue ofTensor(Value v);
  static ImportedValue ofConstant(DenseElementsAttr attr);
  static ImportedValue ofSymbolic(ArrayRef<SymInt> values, bool scalar,
                                  Type elementType);
};

//===----------------------------------------------------------------------===//
// Narrow types
//===----------------------------------------------------------------------===//

/// An ONNX element type nn does not compute in but a model may exchange data
/// in: INT8, UINT8, INT16, UINT16, UINT32, FLOAT16 and BFLOAT16. The graph
/// takes and returns such tensors in their `storage` type (the signless
/// integer of their width, marked `train.unsigned` when unsigned, or f16 and
/// bf16); inside, every value of such a type is held in its `carrier`, which
/// holds each of its values exactly (i32; i64 for UINT32; f32 for the
/// floats), and is brought back into the narrow type's values after every op
/// that computes it (two's complement wrap-around, rounding to nearest even),
/// so that each op gives what it gives in the narrow type.
struct NarrowType {
  Type storage;
  Type carrier;
  bool isUnsigned = false;
};

/// The narrow type `dataType` is, if it is one.
std::optional<NarrowType> getNarrowType(MLIRContext *ctx, int32_t dataType);

/// `values` (of any int or float type; integers unsigned if `isUnsigned`)
/// converted to `type`'s values, in its carrier: as nn.cast to the storage
/// type and back.
DenseElementsAttr toNarrowValues(DenseElementsAttr values, bool isUnsigned,
                                 const NarrowType &type);

//===----------------------------------------------------------------------===//
// The graph importer
//===----------------------------------------------------------------------===//

class NodeImporter;
using ImportFn = LogicalResult (*)(NodeImporter &);

/// How an op importer treats one input of its node. Only floating-point
/// initializers in `Operand` positions become parameters.
enum class InputRole { Operand, Constant, RunningStat };

/// An op importer and what its inputs are.
struct OpImporter {
  ImportFn fn = nullptr;
  /// Lowest default-domain opset the op exists at (within 13 to 21).
  int64_t minOpset = 13;
  /// Bit i set: input i must be a compile-time constant.
  unsigned constantInputs = 0;
  /// Bit i set: input i is running state (BatchNormalization statistics).
  unsigned stateInputs = 0;
  /// What of the op is supported, for the operator table of
  /// docs/user/onnx.md (`cleave-opt --list-onnx-ops`): one markdown line.
  const char *notes = "";

  InputRole role(unsigned input) const {
    if (input < 32 && (stateInputs >> input & 1))
      return InputRole::RunningStat;
    if (input < 32 && (constantInputs >> input & 1))
      return InputRole::Constant;
    return InputRole::Operand;
  }

  // Setters for registration, chained on addImporter's result.

  /// Sets `minOpset` (for an op whose lowest opset is not 13).
  OpImporter &since(int64_t opset) {
    minOpset = opset;
    return *this;
  }
  /// Sets `constantInputs`.
  OpImporter &constants(unsigned mask) {
    constantInputs = mask;
    return *this;
  }
  /// Sets `stateInputs`.
  OpImporter &state(unsigned mask) {
    stateInputs = mask;
    return *this;
  }
  /// Sets `notes`, the op's line of the operator table.
  OpImporter &describe(const char *text) {
    notes = text;
    return *this;
  }
};

using ImporterTable = llvm::StringMap<OpImporter>;

/// Registers the importer of op `name`: the one place an op is registered.
/// Returns the new entry, whose setters give the rest of it. Registering a
/// name twice, or a null `fn`, is a programming error (a fatal error naming
/// the op).
OpImporter &addImporter(ImporterTable &table, llvm::StringRef name,
                        ImportFn fn);

/// Elementwise arithmetic, activations, softmax.
void populateElementwiseImporters(ImporterTable &table);
/// Shape values, reshapes, transposes, slicing, splitting, concatenation.
void populateViewImporters(ImporterTable &table);
/// Cast and CastLike.
void populateCastImporters(ImporterTable &table);
/// Comparisons, logical ops and Where.
void populateLogicImporters(ImporterTable &table);
/// Constant, ConstantOfShape, Range, Expand, Tile, Trilu and Pad.
void populateConstructorImporters(ImporterTable &table);
/// Gather and GatherElements.
void populateGatherImporters(ImporterTable &table);
/// Gemm and MatMul.
void populateLinearImporters(ImporterTable &table);
/// Convolution and pooling.
void populateConvPoolImporters(ImporterTable &table);
/// Resize.
void populateResizeImporters(ImporterTable &table);
/// Normalisations, reductions and dropout.
void populateNormalizationImporters(ImporterTable &table);
/// RNN, GRU and LSTM, unrolled.
void populateRecurrentImporters(ImporterTable &table);

/// The table of every supported default-domain op.
const ImporterTable &getImporterTable();

/// onnx::checker::check_model with the schemas of the opset 18 to 21 forms
/// of the mapped ops, which the system ONNX library predates. Throws
/// onnx::checker::ValidationError as the checker does.
void checkModel(const onnx::ModelProto &model);

/// Rewrites exporter idioms into single nn ops (see `importOnnx`).
void populateRecomposePatterns(RewritePatternSet &patterns);

/// Imports one ONNX graph into a model function.
class GraphImporter {
public:
  GraphImporter(MLIRContext &context, const onnx::ModelProto &model,
                int64_t opset, StringRef path);

  /// Builds the module; null after a diagnostic.
  OwningOpRef<ModuleOp> run();

  MLIRContext *getContext() { return &context; }
  OpBuilder &getBuilder() { return builder; }
  int64_t getOpset() const { return opset; }

  /// Converts an ONNX tensor to an elements attribute, or emits at `loc`.
  FailureOr<DenseElementsAttr> convertTensor(const onnx::TensorProto &tensor,
                                             Location loc);
  /// The MLIR element type of an ONNX data type, or null.
  Type convertElementType(int32_t dataType);
  /// Brings `value` into the values of the narrow type `dataType` (in its
  /// carrier) and marks it as of that type, or emits at `loc`.
  LogicalResult keepNarrow(ImportedValue &value, int32_t dataType,
                           Location loc);

  ImportedValue *lookup(StringRef name);
  void define(StringRef name, ImportedValue value);

  /// The `tensor<i64>` dropout seed and the next unused stream.
  Value getRngSeed() { return rngSeed; }
  int64_t nextDropoutStream() { return dropoutStreams++; }
  /// Records the new value of a running statistic (BatchNormalization).
  LogicalResult recordBufferUpdate(Value state, Value updated, Location loc);
  /// The name of the initializer a block argument holds, if any.
  StringRef stateName(Value v);
  /// The name of the one graph input that the run-time value `v` is
  /// computed from (`v` itself, or through any ops), or "" when there are
  /// none or several: a diagnostic's hint at what to make a constant.
  StringRef sourceInputName(Value v);

  /// An `arith.constant` for a constant, memoised per attribute.
  Value materialize(DenseElementsAttr attr, Location loc);

  /// The shape of a run-time tensor with each dynamic dimension expressed
  /// in the batch size. Emits at `loc` when a dimension cannot be told.
  FailureOr<SmallVector<SymInt>> symbolicShape(Value v, Location loc);

  /// A data input whose dimension 0 is the batch (for ops whose result
  /// shape contains the batch size but whose operands do not), or null.
  Value batchSource();

  /// How many graph nodes and outputs read each value name.
  unsigned numUses(StringRef name) const { return useCounts.lookup(name); }

  Location nodeLoc(const onnx::NodeProto &node, unsigned index);

private:
  FailureOr<SmallVector<SymInt>> computeSymbolicShape(Value v, Location loc);

  LogicalResult classifyInitializers();
  LogicalResult buildSignature();
  /// A tensor of a narrow type, as its values in the carrier type.
  FailureOr<DenseElementsAttr>
  convertNarrowTensor(const onnx::TensorProto &tensor, const NarrowType &narrow,
                      Location loc);
  LogicalResult importNodes();
  /// Marks the outputs of `node` that have a narrow type, by the types its
  /// schema gives them, and keeps them in that type's values.
  LogicalResult narrowOutputs(const onnx::NodeProto &node, Location loc);
  LogicalResult buildReturn();
  FailureOr<RankedTensorType>
  convertInputType(const onnx::ValueInfoProto &input);

  MLIRContext &context;
  const onnx::GraphProto &graph;
  int64_t opset;
  std::string path;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  func::FuncOp function;

  llvm::StringMap<ImportedValue> values;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<unsigned> useCounts;
  /// Initializers that become arguments, in first-use order, and whether
  /// each is a running statistic.
  SmallVector<std::pair<const onnx::TensorProto *, bool>> stateArgs;
  bool needsRng = false;
  Value rngSeed;
  int64_t dropoutStreams = 0;
  SmallVector<std::pair<Value, Value>> bufferUpdates;
  DenseMap<Attribute, Value> materialized;
  /// symbolicShape's answers. Without them a shape is recomputed from the
  /// graph input on every query, and ops that combine two dynamic operands
  /// (a squeeze-and-excitation block's Mul) double the walk at each level:
  /// EfficientNet-B0 never finished importing. Nothing is erased while
  /// nodes are imported (recomposition runs afterwards), so a value's
  /// shape never changes.
  DenseMap<Value, SmallVector<SymInt>> symbolicShapes;
};

//===----------------------------------------------------------------------===//
// The per-node interface of op importers
//===----------------------------------------------------------------------===//

/// One ONNX node being imported: its attributes, inputs and outputs.
/// Accessors emit a diagnostic at the node's location and return failure
/// when the model does not fit (a missing or mistyped attribute, a
/// run-time value where a constant is needed).
class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node, Location loc)
      : graph(graph), node(node), loc(loc) {}

  GraphImporter &getGraph() { return graph; }
  OpBuilder &getBuilder() { return graph.getBuilder(); }
  MLIRContext *getContext() { return graph.getContext(); }
  Location getLoc() const { return loc; }
  const onnx::NodeProto &getNode() const { return node; }
  StringRef getOpType() const { return node.op_type(); }
  int64_t getOpset() const { return graph.getOpset(); }

  InFlightDiagnostic emitError() { return mlir::emitError(loc); }

  // Attributes.
  bool hasAttr(StringRef name) const;
  FailureOr<int64_t> getInt(StringRef name, std::optional<int64_t> dflt = {});
  FailureOr<double> getFloat(StringRef name, std::optional<double> dflt = {});
  FailureOr<SmallVector<int64_t>>
  getInts(StringRef name, std::optional<ArrayRef<int64_t>> dflt = {});
  FailureOr<std::string> getString(StringRef name,
                                   std::optional<StringRef> dflt = {});
  const onnx::AttributeProto *getAttr(StringRef name) const;
  /// Fails on an attribute the importer does not read (so a model relying
  /// on an unsupported feature is refused rather than misread).
  LogicalResult checkAttrs(ArrayRef<StringRef> known);

  // Inputs.
  unsigned getNumInputs() const { return node.input_size(); }
  bool hasInput(unsigned i) const {
    return (int)i < node.input_size() && !node.input(i).empty();
  }
  StringRef inputName(unsigned i) const { return node.input(i); }
  ImportedValue &input(unsigned i);
  /// Input `i` as a run-time tensor (constants are materialised).
  FailureOr<Value> tensor(unsigned i);
  /// Input `i` as a run-time floating-point tensor.
  FailureOr<Value> floatTensor(unsigned i);
  /// Input `i` as a run-time tensor of a type nn computes in: float, or
  /// 32- or 64-bit integers (nn's integer arithmetic and data movement).
  FailureOr<Value> numericTensor(unsigned i);
  bool isConstant(unsigned i);
  /// Input `i` as a compile-time constant; `what` names it in diagnostics.
  FailureOr<DenseElementsAttr> constant(unsigned i, StringRef what);
  /// Input `i` as integers known up to the batch size (rank 0 or 1).
  FailureOr<SmallVector<SymInt>> symbolicInts(unsigned i, StringRef what);
  /// Input `i` as integers known at compile time (rank 0 or 1).
  FailureOr<SmallVector<int64_t>> constantInts(unsigned i, StringRef what);
  /// Input `i` as one floating-point number known at compile time.
  FailureOr<double> constantScalar(unsigned i, StringRef what);

  // Outputs.
  unsigned getNumOutputs() const { return node.output_size(); }
  /// Whether output `i` exists and something reads it.
  bool isOutputUsed(unsigned i) const;
  /// Fails if an output from `first` on is read (features the importer does
  /// not provide, such as pooling indices).
  LogicalResult requireUnused(unsigned first, StringRef what);
  void setOutput(unsigned i, Value v);
  void setOutput(unsigned i, ImportedValue v);

  /// Builds `OpTy` with result types inferred by the op itself, or emits
  /// the op's own diagnostic at the node's location and fails.
  template <typename OpTy, typename... Args>
  FailureOr<OpTy> create(Args &&...args);
  /// Builds a single-result `OpTy` as `create` does and makes its result
  /// output 0 of the node.
  template <typename OpTy, typename... Args>
  LogicalResult createOutput(Args &&...args);

  /// Reshapes `v` to `shape` (entries known up to the batch size) with
  /// `nn.reshape`, writing the batch-dependent entry as -1.
  FailureOr<Value> reshape(Value v, ArrayRef<SymInt> shape);

private:
  FailureOr<ImportedValue *> requireInput(unsigned i);
  /// The elements of a symbolic input known at compile time.
  FailureOr<DenseElementsAttr> symbolicValue(unsigned i, ImportedValue &v);

  GraphImporter &graph;
  const onnx::NodeProto &node;
  Location loc;
};

/// The number of results of `OpTy`, for building with placeholder types.
template <typename OpTy> constexpr unsigned numResultsOf() {
  if constexpr (OpTy::template hasTrait<OpTrait::OneResult>())
    return 1;
  else if constexpr (OpTy::template hasTrait<OpTrait::NResults<3>::Impl>())
    return 3;
  else
    static_assert(sizeof(OpTy) == 0, "unsupported number of results");
}

template <typename OpTy, typename... Args>
FailureOr<OpTy> NodeImporter::create(Args &&...args) {
  OpBuilder &b = getBuilder();
  OperationState state(loc, OpTy::getOperationName());
  SmallVector<Type, 3> placeholders(numResultsOf<OpTy>(), Type());
  OpTy::build(b, state, TypeRange(placeholders), std::forward<Args>(args)...);
  SmallVector<Type, 3> types;
  if (failed(OpTy::inferReturnTypes(
          getContext(), loc, state.operands,
          state.attributes.getDictionary(getContext()),
          state.getRawProperties(), state.regions, types)))
    return failure();
  state.types.assign(types.begin(), types.end());
  auto op = cast<OpTy>(b.create(state));
  if (failed(mlir::verify(op))) {
    op->erase();
    return failure();
  }
  return op;
}

template <typename OpTy, typename... Args>
LogicalResult NodeImporter::createOutput(Args &&...args) {
  FailureOr<OpTy> op = create<OpTy>(std::forward<Args>(args)...);
  if (failed(op))
    return failure();
  setOutput(0, op->getResult());
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The product of `dims`, if it is a `SymInt` (SymbolicShape.cpp).
FailureOr<SymInt> product(ArrayRef<SymInt> dims);

/// `product(dividend) / product(divisor)`, exactly.
FailureOr<SymInt> exactRatio(ArrayRef<SymInt> dividend,
                             ArrayRef<SymInt> divisor);

/// The shape of an imported value of any kind, up to the batch size
/// (Views.cpp).
FailureOr<SmallVector<SymInt>> shapeOf(NodeImporter &n, ImportedValue &v);

/// Static dimensions of `shape`, or none if one depends on the batch.
std::optional<SmallVector<int64_t>> staticDims(ArrayRef<SymInt> shape);

/// One axis of an ONNX Slice, clamped as ONNX does, with a positive step.
struct SliceRange {
  int64_t start, size, step;
};

/// `nn.slice` of `x` taking `ranges` along the given axes and all of every
/// other axis. The axes sliced must be static; a dynamic (batch) dimension
/// that is not sliced is kept whole with a -1 size, which specialisation
/// resolves.
FailureOr<Value> sliceAxes(NodeImporter &n, Value x,
                           ArrayRef<std::pair<int64_t, SliceRange>> ranges);

/// The mask type of run-time booleans: nn has no boolean tensors, so a
/// comparison of run-time tensors is an f32 mask (1 where it holds), which
/// nn.where takes as its condition and nn.mul/nn.maximum combine.
inline Type maskType(NodeImporter &n) { return n.getBuilder().getF32Type(); }

/// `v` transposed by `perm` (`nn.transpose`).
FailureOr<Value> transposed(NodeImporter &n, Value v, ArrayRef<int64_t> perm);

/// A rank-0 constant of `like`'s element type.
Value scalarLike(NodeImporter &n, Value like, double v);

/// A tensor of `like`'s type filled with `value`: a constant, or broadcast
/// over the batch of a data input when `like` is batched.
FailureOr<Value> filledLike(NodeImporter &n, Value like, double value);

/// `x` with `before` and `after` elements of `value` around it along the
/// static dimension `axis` (nn.concat with constant blocks).
FailureOr<Value> padWith(NodeImporter &n, Value x, int64_t axis, int64_t before,
                         int64_t after, double value);

/// `v` as an element of the float or integer type `elt` (a whole `v` for
/// integers).
TypedAttr elementAttr(Type elt, double v);

/// Builds the single-result nn ops of a composition at a node. After the
/// first failure (whose diagnostic the op emitted) every later build yields
/// null, so a formula reads as one, and `hasFailed` tells. C++ leaves the
/// order in which a call's arguments are evaluated unspecified, so a
/// composition names the results of ops it passes together to one call: the
/// imported ops' order is then the same whatever compiler built Cleave.
class Composer {
public:
  explicit Composer(NodeImporter &n) : n(n) {}

  template <typename OpTy, typename... Args> Value op(Args &&...args) {
    if (failed || (isNull(args) || ...)) {
      failed = true;
      return {};
    }
    FailureOr<OpTy> built = n.create<OpTy>(std::forward<Args>(args)...);
    if (mlir::failed(built)) {
      failed = true;
      return {};
    }
    return built->getResult();
  }
  /// A rank-0 constant of `like`'s element type.
  Value scalar(Value like, double v) {
    return like ? scalarLike(n, like, v) : fail();
  }
  /// `lhs <pred> rhs` as a mask of `lhs`'s element type.
  Value compare(nn::ComparePredicate pred, Value lhs, Value rhs) {
    if (!lhs)
      return fail();
    Type elt = cast<RankedTensorType>(lhs.getType()).getElementType();
    return op<nn::CompareOp>(
        nn::ComparePredicateAttr::get(n.getContext(), pred), lhs, rhs,
        TypeAttr::get(elt));
  }
  /// `lhs <pred> rhs` as an ONNX boolean: the f32 mask every run-time
  /// boolean of the importer is (maskType), whatever the operands' float
  /// type.
  Value boolean(nn::ComparePredicate pred, Value lhs, Value rhs) {
    return op<nn::CompareOp>(
        nn::ComparePredicateAttr::get(n.getContext(), pred), lhs, rhs,
        TypeAttr::get(Float32Type::get(n.getContext())));
  }
  /// |x| (`nn.leaky_relu` with slope -1).
  Value abs(Value x) { return op<nn::LeakyReluOp>(x, APFloat(-1.0)); }
  /// min(x, 0), whose gradient is 0 from x = 0 on.
  Value negativePart(Value x) {
    return op<nn::ClampOp>(x, APFloat(-std::numeric_limits<double>::infinity()),
                           APFloat(0.0));
  }
  bool hasFailed() const { return failed; }
  /// Stops the composition (after a diagnostic).
  Value fail() {
    failed = true;
    return {};
  }
  /// `y`, or failure if the composition failed.
  FailureOr<Value> value(Value y) {
    if (failed || !y)
      return failure();
    return y;
  }
  /// Makes `y` output `i` of the node.
  LogicalResult output(unsigned i, Value y) {
    FailureOr<Value> v = value(y);
    if (mlir::failed(v))
      return failure();
    n.setOutput(i, *v);
    return success();
  }
  LogicalResult output(Value y) { return output(0, y); }

private:
  static bool isNull(Value v) { return !v; }
  template <typename T> static bool isNull(const T &) { return false; }

  NodeImporter &n;
  bool failed = false;
};

/// Whether the run-time value `v` holds integers: an integer tensor, or a
/// float one computed from masks, integer constants and positions by
/// arithmetic that keeps integers (the importer's carrier of ONNX integer
/// tensors computed at run time, see Gather.cpp).
bool isIntegerValued(Value v);

/// Input `i`, an integer constant, converted to the float type of `other`
/// when `other` is a run-time integer carried in float (`lengths - 1`,
/// `lengths == 0`); null when that does not apply.
FailureOr<Value> carriedConstant(NodeImporter &n, unsigned i,
                                 ImportedValue &other);

/// Gather of input 0 along `axis` at the run-time indices of input 1:
/// `nn.embedding` for a trainable table, `nn.gather` otherwise.
LogicalResult importRunTimeGather(NodeImporter &n, int64_t axis);

/// Range whose bounds depend on the batch size (`torch.arange(B)`).
LogicalResult importBatchRange(NodeImporter &n, SymInt start, SymInt limit,
                               SymInt delta);

/// The elements of a shape value that does not depend on the batch size.
std::optional<DenseElementsAttr> constantOfSymbolic(const ImportedValue &v);

/// Converts constant elements to `elt` as ONNX Cast does.
DenseElementsAttr castElements(DenseElementsAttr attr, Type elt);

/// The name diagnostics give a node: its own, else its first output's.
std::string nodeName(const onnx::NodeProto &node, unsigned index);

/// Normalises an ONNX axis (negative counts from the end) for `rank`.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The double closest to the shortest decimal that rounds to the float
/// `value`: ONNX stores float attributes in single precision, and nn keeps
/// f64 attributes, so `1e-5` must not turn into 9.99999974e-06.
double widenFloat(float value);

} // namespace mlir::cleave::importer

#endif // CLEAVE_COMPILER_FRONTEND_ONNX_IMPORTER_H

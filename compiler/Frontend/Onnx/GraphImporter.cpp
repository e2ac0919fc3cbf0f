//===- GraphImporter.cpp - One ONNX graph to one model function -----------===//
//
// The machinery every op importer relies on: the value table, tensor
// conversion, which initializers become parameters, the function signature,
// the node loop and the results.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <onnx/defs/schema.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;
using train::TrainDialect;

//===----------------------------------------------------------------------===//
// ImportedValue
//===----------------------------------------------------------------------===//

ImportedValue ImportedValue::ofTensor(Value v) {
  ImportedValue r;
  r.kind = Kind::Tensor;
  r.tensor = v;
  return r;
}

ImportedValue ImportedValue::ofConstant(DenseElementsAttr attr) {
  auto type = attr.getType();
  Type elt = type.getElementType();
  // Integer vectors and scalars are what shape computations are made of:
  // keep them in the form those computations fold on.
  if (elt.isSignlessInteger() && !elt.isInteger(1) && type.getRank() <= 1) {
    SmallVector<SymInt> values;
    for (const APInt &v : attr.getValues<APInt>())
      values.push_back(SymInt::constant(v.getSExtValue()));
    return ofSymbolic(values, type.getRank() == 0, elt);
  }
  ImportedValue r;
  r.kind = Kind::Constant;
  r.constant = attr;
  return r;
}

ImportedValue ImportedValue::ofSymbolic(ArrayRef<SymInt> values, bool scalar,
                                        Type elementType) {
  ImportedValue r;
  r.kind = Kind::Symbolic;
  r.symbolic.assign(values.begin(), values.end());
  r.scalar = scalar;
  r.symbolicType = elementType;
  return r;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::optional<int64_t> importer::normalizeAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return std::nullopt;
  return a;
}

double importer::widenFloat(float value) {
  char buffer[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    double candidate = std::strtod(buffer, nullptr);
    if (static_cast<float>(candidate) == value)
      return candidate;
  }
  return value;
}

//===----------------------------------------------------------------------===//
// The importer table
//===----------------------------------------------------------------------===//

OpImporter &importer::addImporter(ImporterTable &table, StringRef name,
                                  ImportFn fn) {
  // Every import builds the table, so any test of the ONNX frontend stops
  // at such a mistake.
  if (!fn)
    llvm::report_fatal_error(llvm::Twine("ONNX importer table: '") + name +
                             "' is registered without an importer");
  auto [entry, inserted] = table.try_emplace(name);
  if (!inserted)
    llvm::report_fatal_error(llvm::Twine("ONNX importer table: '") + name +
                             "' is registered twice");
  entry->getValue().fn = fn;
  return entry->getValue();
}

const ImporterTable &importer::getImporterTable() {
  static const ImporterTable table = [] {
    ImporterTable t;
    populateElementwiseImporters(t);
    populateViewImporters(t);
    populateCastImporters(t);
    populateLogicImporters(t);
    populateConstructorImporters(t);
    populateGatherImporters(t);
    populateLinearImporters(t);
    populateConvPoolImporters(t);
    populateResizeImporters(t);
    populateNormalizationImporters(t);
    populateRecurrentImporters(t);
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(MLIRContext &context,
                             const onnx::ModelProto &model, int64_t opset,
                             StringRef path)
    : context(context), graph(model.graph()), opset(opset), path(path.str()),
      builder(&context) {}

std::string importer::nodeName(const onnx::NodeProto &node, unsigned index) {
  // Unnamed nodes are known by their first output, which ONNX keeps unique.
  if (!node.name().empty())
    return node.name();
  if (node.output_size() && !node.output(0).empty())
    return node.output(0);
  return "#" + std::to_string(index);
}

Location GraphImporter::nodeLoc(const onnx::NodeProto &node, unsigned index) {
  return NameLoc::get(StringAttr::get(&context, nodeName(node, index)),
                      FileLineColLoc::get(&context, path, 0, 0));
}

Type GraphImporter::convertElementType(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return builder.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return builder.getF64Type();
  case onnx::TensorProto::INT64:
    return builder.getI64Type();
  case onnx::TensorProto::INT32:
    return builder.getI32Type();
  case onnx::TensorProto::BOOL:
    return builder.getI1Type();
  default:
    return {};
  }
}

/// The ONNX name of a data type, for diagnostics.
static StringRef dataTypeName(int32_t dataType) {
  if (!onnx::TensorProto_DataType_IsValid(dataType))
    return "<invalid>";
  return onnx::TensorProto_DataType_Name(
      static_cast<onnx::TensorProto_DataType>(dataType));
}

std::optional<NarrowType> importer::getNarrowType(MLIRContext *ctx,
                                                  int32_t dataType) {
  Builder b(ctx);
  switch (dataType) {
  case onnx::TensorProto::INT8:
    return NarrowType{b.getIntegerType(8), b.getI32Type(), false};
  case onnx::TensorProto::UINT8:
    return NarrowType{b.getIntegerType(8), b.getI32Type(), true};
  case onnx::TensorProto::INT16:
    return NarrowType{b.getIntegerType(16), b.getI32Type(), false};
  case onnx::TensorProto::UINT16:
    return NarrowType{b.getIntegerType(16), b.getI32Type(), true};
  case onnx::TensorProto::UINT32:
    return NarrowType{b.getI32Type(), b.getI64Type(), true};
  case onnx::TensorProto::FLOAT16:
    return NarrowType{b.getF16Type(), b.getF32Type(), false};
  case onnx::TensorProto::BFLOAT16:
    return NarrowType{b.getBF16Type(), b.getF32Type(), false};
  default:
    return std::nullopt;
  }
}

DenseElementsAttr importer::toNarrowValues(DenseElementsAttr values,
                                           bool isUnsigned,
                                           const NarrowType &type) {
  Type from = values.getElementType();
  // Booleans are 0 and 1.
  isUnsigned |= from.isInteger(1);
  auto shape = RankedTensorType::get(values.getType().getShape(), type.carrier);
  if (auto storage = dyn_cast<FloatType>(type.storage)) {
    const llvm::fltSemantics &narrow = storage.getFloatSemantics();
    const llvm::fltSemantics &carrier =
        cast<FloatType>(type.carrier).getFloatSemantics();
    SmallVector<APFloat> out;
    bool lost;
    auto add = [&](APFloat v) {
      v.convert(narrow, APFloat::rmNearestTiesToEven, &lost);
      v.convert(carrier, APFloat::rmNearestTiesToEven, &lost); // exact
      out.push_back(v);
    };
    if (isa<FloatType>(from)) {
      for (APFloat v : values.getValues<APFloat>())
        add(v);
    } else {
      for (const APInt &i : values.getValues<APInt>()) {
        APFloat v(narrow);
        v.convertFromAPInt(i, !isUnsigned, APFloat::rmNearestTiesToEven);
        add(v);
      }
    }
    return DenseElementsAttr::get(shape, out);
  }
  unsigned width = type.storage.getIntOrFloatBitWidth();
  unsigned carrierWidth = type.carrier.getIntOrFloatBitWidth();
  SmallVector<APInt> out;
  auto add = [&](const APInt &narrowed) {
    out.push_back(type.isUnsigned ? narrowed.zext(carrierWidth)
                                  : narrowed.sext(carrierWidth));
  };
  if (isa<FloatType>(from)) {
    // Toward zero, through the carrier as the run-time cast goes.
    for (const APFloat &v : values.getValues<APFloat>()) {
      APSInt i(carrierWidth, /*isUnsigned=*/false);
      bool exact;
      v.convertToInteger(i, APFloat::rmTowardZero, &exact);
      add(i.trunc(width));
    }
  } else {
    for (const APInt &i : values.getValues<APInt>())
      add(isUnsigned ? i.zextOrTrunc(width) : i.sextOrTrunc(width));
  }
  return DenseElementsAttr::get(shape, out);
}

/// The number of elements of a tensor of `shape`; none for a negative
/// dimension or an overflow.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || llvm::MulOverflow(count, d, count))
      return std::nullopt;
  return count;
}

/// Copies a repeated field of ONNX tensor data as elements of `type`.
template <typename T, typename Field>
static DenseElementsAttr fromField(RankedTensorType type, const Field &field) {
  SmallVector<T> data(field.begin(), field.end());
  return DenseElementsAttr::get(type, ArrayRef<T>(data));
}

FailureOr<DenseElementsAttr>
GraphImporter::convertTensor(const onnx::TensorProto &tensor, Location loc) {
  auto fail = [&]() {
    return mlir::emitError(loc) << "tensor '" << tensor.name() << "' ";
  };
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return fail() << "keeps its data in an external file, which is not "
                     "supported";
  if (tensor.has_segment())
    return fail() << "is segmented, which is not supported";
  if (std::optional<NarrowType> narrow =
          getNarrowType(&context, tensor.data_type()))
    return convertNarrowTensor(tensor, *narrow, loc);
  Type elt = convertElementType(tensor.data_type());
  if (!elt)
    return fail() << "has unsupported element type "
                  << dataTypeName(tensor.data_type())
                  << "; supported: FLOAT, DOUBLE, INT64, INT32, BOOL, "
                     "INT8, UINT8, INT16, UINT16, UINT32, FLOAT16, BFLOAT16";
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  std::optional<int64_t> elements = elementCount(shape);
  if (!elements)
    return fail() << "has an invalid shape";
  int64_t count = *elements;
  auto type = RankedTensorType::get(shape, elt);

  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    uint64_t width = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
    if (raw.size() != static_cast<uint64_t>(count) * width)
      return fail() << "holds " << raw.size() << " bytes of data, expected "
                    << count * width << " for " << type;
    if (elt.isInteger(1)) {
      SmallVector<bool> bits;
      for (char c : raw)
        bits.push_back(c != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
    }
    // ONNX raw data is little-endian, as every host Cleave targets.
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(raw.data(), raw.size()));
  }

  int64_t stored = 0;
  DenseElementsAttr attr;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    stored = tensor.float_data_size();
    if (stored == count)
      attr = fromField<float>(type, tensor.float_data());
    break;
  case onnx::TensorProto::DOUBLE:
    stored = tensor.double_data_size();
    if (stored == count)
      attr = fromField<double>(type, tensor.double_data());
    break;
  case onnx::TensorProto::INT64:
    stored = tensor.int64_data_size();
    if (stored == count)
      attr = fromField<int64_t>(type, tensor.int64_data());
    break;
  case onnx::TensorProto::INT32:
    stored = tensor.int32_data_size();
    if (stored == count)
      attr = fromField<int32_t>(type, tensor.int32_data());
    break;
  case onnx::TensorProto::BOOL:
    stored = tensor.int32_data_size();
    if (stored == count) {
      SmallVector<bool> bits(tensor.int32_data().begin(),
                             tensor.int32_data().end());
      attr = DenseElementsAttr::get(type, ArrayRef<bool>(bits));
    }
    break;
  }
  if (!attr)
    return fail() << "holds " << stored << " values, expected " << count
                  << " for " << type;
  return attr;
}

FailureOr<DenseElementsAttr>
GraphImporter::convertNarrowTensor(const onnx::TensorProto &tensor,
                                   const NarrowType &narrow, Location loc) {
  auto fail = [&]() {
    return mlir::emitError(loc) << "tensor '" << tensor.name() << "' ";
  };
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  std::optional<int64_t> elements = elementCount(shape);
  if (!elements)
    return fail() << "has an invalid shape";
  int64_t count = *elements;
  auto type = RankedTensorType::get(shape, narrow.storage);
  unsigned width = narrow.storage.getIntOrFloatBitWidth();
  DenseElementsAttr stored;
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != static_cast<uint64_t>(count) * width / 8)
      return fail() << "holds " << raw.size() << " bytes of data, expected "
                    << count * width / 8 << " for " << type;
    stored = DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(raw.data(), raw.size()));
  } else {
    // UINT32 in uint64_data; the others (FLOAT16 and BFLOAT16 as their bits)
    // in int32_data.
    SmallVector<uint64_t> bits;
    if (tensor.data_type() == onnx::TensorProto::UINT32)
      bits.assign(tensor.uint64_data().begin(), tensor.uint64_data().end());
    else
      for (int32_t v : tensor.int32_data())
        bits.push_back(static_cast<uint32_t>(v));
    if (static_cast<int64_t>(bits.size()) != count)
      return fail() << "holds " << bits.size() << " values, expected " << count
                    << " for " << type;
    SmallVector<APInt> ints;
    for (uint64_t b : bits)
      ints.push_back(
          APInt(width, b, /*isSigned=*/false, /*implicitTrunc=*/true));
    if (auto f = dyn_cast<FloatType>(narrow.storage)) {
      SmallVector<APFloat> floats;
      for (const APInt &i : ints)
        floats.push_back(APFloat(f.getFloatSemantics(), i));
      stored = DenseElementsAttr::get(type, floats);
    } else {
      stored = DenseElementsAttr::get(type, ints);
    }
  }
  return toNarrowValues(stored, narrow.isUnsigned, narrow);
}

ImportedValue *GraphImporter::lookup(StringRef name) {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

void GraphImporter::define(StringRef name, ImportedValue value) {
  values[name] = std::move(value);
}

Value GraphImporter::materialize(DenseElementsAttr attr, Location loc) {
  Value &cached = materialized[attr];
  if (!cached)
    cached = arith::ConstantOp::create(builder, loc, attr);
  return cached;
}

StringRef GraphImporter::stateName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner()->getParentOp() != function)
    return {};
  unsigned i = arg.getArgNumber();
  for (StringRef attr : {TrainDialect::kParamAttr, TrainDialect::kBufferAttr})
    if (auto name = function.getArgAttrOfType<StringAttr>(i, attr))
      return name.getValue();
  return {};
}

StringRef GraphImporter::sourceInputName(Value v) {
  StringRef found;
  SmallVector<Value> work = {v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value next = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      if (arg.getOwner()->getParentOp() != function)
        continue;
      auto name = function.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TrainDialect::kInputAttr);
      if (!name)
        continue;
      if (!found.empty() && found != name.getValue())
        return {};
      found = name.getValue();
      continue;
    }
    Operation *op = next.getDefiningOp();
    if (op && seen.insert(op).second)
      llvm::append_range(work, op->getOperands());
  }
  return found;
}

LogicalResult GraphImporter::recordBufferUpdate(Value state, Value updated,
                                                Location loc) {
  auto arg = dyn_cast<BlockArgument>(state);
  if (!arg || arg.getOwner()->getParentOp() != function ||
      !function.getArgAttr(arg.getArgNumber(), TrainDialect::kBufferAttr))
    return mlir::emitError(loc)
           << "a training-mode running statistic must be an initializer";
  for (auto &[s, u] : bufferUpdates)
    if (s == state)
      return mlir::emitError(loc) << "running statistic '" << stateName(state)
                                  << "' is updated by more than one node";
  bufferUpdates.push_back({state, updated});
  return success();
}

/// Decides which initializers become arguments, by how the nodes consume
/// them (see `importOnnx`): a floating-point initializer of rank >= 1 in an
/// operand position is a parameter, in a running-statistic position a
/// buffer. Also counts the uses of every value name.
LogicalResult GraphImporter::classifyInitializers() {
  for (const onnx::TensorProto &init : graph.initializer())
    initializers[init.name()] = &init;

  // Identity is how exporters give one initializer several names; uses
  // through it count as uses of the initializer.
  llvm::StringMap<std::string> aliases;
  auto root = [&](StringRef name) -> StringRef {
    auto it = aliases.find(name);
    return it == aliases.end() ? name : StringRef(it->second);
  };
  // Views (slices, reshapes) of an initializer decide nothing themselves:
  // what their results feed does. A registered buffer such as a causal mask
  // (`mask[:, :T, :T] == 0`) then stays a constant the view folds, while a
  // sliced position embedding is a parameter.
  auto isView = [](StringRef op) {
    return llvm::is_contained(
        {"Slice", "Reshape", "Squeeze", "Unsqueeze", "Flatten"}, op);
  };
  // Each parameter or buffer, with the node and input position that first
  // read it (directly or through views), which order the arguments.
  llvm::StringMap<std::pair<size_t, size_t>> firstUse;
  llvm::StringMap<std::pair<const onnx::TensorProto *, bool>> chosen;
  const ImporterTable &table = getImporterTable();
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    for (const std::string &in : node.input())
      if (!in.empty())
        ++useCounts[in];
    if (node.op_type() == "Dropout")
      needsRng = true;
    if (node.op_type() == "Identity" && node.input_size() == 1 &&
        node.output_size() == 1) {
      aliases[node.output(0)] = root(node.input(0)).str();
      continue;
    }
    if (isView(node.op_type()) && node.input_size() >= 1 &&
        node.output_size() == 1 && initializers.count(root(node.input(0)))) {
      StringRef name = root(node.input(0));
      firstUse.try_emplace(name, index, 0);
      aliases[node.output(0)] = name.str();
      continue;
    }
    const OpImporter &entry = table.find(node.op_type())->second;
    for (auto [i, in] : llvm::enumerate(node.input())) {
      if (in.empty())
        continue;
      StringRef name = root(in);
      auto it = initializers.find(name);
      if (it == initializers.end())
        continue;
      firstUse.try_emplace(name, index, i);
      const onnx::TensorProto *init = it->second;
      bool isFloat = init->data_type() == onnx::TensorProto::FLOAT ||
                     init->data_type() == onnx::TensorProto::DOUBLE;
      InputRole role = entry.role(i);
      // Rank-0 operands are the exporters' scalars (epsilons, scale
      // factors), not parameters.
      if (role == InputRole::Constant ||
          (role == InputRole::Operand && init->dims_size() == 0))
        continue;
      // A half-precision weight would be a constant, silently untrained.
      if (init->data_type() == onnx::TensorProto::FLOAT16 ||
          init->data_type() == onnx::TensorProto::BFLOAT16)
        return mlir::emitError(nodeLoc(node, index))
               << "initializer '" << name << "' is "
               << dataTypeName(init->data_type())
               << ": parameters are float32 or float64 (export the model "
                  "in float32; --precision=bf16 computes in bf16)";
      if (!isFloat)
        continue;
      bool isStat = role == InputRole::RunningStat;
      auto [pos, inserted] = chosen.try_emplace(name, init, isStat);
      if (!inserted && pos->second.second != isStat)
        return mlir::emitError(nodeLoc(node, index))
               << "initializer '" << name
               << "' is used both as a parameter and as a running statistic";
    }
  }
  for (auto &entry : chosen)
    stateArgs.push_back(entry.second);
  llvm::stable_sort(stateArgs, [&](const auto &a, const auto &b) {
    return firstUse.lookup(a.first->name()) < firstUse.lookup(b.first->name());
  });
  for (const onnx::ValueInfoProto &out : graph.output())
    ++useCounts[out.name()];
  return success();
}

FailureOr<RankedTensorType>
GraphImporter::convertInputType(const onnx::ValueInfoProto &input) {
  Location loc = NameLoc::get(StringAttr::get(&context, input.name()),
                              FileLineColLoc::get(&context, path, 0, 0));
  if (!input.type().has_tensor_type())
    return mlir::emitError(loc)
           << "graph input '" << input.name() << "' is not a tensor";
  const onnx::TypeProto::Tensor &t = input.type().tensor_type();
  Type elt = convertElementType(t.elem_type());
  // A narrow type enters in its storage type (buildSignature widens it).
  if (std::optional<NarrowType> narrow = getNarrowType(&context, t.elem_type()))
    elt = narrow->storage;
  if (!elt)
    return mlir::emitError(loc)
           << "graph input '" << input.name()
           << "' has unsupported element type " << dataTypeName(t.elem_type());
  // nn has no boolean tensors: a boolean input (a padding mask given to the
  // model) is the f32 mask of 0 and 1 that comparisons produce, and is fed
  // as such.
  if (elt.isInteger(1))
    elt = builder.getF32Type();
  if (!t.has_shape())
    return mlir::emitError(loc)
           << "graph input '" << input.name()
           << "' has no shape; export with static shapes (only dimension 0, "
              "the batch, may be dynamic)";
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(t.shape().dim())) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      continue;
    }
    if (i != 0) {
      InFlightDiagnostic diag = mlir::emitError(loc)
                                << "dimension " << i << " of graph input '"
                                << input.name() << "' is dynamic";
      if (!dim.dim_param().empty())
        diag << " ('" << dim.dim_param() << "')";
      return diag << "; only dimension 0, the batch, may be";
    }
    shape.push_back(ShapedType::kDynamic);
  }
  return RankedTensorType::get(shape, elt);
}

LogicalResult GraphImporter::buildSignature() {
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  SmallVector<std::string> names;
  auto named = [&](StringRef attr, Attribute value) {
    return NamedAttribute(StringAttr::get(&context, attr), value);
  };
  auto locOf = [&](StringRef name) -> Location {
    return NameLoc::get(StringAttr::get(&context, name),
                        FileLineColLoc::get(&context, path, 0, 0));
  };

  // The narrow data type of each input (0 for others).
  SmallVector<int32_t> narrowInputs;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    auto type = convertInputType(input);
    if (failed(type))
      return failure();
    types.push_back(*type);
    int32_t dataType = input.type().tensor_type().elem_type();
    std::optional<NarrowType> narrow = getNarrowType(&context, dataType);
    narrowInputs.push_back(narrow ? dataType : 0);
    SmallVector<NamedAttribute, 2> inputAttrs = {named(
        TrainDialect::kInputAttr, StringAttr::get(&context, input.name()))};
    if (narrow && narrow->isUnsigned)
      inputAttrs.push_back(
          named(TrainDialect::kUnsignedAttr, UnitAttr::get(&context)));
    attrs.push_back(DictionaryAttr::get(&context, inputAttrs));
    locs.push_back(locOf(input.name()));
    names.push_back(input.name());
  }
  for (auto [init, isStat] : stateArgs) {
    Location loc = locOf(init->name());
    auto value = convertTensor(*init, loc);
    if (failed(value))
      return failure();
    types.push_back(value->getType());
    attrs.push_back(DictionaryAttr::get(
        &context,
        {named(isStat ? TrainDialect::kBufferAttr : TrainDialect::kParamAttr,
               StringAttr::get(&context, init->name())),
         named(TrainDialect::kInitAttr, *value)}));
    locs.push_back(loc);
    names.push_back(init->name());
  }
  if (needsRng) {
    types.push_back(RankedTensorType::get({}, builder.getI64Type()));
    attrs.push_back(DictionaryAttr::get(
        &context, {named(TrainDialect::kRngAttr, UnitAttr::get(&context))}));
    locs.push_back(UnknownLoc::get(&context));
  }

  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  builder.setInsertionPointToEnd(module->getBody());
  function = func::FuncOp::create(builder, loc, "forward",
                                  FunctionType::get(&context, types, {}));
  function.setAllArgAttrs(attrs);
  Block *entry = &function.getBody().emplaceBlock();
  for (auto [type, argLoc] : llvm::zip(types, locs))
    entry->addArgument(type, argLoc);
  for (auto [name, arg] : llvm::zip(names, entry->getArguments()))
    define(name, ImportedValue::ofTensor(arg));
  if (needsRng)
    rngSeed = entry->getArguments().back();
  builder.setInsertionPointToStart(entry);
  // Narrow inputs are computed with in their carrier.
  for (auto [name, dataType, arg] :
       llvm::zip(names, narrowInputs, entry->getArguments())) {
    if (!dataType)
      continue;
    NarrowType narrow = *getNarrowType(&context, dataType);
    Value wide = nn::CastOp::create(
        builder, arg.getLoc(), arg, TypeAttr::get(narrow.carrier),
        narrow.isUnsigned ? builder.getUnitAttr() : UnitAttr());
    ImportedValue value = ImportedValue::ofTensor(wide);
    value.narrow = dataType;
    define(name, value);
  }
  return success();
}

LogicalResult GraphImporter::keepNarrow(ImportedValue &value, int32_t dataType,
                                        Location loc) {
  NarrowType narrow = *getNarrowType(&context, dataType);
  if (value.kind == ImportedValue::Kind::Symbolic) {
    std::optional<DenseElementsAttr> c = constantOfSymbolic(value);
    if (!c)
      return mlir::emitError(loc)
             << "a shape computation in " << dataTypeName(dataType)
             << " depends on the batch size, which is not supported";
    value = ImportedValue::ofConstant(*c);
  }
  if (value.kind == ImportedValue::Kind::Constant) {
    value = ImportedValue::ofConstant(
        toNarrowValues(value.constant, /*isUnsigned=*/false, narrow));
  } else {
    // Through the storage type and back: nn.cast's folder removes the pair
    // where the value already is one of the narrow type's.
    Value v = value.tensor;
    if (cast<RankedTensorType>(v.getType()).getElementType() != narrow.carrier)
      v = nn::CastOp::create(builder, loc, v, TypeAttr::get(narrow.carrier),
                             UnitAttr());
    v = nn::CastOp::create(builder, loc, v, TypeAttr::get(narrow.storage),
                           UnitAttr());
    v = nn::CastOp::create(builder, loc, v, TypeAttr::get(narrow.carrier),
                           narrow.isUnsigned ? builder.getUnitAttr()
                                             : UnitAttr());
    value = ImportedValue::ofTensor(v);
  }
  value.narrow = dataType;
  return success();
}

Value GraphImporter::batchSource() {
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (function.getArgAttr(arg.getArgNumber(), TrainDialect::kInputAttr) &&
        type && type.getRank() >= 1 && type.isDynamicDim(0))
      return arg;
  }
  return {};
}

namespace {
/// Adds a note naming the ONNX node to every error emitted while it is
/// imported, including those of nn type inference and verifiers, which know
/// nothing of ONNX.
class NodeDiagnosticNote {
public:
  NodeDiagnosticNote(MLIRContext &context, const onnx::NodeProto &node,
                     Location loc, int64_t opset)
      : handler(&context, [&node, loc, opset](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error)
            diag.attachNote(loc)
                << "while importing ONNX node '"
                << cast<NameLoc>(loc).getName().getValue() << "' ("
                << node.op_type() << ", opset " << opset << ")";
          return failure(); // Let the outer handler print it.
        }) {}

private:
  ScopedDiagnosticHandler handler;
};
} // namespace

LogicalResult GraphImporter::importNodes() {
  const ImporterTable &table = getImporterTable();
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    Location loc = nodeLoc(node, index);
    NodeDiagnosticNote note(context, node, loc, opset);
    for (const std::string &in : node.input())
      if (!in.empty() && !lookup(in))
        return mlir::emitError(loc) << "input '" << in << "' is not defined";
    NodeImporter importer(*this, node, loc);
    if (failed(table.find(node.op_type())->second.fn(importer)) ||
        failed(narrowOutputs(node, loc)))
      return failure();
    for (unsigned i = 0; i < importer.getNumOutputs(); ++i)
      if (importer.isOutputUsed(i) && !lookup(node.output(i)))
        return mlir::emitError(loc) << "output " << i << " ('" << node.output(i)
                                    << "') is not supported";
  }
  return success();
}

std::optional<DenseElementsAttr>
importer::constantOfSymbolic(const ImportedValue &v) {
  Type elt = v.symbolicType;
  SmallVector<APInt> bits;
  for (SymInt s : v.symbolic) {
    if (!s.isConstant())
      return std::nullopt;
    // A Cast to a narrower integer type truncates, as in ONNX.
    bits.push_back(APInt(elt.getIntOrFloatBitWidth(), s.coeff,
                         /*isSigned=*/true, /*implicitTrunc=*/true));
  }
  SmallVector<int64_t> shape;
  if (!v.scalar)
    shape.push_back(bits.size());
  return DenseElementsAttr::get(RankedTensorType::get(shape, elt), bits);
}

/// Ops whose results hold only values of their operands (moved, selected,
/// compared): results of a narrow type need no bringing back into its
/// values.
static bool keepsOperandValues(StringRef op) {
  static const llvm::StringSet<> ops = {
      "Identity",  "Reshape", "Flatten",   "Squeeze",   "Unsqueeze",
      "Transpose", "Concat",  "Slice",     "Split",     "Gather",
      "Expand",    "Tile",    "Max",       "Min",       "Clip",
      "Relu",      "Where",   "ReduceMax", "ReduceMin", "MaxPool"};
  return ops.contains(op);
}

LogicalResult GraphImporter::narrowOutputs(const onnx::NodeProto &node,
                                           Location loc) {
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
      node.op_type(), static_cast<int>(opset), "");
  for (int k = 0; k < node.output_size(); ++k) {
    ImportedValue *out =
        node.output(k).empty() ? nullptr : lookup(node.output(k));
    if (!out)
      continue;
    // The result's data type: an attribute's, or that of the inputs its
    // schema gives the same type parameter.
    int32_t dataType = 0;
    StringRef op = node.op_type();
    if (op == "Cast" || op == "Constant" || op == "ConstantOfShape") {
      for (const onnx::AttributeProto &a : node.attribute()) {
        if (op == "Cast" && a.name() == "to")
          dataType = static_cast<int32_t>(a.i());
        else if (op != "Cast" && a.name() == "value" && a.has_t())
          dataType = a.t().data_type();
      }
    } else if (schema && !schema->outputs().empty() &&
               !schema->inputs().empty()) {
      const auto &outputs = schema->outputs();
      const auto &inputs = schema->inputs();
      const std::string &param =
          outputs[std::min<size_t>(k, outputs.size() - 1)].GetTypeStr();
      for (int j = 0; j < node.input_size() && !dataType; ++j) {
        if (node.input(j).empty() ||
            inputs[std::min<size_t>(j, inputs.size() - 1)].GetTypeStr() !=
                param)
          continue;
        if (ImportedValue *in = lookup(node.input(j)))
          dataType = in->narrow;
      }
    }
    if (!getNarrowType(&context, dataType))
      continue;
    if (keepsOperandValues(op) && out->kind == ImportedValue::Kind::Tensor) {
      out->narrow = dataType;
      continue;
    }
    if (failed(keepNarrow(*out, dataType, loc)))
      return failure();
  }
  return success();
}

LogicalResult GraphImporter::buildReturn() {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> attrs;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    Location outLoc = NameLoc::get(StringAttr::get(&context, out.name()), loc);
    ImportedValue *v = lookup(out.name());
    if (!v)
      return mlir::emitError(outLoc)
             << "graph output '" << out.name() << "' is never defined";
    Value result;
    if (v->kind == ImportedValue::Kind::Tensor) {
      result = v->tensor;
    } else if (v->kind == ImportedValue::Kind::Constant) {
      result = materialize(v->constant, outLoc);
    } else if (std::optional<DenseElementsAttr> c = constantOfSymbolic(*v)) {
      result = materialize(*c, outLoc);
    } else {
      return mlir::emitError(outLoc)
             << "graph output '" << out.name()
             << "' is a shape computation that depends on the batch size, "
                "not a model output";
    }
    // A narrow type leaves in its storage type.
    int32_t dataType = out.type().tensor_type().elem_type();
    if (!getNarrowType(&context, dataType))
      dataType = v->narrow;
    SmallVector<NamedAttribute, 1> resultAttrs;
    if (std::optional<NarrowType> narrow = getNarrowType(&context, dataType)) {
      result = nn::CastOp::create(builder, outLoc, result,
                                  TypeAttr::get(narrow->storage), UnitAttr());
      if (narrow->isUnsigned)
        resultAttrs.push_back(NamedAttribute(
            StringAttr::get(&context, TrainDialect::kUnsignedAttr),
            UnitAttr::get(&context)));
    }
    results.push_back(result);
    attrs.push_back(DictionaryAttr::get(&context, resultAttrs));
  }
  for (auto [state, updated] : bufferUpdates) {
    results.push_back(updated);
    attrs.push_back(DictionaryAttr::get(
        &context,
        {NamedAttribute(StringAttr::get(&context, TrainDialect::kBufferAttr),
                        StringAttr::get(&context, stateName(state)))}));
  }
  func::ReturnOp::create(builder, loc, results);
  function.setType(FunctionType::get(&context, function.getArgumentTypes(),
                                     ValueRange(results).getTypes()));
  function.setAllResultAttrs(attrs);
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run() {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  module = ModuleOp::create(loc);
  if (failed(classifyInitializers()) || failed(buildSignature()))
    return {};
  // Initializers that are not arguments are constants; unused ones are
  // ignored.
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (lookup(init.name()) || !numUses(init.name()))
      continue;
    Location initLoc =
        NameLoc::get(StringAttr::get(&context, init.name()), loc);
    auto value = convertTensor(init, initLoc);
    if (failed(value))
      return {};
    ImportedValue constant = ImportedValue::ofConstant(*value);
    if (getNarrowType(&context, init.data_type()))
      constant.narrow = init.data_type();
    define(init.name(), constant);
  }
  if (failed(importNodes()) || failed(buildReturn()))
    return {};

  RewritePatternSet patterns(&context);
  populateRecomposePatterns(patterns);
  // Only recompose: folding and canonicalisation are the pipeline's
  // business, and the imported graph should mirror the ONNX one.
  GreedyRewriteConfig config;
  config.enableFolding(false).setRegionSimplificationLevel(
      GreedySimplifyRegionLevel::Disabled);
  // Not converging would only leave some idioms unrecomposed.
  (void)applyPatternsGreedily(function, std::move(patterns), config);
  if (failed(mlir::verify(*module)))
    return {};
  return std::move(module);
}

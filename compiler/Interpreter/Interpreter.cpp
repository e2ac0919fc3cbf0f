//===- Interpreter.cpp - Reference interpreter driver ---------------------===//
//
// Tensors, the global state, and the loop that runs a function op by op
// through the kernel table.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Interpreter/Kernels.h"

#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::interp;
using namespace mlir::cleave::interp::kernels;

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

std::optional<DType> interp::getDType(Type t) {
  if (t.isF32())
    return DType::f32;
  if (t.isF64())
    return DType::f64;
  if (t.isSignlessInteger(32))
    return DType::i32;
  if (t.isSignlessInteger(64))
    return DType::i64;
  return std::nullopt;
}

Type interp::getMLIRType(MLIRContext *ctx, DType dtype) {
  switch (dtype) {
  case DType::f32:
    return Float32Type::get(ctx);
  case DType::f64:
    return Float64Type::get(ctx);
  case DType::i32:
    return IntegerType::get(ctx, 32);
  case DType::i64:
    return IntegerType::get(ctx, 64);
  }
  llvm_unreachable("unknown dtype");
}

StringRef interp::stringifyDType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::f64:
    return "f64";
  case DType::i32:
    return "i32";
  case DType::i64:
    return "i64";
  }
  llvm_unreachable("unknown dtype");
}

//===----------------------------------------------------------------------===//
// Helpers shared by the kernels
//===----------------------------------------------------------------------===//

int64_t kernels::numElementsOf(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SmallVector<int64_t> kernels::broadcastStrides(ArrayRef<int64_t> in,
                                               ArrayRef<int64_t> out) {
  SmallVector<int64_t> strides(out.size(), 0);
  int64_t lead = out.size() - in.size();
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) {
    strides[lead + d] = in[d] == 1 && out[lead + d] != 1 ? 0 : stride;
    stride *= in[d];
  }
  return strides;
}

std::string kernels::shapeToString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Tensor::Tensor(DType dtype, ArrayRef<int64_t> shape)
    : dtype(dtype), shape(shape) {
  size_t n = numElementsOf(shape);
  switch (dtype) {
  case DType::f32:
    storage = std::vector<float>(n, 0.0f);
    break;
  case DType::f64:
    storage = std::vector<double>(n, 0.0);
    break;
  case DType::i32:
    storage = std::vector<int32_t>(n, 0);
    break;
  case DType::i64:
    storage = std::vector<int64_t>(n, 0);
    break;
  }
}

Tensor Tensor::fromDoubles(DType dtype, ArrayRef<int64_t> shape,
                           ArrayRef<double> values) {
  Tensor t(dtype, shape);
  assert(static_cast<int64_t>(values.size()) == t.getNumElements() &&
         "one value per element");
  for (auto [i, v] : llvm::enumerate(values))
    t.setDouble(i, v);
  return t;
}

Tensor Tensor::fromInts(DType dtype, ArrayRef<int64_t> shape,
                        ArrayRef<int64_t> values) {
  Tensor t(dtype, shape);
  assert(static_cast<int64_t>(values.size()) == t.getNumElements() &&
         "one value per element");
  for (auto [i, v] : llvm::enumerate(values))
    t.setInt(i, v);
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) {
  return splat(dtype, {}, value);
}

Tensor Tensor::splat(DType dtype, ArrayRef<int64_t> shape, double value) {
  Tensor t(dtype, shape);
  for (int64_t i = 0, e = t.getNumElements(); i < e; ++i)
    t.setDouble(i, value);
  return t;
}

int64_t Tensor::getNumElements() const { return numElementsOf(shape); }

SmallVector<int64_t> Tensor::getStrides() const {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

double Tensor::getDouble(int64_t i) const {
  return std::visit([&](const auto &v) { return static_cast<double>(v[i]); },
                    storage);
}

int64_t Tensor::getInt(int64_t i) const {
  return std::visit([&](const auto &v) { return static_cast<int64_t>(v[i]); },
                    storage);
}

void Tensor::setDouble(int64_t i, double value) {
  std::visit(
      [&](auto &v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        v[i] = static_cast<T>(value);
      },
      storage);
}

void Tensor::copyElement(int64_t i, const Tensor &from, int64_t j) {
  assert(dtype == from.dtype && "copyElement between dtypes");
  std::visit(
      [&](auto &v) {
        using V = std::decay_t<decltype(v)>;
        v[i] = std::get<V>(from.storage)[j];
      },
      storage);
}

void Tensor::setInt(int64_t i, int64_t value) {
  std::visit(
      [&](auto &v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        v[i] = static_cast<T>(value);
      },
      storage);
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(getNumElements());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = getDouble(i);
  return out;
}

bool Tensor::matches(ShapedType type) const {
  if (!type.hasRank() || interp::getDType(type.getElementType()) != dtype ||
      type.getRank() != getRank())
    return false;
  for (auto [want, have] : llvm::zip(type.getShape(), shape))
    if (!ShapedType::isDynamic(want) && want != have)
      return false;
  return true;
}

std::string Tensor::describe() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "tensor<";
  for (int64_t d : shape)
    os << d << "x";
  os << stringifyDType(dtype) << ">";
  return s;
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

/// The initial value of `global`, or failure (with a diagnostic) when its
/// type or initialiser is outside what the interpreter stores.
static FailureOr<Tensor> initialValue(train::GlobalOp global) {
  RankedTensorType type = global.getTensorType();
  std::optional<DType> dtype = getDType(type.getElementType());
  if (!dtype || !type.hasStaticShape())
    return global.emitOpError("has type ")
           << type << ", which the reference interpreter cannot hold";
  Tensor value(*dtype, type.getShape());
  Attribute init = global.getInitialValueAttr();
  if (!init)
    return value;
  if (auto dense = dyn_cast<DenseElementsAttr>(init)) {
    if (isFloat(*dtype))
      for (auto [i, v] : llvm::enumerate(dense.getValues<APFloat>()))
        value.setDouble(i, v.convertToDouble());
    else
      for (auto [i, v] : llvm::enumerate(dense.getValues<APInt>()))
        value.setInt(i, v.getSExtValue());
    return value;
  }
  if (auto initializer = dyn_cast<train::InitializerAttr>(init)) {
    switch (initializer.getKind()) {
    case train::InitKind::ones:
      return Tensor::splat(*dtype, type.getShape(), 1.0);
    case train::InitKind::constant:
      return Tensor::splat(*dtype, type.getShape(), initializer.getParam(0));
    default:
      // zeros, and the random kinds the caller must set explicitly.
      return value;
    }
  }
  return global.emitOpError("has an initial value the reference interpreter "
                            "cannot read: ")
         << init;
}

FailureOr<State> State::fromModule(ModuleOp module) {
  State state;
  for (auto global : module.getOps<train::GlobalOp>()) {
    FailureOr<Tensor> value = initialValue(global);
    if (failed(value))
      return failure();
    state.set(global.getSymName(), std::move(*value));
  }
  return state;
}

const Tensor *State::lookup(StringRef name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

Tensor *State::lookup(StringRef name) {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

void State::set(StringRef name, Tensor value) {
  values.insert_or_assign(name, std::move(value));
}

std::vector<std::string> State::getNames() const {
  std::vector<std::string> names;
  for (const auto &entry : values)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

static const KernelTable &getKernels() {
  static const KernelTable table = [] {
    KernelTable t;
    registerNNKernels(t);
    registerConvPoolKernels(t);
    registerGatherKernels(t);
    registerTrainKernels(t);
    return t;
  }();
  return table;
}

bool interp::isSupported(OperationName name) {
  if (name.getStringRef() == func::ReturnOp::getOperationName())
    return true;
  std::optional<RegisteredOperationName> info = name.getRegisteredInfo();
  return info && getKernels().lookup(info->getTypeID()) != nullptr;
}

/// `x` rounded to f32 and then to bf16, nearest even on the f32 value's
/// bits (NaN and infinity are not expected and round as the bits say).
static double roundedToBf16(double x) {
  uint32_t bits = llvm::bit_cast<uint32_t>(float(x));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return llvm::bit_cast<float>(bits & 0xffff0000u);
}

std::vector<double> Frame::multiplied(Operation *op, const Tensor &t) const {
  std::vector<double> v = t.toDoubles();
  if (!options.roundsOperandsToBf16 || !options.roundsOperandsToBf16(op))
    return v;
  for (double &x : v)
    x = roundedToBf16(x);
  return v;
}

void Frame::storeResult(Operation *op, std::vector<double> &sums) const {
  if (!options.roundsResultsToBf16 || !options.roundsResultsToBf16(op))
    return;
  for (double &x : sums)
    x = roundedToBf16(x);
}

FailureOr<SmallVector<Tensor>>
interp::interpret(func::FuncOp func, ArrayRef<Tensor> args, State &state,
                  const InterpretOptions &options) {
  if (func.isExternal())
    return func.emitError("@")
           << func.getSymName() << " has no body to interpret";
  if (!func.getBody().hasOneBlock())
    return func.emitError("the reference interpreter runs single-block "
                          "functions; @")
           << func.getSymName() << " has " << func.getBody().getBlocks().size()
           << " blocks";
  Block &block = func.getBody().front();
  if (args.size() != block.getNumArguments())
    return func.emitError("@")
           << func.getSymName() << " takes " << block.getNumArguments()
           << " arguments, the interpreter got " << args.size();

  Frame frame(state, options);
  for (auto [arg, value] : llvm::zip(block.getArguments(), args)) {
    auto type = dyn_cast<ShapedType>(arg.getType());
    if (!type || !value.matches(type))
      return func.emitError("argument #")
             << arg.getArgNumber() << " of @" << func.getSymName()
             << " has type " << arg.getType() << ", the interpreter got "
             << value.describe();
    frame.set(arg, value);
  }

  const KernelTable &kernels = getKernels();
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(frame.get(v));
      return results;
    }
    std::optional<RegisteredOperationName> info = op.getRegisteredInfo();
    Kernel kernel = info ? kernels.lookup(info->getTypeID()) : nullptr;
    if (!kernel)
      return op.emitError("the reference interpreter does not support '")
             << op.getName() << "'";
    if (op.getNumRegions() != 0)
      return op.emitError("the reference interpreter does not run ops with "
                          "regions");
    if (failed(kernel(&op, frame)))
      return failure();
    // A result that disagrees with the op's type is a bug in a kernel or in
    // the op's type inference: either way the comparison would be wrong.
    for (OpResult r : op.getResults()) {
      if (!frame.has(r))
        return op.emitError("the interpreter kernel left result #")
               << r.getResultNumber() << " unset";
      auto type = dyn_cast<ShapedType>(r.getType());
      const Tensor &value = frame.get(r);
      if (!type || !value.matches(type))
        return op.emitError("result #")
               << r.getResultNumber() << " has type " << r.getType()
               << " but the interpreter computed " << value.describe();
    }
  }
  return func.emitError("@")
         << func.getSymName() << " does not end in func.return";
}

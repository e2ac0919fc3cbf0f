//===- TrainDialect.cpp - The train dialect -------------------------------===//
//
// Registers the train dialect, implements #train.init and verifies the
// train.* attributes of functions, their arguments and results, and modules.
//
//===----------------------------------------------------------------------===//

#include "dialects/Train/IR/TrainDialect.h"
#include "dialects/Train/IR/TrainOps.h"

#include "compiler/Artifact/SchemaDict.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cleave::train;

#include "dialects/Train/IR/TrainDialect.cpp.inc"
#include "dialects/Train/IR/TrainEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Train/IR/TrainAttrs.cpp.inc"

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Train/IR/TrainOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Train/IR/TrainAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #train.init
//===----------------------------------------------------------------------===//

/// Number of numeric parameters each initialiser kind takes.
static size_t expectedParams(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
  case InitKind::kaiming_uniform:
    return 0;
  case InitKind::constant:
  case InitKind::fan_in_uniform:
    return 1;
  case InitKind::uniform:
  case InitKind::normal:
    return 2;
  }
  llvm_unreachable("unknown initializer kind");
}

LogicalResult
InitializerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        InitKind kind, ArrayRef<APFloat> params) {
  if (params.size() != expectedParams(kind))
    return emitError() << "initializer '" << stringifyInitKind(kind)
                       << "' takes " << expectedParams(kind)
                       << " parameter(s), got " << params.size();
  auto p = [&](unsigned i) { return params[i].convertToDouble(); };
  if (kind == InitKind::fan_in_uniform && p(0) <= 0)
    return emitError() << "fan_in must be positive";
  if (kind == InitKind::uniform && p(0) > p(1))
    return emitError() << "uniform bounds must satisfy lo <= hi";
  if (kind == InitKind::normal && p(1) < 0)
    return emitError() << "normal std must be >= 0";
  return success();
}

Attribute InitializerAttr::parse(AsmParser &parser, Type) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  auto kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc, "unknown initializer '") << keyword << "'";
    return {};
  }
  SmallVector<APFloat> params;
  while (succeeded(parser.parseOptionalComma())) {
    double v;
    if (parser.parseFloat(v))
      return {};
    params.push_back(APFloat(v));
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *kind, params);
}

void InitializerAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  for (const APFloat &p : getParams()) {
    printer << ", ";
    printer.printFloat(p);
  }
  printer << ">";
}

//===----------------------------------------------------------------------===//
// train.* attributes
//===----------------------------------------------------------------------===//

bool TrainDialect::isTrainingEntry(StringRef name) {
  static constexpr StringLiteral kEntries[] = {"step", "micro_step",
                                               "apply_step", "eval_step"};
  return llvm::is_contained(kEntries, name);
}

/// The runtime makes an entry's name part of the symbol cleave_entry_<name>.
static bool isIdentifier(StringRef name) {
  return !name.empty() && !llvm::isDigit(name.front()) &&
         llvm::all_of(name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

static bool isNonEmptyString(Attribute value) {
  auto s = dyn_cast<StringAttr>(value);
  return s && !s.empty();
}

static bool isPositiveInteger(Attribute value) {
  auto i = dyn_cast<IntegerAttr>(value);
  return i && !isa<BoolAttr>(value) && i.getValue().isStrictlyPositive();
}

/// The argument attributes that say what an argument is; one per argument.
static constexpr StringLiteral kArgRoles[] = {
    TrainDialect::kInputAttr, TrainDialect::kHyperAttr,
    TrainDialect::kParamAttr, TrainDialect::kBufferAttr,
    TrainDialect::kRngAttr};

static bool isArgAttr(StringRef name) {
  return llvm::is_contained(kArgRoles, name) ||
         name == TrainDialect::kIndexBoundAttr ||
         name == TrainDialect::kUnsignedAttr ||
         name == TrainDialect::kIgnoreIndexAttr ||
         name == TrainDialect::kSampleWeightsAttr ||
         name == TrainDialect::kDefaultAttr || name == TrainDialect::kInitAttr;
}

static bool isResultAttr(StringRef name) {
  return name == TrainDialect::kOutputAttr ||
         name == TrainDialect::kBufferAttr ||
         name == TrainDialect::kGradOfAttr ||
         name == TrainDialect::kUnsignedAttr;
}

/// The entries train.manifest may hold: the manifest's rows of origin
/// Carried (runtime/include/cleave/artifact_schema.def), each of its type
/// and allowed for the artifact's kind; WriteManifestPass copies them.
static LogicalResult verifyManifest(Operation *op, DictionaryAttr manifest) {
  ::cleave::abi::Manifest carried;
  ::cleave::abi::DictFault fault;
  if (::cleave::abi::fromDict(manifest, carried, fault,
                              {/*carriedOnly=*/true, /*requireAll=*/false}))
    return success();
  if (fault.kind == ::cleave::abi::DictFault::Unknown)
    return op->emitError() << "unknown '" << TrainDialect::kManifestAttr
                           << "' entry '" << fault.path << "'; expected "
                           << fault.expected;
  return op->emitError() << "'" << TrainDialect::kManifestAttr << "' entry "
                         << fault.message();
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  Attribute value = attr.getValue();
  if (name == kEntryAttr || name == kGradientOfAttr) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << name << "' is a function attribute";
    if (name == kGradientOfAttr) {
      if (!isa<FlatSymbolRefAttr>(value))
        return op->emitError()
               << "'" << name << "' must name a function, got " << value;
      return success();
    }
    auto entry = dyn_cast<StringAttr>(value);
    if (!entry || !isIdentifier(entry.getValue()))
      return op->emitError()
             << "'" << name
             << "' must be an entry name (letters, digits and '_', not "
                "starting with a digit), got "
             << value;
    // A traced graph module (manifest kind "graph") names its entries
    // freely; a training module has the four of the training ABI. Without a
    // manifest (before the split, or once the artifact holds it) any name
    // the runtime accepts passes.
    auto module = op->getParentOfType<ModuleOp>();
    auto manifest =
        module ? module->getAttrOfType<DictionaryAttr>(kManifestAttr) : nullptr;
    if (manifest && !manifest.get("kind") && !isTrainingEntry(entry))
      return op->emitError() << "'" << name
                             << "' of a training module must be step, "
                                "micro_step, apply_step or eval_step, got "
                             << value;
    return success();
  }
  if (name == kManifestAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << name << "' is a module attribute";
    auto manifest = dyn_cast<DictionaryAttr>(value);
    if (!manifest)
      return op->emitError()
             << "'" << name << "' must be a dictionary, got " << value;
    return verifyManifest(op, manifest);
  }
  if (name == kMicroBatchAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << name << "' is a module attribute";
    if (!isPositiveInteger(value))
      return op->emitError()
             << "'" << name << "' must be a positive integer, got " << value;
    return success();
  }
  if (isArgAttr(name) || isResultAttr(name))
    return op->emitError() << "'" << name
                           << "' belongs on a function argument or result, "
                              "not on an operation";
  return op->emitError() << "unknown attribute '" << name << "'";
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned region,
                                                     unsigned index,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  Attribute value = attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || region != 0)
    return op->emitError() << "'" << name << "' belongs on a function argument";
  auto emitError = [&]() -> InFlightDiagnostic {
    return op->emitError() << "argument #" << index << ": '" << name << "' ";
  };
  auto has = [&](StringRef other) {
    return static_cast<bool>(func.getArgAttr(index, other));
  };
  auto tensor = dyn_cast<RankedTensorType>(func.getArgumentTypes()[index]);

  if (llvm::is_contained(kArgRoles, name)) {
    if (name == kRngAttr ? !isa<UnitAttr>(value) : !isNonEmptyString(value))
      return emitError() << "must be "
                         << (name == kRngAttr ? "a unit attribute"
                                              : "a non-empty string")
                         << ", got " << value;
    for (StringRef other : kArgRoles)
      if (other != name && has(other))
        return emitError() << "and '" << other
                           << "' both say what the argument is; it has one "
                              "role";
    return success();
  }
  if (name == kIndexBoundAttr) {
    if (!isPositiveInteger(value))
      return emitError() << "must be a positive integer, got " << value;
    if (!has(kInputAttr))
      return emitError() << "bounds a data input; the argument has no '"
                         << kInputAttr << "'";
    if (tensor && !isa<IntegerType>(tensor.getElementType()))
      return emitError() << "bounds integer inputs, the argument is " << tensor;
    return success();
  }
  if (name == kUnsignedAttr) {
    if (!isa<UnitAttr>(value))
      return emitError() << "must be a unit attribute, got " << value;
    if (!has(kInputAttr))
      return emitError() << "marks a data input; the argument has no '"
                         << kInputAttr << "'";
    if (tensor && !isa<IntegerType>(tensor.getElementType()))
      return emitError() << "marks integer inputs, the argument is " << tensor;
    return success();
  }
  if (name == kSampleWeightsAttr) {
    if (!isa<UnitAttr>(value))
      return emitError() << "must be a unit attribute, got " << value;
    if (!has(kInputAttr))
      return emitError() << "marks a data input; the argument has no '"
                         << kInputAttr << "'";
    if (tensor && !isa<FloatType>(tensor.getElementType()))
      return emitError() << "marks float weights, the argument is " << tensor;
    return success();
  }
  if (name == kIgnoreIndexAttr) {
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || isa<BoolAttr>(value) || !i.getType().isInteger(64))
      return emitError() << "must be an i64 integer, got " << value;
    if (!has(kInputAttr))
      return emitError() << "marks token labels, a data input; the argument "
                            "has no '"
                         << kInputAttr << "'";
    if (tensor && (!isa<IntegerType>(tensor.getElementType()) ||
                   tensor.getRank() < 2))
      return emitError() << "marks token labels ([batch, tokens] integers), "
                            "the argument is "
                         << tensor;
    return success();
  }
  if (name == kDefaultAttr) {
    if (!isa<FloatAttr>(value) &&
        !(isa<IntegerAttr>(value) && !isa<BoolAttr>(value)))
      return emitError() << "must be a number, got " << value;
    if (!has(kHyperAttr))
      return emitError() << "is a hyperparameter's default; the argument has "
                            "no '"
                         << kHyperAttr << "'";
    return success();
  }
  if (name == kInitAttr) {
    // An initialiser, or the exact initial value (an ONNX initializer).
    auto elements = dyn_cast<ElementsAttr>(value);
    if (!isa<InitializerAttr>(value) && !elements)
      return emitError() << "must be a #train.init or an elements attribute, "
                            "got "
                         << value;
    if (elements && tensor && elements.getType() != tensor)
      return emitError() << "has type " << elements.getType()
                         << ", the argument is " << tensor;
    if (!has(kParamAttr) && !has(kBufferAttr))
      return emitError() << "initialises a global; the argument has neither '"
                         << kParamAttr << "' nor '" << kBufferAttr << "'";
    return success();
  }
  if (isResultAttr(name))
    return emitError() << "belongs on a function result";
  return emitError() << "is not a train argument attribute";
}

LogicalResult TrainDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned region,
                                                        unsigned index,
                                                        NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  Attribute value = attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || region != 0)
    return op->emitError() << "'" << name << "' belongs on a function result";
  auto emitError = [&]() -> InFlightDiagnostic {
    return op->emitError() << "result #" << index << ": '" << name << "' ";
  };
  if (!isResultAttr(name))
    return isArgAttr(name) ? emitError() << "belongs on a function argument"
                           : emitError() << "is not a train result attribute";
  if (name == kUnsignedAttr) {
    if (!isa<UnitAttr>(value))
      return emitError() << "must be a unit attribute, got " << value;
    auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[index]);
    if (type && !isa<IntegerType>(type.getElementType()))
      return emitError() << "marks integer outputs, the result is " << type;
    return success();
  }
  if (!isNonEmptyString(value))
    return emitError() << "must be a non-empty string, got " << value;
  if (name != kGradOfAttr)
    return success();
  // The gradient of a parameter the function takes.
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, kParamAttr) == value)
      return success();
  return emitError() << "names no argument of the function with '" << kParamAttr
                     << " = " << value << "'";
}

//===- OnnxImporter.cpp - ONNX models to nn model functions ---------------===//
//
// Reads and validates an ONNX file before the graph importer sees it: a file
// that is missing, not a protobuf, truncated, of an unsupported opset or
// using an unsupported op is refused here with a diagnostic, never a crash.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/OnnxImporter.h"
#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNDialect.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/defs/schema.h>

#include <climits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

/// The default-domain opsets the importer maps. Below kMinOpset a model is
/// read node by node: an op whose definition at the model's opset is the
/// one it has at kMinOpset (MaxPool-12, Conv-11, And-7), or differs from it
/// only in types (Relu-6), imports as such; one whose form or meaning
/// changed since (Squeeze-11, Softmax-11) is refused.
static constexpr int64_t kMinOpset = 13;
static constexpr int64_t kMaxOpset = 21;

/// Finds the default-domain opset, or emits at `loc`.
static FailureOr<int64_t> defaultOpset(const onnx::ModelProto &model,
                                       Location loc) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import()) {
    if (!set.domain().empty() && set.domain() != "ai.onnx")
      continue;
    if (set.version() < 1 || set.version() > kMaxOpset)
      return emitError(loc)
             << "unsupported ONNX opset " << set.version()
             << "; supported opsets are " << kMinOpset << " to " << kMaxOpset
             << " (and older ones whose ops are unchanged "
                "at opset "
             << kMinOpset << ")";
    return set.version();
  }
  return emitError(loc) << "the model imports no default-domain (ai.onnx) "
                           "opset";
}

/// The version of `op`'s definition in force at `opset` (the `since_version`
/// of its schema), or 0 if it has none.
static int64_t definitionVersion(const std::string &op, int64_t opset) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset), "");
  return schema ? schema->SinceVersion() : 0;
}

/// Ops whose opset-13 definition only added types (bfloat16) to the one
/// before it (the ONNX changelog; inputs, outputs, attributes and meaning
/// unchanged), so that one imports too. Not Softmax and LogSoftmax, whose
/// meaning changed at 13 under the same signature, nor Squeeze, Unsqueeze,
/// ReduceSum, Split and Resize, whose signatures changed.
static bool onlyTypesChangedAtOpset13(StringRef op) {
  static const llvm::StringSet<> ops = {"Abs",
                                        "Add",
                                        "Cast",
                                        "Clip",
                                        "Concat",
                                        "Constant",
                                        "Div",
                                        "Dropout",
                                        "Equal",
                                        "Erf",
                                        "Exp",
                                        "Expand",
                                        "Flatten",
                                        "Gather",
                                        "GatherElements",
                                        "Gemm",
                                        "Greater",
                                        "Identity",
                                        "Less",
                                        "Log",
                                        "MatMul",
                                        "Max",
                                        "Min",
                                        "Mul",
                                        "Neg",
                                        "Pad",
                                        "Pow",
                                        "Reciprocal",
                                        "ReduceL2",
                                        "ReduceMax",
                                        "ReduceMean",
                                        "ReduceMin",
                                        "Relu",
                                        "Reshape",
                                        "Shape",
                                        "Sigmoid",
                                        "Slice",
                                        "Sqrt",
                                        "Sub",
                                        "Tanh",
                                        "Tile",
                                        "Transpose",
                                        "DepthToSpace",
                                        "SpaceToDepth",
                                        "ReduceL1",
                                        "ReduceSumSquare",
                                        "ReduceLogSumExp",
                                        "Sum",
                                        "Mean",
                                        "Sign",
                                        "IsNaN"};
  return ops.contains(op);
}

/// The lowest opset at which `op` has the definition the importer maps: the
/// importer's own minimum above kMinOpset, else the version of the
/// definition in force at kMinOpset (or of the one before it, if that
/// differs only in types).
static int64_t lowestOpset(StringRef op, const OpImporter &importer) {
  if (importer.minOpset > kMinOpset)
    return importer.minOpset;
  int64_t since = definitionVersion(op.str(), kMinOpset);
  if (since == kMinOpset && onlyTypesChangedAtOpset13(op))
    since = definitionVersion(op.str(), kMinOpset - 1);
  return since > 0 ? since : kMinOpset;
}

/// Refuses a node the importer has no mapping for, naming it.
static LogicalResult checkSupported(const onnx::GraphProto &graph,
                                    int64_t opset, MLIRContext &context,
                                    StringRef path) {
  const ImporterTable &table = getImporterTable();
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    auto it = table.find(node.op_type());
    if (defaultDomain && it != table.end() &&
        opset >= lowestOpset(node.op_type(), it->second))
      continue;
    std::string name = nodeName(node, index);
    Location loc = NameLoc::get(StringAttr::get(&context, name),
                                FileLineColLoc::get(&context, path, 0, 0));
    if (defaultDomain && it != table.end() && opset < kMinOpset)
      return emitError(loc)
             << "node '" << name << "' is " << node.op_type() << "-"
             << definitionVersion(node.op_type(), opset) << " (opset " << opset
             << "), whose definition changed in " << node.op_type() << "-"
             << lowestOpset(node.op_type(), it->second)
             << "; Cleave imports that one and later (export with opset "
             << kMinOpset << " or later)";
    InFlightDiagnostic diag = emitError(loc) << "node '" << name
                                             << "' has unsupported op type '";
    if (!defaultDomain)
      diag << node.domain() << ".";
    diag << node.op_type() << "' (opset " << opset << ")";
    return diag;
  }
  return success();
}

void cleave::printOnnxOperatorTable(llvm::raw_ostream &os) {
  const ImporterTable &table = getImporterTable();
  SmallVector<StringRef> names;
  for (const auto &entry : table)
    names.push_back(entry.getKey());
  llvm::sort(names);
  os << "| ONNX op | from opset | notes |\n|---|---|---|\n";
  for (StringRef name : names) {
    const OpImporter &op = table.find(name)->second;
    os << "| `" << name << "` | " << lowestOpset(name, op) << " |";
    if (*op.notes)
      os << " " << op.notes << " |";
    os << "\n";
  }
}

OwningOpRef<ModuleOp> cleave::importOnnx(MLIRContext &context, StringRef path) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << error;
    return {};
  }
  return importOnnx(context, llvm::MemoryBufferRef(file->getBuffer(), path));
}

OwningOpRef<ModuleOp> cleave::importOnnx(MLIRContext &context,
                                         llvm::MemoryBufferRef buffer) {
  context.loadDialect<arith::ArithDialect, func::FuncDialect, nn::NNDialect,
                      train::TrainDialect>();
  StringRef path = buffer.getBufferIdentifier();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  StringRef bytes = buffer.getBuffer();
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    emitError(fileLoc) << "'" << path
                       << "' is not an ONNX model: it does not parse as an "
                          "ONNX ModelProto (truncated or corrupt?)";
    return {};
  }
  // Protobuf accepts many byte strings as a message with no known fields.
  if (!model.has_graph() || model.ir_version() <= 0) {
    emitError(fileLoc) << "'" << path << "' is not an ONNX model: it has no "
                       << (model.has_graph() ? "IR version" : "graph");
    return {};
  }
  FailureOr<int64_t> opset = defaultOpset(model, fileLoc);
  if (failed(opset) ||
      failed(checkSupported(model.graph(), *opset, context, path)))
    return {};
  // The checker finds what the importer would otherwise trip over: dangling
  // value names, nodes out of order, attributes of the wrong type.
  try {
    checkModel(model);
  } catch (const std::exception &e) {
    // The checker's messages span lines; keep the diagnostic on one.
    std::string message;
    for (StringRef word : llvm::split(StringRef(e.what()).trim(), '\n'))
      if (!word.trim().empty())
        message += (message.empty() ? "" : " ") + word.trim().str();
    emitError(fileLoc) << "'" << path
                       << "' is not a valid ONNX model: " << message;
    return {};
  }
  // Every node of an older model has its opset-13 definition
  // (checkSupported): the op importers read it as opset 13.
  return GraphImporter(context, model, std::max(*opset, kMinOpset), path).run();
}

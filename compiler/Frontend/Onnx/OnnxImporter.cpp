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
#include "llvm/Support/MemoryBuffer.h"

#include <climits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

/// The default-domain opsets the importer maps.
static constexpr int64_t kMinOpset = 13;
static constexpr int64_t kMaxOpset = 21;

/// Finds the default-domain opset, or emits at `loc`.
static FailureOr<int64_t> defaultOpset(const onnx::ModelProto &model,
                                       Location loc) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import()) {
    if (!set.domain().empty() && set.domain() != "ai.onnx")
      continue;
    if (set.version() < kMinOpset || set.version() > kMaxOpset)
      return emitError(loc)
             << "unsupported ONNX opset " << set.version()
             << "; supported opsets are " << kMinOpset << " to " << kMaxOpset;
    return set.version();
  }
  return emitError(loc) << "the model imports no default-domain (ai.onnx) "
                           "opset";
}

/// Refuses a node the importer has no mapping for, naming it.
static LogicalResult checkSupported(const onnx::GraphProto &graph,
                                    int64_t opset, MLIRContext &context,
                                    StringRef path) {
  const ImporterTable &table = getImporterTable();
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    auto it = table.find(node.op_type());
    if (defaultDomain && it != table.end() && opset >= it->second.minOpset)
      continue;
    std::string name = nodeName(node, index);
    Location loc = NameLoc::get(StringAttr::get(&context, name),
                                FileLineColLoc::get(&context, path, 0, 0));
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
    os << "| `" << name << "` | " << std::max(op.minOpset, kMinOpset) << " |";
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
  return GraphImporter(context, model, *opset, path).run();
}

//===- cleave-opt.cpp - Run Cleave and MLIR passes on MLIR text -----------===//
//
// The compiler engineer's driver: every Cleave and upstream pass, on files.
// `--import-onnx model.onnx` starts from an ONNX model instead of MLIR;
// `--list-onnx-ops` prints the supported ONNX operators as a markdown table.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/OnnxImporter.h"
#include "compiler/InitAll.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <optional>

static constexpr llvm::StringLiteral kToolName = "Cleave optimizer driver\n";

/// Takes `--import-onnx <file>` (or `--import-onnx=<file>`) off the command
/// line, which MlirOptMain would not know.
static std::optional<std::string> takeOnnxInput(int &argc, char **argv) {
  std::optional<std::string> path;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if ((arg == "--import-onnx" || arg == "-import-onnx") && i + 1 < argc) {
      path = argv[++i];
    } else if (arg.consume_front("--import-onnx=") ||
               arg.consume_front("-import-onnx=")) {
      path = arg.str();
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return path;
}

/// Imports the ONNX model and runs the usual cleave-opt processing on it.
static int importAndRun(llvm::StringRef onnxPath, int argc, char **argv,
                        mlir::DialectRegistry &registry) {
  llvm::InitLLVM init(argc, argv);
  auto [input, output] =
      mlir::registerAndParseCLIOptions(argc, argv, kToolName, registry);
  if (input != "-") {
    llvm::errs() << "cleave-opt: error: --import-onnx and the input file '"
                 << input << "' are exclusive\n";
    return 1;
  }
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::cleave::importOnnx(context, onnxPath);
  if (!module)
    return 1;
  // Bytecode keeps the ONNX node locations and the exact weights, whatever
  // printing flags the command line sets for the output.
  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  if (mlir::failed(mlir::writeBytecodeToFile(*module, os)))
    return 1;
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out =
      mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "cleave-opt: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(
          out->os(), llvm::MemoryBuffer::getMemBufferCopy(bytecode, onnxPath),
          registry, mlir::MlirOptMainConfig::createFromCLOptions())))
    return 1;
  out->keep();
  return 0;
}

/// Whether the command line is exactly `--list-onnx-ops`.
static bool listsOnnxOps(int argc, char **argv) {
  return argc == 2 && (llvm::StringRef(argv[1]) == "--list-onnx-ops" ||
                       llvm::StringRef(argv[1]) == "-list-onnx-ops");
}

int main(int argc, char **argv) {
  // The operator table of docs/user/onnx.md
  // (scripts/update-onnx-ops-doc.py splices it in).
  if (listsOnnxOps(argc, argv)) {
    mlir::cleave::printOnnxOperatorTable(llvm::outs());
    return 0;
  }
  mlir::DialectRegistry registry;
  mlir::cleave::registerAllDialects(registry);
  mlir::cleave::registerAllPasses();
  if (std::optional<std::string> onnx = takeOnnxInput(argc, argv))
    return importAndRun(*onnx, argc, argv, registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, kToolName, registry));
}

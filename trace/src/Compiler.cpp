//===- Compiler.cpp - Traced graphs to artifacts --------------------------===//
//
// Emits the traced graph (CleaveTraceEmitter), runs the back end that
// cleave-compile runs after the split (buildCpuBackendPipeline, or
// buildCudaBackendPipeline for a GPU), and writes the shared object as
// cleave-compile does. One MLIR context serves every
// compilation of the process; diagnostics are collected, not printed.
//
//===----------------------------------------------------------------------===//

#include "Compiler.h"

#include "compiler/Artifact/GpuTarget.h"
#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/Frontend/Trace/TraceEmitter.h"
#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

namespace cleave::detail {

namespace {

namespace tg = mlir::cleave::trace;

mlir::MLIRContext &context() {
  // Created once; never destroyed, like the tracer itself (Tracer.cpp says
  // why). Single-threaded: the tracer is, and the machine is small.
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    mlir::cleave::registerAllDialects(registry);
    auto *c =
        new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// Collects the diagnostics emitted while it lives, one per line.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx)
      : handler(&ctx, [this](mlir::Diagnostic &d) {
          append(d);
          for (mlir::Diagnostic &note : d.getNotes())
            append(note);
          return mlir::success();
        }) {}

  std::string text() const { return text_.empty() ? "unknown error" : text_; }

private:
  void append(mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(text_);
    if (!text_.empty())
      os << "; ";
    if (!llvm::isa<mlir::UnknownLoc>(d.getLocation()))
      os << d.getLocation() << ": ";
    os << d.str();
  }

  std::string text_;
  mlir::ScopedDiagnosticHandler handler;
};

mlir::OwningOpRef<mlir::ModuleOp> emit(const tg::Graph &graph, int64_t batch) {
  tg::EmitOptions options;
  options.entry = kGraphEntry;
  options.batch = batch;
  return tg::emitTraceModule(context(), graph, options);
}

std::string print(mlir::ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  return s;
}

} // namespace

bool emitGraphIR(const tg::Graph &graph, int64_t batch, std::string &ir,
                 std::string &error) {
  DiagnosticCollector diagnostics(context());
  mlir::OwningOpRef<mlir::ModuleOp> module = emit(graph, batch);
  if (!module) {
    error = diagnostics.text();
    return false;
  }
  ir = print(*module);
  return true;
}

bool checkGraphTarget(const GraphTarget &target, std::string &error) noexcept {
  if (!target.cuda)
    return true;
  if (!target.gpuArch.empty() &&
      mlir::failed(mlir::cleave::parseGpuArches(target.gpuArch, error)))
    return false;
  return mlir::succeeded(mlir::cleave::checkCudaToolkit(error));
}

bool compileGraph(const tg::Graph &graph, int64_t batch,
                  const GraphTarget &target, const std::string &artifactPath,
                  const std::string &dumpPath, std::string &error) noexcept {
  DiagnosticCollector diagnostics(context());
  mlir::OwningOpRef<mlir::ModuleOp> module = emit(graph, batch);
  if (!module) {
    error = "emitting the graph: " + diagnostics.text();
    return false;
  }
  if (!dumpPath.empty()) {
    std::error_code ec = llvm::sys::fs::create_directories(
        llvm::sys::path::parent_path(dumpPath));
    llvm::raw_fd_ostream os(dumpPath, ec);
    if (ec) {
      error = dumpPath + ": " + ec.message();
      return false;
    }
    module->print(os);
  }

  mlir::PassManager pm(&context());
  if (target.cuda) {
    mlir::cleave::CleaveWriteManifestOptions options;
    options.device = mlir::cleave::rt::Device::cuda;
    if (!target.gpuArch.empty())
      options.gpuArches = target.gpuArch;
    mlir::cleave::buildCudaBackendPipeline(pm, options);
  } else {
    mlir::cleave::buildCpuBackendPipeline(pm);
  }
  if (mlir::failed(pm.run(*module))) {
    error = "lowering the graph: " + diagnostics.text();
    return false;
  }

  return mlir::succeeded(
      mlir::cleave::writeArtifact(*module, artifactPath, error));
}

uint64_t hashKey(const std::string &key) noexcept {
  return llvm::xxh3_64bits(key);
}

} // namespace cleave::detail

//===- TestSupport.cpp - Shared helpers of the compiler unit tests --------===//
//
// Implements parsing, pipelines, diagnostics capture and random tensors.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "compiler/InitAll.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::test;

std::unique_ptr<MLIRContext> test::makeContext() {
  static const bool registered = [] {
    cleave::registerAllPasses();
    return true;
  }();
  (void)registered;
  DialectRegistry registry;
  cleave::registerAllDialects(registry);
  // Dialects load on demand as the parser and the passes need them. No
  // pass-manager thread pool: ctest runs the tests one per core.
  return std::make_unique<MLIRContext>(registry,
                                       MLIRContext::Threading::DISABLED);
}

DiagnosticCollector::DiagnosticCollector(MLIRContext *ctx)
    : handler(ctx, [this](Diagnostic &diag) {
        llvm::raw_string_ostream os(text);
        os << diag.getLocation() << ": " << diag << "\n";
        for (const Diagnostic &note : diag.getNotes())
          os << "  note: " << note << "\n";
        return success();
      }) {}

OwningOpRef<ModuleOp> test::parseModule(MLIRContext *ctx, StringRef source,
                                        std::string *errors) {
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, ctx);
  if (module && failed(verify(*module)))
    module = nullptr;
  if (errors)
    *errors = diags.str();
  return module;
}

LogicalResult test::runPipeline(ModuleOp module, StringRef pipeline,
                                std::string *errors) {
  MLIRContext *ctx = module.getContext();
  DiagnosticCollector diags(ctx);
  PassManager pm(ctx);
  std::string parseErrors;
  llvm::raw_string_ostream os(parseErrors);
  LogicalResult result = parsePassPipeline(pipeline, pm, os);
  if (succeeded(result))
    result = pm.run(module);
  if (errors)
    *errors = parseErrors + diags.str();
  return result;
}

std::vector<interp::Tensor> test::run(ModuleOp module, StringRef name,
                                      ArrayRef<interp::Tensor> args,
                                      interp::State &state,
                                      const interp::InterpretOptions &options) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func) {
    ADD_FAILURE() << "no function @" << name.str();
    return {};
  }
  DiagnosticCollector diags(module.getContext());
  FailureOr<SmallVector<interp::Tensor>> results =
      interp::interpret(func, args, state, options);
  if (failed(results)) {
    ADD_FAILURE() << "interpreting @" << name.str() << " failed:\n"
                  << diags.str();
    return {};
  }
  return std::vector<interp::Tensor>(results->begin(), results->end());
}

std::vector<double> test::uniform(std::mt19937_64 &rng, size_t n, double lo,
                                  double hi) {
  // Not std::uniform_real_distribution: its output is implementation
  // defined, and the tests' data must not change with the standard library.
  std::vector<double> out(n);
  for (double &v : out)
    v = lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1.0p-53);
  return out;
}

interp::Tensor test::randomTensor(std::mt19937_64 &rng, interp::DType dtype,
                                  ArrayRef<int64_t> shape, double lo,
                                  double hi) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return interp::Tensor::fromDoubles(dtype, shape, uniform(rng, n, lo, hi));
}

//===- TrainStepFuzzer.cpp - Fuzzing the importer and the training step ---===//
//
// Feeds arbitrary bytes to importOnnx and then, where a module comes out,
// through cleave-compile's training pipeline up to linalg: the loss, the
// gradient, the training step with its optimizer, the split, and the
// nn-to-linalg lowering. The importer accepts graphs its own checks find
// well formed; what the passes after it assume of such graphs (one float
// type, a prediction with a batch dimension, shapes the gradients can be
// built for) is where a valid model can still abort the compiler. The
// contract is that of cleave-compile: an artifact-to-be or a diagnostic,
// never a crash; a failure with no error reported is a finding too.
//
// The last byte picks the loss (cross-entropy or MSE) and the optimizer
// (SGD or Adam), so that mutations reach both losses' and both update
// rules' builders from the same seeds.
//
//===----------------------------------------------------------------------===//

#include "ErrorRecorder.h"
#include "compiler/Frontend/Onnx/OnnxImporter.h"
#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DialectRegistry registry;
  cleave::registerAllDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  cleave::fuzz::ErrorRecorder errors(context);
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      cleave::importOnnx(context, llvm::MemoryBufferRef(bytes, "fuzz.onnx"));
  errors.requireErrorIf(!module);
  if (!module)
    return 0;
  uint8_t pick = size ? data[size - 1] : 0;
  cleave::TrainingPipelineOptions options;
  options.loss = pick & 1 ? cleave::nn::LossKind::mse
                          : cleave::nn::LossKind::cross_entropy;
  options.optimizer = pick & 2 ? cleave::train::OptimizerKind::adam
                               : cleave::train::OptimizerKind::sgd;
  options.microBatch = 2;
  options.accumulate = 2;
  PassManager pm(&context);
  cleave::buildTargetPipeline(pm, options, cleave::Phase::Linalg);
  errors.requireErrorIf(failed(pm.run(*module)));
  return 0;
}

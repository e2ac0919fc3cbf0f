//===- OnnxImporterFuzzer.cpp - Fuzzing the ONNX importer -----------------===//
//
// Feeds arbitrary bytes to importOnnx, as cleave-compile does with a model
// file: protobuf parsing, the opset and op checks, the ONNX checker, then
// the graph importer and the recomposition patterns. The importer's
// contract is a module or a diagnostic, never a crash: a null module with no
// error reported is a finding too.
//
// Each input gets a fresh context (single-threaded) so that attributes
// uniqued for one model do not pile up over millions of inputs.
//
//===----------------------------------------------------------------------===//

#include "ErrorRecorder.h"
#include "compiler/Frontend/Onnx/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  cleave::fuzz::ErrorRecorder errors(context);
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      cleave::importOnnx(context, llvm::MemoryBufferRef(bytes, "fuzz.onnx"));
  errors.requireErrorIf(!module);
  return 0;
}

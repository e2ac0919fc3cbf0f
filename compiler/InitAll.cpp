//===- InitAll.cpp - Register everything Cleave's tools need --------------===//
//
// Implements the single registration point.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "compiler/Artifact/Passes.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/InitAllDialects.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

void mlir::cleave::registerAllDialects(DialectRegistry &registry) {
  registerCleaveDialects(registry);
  rt::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // The CUDA back end serializes gpu.modules in-process (NVVM target
  // attributes translated to LLVM IR, then PTX and cubins) and translates
  // gpu.binary and gpu.launch_func on the host.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

void mlir::cleave::registerAllPasses() {
  mlir::registerAllPasses();
  registerCleavePasses();
  registerCleaveConversionPasses();
  registerCleaveArtifactPasses();
  registerPipelines();
}

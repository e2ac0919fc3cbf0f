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

void mlir::cleave::registerAllDialects(DialectRegistry &registry) {
  registerCleaveDialects(registry);
  rt::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void mlir::cleave::registerAllPasses() {
  mlir::registerAllPasses();
  registerCleavePasses();
  registerCleaveConversionPasses();
  registerCleaveArtifactPasses();
  registerPipelines();
}

//===- InitAll.cpp - Register everything Cleave's tools need --------------===//
//
// Implements the single registration point.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/InitAllDialects.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

void mlir::cleave::registerAllDialects(DialectRegistry &registry) {
  registerCleaveDialects(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void mlir::cleave::registerAllPasses() {
  mlir::registerAllPasses();
  registerCleavePasses();
}

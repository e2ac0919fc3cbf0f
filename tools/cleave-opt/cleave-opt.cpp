//===- cleave-opt.cpp - Run Cleave and MLIR passes on MLIR text -----------===//
//
// The compiler engineer's driver: every Cleave and upstream pass, on files.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::cleave::registerAllDialects(registry);
  mlir::cleave::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Cleave optimizer driver\n", registry));
}

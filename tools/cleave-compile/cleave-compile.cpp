//===- cleave-compile.cpp - Compile a model to a Cleave artifact ----------===//
//
// A thin main over compiler/Driver.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"

int main(int argc, char **argv) { return mlir::cleave::compileMain(argc, argv); }

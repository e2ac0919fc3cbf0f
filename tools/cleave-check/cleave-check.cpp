//===- cleave-check.cpp - N micro-batches against one batch of N*B --------===//
//
// A thin main over tools/cleave-check/lib (the library its tests link).
//
//===----------------------------------------------------------------------===//

#include "CheckMain.h"

int main(int argc, char **argv) {
  return cleave::checker::checkMain(argc, argv);
}

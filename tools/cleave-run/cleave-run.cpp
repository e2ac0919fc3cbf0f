//===- cleave-run.cpp - Run one entry of a Cleave artifact ----------------===//
//
// A thin main over tools/cleave-run/lib.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

int main(int argc, char **argv) { return cleave::run::runMain(argc, argv); }

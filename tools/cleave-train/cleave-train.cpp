//===- cleave-train.cpp - Train a Cleave artifact on a dataset ------------===//
//
// A thin main over tools/cleave-train/lib (the trainer library that the
// end-to-end tests also link).
//
//===----------------------------------------------------------------------===//

#include "Trainer.h"

int main(int argc, char **argv) { return cleave::train::trainMain(argc, argv); }

//===- InitAllDialects.h - Register Cleave's dialects -----------*- C++ -*-===//
//
// The one place that lists Cleave's own dialects; tools and tests register
// them through this.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECTS_INITALLDIALECTS_H
#define CLEAVE_DIALECTS_INITALLDIALECTS_H

#include "dialects/NN/IR/NNDialect.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::cleave {

inline void registerCleaveDialects(DialectRegistry &registry) {
  registry.insert<nn::NNDialect, train::TrainDialect, rt::RtDialect>();
}

} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_INITALLDIALECTS_H

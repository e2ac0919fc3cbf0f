//===- SameCode.cpp - Functions that are the same code --------------------===//

#include "compiler/Conversion/SameCode.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::cleave;

DictionaryAttr cleave::attributesButName(Operation *op) {
  NamedAttrList attributes(op->getAttrDictionary());
  attributes.erase(SymbolTable::getSymbolAttrName());
  return attributes.getDictionary(op->getContext());
}

llvm::hash_code cleave::hashCode(FunctionOpInterface function) {
  llvm::hash_code hash = llvm::hash_combine(function->getName(),
                                            attributesButName(function));
  function.getFunctionBody().walk([&](Operation *op) {
    hash = llvm::hash_combine(
        hash, OperationEquivalence::computeHash(
                  op, OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

bool cleave::isSameCode(FunctionOpInterface a, FunctionOpInterface b) {
  return a->getName() == b->getName() &&
         attributesButName(a) == attributesButName(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getFunctionBody(), &b.getFunctionBody(),
             OperationEquivalence::IgnoreLocations);
}

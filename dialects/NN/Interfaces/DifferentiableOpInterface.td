//===- DifferentiableOpInterface.td - Reverse-mode AD hook -*- tablegen -*-===//
//
// The one interface through which cleave-autodiff differentiates an op: the
// op builds its own vector-Jacobian product out of nn ops.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_DIFFERENTIABLEOPINTERFACE
#define CLEAVE_NN_DIFFERENTIABLEOPINTERFACE

include "mlir/IR/OpBase.td"

def DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let description = [{
    An op that knows its vector-Jacobian product (VJP). Given the cotangents of
    its results (a null `Value` for a result nothing downstream depends on),
    `buildVJP` emits nn ops at the builder's insertion point computing the
    cotangent of each operand whose entry in `needed` is true, and appends one
    `Value` per operand to `operandGrads` (null where not needed or not
    differentiable). The op's own operands and results may be used freely: the
    VJP runs after the forward computation.

    Operands that carry no gradient by nature (integer labels, indices, the
    dropout seed) answer false from `isDifferentiableOperand`; autodiff reports
    an error if a value it must differentiate flows into one of them.
  }];
  let cppNamespace = "::mlir::cleave::nn";

  let methods = [
    InterfaceMethod<
      /*desc=*/"Builds the cotangents of the operands.",
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"buildVJP",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::mlir::ValueRange":$resultGrads,
                    "::llvm::ArrayRef<bool>":$needed,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<
      /*desc=*/"Whether a gradient can flow into operand `index`.",
      /*retTy=*/"bool",
      /*methodName=*/"isDifferentiableOperand",
      /*args=*/(ins "unsigned":$index),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::isa<::mlir::FloatType>(
            ::mlir::getElementTypeOrSelf($_op->getOperand(index).getType()));
      }]>,
  ];
}

#endif // CLEAVE_NN_DIFFERENTIABLEOPINTERFACE

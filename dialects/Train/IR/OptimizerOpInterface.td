//===- OptimizerOpInterface.td - What an optimizer is -------*- tablegen -*-===//
//
// The update ops are the optimizers: this interface is what the compiler
// asks of one before building its update (docs/design/optimizer-interface.md).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRAIN_OPTIMIZEROPINTERFACE
#define CLEAVE_TRAIN_OPTIMIZEROPINTERFACE

include "mlir/IR/OpBase.td"

def Train_OptimizerOpInterface : OpInterface<"OptimizerOpInterface"> {
  let description = [{
    An optimizer's update of one parameter: the state it keeps per parameter
    (slots, each a global named `<parameter>.<slot>` of the parameter's
    type, zero at the start), the hyperparameters it takes beside `lr` and
    `weight_decay` (every optimizer has those), how its update is built, and
    whether that update reads only the element it writes (so that it runs
    on a shard of the parameter under ZeRO-1). The methods are static:
    cleave-build-train-step asks them before any such op exists
    (`getOptimizerSpec`).
  }];
  let cppNamespace = "::mlir::cleave::train";

  let methods = [
    StaticInterfaceMethod<
      /*desc=*/"The per-parameter state slots, in the order the op takes "
               "them and returns their new values (after the new parameter).",
      /*retTy=*/"::llvm::ArrayRef<::llvm::StringRef>",
      /*methodName=*/"getStateSlots">,
    StaticInterfaceMethod<
      /*desc=*/"The hyperparameters beside lr and weight_decay.",
      /*retTy=*/"::llvm::ArrayRef<::llvm::StringRef>",
      /*methodName=*/"getOwnHyperparameters">,
    StaticInterfaceMethod<
      /*desc=*/"Whether the update of an element reads only that element of "
               "the parameter, gradient and state (no whole-parameter norm).",
      /*retTy=*/"bool",
      /*methodName=*/"shardsElementwise">,
    StaticInterfaceMethod<
      /*desc=*/"Builds the update at the builder's insertion point: the new "
               "parameter, then the new state in slot order.",
      /*retTy=*/"::llvm::SmallVector<::mlir::Value>",
      /*methodName=*/"buildUpdate",
      /*args=*/(ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
                    "const ::mlir::cleave::train::OptimizerUpdate &":$update)>,
  ];
}

#endif // CLEAVE_TRAIN_OPTIMIZEROPINTERFACE

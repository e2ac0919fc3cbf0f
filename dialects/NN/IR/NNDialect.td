//===- NNDialect.td - The nn dialect ---------------------*- tablegen -*-===//
//
// The tensor ops of neural-network models and of their gradients.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_DIALECT
#define CLEAVE_NN_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::mlir::cleave::nn";
  let summary = "Tensor ops of neural-network models and their gradients";
  let description = [{
    The `nn` dialect holds what a model is made of: matmul and linear layers,
    convolutions and pooling, elementwise arithmetic with numpy broadcasting,
    activations, normalisations, reductions, shape ops and losses, all on
    ranked tensors with value semantics. It also holds the gradient ops
    (`nn.conv2d_grad_input`, `nn.max_pool2d_grad`, ...) that the
    vector-Jacobian products of these ops are built from, so that a
    differentiated graph is still an nn graph.

    Every differentiable op implements `DifferentiableOpInterface`;
    `cleave-autodiff` is one generic pass over it. Result types are inferred
    from operand types and attributes (`InferTypeOpInterface`), which is what
    lets `cleave-attach-loss` specialise a batch-polymorphic model to the
    compiled micro-batch size. Dynamic dimensions (`?`) are accepted by the
    verifiers; code generation requires static shapes.

    Element types: floating-point tensors are `f32` or `f64` (the reference
    interpreter runs both; code generation supports `f32`); labels and indices
    are `i32` or `i64`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let hasConstantMaterializer = 0;
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def NN_Reduction : I32EnumAttr<"Reduction", "how a loss reduces over samples", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"sum", 1>,
  I32EnumAttrCase<"mean", 2>
]> {
  let cppNamespace = "::mlir::cleave::nn";
  let genSpecializedAttr = 0;
}
def NN_ReductionAttr : EnumAttr<NN_Dialect, NN_Reduction, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

// Not an attribute: names the loss `cleave-attach-loss` appends (the
// `loss` option of the pass and of cleave-compile).
def NN_LossKind : I32EnumAttr<"LossKind",
    "the per-sample loss a model is trained with", [
  I32EnumAttrCase<"cross_entropy", 0, "cross-entropy">,
  I32EnumAttrCase<"mse", 1>,
  I32EnumAttrCase<"none", 2>
]> {
  let cppNamespace = "::mlir::cleave::nn";
  let genSpecializedAttr = 0;
}

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "which form of GELU", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"tanh", 1>
]> {
  let cppNamespace = "::mlir::cleave::nn";
  let genSpecializedAttr = 0;
}
def NN_GeluApproximationAttr
    : EnumAttr<NN_Dialect, NN_GeluApproximation, "gelu_approximation"> {
  let assemblyFormat = "`<` $value `>`";
}

def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "the relation nn.compare tests", [
  I32EnumAttrCase<"eq", 0>,
  I32EnumAttrCase<"ne", 1>,
  I32EnumAttrCase<"lt", 2>,
  I32EnumAttrCase<"le", 3>,
  I32EnumAttrCase<"gt", 4>,
  I32EnumAttrCase<"ge", 5>
]> {
  let cppNamespace = "::mlir::cleave::nn";
  let genSpecializedAttr = 0;
}
def NN_ComparePredicateAttr
    : EnumAttr<NN_Dialect, NN_ComparePredicate, "compare_predicate"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // CLEAVE_NN_DIALECT

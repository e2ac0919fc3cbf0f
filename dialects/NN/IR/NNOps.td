//===- NNOps.td - nn dialect ops -------------------------*- tablegen -*-===//
//
// Model ops and the gradient ops their vector-Jacobian products use.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_OPS
#define CLEAVE_NN_OPS

include "dialects/NN/IR/NNDialect.td"
include "dialects/NN/Interfaces/DifferentiableOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NN_FloatTensor : RankedTensorOf<[F32, F64]>;
// Integer tensors (ONNX and PyTorch integer arithmetic, index computations)
// are accepted by the elementwise arithmetic and the data-movement ops. They
// never carry a gradient: only casts and comparisons produce them from
// floats, and cleave-autodiff ends the dependence there.
def NN_NumericTensor : RankedTensorOf<[F32, F64, I32, I64]>;
def NN_IndexTensor : RankedTensorOf<[I32, I64]>;
def NN_I64Scalar : 0DTensorOf<[I64]>;

/// Each element of the results is computed from the elements of the operands
/// at the same position, after numpy broadcasting (shapes aligned at the
/// trailing dimension, size-1 and missing leading dimensions stretched).
/// Upstream's `Elementwise` requires operands of one shape, which nn's
/// broadcasting ops do not have. Passes that need "elementwise" ask for this
/// trait instead of listing ops: sharded optimizer state (a shard of every
/// operand computes the shard of the result), the ONNX importer's symbolic
/// shapes (the broadcast of the operands' shapes).
def NN_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::mlir::cleave::nn";
}

/// Traits every differentiable nn op has: no side effects, an inferred
/// result type and a VJP.
class NN_DiffOp<string mnemonic, list<Trait> traits = [],
                list<string> overridden = []>
    : NN_Op<mnemonic, !listconcat([Pure,
        DeclareOpInterfaceMethods<DifferentiableOpInterface, overridden>],
        traits)>;

//===----------------------------------------------------------------------===//
// Elementwise binary ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string expr,
                  TypeConstraint tensor = NN_NumericTensor,
                  string integers = [{
    On integer tensors the arithmetic is two's complement and wraps on
    overflow.
  }]>
    : NN_DiffOp<mnemonic, [NN_Elementwise, InferTypeOpAdaptor]> {
  let summary = "elementwise " # expr # " with numpy broadcasting";
  let description = [{
    Computes `}] # expr # [{` elementwise. The operands broadcast as in numpy:
    shapes align at the trailing dimension, and a dimension of size 1 (or a
    missing leading dimension) stretches to the other operand's. Both operands
    have the same element type.
  }] # integers # [{

    ```mlir
    %0 = nn.}] # mnemonic # [{ %a, %b : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins tensor:$lhs, tensor:$rhs);
  let results = (outs tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

//===- nn.add -------------------------------------------------------------===//
def NN_AddOp : NN_BinaryOp<"add", "lhs + rhs"> {
  // x + (-0.0) -> x. Not +0.0: -0.0 + +0.0 is +0.0.
  let hasFolder = 1;
}
//===- nn.sub -------------------------------------------------------------===//
def NN_SubOp : NN_BinaryOp<"sub", "lhs - rhs"> {
  // x - (+0.0) -> x.
  let hasFolder = 1;
}
//===- nn.mul -------------------------------------------------------------===//
def NN_MulOp : NN_BinaryOp<"mul", "lhs * rhs"> {
  // x * 1.0 -> x.
  let hasFolder = 1;
}
//===- nn.div -------------------------------------------------------------===//
def NN_DivOp : NN_BinaryOp<"div", "lhs / rhs", NN_NumericTensor, [{
    On integer tensors the quotient is truncated toward zero (C's, ONNX
    Runtime's and `torch.div(..., rounding_mode="trunc")`'s); a division by
    zero gives 0 and `INT_MIN / -1` wraps to `INT_MIN` instead of trapping,
    so a run never ends in a hardware exception.
  }]>;
//===- nn.maximum ---------------------------------------------------------===//
// The cotangent goes to the larger operand, to `rhs` on ties (ONNX Max/Min,
// torch.maximum/minimum, which split ties evenly; ties have measure zero for
// the continuous values gradients flow through). NaN propagates.
def NN_MaximumOp : NN_BinaryOp<"maximum", "max(lhs, rhs)">;
//===- nn.minimum ---------------------------------------------------------===//
def NN_MinimumOp : NN_BinaryOp<"minimum", "min(lhs, rhs)">;
//===- nn.powf ------------------------------------------------------------===//
// `nn.pow` with a run-time exponent (ONNX Pow with a tensor exponent,
// torch.pow(tensor, tensor)), as C `pow`: a negative base with an integral
// exponent has a real power, a negative base with any other exponent gives
// NaN. As PyTorch's pow backward: the base's cotangent is
// `rhs * lhs^(rhs-1) * dy`, but 0 where `rhs == 0` (not `0 * inf` at a zero
// base); the exponent's is `log(lhs) * lhs^rhs * dy`, but 0 where
// `lhs == 0` and `rhs >= 0` (not `-inf * 0`), and NaN for a negative base.
def NN_PowFOp : NN_BinaryOp<"powf", "lhs ^ rhs", NN_FloatTensor, "">;

//===- nn.compare ---------------------------------------------------------===//
// No gradient: the mask is piecewise constant in both operands, so its
// derivative is 0 wherever it exists (PyTorch's comparisons return tensors
// without grad_fn). cleave-autodiff treats its result as a constant even when
// an operand depends on a parameter (a mask of `x > 0`).
def NN_CompareOp : NN_Op<"compare", [Pure, NN_Elementwise,
                                     InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with numpy broadcasting, as a mask";
  let description = [{
    `lhs <predicate> rhs` elementwise, 1 where it holds and 0 elsewhere, in
    the float type `dtype` (nn has no boolean tensors: the mask is what
    `nn.where` takes as its condition, and `nn.mul`/`nn.maximum` combine
    masks as logical and/or). The operands broadcast as in numpy and have the
    same element type, float or integer. Float comparisons are IEEE: NaN
    compares unequal to everything, itself included.

    ```mlir
    %0 = nn.compare <eq>, %ids, %zero {dtype = f32} : tensor<4x8xi64>, tensor<i64> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_ComparePredicateAttr:$predicate,
                       RankedTensorOf<[F32, F64, I32, I64]>:$lhs,
                       RankedTensorOf<[F32, F64, I32, I64]>:$rhs,
                       TypeAttrOf<AnyTypeOf<[F32, F64]>>:$dtype);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->`
    type($result)
  }];
}

//===- nn.cast ------------------------------------------------------------===//
// The element types of nn.cast: those nn computes in and the narrow ones
// models exchange data in.
defvar NN_CastElementTypes = [F16, BF16, F32, F64, I8, I16, I32, I64];

// Element type conversion (ONNX Cast, torch's Tensor.to(dtype)). The target
// is the attribute `dtype`, so that the result type can be inferred like
// every other nn op's; the assembly shows it only as the result type.
// A float-to-float cast is differentiable (its cotangent is the result's cast
// back); a cast from or to an integer type is not: cleave-autodiff treats its
// result as a constant, as nn.compare's.
def NN_CastOp : NN_DiffOp<"cast", [NN_Elementwise, InferTypeOpAdaptor],
                          ["isDifferentiableOperand"]> {
  let summary = "elementwise element type conversion";
  let description = [{
    Converts every element of `input` to the element type `dtype`, keeping the
    shape, as C conversions (and ONNX `Cast`): float to float rounds to
    nearest even (`f64` to `f32`) or is exact (`f32` to `f64`); integer to
    float rounds to nearest even; float to integer truncates toward zero, and
    is undefined (as in C) for NaN, infinities and values out of the
    integer's range; integer to integer sign-extends or keeps the low bits
    (two's complement wrap-around). With `unsigned`, the input's integers are
    read as unsigned: they zero-extend and convert to floats as unsigned
    numbers. A cast to the input's own type is the input.

    Beside the types nn computes in, the casts take the narrow types in which
    models exchange data (`i8`, `i16`, `f16`, `bf16`): a frontend widens such
    a tensor when it enters the model and narrows it when it leaves. `bf16`
    converts through `f32`: exactly, but to `bf16` from a wider type (`f64`,
    a large integer), which rounds twice.

    ```mlir
    %0 = nn.cast %ids : tensor<4x3xi64> -> tensor<4x3xf32>
    %1 = nn.cast unsigned %pixels : tensor<4x28x28xi8> -> tensor<4x28x28xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<NN_CastElementTypes>:$input,
                       TypeAttrOf<AnyTypeOf<NN_CastElementTypes>>:$dtype,
                       UnitAttr:$unsigned_input);
  let results = (outs RankedTensorOf<NN_CastElementTypes>:$result);
  let assemblyFormat = [{
    (`unsigned` $unsigned_input^)? $input attr-dict `:`
    custom<CastTypes>(type($input), type($result), $dtype)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether both the input and the result have float elements, the one
    /// case with a gradient.
    bool isFloatToFloat();
  }];
}

//===- nn.where -----------------------------------------------------------===//
def NN_WhereOp : NN_DiffOp<"where", [NN_Elementwise, InferTypeOpAdaptor],
                           ["isDifferentiableOperand"]> {
  let summary = "elementwise selection with numpy broadcasting";
  let description = [{
    `condition != 0 ? lhs : rhs` elementwise; the three operands broadcast
    as in numpy. The condition is a mask of numbers (ONNX `Where`'s boolean
    condition, PyTorch's `masked_fill`, a causal attention mask, a padding
    mask `nn.compare` computes from the token ids) and carries
    no gradient. The cotangent of `lhs` is the result's where the condition
    holds and 0 elsewhere, and the other way round for `rhs`, so a filled
    `-inf` never meets a gradient.

    ```mlir
    %0 = nn.where %mask, %fill, %scores : tensor<8x8xf32>, tensor<f32>, tensor<32x2x8x8xf32> -> tensor<32x2x8x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64, I32, I64]>:$condition,
                       NN_NumericTensor:$lhs, NN_NumericTensor:$rhs);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)
    `,` type($rhs) `->` type($result)
  }];
  let extraClassDefinition = [{
    bool $cppClass::isDifferentiableOperand(unsigned index) {
      return index > 0;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class NN_UnaryOp<string mnemonic, string expr, dag attrs = (ins),
                 TypeConstraint tensor = NN_FloatTensor>
    : NN_DiffOp<mnemonic, [NN_Elementwise, SameOperandsAndResultType,
                           InferTypeOpInterface]> {
  let summary = "elementwise " # expr;
  let description = [{
    Computes `}] # expr # [{` for every element.

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x : tensor<32x512xf32>
    ```
  }];
  let arguments = !con((ins tensor:$input), attrs);
  let results = (outs tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===- nn.neg -------------------------------------------------------------===//
// Wraps on integers (`-INT_MIN` is `INT_MIN`).
def NN_NegOp : NN_UnaryOp<"neg", "-x", (ins), NN_NumericTensor> {
  let hasFolder = 1;
}
//===- nn.exp -------------------------------------------------------------===//
def NN_ExpOp : NN_UnaryOp<"exp", "exp(x)">;
//===- nn.log -------------------------------------------------------------===//
def NN_LogOp : NN_UnaryOp<"log", "log(x)">;
//===- nn.sqrt ------------------------------------------------------------===//
def NN_SqrtOp : NN_UnaryOp<"sqrt", "sqrt(x)">;
//===- nn.erf -------------------------------------------------------------===//
def NN_ErfOp : NN_UnaryOp<"erf", "erf(x)">;
//===- nn.relu ------------------------------------------------------------===//
def NN_ReluOp : NN_UnaryOp<"relu", "max(x, 0)">;
//===- nn.sigmoid ---------------------------------------------------------===//
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
//===- nn.tanh ------------------------------------------------------------===//
def NN_TanhOp : NN_UnaryOp<"tanh", "tanh(x)">;
//===- nn.sin -------------------------------------------------------------===//
def NN_SinOp : NN_UnaryOp<"sin", "sin(x)">;
//===- nn.cos -------------------------------------------------------------===//
def NN_CosOp : NN_UnaryOp<"cos", "cos(x)">;
//===- nn.pow -------------------------------------------------------------===//
def NN_PowOp : NN_UnaryOp<"pow", "x ^ exponent", (ins F64Attr:$exponent)> {
  let assemblyFormat = "$input `,` $exponent attr-dict `:` type($input)";
}
//===- nn.leaky_relu ------------------------------------------------------===//
def NN_LeakyReluOp : NN_UnaryOp<"leaky_relu", "x >= 0 ? x : alpha * x",
                                (ins DefaultValuedAttr<F64Attr, "0.01">:$alpha)>;
//===- nn.clamp -----------------------------------------------------------===//
def NN_ClampOp : NN_UnaryOp<"clamp", "min(max(x, min), max)",
                            (ins F64Attr:$min, F64Attr:$max)> {
  let description = [{
    Clamps every element to `[min, max]` (ONNX `Clip`, PyTorch `clamp`,
    `hardtanh` and `relu6`). A bound may be infinite, for a one-sided clamp;
    `min <= max`. NaN elements stay NaN.

    The gradient passes where `min < x < max` and is 0 elsewhere, at the
    bounds included: PyTorch's `hardtanh` and `relu6` backward (and
    `nn.relu`'s at 0). PyTorch's `clamp` backward passes it at the bounds
    too; the two differ only on inputs exactly at a bound.

    ```mlir
    %0 = nn.clamp %x, 0.0, 6.0 : tensor<32x512xf32>
    ```
  }];
  let assemblyFormat = "$input `,` $min `,` $max attr-dict `:` type($input)";
  let hasVerifier = 1;
}
//===- nn.gelu ------------------------------------------------------------===//
def NN_GeluOp : NN_UnaryOp<"gelu",
    "x * Phi(x), Phi the standard normal CDF (erf form) or its tanh approximation",
    (ins DefaultValuedAttr<NN_GeluApproximationAttr,
                           "::mlir::cleave::nn::GeluApproximation::none">:$approximate)>;

//===----------------------------------------------------------------------===//
// Elementwise rounding (no gradient)
//===----------------------------------------------------------------------===//

// Piecewise constant, so no gradient, as nn.compare: the derivative is 0
// wherever it exists (PyTorch's floor/ceil/round backward is zero), and
// cleave-autodiff treats the result as a constant even when the input
// depends on a parameter, instead of building zero cotangents.
class NN_RoundingOp<string mnemonic, string expr>
    : NN_Op<mnemonic, [Pure, NN_Elementwise, SameOperandsAndResultType,
                       InferTypeOpInterface]> {
  let summary = "elementwise " # expr;
  let description = [{
    Computes `}] # expr # [{` for every element; infinities and NaN pass
    through. The result carries no gradient: cleave-autodiff treats it as a
    constant.

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===- nn.floor -----------------------------------------------------------===//
def NN_FloorOp : NN_RoundingOp<"floor",
    "floor(x), the largest integer not above x">;
//===- nn.ceil ------------------------------------------------------------===//
def NN_CeilOp : NN_RoundingOp<"ceil",
    "ceil(x), the smallest integer not below x">;
//===- nn.round -----------------------------------------------------------===//
// Half to even, as ONNX Round, torch.round and numpy.round: 2.5 -> 2,
// -0.5 -> -0, 1.5 -> 2.
def NN_RoundOp : NN_RoundingOp<"round",
    "x rounded to the nearest integer, halves to even">;

//===----------------------------------------------------------------------===//
// Gradients of elementwise activations
//===----------------------------------------------------------------------===//

class NN_ActivationGradOp<string mnemonic, string fwd, dag attrs = (ins)>
    : NN_Op<mnemonic, [Pure, NN_Elementwise, SameOperandsAndResultType,
                       InferTypeOpInterface]> {
  let summary = "gradient of nn." # fwd;
  let description = [{
    Given the cotangent `grad` of `nn.}] # fwd # [{ %input`, returns the
    cotangent of `%input`. Only used inside VJPs; not differentiated again.

    ```mlir
    %0 = nn.}] # mnemonic # [{ %dy, %x : tensor<32x512xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$grad, NN_FloatTensor:$input), attrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($input)";
}

//===- nn.relu_grad -------------------------------------------------------===//
def NN_ReluGradOp : NN_ActivationGradOp<"relu_grad", "relu">;
//===- nn.leaky_relu_grad -------------------------------------------------===//
def NN_LeakyReluGradOp : NN_ActivationGradOp<"leaky_relu_grad", "leaky_relu",
    (ins DefaultValuedAttr<F64Attr, "0.01">:$alpha)>;
//===- nn.clamp_grad ------------------------------------------------------===//
def NN_ClampGradOp : NN_ActivationGradOp<"clamp_grad", "clamp",
    (ins F64Attr:$min, F64Attr:$max)> {
  let assemblyFormat = [{
    $grad `,` $input `,` $min `,` $max attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}
//===- nn.gelu_grad -------------------------------------------------------===//
def NN_GeluGradOp : NN_ActivationGradOp<"gelu_grad", "gelu",
    (ins DefaultValuedAttr<NN_GeluApproximationAttr,
                           "::mlir::cleave::nn::GeluApproximation::none">:$approximate)>;

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

//===- nn.matmul ----------------------------------------------------------===//
def NN_MatmulOp : NN_DiffOp<"matmul", [InferTypeOpAdaptor]> {
  let summary = "(batched) matrix product with optional transposes";
  let description = [{
    `op(lhs) @ op(rhs)` where `op` transposes the last two dimensions when the
    matching flag is set. Both operands have rank >= 2. Leading (batch)
    dimensions must be equal, or `rhs` is a plain matrix shared by every batch
    entry.

    ```mlir
    %0 = nn.matmul %a, %b {transpose_b} : tensor<8x32x64xf32>, tensor<16x64xf32> -> tensor<8x32x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

//===- nn.linear ----------------------------------------------------------===//
def NN_LinearOp : NN_DiffOp<"linear", [InferTypeOpAdaptor]> {
  let summary = "affine layer x @ W^T + b (PyTorch nn.Linear, ONNX Gemm layout)";
  let description = [{
    `input` is `[..., in]`, `weight` is `[out, in]` and the optional `bias` is
    `[out]`; the result is `[..., out]`.

    ```mlir
    %0 = nn.linear %x, %w, %b : tensor<32x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<32x512xf32>
    %1 = nn.linear %x, %w : tensor<32x784xf32>, tensor<512x784xf32> -> tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

//===- nn.reshape ---------------------------------------------------------===//
def NN_ReshapeOp : NN_DiffOp<"reshape", [InferTypeOpAdaptor]> {
  let summary = "reshape to a new shape with the same number of elements";
  let description = [{
    `shape` lists the new dimensions; at most one entry may be -1, meaning
    "whatever makes the element count match". Row-major element order is kept.

    Integer tensors (token labels folded into rows for a loss per token)
    reshape too; they carry no gradient.

    ```mlir
    %0 = nn.reshape %x [-1, 784] : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64, I32, I64]>:$input,
                       DenseI64ArrayAttr:$shape);
  let results = (outs RankedTensorOf<[F32, F64, I32, I64]>:$result);
  let assemblyFormat = [{
    $input $shape attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===- nn.flatten ---------------------------------------------------------===//
def NN_FlattenOp : NN_DiffOp<"flatten", [InferTypeOpAdaptor]> {
  let summary = "collapse to 2-D around an axis (ONNX Flatten)";
  let description = [{
    The result is `[prod(dims[:axis]), prod(dims[axis:])]`.

    ```mlir
    %0 = nn.flatten %x {axis = 1} : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===- nn.transpose -------------------------------------------------------===//
def NN_TransposeOp : NN_DiffOp<"transpose", [InferTypeOpAdaptor]> {
  let summary = "permute dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %0 = nn.transpose %x [1, 0] : tensor<32x10xf32> -> tensor<10x32xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===- nn.concat ----------------------------------------------------------===//
def NN_ConcatOp : NN_DiffOp<"concat", [InferTypeOpAdaptor]> {
  let summary = "concatenate along an axis";
  let description = [{
    All inputs have the same rank and agree on every dimension but `axis`.

    ```mlir
    %0 = nn.concat %a, %b {axis = 1} : tensor<4x3xf32>, tensor<4x5xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_NumericTensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasFolder = 1;
}

//===- nn.slice -----------------------------------------------------------===//
def NN_SliceOp : NN_DiffOp<"slice", [InferTypeOpAdaptor]> {
  let summary = "strided slice with static bounds";
  let description = [{
    One entry of `starts`, `sizes` and `strides` per input dimension: the
    result dimension `d` has `sizes[d]` elements, taken from index
    `starts[d] + k * strides[d]` (strides are positive).

    A size of -1 takes every element from the start to the end of the
    dimension, at the stride. It lets a slice of a batch-polymorphic model
    leave the dynamic batch dimension whole (`starts` 0, `sizes` -1,
    `strides` 1), so that the model can be specialised to a micro-batch
    size later.

    ```mlir
    %0 = nn.slice %x starts [0, 2] sizes [4, 3] strides [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
    %1 = nn.slice %y starts [0, 0, 16] sizes [-1, 8, 16] strides [1, 1, 1] : tensor<?x8x48xf32> -> tensor<?x8x16xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$strides);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $input `starts` $starts `sizes` $sizes `strides` $strides attr-dict `:`
    type($input) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The result shape of slicing a tensor of shape `input`, a -1 size
    /// resolved against it (dynamic when that input dimension is).
    static ::llvm::SmallVector<int64_t>
    resultShape(::llvm::ArrayRef<int64_t> input,
                ::llvm::ArrayRef<int64_t> starts,
                ::llvm::ArrayRef<int64_t> sizes,
                ::llvm::ArrayRef<int64_t> strides);
  }];
  let hasFolder = 1;
}

//===- nn.pad -------------------------------------------------------------===//
def NN_PadOp : NN_DiffOp<"pad", [InferTypeOpAdaptor]> {
  let summary = "zero padding (the VJP of nn.slice)";
  let description = [{
    Places `input` into a zero tensor of shape `shape` at `starts`, with
    `strides` between consecutive elements of a dimension: the adjoint of
    `nn.slice` with the same `starts` and `strides`.

    ```mlir
    %0 = nn.pad %x starts [0, 2] strides [1, 1] shape [4, 8] : tensor<4x3xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$shape);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $input `starts` $starts `strides` $strides `shape` $shape attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

//===- nn.broadcast_to ----------------------------------------------------===//
def NN_BroadcastToOp : NN_DiffOp<"broadcast_to", [InferTypeOpAdaptor],
                                 ["isDifferentiableOperand"]> {
  let summary = "numpy broadcast to a shape";
  let description = [{
    Broadcasts `input` to `shape` as numpy does.

    A batch-polymorphic model broadcasts to shapes that contain the batch
    size (a class token expanded over the batch): such an entry is -1, and
    `batch_source` is a tensor whose dimension 0 is the batch (a data input
    of the model). Once the batch is specialised the result type is static;
    the op then folds to its static form, without `batch_source`. The
    batch source carries no gradient.

    ```mlir
    %0 = nn.broadcast_to %b [32, 10] : tensor<10xf32> -> tensor<32x10xf32>
    %1 = nn.broadcast_to %cls [-1, 1, 16] batch_of %x : tensor<1x1x16xf32>, tensor<?x3x32x32xf32> -> tensor<?x1x16xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$shape,
                       Optional<AnyRankedTensor>:$batch_source);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $input $shape (`batch_of` $batch_source^)? attr-dict `:` type($input)
    (`,` type($batch_source)^)? `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$shape), [{
      build($_builder, $_state, input, shape, ::mlir::Value());
    }]>
  ];
  let extraClassDefinition = [{
    bool $cppClass::isDifferentiableOperand(unsigned index) {
      return index == 0;
    }
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string what>
    : NN_DiffOp<mnemonic, [InferTypeOpAdaptor]> {
  let summary = what # " over axes";
  let description = [{
    Reduces over `axes` (distinct, in `[0, rank)`); with `keepdims` the reduced
    dimensions stay as size 1. An empty `axes` reduces over every dimension.

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x [1] : tensor<32x10xf32> -> tensor<32xf32>
    %1 = nn.}] # mnemonic # [{ %x [1] {keepdims} : tensor<32x10xf32> -> tensor<32x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input $axes attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The reduced axes, with an empty list meaning all of them.
    ::llvm::SmallVector<int64_t> getReducedAxes();
  }];
  // Reducing only size-1 dimensions keeps every element: with `keepdims` the
  // op folds to its input, without it becomes an `nn.reshape`.
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===- nn.reduce_sum ------------------------------------------------------===//
def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "sum">;
//===- nn.reduce_mean -----------------------------------------------------===//
def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "mean">;
//===- nn.reduce_max ------------------------------------------------------===//
def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max", "maximum">;

//===- nn.reduce_max_grad -------------------------------------------------===//
def NN_ReduceMaxGradOp : NN_Op<"reduce_max_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.reduce_max";
  let description = [{
    Routes the cotangent `grad` of `nn.reduce_max %input` back to the maximal
    elements, split evenly between ties (as PyTorch's `amax`). `grad` has the
    shape of the reduction's result.

    ```mlir
    %0 = nn.reduce_max_grad %dy, %x [1] : tensor<32xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input $axes attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The forward reduction's axes, normalised and sorted (an empty list
    /// meaning all of them).
    ::llvm::SmallVector<int64_t> getReducedAxes();
  }];
}

//===----------------------------------------------------------------------===//
// Softmax and losses
//===----------------------------------------------------------------------===//

//===- nn.softmax ---------------------------------------------------------===//
def NN_SoftmaxOp : NN_DiffOp<"softmax", [SameOperandsAndResultType,
                                          InferTypeOpInterface]> {
  let summary = "softmax along an axis";
  let description = [{
    ```mlir
    %0 = nn.softmax %x {axis = 1} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===- nn.log_softmax -----------------------------------------------------===//
def NN_LogSoftmaxOp : NN_DiffOp<"log_softmax", [SameOperandsAndResultType,
                                                InferTypeOpInterface]> {
  let summary = "log of softmax along an axis, computed stably";
  let description = [{
    ```mlir
    %0 = nn.log_softmax %x {axis = 1} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===- nn.attention -------------------------------------------------------===//
def NN_AttentionOp : NN_DiffOp<"attention",
                               [InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `dropout(softmax(mask(scale(query @ key^T)))) @ value`, the softmax over
    the last dimension. `query` is `[..., T, D]`, `key` `[..., S, D]` and
    `value` `[..., S, Dv]`, with equal leading (batch and head) dimensions;
    the result is `[..., T, Dv]`. In order:

    - `scale` multiplies the scores, or divides them with `scale_is_divisor`
      (PyTorch divides by sqrt(D)); without `scale` they are not scaled;
    - `mask`, when present, is added to the scores; it broadcasts to
      `[..., T, S]` as in numpy (a padding mask of 0 and -inf, a bias);
    - `causal` sets score (i, j) to -inf where j > i (PyTorch's
      `is_causal`, top-left aligned; T and S static);
    - with a `seed`, the probabilities `[..., T, S]` go through
      `nn.dropout %p, %seed {ratio = dropout_ratio, stream = dropout_stream}`
      (the same mask, element by element in row-major order, as that op).

    `cleave-recompose-attention` builds the op from the ops the ONNX
    importer emits, and `cleave-decompose-attention` turns it back into
    them (docs/design/attention.md). The VJP recomputes the probabilities
    from `query` and `key` and holds only the operands and the result.

    ```mlir
    %0 = nn.attention %q, %k, %v {scale = 2.0 : f64, scale_is_divisor, causal} : tensor<8x4x16x32xf32>, tensor<8x4x16x32xf32>, tensor<8x4x16x32xf32> -> tensor<8x4x16x32xf32>
    %1 = nn.attention %q, %k, %v dropout(%seed : tensor<i64>) {dropout_ratio = 0.1 : f64, dropout_stream = 2 : i64} : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value, Optional<NN_FloatTensor>:$mask,
                       Optional<NN_I64Scalar>:$seed,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$scale_is_divisor,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_stream);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $mask^)?
    (`dropout` `(` $seed^ `:` type($seed) `)`)? attr-dict `:` type($query)
    `,` type($key) `,` type($value) (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scores' shape, `[..., T, S]`.
    ::llvm::SmallVector<int64_t> getScoresShape();
    /// `scale` as a double, if set.
    std::optional<double> getScaleValue() {
      if (auto attr = getScaleAttr())
        return attr.getValueAsDouble();
      return std::nullopt;
    }
  }];
}

//===- nn.fused_attention -------------------------------------------------===//
def NN_FusedAttentionOp : NN_DiffOp<"fused_attention",
                                    [InferTypeOpAdaptor,
                                     AttrSizedOperandSegments],
                                    ["isDifferentiableOperand"]> {
  let summary = "attention as one kernel, with its rows' log-sum-exp";
  let description = [{
    `nn.attention`'s result, computed by one fused kernel (cuDNN's SDPA on
    cuda), and `lse`, the log-sum-exp of each row of the scaled, masked
    scores (`[..., T]`), which the kernel's backward pass recomputes the
    probabilities from. Operands and attributes are `nn.attention`'s; the
    mask, when present, is a constant and carries no gradient. Dropout on
    the probabilities comes as `keep` (`[..., T, S]`, 1 where a probability
    is kept, 0 where it is dropped: nn.attention's mask, drawn before the
    op) with `dropout_ratio` r: the probabilities are multiplied by
    `keep / (1 - r)` before the product with `value`, and `lse` is theirs
    before dropout. `cleave-decompose-attention` with `fuse` builds it where
    the cuda back end's kernel takes the shape (docs/design/attention.md);
    its VJP is one `nn.fused_attention_grad`.

    ```mlir
    %o, %lse = nn.fused_attention %q, %k, %v {scale = 8.0 : f64, scale_is_divisor, causal} : (tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>) -> (tensor<2x4x16x64xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value, Optional<NN_FloatTensor>:$mask,
                       Optional<NN_FloatTensor>:$keep,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$scale_is_divisor,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$dropout_ratio);
  let results = (outs NN_FloatTensor:$result, NN_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $mask^)? (`keep` `(` $keep^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `scale` as a double, if set.
    std::optional<double> getScaleValue() {
      if (auto attr = getScaleAttr())
        return attr.getValueAsDouble();
      return std::nullopt;
    }
  }];
}

//===- nn.fused_attention_grad --------------------------------------------===//
def NN_FusedAttentionGradOp : NN_Op<"fused_attention_grad",
                                    [Pure, InferTypeOpAdaptor,
                                     AttrSizedOperandSegments]> {
  let summary = "the gradient of nn.fused_attention, as one kernel";
  let description = [{
    The cotangents of `query`, `key` and `value` of the
    `nn.fused_attention` whose operands, attributes, `result` and `lse` it
    takes, given `result_grad`, the cotangent of its result:

        P = exp(scale(query @ key^T) + mask - lse)   (causal: 0 where j > i)
        K = P * keep / (1 - dropout_ratio)            (K = P without keep)
        value_grad = K^T @ result_grad
        dK = (result_grad @ value^T) * keep / (1 - dropout_ratio)
        dS = P * (dK - rowsum(result_grad * result))
        query_grad = scale dS @ key,  key_grad = scale dS^T @ query

    ```mlir
    %dq, %dk, %dv = nn.fused_attention_grad %q, %k, %v, %o, %lse, %do {causal} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16xf32>, tensor<2x16x64xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value, NN_FloatTensor:$result,
                       NN_FloatTensor:$lse, NN_FloatTensor:$result_grad,
                       Optional<NN_FloatTensor>:$mask,
                       Optional<NN_FloatTensor>:$keep,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$scale_is_divisor,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$dropout_ratio);
  let results = (outs NN_FloatTensor:$query_grad, NN_FloatTensor:$key_grad,
                      NN_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $lse `,` $result_grad
    (`,` $mask^)? (`keep` `(` $keep^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    std::optional<double> getScaleValue() {
      if (auto attr = getScaleAttr())
        return attr.getValueAsDouble();
      return std::nullopt;
    }
  }];
}

//===- nn.one_hot ---------------------------------------------------------===//
def NN_OneHotOp : NN_Op<"one_hot", [Pure, InferTypeOpAdaptor]> {
  let summary = "one-hot encoding of integer labels";
  let description = [{
    `labels` of shape `S` gives a tensor of shape `S x num_classes` with
    element type `dtype`: 1 at the label, 0 elsewhere (all 0 for a label out
    of range).

    ```mlir
    %0 = nn.one_hot %labels {num_classes = 10, dtype = f32} : tensor<32xi64> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$labels, I64Attr:$num_classes,
                       TypeAttrOf<AnyTypeOf<[F32, F64]>>:$dtype);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$labels attr-dict `:` type($labels) `->` type($result)";
}

//===- nn.cross_entropy ---------------------------------------------------===//
def NN_CrossEntropyOp : NN_DiffOp<"cross_entropy", [InferTypeOpAdaptor]> {
  let summary = "softmax cross-entropy with integer labels";
  let description = [{
    `logits` is `[B, C]` and `labels` is `[B]` with values in `[0, C)`. The
    per-sample loss is `logsumexp(logits[i]) - logits[i, labels[i]]`;
    `reduction` gives the per-sample vector `[B]` (`none`), its sum or its
    mean (both rank 0). Labels are not differentiable.

    ```mlir
    %0 = nn.cross_entropy %logits, %labels {reduction = #nn.reduction<none>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       DefaultValuedAttr<NN_ReductionAttr,
                           "::mlir::cleave::nn::Reduction::mean">:$reduction);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

//===- nn.mse_loss --------------------------------------------------------===//
def NN_MseLossOp : NN_DiffOp<"mse_loss", [InferTypeOpAdaptor]> {
  let summary = "mean squared error";
  let description = [{
    `input` and `target` have the same shape `[B, ...]`. The per-sample loss
    is the mean of `(input - target)^2` over the non-batch dimensions;
    `reduction = none` returns these `[B]`, `sum` their sum, and `mean` the
    mean over all elements (PyTorch's `MSELoss()`).

    ```mlir
    %0 = nn.mse_loss %y, %t {reduction = #nn.reduction<none>} : tensor<32x4xf32>, tensor<32x4xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$target,
                       DefaultValuedAttr<NN_ReductionAttr,
                           "::mlir::cleave::nn::Reduction::mean">:$reduction);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` type($input) `,` type($target) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

//===- nn.conv2d ----------------------------------------------------------===//
def NN_Conv2DOp : NN_DiffOp<"conv2d", [InferTypeOpAdaptor]> {
  let summary = "2-D convolution, NCHW input, OIHW weight";
  let description = [{
    `input` is `[N, C, H, W]`, `weight` is `[O, C / groups, kH, kW]` and the
    optional `bias` is `[O]`. `padding` is `[top, left, bottom, right]` (ONNX
    `pads` order). The output size along a spatial axis is
    `(in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1`.

    ```mlir
    %0 = nn.conv2d %x, %w, %b {padding = array<i64: 2, 2, 2, 2>} : tensor<32x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
}

//===- nn.conv2d_grad_input -----------------------------------------------===//
def NN_Conv2DGradInputOp : NN_DiffOp<"conv2d_grad_input",
    [InferTypeOpAdaptor]> {
  let summary = "gradient of nn.conv2d with respect to its input";
  let description = [{
    Given the output cotangent `grad` `[N, O, oH, oW]` and the `weight`,
    computes the input cotangent `[N, C, input_size[0], input_size[1]]`
    (backward-data). The spatial input size is an attribute because strided
    convolutions map several input sizes to one output size.

    It is also the forward of a transposed convolution (ONNX ConvTranspose,
    PyTorch ConvTranspose2d, whose `[C_in, C_out / groups, kH, kW]` weight is
    this op's `weight`), so it is differentiable: the cotangent of `grad` is
    a forward convolution of the result's cotangent, that of `weight` a
    backward-weights convolution.

    ```mlir
    %0 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 28, 28>} : tensor<32x6x24x24xf32>, tensor<6x1x5x5xf32> -> tensor<32x1x28x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$weight,
                       DenseI64ArrayAttr:$input_size,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` type($grad) `,` type($weight) `->` type($result)
  }];
}

//===- nn.conv2d_grad_weight ----------------------------------------------===//
def NN_Conv2DGradWeightOp : NN_Op<"conv2d_grad_weight",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.conv2d with respect to its weight";
  let description = [{
    Given the output cotangent `grad` `[N, O, oH, oW]` and the forward `input`
    `[N, C, H, W]`, computes the weight cotangent
    `[O, C / groups, kernel_size[0], kernel_size[1]]` (backward-weights).

    ```mlir
    %0 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 5, 5>} : tensor<32x6x24x24xf32>, tensor<32x1x28x28xf32> -> tensor<6x1x5x5xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_size,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
}

defvar NN_PoolAttrs = (ins DenseI64ArrayAttr:$kernel_size,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$strides,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
    UnitAttr:$ceil_mode);

//===- nn.max_pool2d ------------------------------------------------------===//
def NN_MaxPool2DOp : NN_DiffOp<"max_pool2d", [InferTypeOpAdaptor]> {
  let summary = "2-D max pooling, NCHW";
  let description = [{
    `strides` defaults to `kernel_size` when empty; `padding` is
    `[top, left, bottom, right]` and padded positions never win. With
    `ceil_mode` the output size rounds up (a window must still start inside
    the input or its leading padding).

    ```mlir
    %0 = nn.max_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<32x6x28x28xf32> -> tensor<32x6x14x14xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input), NN_PoolAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    ::llvm::SmallVector<int64_t> getEffectiveStrides();
  }];
}

//===- nn.max_pool2d_grad -------------------------------------------------===//
def NN_MaxPool2DGradOp : NN_Op<"max_pool2d_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.max_pool2d";
  let description = [{
    Routes each output cotangent to the first maximal input element of its
    window (row-major order), as oneDNN and PyTorch do.

    ```mlir
    %0 = nn.max_pool2d_grad %dy, %x {kernel_size = array<i64: 2, 2>} : tensor<32x6x14x14xf32>, tensor<32x6x28x28xf32> -> tensor<32x6x28x28xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$grad, NN_FloatTensor:$input),
                       NN_PoolAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
  let extraClassDeclaration = [{
    ::llvm::SmallVector<int64_t> getEffectiveStrides();
  }];
}

//===- nn.avg_pool2d ------------------------------------------------------===//
def NN_AvgPool2DOp : NN_DiffOp<"avg_pool2d", [InferTypeOpAdaptor]> {
  let summary = "2-D average pooling, NCHW";
  let description = [{
    Like `nn.max_pool2d`; the divisor is the window size when
    `count_include_pad` is set and the number of non-padding elements
    otherwise.

    ```mlir
    %0 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<32x6x28x28xf32> -> tensor<32x6x14x14xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input), NN_PoolAttrs,
                       (ins UnitAttr:$count_include_pad));
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    ::llvm::SmallVector<int64_t> getEffectiveStrides();
  }];
}

//===- nn.avg_pool2d_grad -------------------------------------------------===//
def NN_AvgPool2DGradOp : NN_Op<"avg_pool2d_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.avg_pool2d";
  let description = [{
    Spreads each output cotangent evenly over its window. `input_size` is the
    forward input's spatial size `[H, W]`.

    ```mlir
    %0 = nn.avg_pool2d_grad %dy {kernel_size = array<i64: 2, 2>, input_size = array<i64: 28, 28>} : tensor<32x6x14x14xf32> -> tensor<32x6x28x28xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$grad, DenseI64ArrayAttr:$input_size),
                       NN_PoolAttrs, (ins UnitAttr:$count_include_pad));
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let extraClassDeclaration = [{
    ::llvm::SmallVector<int64_t> getEffectiveStrides();
  }];
}

//===- nn.global_avg_pool -------------------------------------------------===//
def NN_GlobalAvgPoolOp : NN_DiffOp<"global_avg_pool", [InferTypeOpAdaptor]> {
  let summary = "mean over all spatial positions, keeping them as size 1";
  let description = [{
    ```mlir
    %0 = nn.global_avg_pool %x : tensor<32x16x7x7xf32> -> tensor<32x16x1x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Normalisation, dropout, embedding
//===----------------------------------------------------------------------===//

//===- nn.batch_norm ------------------------------------------------------===//
def NN_BatchNormOp : NN_DiffOp<"batch_norm", [InferTypeOpAdaptor],
                                ["isDifferentiableOperand"]> {
  let summary = "batch normalisation over all dimensions but the channel (1)";
  let description = [{
    `input` is `[N, C, ...]`; `scale`, `bias`, `running_mean` and
    `running_var` are `[C]`. With `training`, the input is normalised with the
    statistics of this batch (biased variance) and the running statistics are
    updated as `(1 - momentum) * running + momentum * batch` (unbiased
    variance for `running_var`, as PyTorch). Without it, the running
    statistics normalise and are returned unchanged.

    The optional `sample_weights` `[N]` (1 for a real sample, 0 for the
    padding of a short micro-batch) make padding invisible in training mode:
    the statistics are over the samples with weight 1 only (the running
    variance's unbiasing uses their count), and padding rows produce zeros,
    so they carry no gradient either. In general: with `w` the weights and
    `S` the elements per sample and channel, `mean = sum(w x) / (S sum(w))`,
    `var = sum(w (x - mean)^2) / (S sum(w))` and
    `y = w * (scale * (x - mean) / sqrt(var + eps) + bias)`.
    `cleave-attach-loss` connects the weights of the micro-batch; inference
    mode ignores them.

    In training mode the result depends on how a batch is split into
    micro-batches; `cleave-split-step` reports it.

    ```mlir
    %y, %rm, %rv = nn.batch_norm %x, %g, %b, %m, %v {training} : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
    %y2, %rm2, %rv2 = nn.batch_norm %x, %g, %b, %m, %v sample_weights %w {training} : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<32xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$running_mean,
                       NN_FloatTensor:$running_var,
                       Optional<NN_FloatTensor>:$sample_weights,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.1">:$momentum,
                       UnitAttr:$training);
  let results = (outs NN_FloatTensor:$result, NN_FloatTensor:$running_mean_out,
                      NN_FloatTensor:$running_var_out);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $running_mean `,` $running_var
    (`sample_weights` $sample_weights^)? attr-dict `:`
    type($input) `,` type($scale) `,` type($bias) `,` type($running_mean) `,`
    type($running_var) (`,` type($sample_weights)^)? `->` type(results)
  }];
  let extraClassDefinition = [{
    bool $cppClass::isDifferentiableOperand(unsigned index) {
      // Running statistics are state, not parameters.
      return index < 3;
    }
  }];
}

//===- nn.layer_norm ------------------------------------------------------===//
def NN_LayerNormOp : NN_DiffOp<"layer_norm", [InferTypeOpAdaptor,
                                              AttrSizedOperandSegments]> {
  let summary = "layer normalisation over the trailing dimensions";
  let description = [{
    Normalises over dimensions `[axis, rank)` (biased variance), then applies
    the optional elementwise `scale` and `bias`, whose shape is those trailing
    dimensions.

    ```mlir
    %0 = nn.layer_norm %x, %g bias %b {axis = 2} : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
    %1 = nn.layer_norm %x bias %b : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, Optional<NN_FloatTensor>:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  // The `bias` keyword tells a lone bias from a lone scale; the operand types
  // then follow in operand order.
  let assemblyFormat = [{
    $input (`,` $scale^)? (`bias` $bias^)? attr-dict `:` type(operands) `->`
    type($result)
  }];
}

//===- nn.dropout ---------------------------------------------------------===//
def NN_DropoutOp : NN_DiffOp<"dropout", [InferTypeOpAdaptor]> {
  let summary = "dropout with a counter-based random stream";
  let description = [{
    Zeroes each element with probability `ratio` and scales the rest by
    `1 / (1 - ratio)`. Whether element `i` (row-major) is kept is a pure
    function of `(seed, stream, i)` (SplitMix64 hashing), so the backward pass
    recomputes the mask, every backend agrees bit for bit, and a training step
    seeds it from a counter that is part of the checkpoint. Distinct dropout
    ops of one model use distinct `stream`s.

    The mask depends on how a batch is split into micro-batches;
    `cleave-split-step` reports it.

    ```mlir
    %0 = nn.dropout %x, %seed {ratio = 0.1} : tensor<32x512xf32>, tensor<i64> -> tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_I64Scalar:$seed,
                       F64Attr:$ratio, DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $seed attr-dict `:` type($input) `,` type($seed) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The per-op key mixed from the seed and the stream.
    static uint64_t streamKey(uint64_t seed, uint64_t stream);
    /// Whether element `index` is kept, given the op's key and ratio.
    static bool keeps(uint64_t key, uint64_t index, double ratio);
  }];
  let hasFolder = 1;
}

//===- nn.embedding -------------------------------------------------------===//
def NN_EmbeddingOp : NN_DiffOp<"embedding", [InferTypeOpAdaptor]> {
  let summary = "row lookup in a table (ONNX Gather on axis 0)";
  let description = [{
    `indices` of shape `S` and `table` `[V, D]` give `[S..., D]`. Indices are
    not differentiable; an index out of `[0, V)` is undefined behaviour in
    compiled code and an error in the interpreter.

    ```mlir
    %0 = nn.embedding %ids, %table : tensor<4x16xi64>, tensor<100x32xf32> -> tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$indices, NN_FloatTensor:$table);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $table attr-dict `:` type($indices) `,` type($table) `->` type($result)
  }];
}

//===- nn.embedding_grad --------------------------------------------------===//
def NN_EmbeddingGradOp : NN_Op<"embedding_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.embedding with respect to the table";
  let description = [{
    Scatter-adds the rows of `grad` `[S..., D]` into a zero `[num_embeddings,
    D]` table at `indices`.

    ```mlir
    %0 = nn.embedding_grad %dy, %ids {num_embeddings = 100} : tensor<4x16x32xf32>, tensor<4x16xi64> -> tensor<100x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_IndexTensor:$indices,
                       I64Attr:$num_embeddings);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Gathers with run-time indices
//===----------------------------------------------------------------------===//

/// Index tensors of the gathers. Besides integers they take floats holding
/// integers: the ONNX importer carries run-time integer arithmetic on masks
/// (a sequence length counted from `ids != 0`) in the float type of
/// nn.compare's masks, exact below 2^24.
def NN_GatherIndexTensor : RankedTensorOf<[I32, I64, F32, F64]>;

//===- nn.gather ----------------------------------------------------------===//
def NN_GatherOp : NN_DiffOp<"gather", [InferTypeOpAdaptor],
                            ["isDifferentiableOperand"]> {
  let summary = "take entries along an axis at run-time indices (ONNX Gather)";
  let description = [{
    `input` of shape `[d_0, ..., d_(r-1)]` and `indices` of shape `S` give
    `[d_0, ..., d_(axis-1), S..., d_(axis+1), ..., d_(r-1)]`: the result at
    `(i, s, j)` is `input[i, indices[s], j]`. A negative index counts from
    the end of the axis (`-1` is `d_axis - 1`), as in ONNX and PyTorch. An
    index still out of `[0, d_axis)` is an error in the interpreter and
    clamped into range in compiled code. Indices are not differentiable; the
    gradient of `input` is `nn.gather_grad`, a scatter-add.

    ```mlir
    %0 = nn.gather %h, %last {axis = 0} : tensor<24x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_GatherIndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices attr-dict `:` type($input) `,` type($indices) `->`
    type($result)
  }];
  let extraClassDefinition = [{
    bool $cppClass::isDifferentiableOperand(unsigned index) {
      return index == 0;
    }
  }];
}

//===- nn.gather_grad -----------------------------------------------------===//
def NN_GatherGradOp : NN_Op<"gather_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.gather with respect to its input";
  let description = [{
    Scatter-adds `grad` (the shape of the gather's result) into zeros of the
    gather's input shape, whose `axis` has `dim_size` entries: every
    `grad[i, s, j]` is added to `result[i, indices[s], j]`, so repeated
    indices accumulate.

    ```mlir
    %0 = nn.gather_grad %dy, %last {axis = 0, dim_size = 24} : tensor<4x16xf32>, tensor<4xi64> -> tensor<24x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_GatherIndexTensor:$indices,
                       I64Attr:$axis, I64Attr:$dim_size);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->`
    type($result)
  }];
}

//===- nn.gather_elements -------------------------------------------------===//
def NN_GatherElementsOp : NN_DiffOp<"gather_elements", [InferTypeOpAdaptor],
                                    ["isDifferentiableOperand"]> {
  let summary = "per-element gather along an axis (ONNX GatherElements, "
                "torch.gather)";
  let description = [{
    `indices` has the rank of `input` and is the result's shape; along every
    axis but `axis` it is no larger than `input`. The result at position `p`
    is `input[p with p[axis] replaced by indices[p]]`. Negative indices count
    from the end of the axis; out-of-range ones are an error in the
    interpreter and clamped in compiled code. Indices are not
    differentiable; the gradient of `input` is `nn.gather_elements_grad`.

    ```mlir
    %0 = nn.gather_elements %h, %idx {axis = 1} : tensor<4x6x16xf32>, tensor<4x1x16xi64> -> tensor<4x1x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_GatherIndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices attr-dict `:` type($input) `,` type($indices) `->`
    type($result)
  }];
  let extraClassDefinition = [{
    bool $cppClass::isDifferentiableOperand(unsigned index) {
      return index == 0;
    }
  }];
}

//===- nn.gather_elements_grad --------------------------------------------===//
def NN_GatherElementsGradOp : NN_Op<"gather_elements_grad",
                                    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of nn.gather_elements with respect to its input";
  let description = [{
    Scatter-adds `grad` (the shape of `indices`) into zeros of `shape`, the
    gather's input shape: `grad[p]` is added at `p` with `p[axis]` replaced
    by `indices[p]` (ONNX ScatterElements with `reduction = "add"` into
    zeros).

    ```mlir
    %0 = nn.gather_elements_grad %dy, %idx {axis = 1, shape = array<i64: 4, 6, 16>} : tensor<4x1x16xf32>, tensor<4x1x16xi64> -> tensor<4x6x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_GatherIndexTensor:$indices,
                       I64Attr:$axis, DenseI64ArrayAttr:$shape);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->`
    type($result)
  }];
}

//===- nn.iota ------------------------------------------------------------===//
// No gradient: the positions depend on the source's shape only, not on its
// values.
def NN_IotaOp : NN_Op<"iota", [Pure, InferTypeOpAdaptor]> {
  let summary = "the positions 0, 1, ... along a dimension of a tensor";
  let description = [{
    A rank-1 tensor of `source`'s dimension `axis`, holding 0, 1, 2, ... in
    the float type `dtype`. Only the shape of `source` is read: a
    batch-polymorphic model takes the batch from a data input (ONNX
    `Range(0, x.size(0), 1)`, PyTorch's `torch.arange(B)` to index each
    sample), and the result is static once the batch is specialised.

    ```mlir
    %0 = nn.iota %ids {axis = 0, dtype = f32} : tensor<?x6xi64> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source, I64Attr:$axis,
                       TypeAttrOf<AnyTypeOf<[F32, F64]>>:$dtype);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $source attr-dict `:` type($source) `->` type($result)
  }];
}

#endif // CLEAVE_NN_OPS

//===- RtOps.td - Calls into the Cleave runtime -----------*- tablegen -*-===//
//
// Ops that code generation hands to runtime kernels (oneDNN) and collectives.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RT_OPS
#define CLEAVE_RT_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rt_Dialect : Dialect {
  let name = "rt";
  let cppNamespace = "::mlir::cleave::rt";
  let summary = "Work handed to the Cleave runtime";
  let description = [{
    Ops the CPU back end does not generate loops for: the big linear-algebra
    ops that oneDNN primitives run (matmul, convolutions, pooling, forward and
    backward) and cross-rank collectives. They are destination-passing ops
    that work on tensors or on memrefs, so that one-shot bufferization places
    their results (for example, a weight-gradient GEMM accumulates straight
    into its accumulation buffer), and `cleave-lower-runtime-calls` turns the
    bufferized form into calls through the kernel ABI
    (`runtime/include/cleave/kernel_abi.h`), each with an id into the
    artifact's kernel table.

    Attributes carry the runtime's view of the program down to the
    artifact; the dialect verifies each and refuses any other `rt.*` name:
    `rt.abi` on an entry function lists its arguments as the runtime passes
    them, and on the module `rt.kernels` is the kernel table, and
    `rt.manifest_json`, `rt.entries` and `rt.init_data` are what
    `cleave-write-manifest` hands to `cleave-emit-artifact-abi`, and
    `rt.target` what it hands to code generation.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    // Every rt.* attribute, named once; RtOps.cpp verifies each.

    /// On an entry function: one dictionary per runtime argument (after the
    /// kernel context), with a `role` (input, hyper, output, global,
    /// scratch) and the role's fields.
    static constexpr ::llvm::StringLiteral kAbiAttr = "rt.abi";
    /// On the module: the kernel table, one dictionary per kernel id.
    static constexpr ::llvm::StringLiteral kKernelsAttr = "rt.kernels";
    /// On the module: the manifest's JSON text.
    static constexpr ::llvm::StringLiteral kManifestJsonAttr =
        "rt.manifest_json";
    /// On the module: the names of the entry points, in manifest order.
    static constexpr ::llvm::StringLiteral kEntriesAttr = "rt.entries";
    /// On the module: the bytes of the globals' initial values.
    static constexpr ::llvm::StringLiteral kInitDataAttr = "rt.init_data";
    /// On the module: the CPU code is generated for, `{cpu = "name",
    /// features = ["f", ...]}` (compiler/Artifact/Target.h).
    static constexpr ::llvm::StringLiteral kTargetAttr = "rt.target";
  }];
}

def Rt_KernelKind : I32EnumAttr<"KernelKind", "runtime kernel", [
  I32EnumAttrCase<"matmul", 0>,
  I32EnumAttrCase<"conv2d_fwd", 1>,
  I32EnumAttrCase<"conv2d_bwd_data", 2>,
  I32EnumAttrCase<"conv2d_bwd_weights", 3>,
  I32EnumAttrCase<"max_pool2d_fwd", 4>,
  I32EnumAttrCase<"avg_pool2d_fwd", 5>,
  I32EnumAttrCase<"max_pool2d_bwd", 6>,
  I32EnumAttrCase<"avg_pool2d_bwd", 7>,
  I32EnumAttrCase<"sdpa_fwd", 8>,
  I32EnumAttrCase<"sdpa_bwd", 9>
]> {
  let cppNamespace = "::mlir::cleave::rt";
  let genSpecializedAttr = 0;
}
def Rt_KernelKindAttr : EnumAttr<Rt_Dialect, Rt_KernelKind, "kernel_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

// What the compute-bound kernels (matmul, convolutions) multiply in. `bf16`:
// their inputs are rounded to bfloat16 and the products accumulated in f32
// into f32 outputs; every buffer of the ABI stays f32 (docs/design/
// mixed-precision.md).
def Rt_KernelPrecision : I32EnumAttr<"KernelPrecision", "kernel precision", [
  I32EnumAttrCase<"f32", 0>,
  I32EnumAttrCase<"bf16", 1>
]> {
  let cppNamespace = "::mlir::cleave::rt";
  let genSpecializedAttr = 0;
}

def Rt_ReduceKind : I32EnumAttr<"ReduceKind", "cross-rank reduction", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"adasum", 2>
]> {
  let cppNamespace = "::mlir::cleave::rt";
  let genSpecializedAttr = 0;
}
def Rt_ReduceKindAttr : EnumAttr<Rt_Dialect, Rt_ReduceKind, "reduce_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

// Not an attribute: the device an artifact's code runs on (the `target`
// option of the pipelines and cleave-compile; the manifest's `device`).
def Rt_Device : I32EnumAttr<"Device", "the device an artifact runs on", [
  I32EnumAttrCase<"cpu", 0>,
  I32EnumAttrCase<"cuda", 1>
]> {
  let cppNamespace = "::mlir::cleave::rt";
  let genSpecializedAttr = 0;
}

class Rt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Rt_Dialect, mnemonic, traits>;

//===- rt.kernel ----------------------------------------------------------===//
def Rt_KernelOp : Rt_Op<"kernel", [
    DestinationStyleOpInterface, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "a library kernel (oneDNN, cuBLASLt, cuDNN), destination-passing";
  let description = [{
    Computes `kind` from `inputs` into `outputs` (one, but two for
    `sdpa_fwd` and three for `sdpa_bwd`). `config` holds the kernel's
    attributes:

    | kind | inputs | config |
    |---|---|---|
    | `matmul` | a, b, [bias] | `trans_a`, `trans_b` (bool), `activation` ("none"/"relu"), `accumulate` (bool: add into init) |
    | `conv2d_fwd` | src, weight, [bias] | `strides`, `padding` (top, left, bottom, right), `dilations`, `groups`, `activation` |
    | `conv2d_bwd_data` | diff_dst, weight | as conv2d_fwd, without bias/activation |
    | `conv2d_bwd_weights` | src, diff_dst | as conv2d_fwd, plus `accumulate` |
    | `max_pool2d_fwd`, `avg_pool2d_fwd` | src | `kernel`, `strides`, `padding`, `dilations`, `count_include_pad` |
    | `max_pool2d_bwd` | src, diff_dst | as pooling |
    | `avg_pool2d_bwd` | diff_dst | as pooling |
    | `sdpa_fwd` | q [B, T, D], k [B, S, D], v [B, S, Dv], [mask [T, S]], [keep [B, T, S] with `dropout`]; outputs o [B, T, Dv], lse [B, T] | `scale` (f64, multiplies q k^T), `causal` (bool), `dropout` (f64 in [0, 1), optional: the probabilities times keep / (1 - dropout)) |
    | `sdpa_bwd` | q, k, v, o, lse, do, [mask], [keep]; outputs dq, dk, dv | as sdpa_fwd |

    Without `accumulate` the initial contents of `init` are irrelevant.
    Every operand is f32, but the multiplied inputs of the compute-bound
    kinds (matmul's a and b, a convolution's src, diff_dst and weights) may
    be bf16: the kernel reads them as stored and multiplies in bf16. A
    convolution's result may be bf16 too (cuDNN's bf16 convolutions write
    one), rounded once from the f32 sum; it then takes no bias, activation
    or accumulate. Attention's tensors may all be bf16 (cuDNN's fused
    attention takes no other), but for `lse`, which stays f32.

    ```mlir
    %r = rt.kernel matmul ins(%x, %w, %b : tensor<32x784xf32>, tensor<512x784xf32>, tensor<512xf32>)
           outs(%e : tensor<32x512xf32>) {trans_b = true, activation = "relu"} -> tensor<32x512xf32>
    ```
  }];
  let arguments = (ins Rt_KernelKindAttr:$kind,
                       Variadic<AnyShaped>:$inputs, Variadic<AnyShaped>:$outputs,
                       DictionaryAttr:$config);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    custom<EnumKeyword>($kind) `ins` `(` $inputs `:` type($inputs) `)` `outs` `(` $outputs `:`
    type($outputs) `)` $config attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getOutputsMutable();
    }
    /// A boolean entry of `config` (false when absent).
    bool getFlag(::llvm::StringRef name);
    /// Whether input `input` may be bf16: a multiplied operand of a
    /// compute-bound kernel (matmul's a and b, a convolution's src,
    /// diff_dst and weights, every input of attention but its
    /// log-sum-exp), which the kernel then reads as stored.
    bool isStorableInBf16(unsigned input);
    /// Whether output `output` may be bf16: a convolution's, rounded once
    /// by the kernel, and attention's but for its log-sum-exp.
    bool isResultStorableInBf16(unsigned output = 0);
    /// How many outputs a kernel of `kind` has.
    static unsigned getNumOutputsOf(KernelKind kind);
    /// An integer-array entry of `config`.
    ::llvm::SmallVector<int64_t> getInts(::llvm::StringRef name);
  }];
}

//===- rt.cross_rank_reduce -----------------------------------------------===//
def Rt_CrossRankReduceOp : Rt_Op<"cross_rank_reduce", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "combine buffers across data-parallel ranks, in place";
  let description = [{
    ```mlir
    %r:2 = rt.cross_rank_reduce sum outs(%a, %b : tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Rt_ReduceKindAttr:$kind, Variadic<AnyShaped>:$outputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    custom<EnumKeyword>($kind) `outs` `(` $outputs `:` type($outputs) `)` attr-dict
    (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getOutputsMutable();
    }
  }];
}

//===----------------------------------------------------------------------===//
// ZeRO-1 sharding (docs/design/distributed.md): a tensor of n elements is cut
// into `ranks` shards of ceil(n / ranks) elements, the last zero-padded.
//===----------------------------------------------------------------------===//

class Rt_ShardingOp<string mnemonic, list<Trait> traits = []>
    : Rt_Op<mnemonic, !listconcat([DestinationStyleOpInterface,
        AttrSizedOperandSegments,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>], traits)> {
  let arguments = (ins Variadic<AnyShaped>:$inputs,
                       Variadic<AnyShaped>:$outputs,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$ranks);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    `ranks` $ranks `ins` `(` $inputs `:` type($inputs) `)` `outs` `(` $outputs
    `:` type($outputs) `)` attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getOutputsMutable();
    }
  }];
}

//===- rt.reduce_scatter --------------------------------------------------===//
def Rt_ReduceScatterOp : Rt_ShardingOp<"reduce_scatter"> {
  let summary = "this rank's shards of the sums across ranks";
  let description = [{
    `outputs[i]` (`ceil(n_i / ranks)` elements) receives this rank's shard of
    the sum over ranks of `inputs[i]` (`n_i` elements, read only).

    ```mlir
    rt.reduce_scatter ranks 4 ins(%g : memref<3x4xf32>) outs(%s : memref<3xf32>)
    ```
  }];
}

//===- rt.all_gather ------------------------------------------------------===//
def Rt_AllGatherOp : Rt_ShardingOp<"all_gather"> {
  let summary = "whole tensors from every rank's shard";
  let description = [{
    `outputs[i]` (`n_i` elements) receives every rank's `inputs[i]`
    (`ceil(n_i / ranks)` elements), each in its place.

    ```mlir
    rt.all_gather ranks 4 ins(%s : memref<3xf32>) outs(%w : memref<3x4xf32>)
    ```
  }];
}

//===- rt.shard -----------------------------------------------------------===//
def Rt_ShardOp : Rt_ShardingOp<"shard"> {
  let summary = "copy this rank's shard of a tensor";
  let description = [{
    `outputs[i]` (`ceil(n_i / ranks)` elements) receives this rank's shard of
    `inputs[i]`, zero-padded. No communication.

    ```mlir
    rt.shard ranks 4 ins(%w : memref<3x4xf32>) outs(%s : memref<3xf32>)
    ```
  }];
}

#endif // CLEAVE_RT_OPS

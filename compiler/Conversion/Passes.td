//===- Passes.td - Cleave's lowerings to code -------------*- tablegen -*-===//
//
// From the two graphs of a step to code that calls the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_CONVERSION_PASSES
#define CLEAVE_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def CleaveConvertNNToLinalg : Pass<"cleave-convert-nn-to-linalg",
                                   "::mlir::ModuleOp"> {
  let summary = "Lower nn ops and train updates to linalg, tensor and rt";
  let description = [{
    Every nn op becomes linalg on tensors (elementwise ops, reductions,
    losses, normalisation, dropout, shape ops) or an `rt.kernel` for the
    compute-bound ops oneDNN runs (matmul and linear, convolutions and their
    gradients, pooling and its gradients). Optimizer updates and clipping
    become linalg.generic ops that write into their parameter and state
    operands, and `train.cross_rank_reduce` becomes `rt.cross_rank_reduce`.
    `train.load`, `train.store` and `train.accumulate` are left for
    `cleave-lower-entry-abi`. Fails, naming the op, on anything it cannot
    lower (for example f64 compute-bound ops, which only the reference
    interpreter runs).

    Generated code clamps class labels and embedding indices into range, so
    that bad data can never make it read out of bounds; an entry-point input
    used as such gets `train.index_bound = N : i64` (the smallest bound of its
    uses), which reaches the manifest, and the runtime refuses a batch with a
    value outside `[0, N)` instead of training on clamped values.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::cleave::rt::RtDialect"];
}

def CleaveLowerEntryAbi : Pass<"cleave-lower-entry-abi", "::mlir::ModuleOp"> {
  let summary = "Give entry points the runtime ABI and bind state to buffers";
  let description = [{
    Rewrites every function with `train.entry` (`micro_step`, `apply_step`,
    `eval_step`) to take the kernel context (`!llvm.ptr`) followed by one
    memref per data input, hyperparameter, output and referenced global, in
    that order, and to return nothing; the order is recorded in the
    function's `rt.abi` attribute for the manifest. Inputs and
    hyperparameters are read through `bufferization.to_tensor restrict`;
    each global is read once and its final value written back with
    `bufferization.materialize_in_destination`, so that bufferization updates
    it in place. `train.load` and `train.store` become plain SSA values;
    `train.accumulate` folds into the kernel that produced the value when it
    can (a GEMM or convolution weight gradient then accumulates straight
    into the accumulation buffer), and is an in-place addition otherwise.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::cleave::rt::RtDialect"];
}

def CleaveLowerRuntimeCalls : Pass<"cleave-lower-runtime-calls",
                                   "::mlir::ModuleOp"> {
  let summary = "Turn bufferized rt ops into calls through the kernel ABI";
  let description = [{
    Assigns each `rt.kernel` an id, records its complete description (shapes
    and attributes, as `runtime-abi.md` specifies) in the module's
    `rt.kernels` table, and replaces it with a call to the matching
    `cleave_kernel_*` function, passing the entry point's kernel context and
    raw pointers. Operands that are not contiguous row-major are copied to
    a contiguous buffer first. `rt.cross_rank_reduce` becomes a call to
    `cleave_cross_rank_reduce`. Runs after bufferization.

    With `precision=bf16` every matmul and convolution entry of the table
    says `"math": "bf16"`: the runtime multiplies in bfloat16 with f32
    accumulation. Operands stored in bf16 (cleave-store-bf16) get their
    `*_type` rows. With `bf16-convolutions=false` the convolutions stay f32,
    and the first one says so in a warning. With `bf16-convolution-results`
    (the cuda target: cuDNN multiplies bf16 only on bf16 tensors, result
    included) a convolution multiplies in bf16 only where cleave-store-bf16
    stored its result in bf16, and then every operand must be bf16; the
    others are f32 kernels.
  }];
  let options = [
    Option<"precision", "precision", "::mlir::cleave::rt::KernelPrecision",
           /*default=*/"::mlir::cleave::rt::KernelPrecision::f32",
           "What matmuls and convolutions multiply in: f32 or bf16 (f32 "
           "accumulation and f32 buffers either way)",
           "::mlir::cleave::enumValues<::mlir::cleave::rt::KernelPrecision>()">,
    Option<"bf16Convolutions", "bf16-convolutions", "bool", /*default=*/"true",
           "With precision=bf16, whether the convolutions multiply in bf16 "
           "too (false: they stay f32, with a warning)">,
    Option<"bf16MinMatmulK", "bf16-min-matmul-k", "int64_t",
           /*default=*/"0",
           "With precision=bf16, the shortest reduction (K) of a matmul "
           "that multiplies in bf16 (shorter ones stay f32; the pipelines "
           "pass 17, Bf16Rule.h)">,
    Option<"bf16ConvolutionResults", "bf16-convolution-results", "bool",
           /*default=*/"false",
           "With precision=bf16, a convolution multiplies in bf16 only where "
           "its result is stored in bf16, with every operand (cuda)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def CleavePlanMemory : Pass<"cleave-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Place every temporary buffer of an entry point in one arena";
  let description = [{
    Replaces each static `memref.alloc` of an entry point by a `memref.view`
    into a scratch arena passed as a new last argument (`memref<Nxi8>`,
    recorded in `rt.abi` with its size). Offsets come from a static plan:
    buffers whose live ranges (first to last use, following view-like
    aliases) do not overlap share memory; each offset is 64-byte aligned.
    Matching `memref.dealloc`s are erased. The arena is allocated once per
    session, so a step allocates nothing. Fails on dynamic allocations.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cleave::rt::RtDialect"];
}

def CleaveApproximateMath : Pass<"cleave-approximate-math"> {
  let summary = "Inline polynomial approximations of f32 transcendentals";
  let description = [{
    Rewrites f32 `math.erf`, `math.exp`, `math.expm1`, `math.log`,
    `math.log1p`, `math.log2` and `math.tanh` into MLIR's polynomial
    approximations (upstream `populateMathPolynomialApproximationPatterns`):
    plain arithmetic, so that LLVM vectorises the loop around them. Left as
    they are, they become calls to the C library's scalar `erff`, `expf`,
    ... once per element, and the loops that hold them (GELU, softmax,
    sigmoid, their gradients) stay scalar: in a transformer's micro-step
    those calls were the largest item after the GEMMs. The approximations
    are accurate to a few ulp over the whole f32 range (MLIR's own tests).
    Other types and ops are left for the LLVM and libm lowerings.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def CleaveExpandBFloat16 : Pass<"cleave-expand-bf16"> {
  let summary = "bf16 conversions as integer arithmetic on the host";
  let description = [{
    Rewrites `arith.extf` from bf16 to f32 and `arith.truncf` from f32 to
    bf16 (rounding to nearest even, NaN kept quiet) into integer arithmetic
    on the bits (upstream `populateExpandBFloat16Patterns`). Without an
    AVX512-BF16 target the x86 back end calls `__truncsfbf2` for the
    truncation, which Debian 12's libgcc does not have: the artifact would
    not load. The arithmetic vectorises as the loop around it does. Where
    the module's recorded target (`rt.target`) has AVX512-BF16 nothing is
    rewritten: LLVM narrows with VCVTNEPS2BF16, as oneDNN's reorders do
    (it rounds to nearest even too, but flushes f32 denormals to zero).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def CleaveOutlineKernels : Pass<"cleave-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Move each bufferized linalg op into a function of its own";
  let description = [{
    Replaces every linalg op of a function with two or more of them (after
    bufferization: no results, memref operands) by a `func.call` to a new
    private function `@<function>_kernel<i>` that holds only that op. The
    function takes the memrefs and scalars the op reads from its caller;
    constants, and view ops whose result has no static shape and layout,
    are cloned into it instead. A nest whose kernel would be the same code
    as an earlier one (same signature, bodies equal up to value names and
    locations) calls that kernel instead: models repeat blocks, and LLVM's
    time grows with the code it is given. Kernels carry
    `passthrough = ["noinline"]`
    so that LLVM does not inline them back, and internal linkage so that the
    artifact does not export them.

    Why: LLVM's function passes (dominator trees, scalar evolution) grow
    faster than linearly with the size of a function, and an entry point
    holds every loop nest of a model's training step; small functions keep
    compile time linear in the model. Fails on an op that reads a value that
    cannot cross a bare-pointer call and is not a view.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def CleaveLowerReductionsToLoops : Pass<"cleave-lower-reductions-to-loops"> {
  let summary = "Inner reductions to loops that accumulate in registers";
  let description = [{
    Lowers each bufferized `linalg.generic` whose loops are parallel ones
    followed by reduction ones (so the innermost loop reduces: a layer
    norm's statistics, softmax's max and sum, a log-sum-exp, a row reduced
    along its contiguous dimension) to an `scf.for` nest that loads each
    output element once, carries it through the reduction loops as an
    iteration argument and stores it once. An `arith.addf` that folds a
    value into the carried element gets the `reassoc` fast-math flag: a sum
    may then be computed in any order, and LLVM splits it across vector
    lanes. Other combiners (`maximumf`, `minimumf`) are exact in any order
    and are left as they are.

    Why: upstream `convert-linalg-to-loops` loads and stores the output
    element in every iteration; LLVM can neither keep it in a register (it
    cannot prove that the output does not alias the inputs) nor reorder the
    adds, so these loops ran as scalar chains of dependent adds. Like
    linalg's own vectorisation, the lowering assumes that no input aliases
    an output, which holds for the ops bufferization produces.

    Ops with a reduction loop outside a parallel one (a bias gradient sums
    over rows, the innermost loop is parallel and vectorises as it is),
    without a reduction, or on tensors are left for
    `convert-linalg-to-loops`. The summation order changes and so does the
    rounding, as with oneDNN's blocking (docs/design/cpu-lowering.md,
    Numerics); for a given artifact it is fixed.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def CleaveStoreBf16 : Pass<"cleave-store-bf16"> {
  let summary = "Store the activation inputs of bf16 kernels in bf16, "
                "narrowed in the loops that compute them";
  let description = [{
    With `precision=bf16` every matmul (and, with `convolutions`, every
    convolution) multiplies in bf16; this pass makes the kernels read their
    activation inputs as bf16 tensors instead of converting them on every
    call (docs/design/mixed-precision.md, "bf16 storage"). On tensors, after
    elementwise fusion:

    * every input `isStorableInBf16` of such an `rt.kernel` (matmul's a and
      b, a convolution's src and diff_dst) that is not read from a global
      (parameters keep the CPU runtime's once-per-generation copy) becomes
      `truncf` of it, one narrowed copy per value, made right after the
      value is defined, which every kernel reading the value shares. With
      `parameters` (cuda) a global's reads are narrowed as well, once per
      entry point at its start, shared by the forward and backward kernels;
    * a narrowing whose input a `linalg.generic` computes is fused into it:
      the loop also yields the bf16 result (and only that, when the kernels
      were its only readers), so no separate pass over memory converts it.
    * a loop that reads an f32 value only to test `x > 0` (ReLU's backward
      mask) reads the value's bf16 twin instead (its narrowing, or the
      fused ReLU-and-narrowing loop's result: the same sign but for
      0 < x < 2^-133, or the denormals below 2^-126 where the target's
      VCVTNEPS2BF16 flushes them), so the f32 pre-activation is not held
      for the backward pass.
    * with `convolution-results` (cuda) a bf16 convolution has all three
      operands in bf16 or stays f32: its src, diff_dst and weights are
      narrowed (globals included), and it writes a bf16 result, which a
      `linalg.generic` widens to f32, adding the bias, applying the ReLU and
      adding into the accumulator the kernel had. A narrowing of that value
      for the next kernel is fused into the widening loop, and a widening
      whose only reader is an elementwise loop is fused into that reader.

    ```mlir
    %h = linalg.generic ... -> tensor<32x512xf32>   // relu
    %y = rt.kernel matmul ins(%h, %w ...)
    %g = rt.kernel matmul ins(%dy, %h ...) {trans_a = true, accumulate = true}
    ```

    becomes the relu loop yielding `tensor<32x512xbf16>`, which both kernels
    read. Kernel outputs, parameters, accumulators and everything an
    elementwise loop or a reduction reads stay f32.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"convolutions", "convolutions", "bool", /*default=*/"true",
           "Whether the convolutions multiply in bf16 (false on cuda, "
           "where they stay f32)">,
    Option<"minMatmulK", "min-matmul-k", "int64_t", /*default=*/"0",
           "The shortest reduction (K) of a matmul that multiplies in bf16 "
           "(as cleave-lower-runtime-calls' bf16-min-matmul-k)">,
    Option<"parameters", "parameters", "bool", /*default=*/"false",
           "Whether parameter inputs are narrowed too, once per entry point "
           "(cuda: cuBLASLt multiplies bf16 only when both operands are "
           "stored in bf16, and no runtime copy exists there)">,
    Option<"convolutionResults", "convolution-results", "bool",
           /*default=*/"false",
           "Whether a bf16 convolution stores every operand in bf16, its "
           "result too, or stays f32 where it cannot (cuda: cuDNN's bf16 "
           "convolutions take and give bf16 tensors); the bias, activation "
           "and accumulation move to a loop that widens the result">,
  ];
}

def CleaveFoldGuardedUpdates : Pass<"cleave-fold-guarded-updates"> {
  let summary = "Select a guarded update in place, in the loop that makes "
                "it, and zero accumulators there";
  let description = [{
    The apply step stores each parameter and optimizer state as
    `nn.where(ok, new, old)` (`cleave-build-train-step`'s `check-finite`).
    After elementwise fusion the optimizer's in-place loop yields both `new`
    (into `old`'s tensor, a result nothing uses) and `select(ok, new, old)`
    (into a new tensor, which the entry then copies into the global): a
    second buffer and a copy of every parameter per window. This pass yields
    the `select` into `old`'s tensor instead and drops the other output, so
    the update stays in place:

    ```mlir
    %r:2 = linalg.generic ins(%ok, %g, %p : ...) outs(%p, %empty : ...) {
    ^bb0(%c: f32, %gi: f32, %pi: f32, %o: f32, %e: f32):
      %new = ... %o ...
      %sel = arith.select %cond, %new, %pi : f32
      linalg.yield %new, %sel : f32, f32
    }
    // uses of %r#1 (and none of %r#0)
    ```

    becomes the same loop yielding `%sel` into `%p` alone, %r#0 replacing
    %r#1. It applies when the unused output's init is the tensor the select
    reads for its false value (an input or that output's own block argument)
    with the same indexing map, and both outputs have that map.

    It also folds the apply step's zeroing of each gradient accumulator into
    the loop that reads the accumulator last (the optimizer's update): a
    `linalg.fill` of a tensor whose last reader is an all-parallel
    `linalg.generic` reading it with the identity map, every other reader
    coming before that loop, becomes one more output of the loop, which
    reads the old value through it and yields the fill's value. One sweep
    of the accumulator instead of two: the MLP's SGD apply step (0.67 M
    parameters, Intel Xeon, one thread) went from 0.33 to 0.24 ms.
  }];
}

def CleaveRematerialize : Pass<"cleave-rematerialize", "::mlir::ModuleOp"> {
  let summary = "Recompute activations in the backward pass instead of "
                "holding them";
  let description = [{
    Works on `@micro_step` at the tensor level, after the last CSE and
    before bufferization (docs/design/memory.md, "Rematerialisation"). The
    forward pass is every op the `loss` output depends on; a forward value
    that an op outside it reads is held from forward to backward. A held
    value (with its views) is rematerialised by cloning the ops that compute
    it from values that stay available (held values, inputs, parameters,
    constants) right before its first backward use, and pointing the
    backward uses at the clone: the original dies at its last forward use
    and `cleave-plan-memory` reuses its bytes. The clones are the same ops
    on the same operands and compute the same bits; they carry a
    `cleave.remat` unit attribute.

    Candidates are taken greedily, by class (loop nests without reductions
    and views first, then reductions such as normalisation statistics, then
    pooling, then GEMMs and convolutions) and within a class by recomputed
    FLOPs per byte saved. Without a budget only the first class is taken: a
    recomputed loop nest reads values that are held anyway, so it saves its
    bytes for one more pass over memory. With `budget` (bytes) or
    `budget-fraction` (of the held bytes without recomputation) every class
    may be taken, until the estimate of held bytes fits.

    The function gets a `cleave.remat` dictionary: `values` recomputed,
    `bytes` no longer held (the estimate), `flops` recomputed, the held
    bytes estimated `before` and `after`, and the forward pass's
    `forward_flops` (the measure the planner compares `flops` with). A chain holds at most one library
    call (GEMM, convolution, pooling): a value is recomputed from the held
    values right before it, never through several layers, so recomputation
    costs at most about one more forward pass. Where the runtime keeps a
    copy of a kernel's weight per call (`conv-weight-copies`,
    `bf16-weight-copies`), a recomputed kernel's copy is subtracted from
    what it saves.
  }];
  let options = [
    Option<"budget", "budget", "int64_t", "-1",
           "Held activations to aim for, in bytes (-1: no budget)">,
    Option<"budgetFraction", "budget-fraction", "double", "-1",
           "Held activations to aim for, as a fraction of what is held "
           "without recomputation (-1: no budget)">,
    Option<"convWeightCopies", "conv-weight-copies", "bool", "false",
           "The runtime keeps a copy of a convolution's weight per kernel "
           "call (the CPU's layout cache): a recomputed convolution costs "
           "its weight's bytes">,
    Option<"bf16WeightCopies", "bf16-weight-copies", "bool", "false",
           "The runtime keeps a bf16 copy of a GEMM's weight per kernel "
           "call (the CPU in bf16): a recomputed GEMM costs half its "
           "weight's bytes">,
  ];
}

def CleaveAnnotateInnerLoops : Pass<"cleave-annotate-inner-loops"> {
  let summary = "Keep LLVM from fully unrolling the innermost loops";
  let description = [{
    Gives every innermost `scf.for` with a static trip count of at least
    `min-trip-count` a `loop_annotation` attribute
    `#llvm.loop_annotation<unroll = #llvm.loop_unroll<disable = true>>`.
    `convert-scf-to-cf` copies it onto the loop's back edge and
    `convert-cf-to-llvm` onto the `llvm.br`, whose `loop_annotation` the
    LLVM translation turns into `!llvm.loop` metadata. Other loops are left
    as they are, and so are innermost loops with a memory access whose
    index is not an affine function of the induction variable (the clamped
    reads of slices, padding and concatenation): their gathers vectorise no
    better rolled.

    Why: LLVM's O3 fully unrolls short innermost loops before its loop
    vectoriser runs, and then vectorises the enclosing loop across the
    unrolled copies, with gathers and scatters at the unrolled dimension's
    stride, or not at all when the copies may alias. The attention nests of
    a transformer (rows of 32 or 64 elements) ran as scalar or scatter code
    that way. Left rolled, an innermost loop is vectorised along its
    contiguous dimension and interleaved by the vectoriser itself. Loops
    shorter than a vector are better unrolled and are not annotated.

    On a target with AVX512-BF16 (the module's `rt.target`), an annotated
    loop that converts between f32 and bf16 (`arith.truncf` from f32 to
    bf16, `arith.extf` back) also gets `vectorize = #llvm.loop_vectorize<
    width = bf16-vector-width>`: LLVM 22's X86 cost model prices a vector
    of such conversions as that many scalar ones, although there it selects
    one VCVTNEPS2BF16, so without the width the loops that narrow
    activations were vectorised 4 lanes wide (an xmm register). A forced
    width overrides the cost model for the whole loop and allows LLVM to
    reorder floating-point reductions, so only loops with no loop-carried
    values, unit-stride or invariant accesses and at least that many
    iterations get it. The default, 8 lanes (one ymm register of f32 in,
    the width the target's other f32 loops get), measured faster than 16
    (one zmm register) on an Emerald Rapids (cpu-lowering.md).
  }];
  let options = [
    Option<"minTripCount", "min-trip-count", "int64_t", /*default=*/"16",
           "The shortest innermost loop that is kept rolled">,
    Option<"bf16VectorWidth", "bf16-vector-width", "int64_t",
           /*default=*/"8",
           "The vector width (lanes, a power of two up to 64) of loops that "
           "convert between f32 and bf16">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CleaveLinalgToGpuLoops : Pass<"cleave-linalg-to-gpu-loops",
                                  "::mlir::func::FuncOp"> {
  let summary = "Bufferized linalg ops to parallel loops mapped to GPU blocks "
                "and threads";
  let description = [{
    The CUDA back end's first step: every linalg op (and `memref.copy`) of
    an entry point becomes one `scf.parallel` nest with a
    `#gpu.loop_dim_map` mapping, ready for `convert-parallel-loops-to-gpu`.

    - Reduction dimensions are moved inside (`interchangeGenericOp`), so
      that each thread owns whole output elements and reduces sequentially:
      no atomics, and the same summation order on every run.
    - A long reduction (at least twice `block-size` elements per output,
      with few outputs or over the first input's contiguous dimension)
      whose body folds into the output with `addf`, `maximumf` or
      `minimumf` instead becomes a `gpu.launch` with a block per output
      element: each thread folds a strided share in order, `gpu.all_reduce`
      combines the shares (warp shuffles and shared memory), and thread 0
      folds the result into the output. Deterministic for a given block
      size, in a different order from the sequential one.
    - An op with no parallel dimension (a full reduction, a 0-d fill or
      counter update) is wrapped in a one-iteration parallel loop: it runs
      as a kernel of one thread, never on the host (the host cannot
      dereference device pointers). So is a sequential loop that accesses
      memory outside linalg (an embedding gradient's in-order scatter).
    - The parallel loop is tiled into blocks of up to `block-size` threads
      over its innermost dimensions with more than one iteration: the first
      (contiguous in memory) on `x`, for coalesced accesses, then `y` and
      `z`. Tiles need not divide the loop: the last block masks its extra
      threads. The grid's `x`, `y` and `z` go to the dimensions with the
      most blocks (`x` takes up to 2^31-1 blocks, `y` and `z` 65535); any
      other dimension runs sequentially in each thread.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Most threads per block">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect"];
}

def CleaveSinkScalarsIntoLinalg : Pass<"cleave-sink-scalars-into-linalg",
                                       "::mlir::func::FuncOp"> {
  let summary = "Compute host scalars inside the linalg ops that use them";
  let description = [{
    For the CUDA back end, on linalg on tensors. Scalars computed between
    the loop nests (a hyperparameter read with `tensor.extract`, Adam's bias
    corrections from the step counter, the global norm of clipping) would
    run on the host and read device memory there. Each linalg op that uses
    such a scalar (captured by its body, or as a scalar input such as a
    fill value) is rebuilt with the scalar's computation cloned into its
    body and the tensors it extracts from as extra inputs (broadcast with a
    constant indexing map), so that every thread recomputes it from device
    memory. SSA on tensors keeps this exact: bufferization preserves the
    extracted tensors' contents until the consumer has read them. A scalar
    whose computation is anything but `tensor.extract` at constant indices
    and side-effect-free scalar ops is left alone (and later refused by
    `cleave-verify-device-only`).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CleaveCopyConstantsToDevice : Pass<"cleave-copy-constants-to-device",
                                       "::mlir::func::FuncOp"> {
  let summary = "Give a library call a device copy of a constant it reads";
  let description = [{
    For the CUDA back end, on buffers, before `cleave-plan-memory`. A
    non-splat constant tensor bufferizes to `memref.get_global` of a global
    that the artifact keeps in host memory. Loop nests read it inside their
    kernels (`cleave-sink-constants-into-kernels` moves the global into the
    kernel's module, which the driver loads into device memory), but a
    runtime library call (cuBLASLt, cuDNN) is given the pointer itself. A
    constant that reaches anything other than a loop nest or a view is
    therefore copied, by a `memref.copy` that becomes a kernel, into a
    temporary buffer the arena places in device memory, and every user
    reads the copy.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CleaveSinkConstantsIntoKernels : Pass<"cleave-sink-constants-into-kernels",
                                          "::mlir::func::FuncOp"> {
  let summary = "Move the constant globals a gpu.launch reads into its body";
  let description = [{
    For the CUDA back end, before `gpu-kernel-outlining`. A
    `memref.get_global` (and the views of it) that a `gpu.launch` reads is
    cloned into the launch's body instead of being passed as a kernel
    argument, which would be an address in the artifact's host memory.
    Outlining then copies the referenced `memref.global` into the kernel's
    `gpu.module`, so the constant travels in the kernel's binary and lives
    in device memory once the module is loaded. Host ops left unused are
    erased.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def CleaveVerifyDeviceOnly : Pass<"cleave-verify-device-only",
                                  "::mlir::ModuleOp"> {
  let summary = "Check that host code of a CUDA artifact never touches a buffer";
  let description = [{
    Every pointer an entry of a `cuda` artifact receives is a device pointer
    (docs/design/gpu.md): host code may pass buffers to kernel launches and
    runtime calls and take views of them, but a load, store, copy or loop
    over their elements left outside a `gpu.module` would dereference device
    memory on the CPU. A constant global read from host code (its address
    is in the artifact's host memory) is refused the same way. Fails naming
    each such op and its location.
  }];
}

def CleaveDeduplicateKernels : Pass<"cleave-deduplicate-kernels",
                                    "::mlir::ModuleOp"> {
  let summary = "Launch one GPU kernel for every loop nest of the same code";
  let description = [{
    After `gpu-kernel-outlining`, which makes one `gpu.module` per launch:
    a module whose only op is a kernel that is the same code as an earlier
    module's kernel (its name aside: the micro-step's and the evaluation's
    copies of a layer are twins) is erased, and its launches call the
    earlier kernel. A model repeats itself (the blocks of a ResNet stage,
    the layers of a transformer), and every kernel costs an NVPTX
    compilation and a `ptxas` run per architecture at compile time and a
    module load at run time: resnet18's 692 launches need 191 kernels.
  }];
}

def CleaveRunGpuLaunchesOnHost : Pass<"cleave-run-gpu-launches-on-host"> {
  let summary = "Testing aid: each gpu.launch as host loops over its blocks "
                "and threads";
  let description = [{
    For checking the cuda target's loop nests on a machine without a GPU
    (the op tests' `GpuKernelsOnHost` back end, never a real artifact):
    every `gpu.launch` becomes `scf.for` loops over its grid and, inside,
    over its block's threads, which run one after another. A launch with
    one float `gpu.all_reduce` directly in its body (a block reduction)
    runs each block in two sweeps: every thread's operand combined in
    thread order, then every thread's remainder with the total. Anything
    that needs threads to run together (barriers, shuffles, shared memory)
    is an error naming the op.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def CleaveLaunchOnRuntimeStream : Pass<"cleave-launch-on-runtime-stream",
                                       "::mlir::ModuleOp"> {
  let summary = "Launch every kernel on the stream the runtime hands out";
  let description = [{
    After `gpu-to-llvm`: each function that launches kernels calls
    `cleave_gpu_stream(ctx)` once (its first argument is the kernel
    context) and passes the result to every `gpu.launch_func` as its async
    object, so that `#gpu.select_object` emits `mgpuLaunchKernel` on that
    stream and no stream of its own (no mgpuStreamCreate/Synchronize).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // CLEAVE_CONVERSION_PASSES

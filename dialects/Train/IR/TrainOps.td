//===- TrainOps.td - train dialect ops -------------------*- tablegen -*-===//
//
// State, accumulation, optimizer, clipping and reduction ops.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRAIN_OPS
#define CLEAVE_TRAIN_OPS

include "dialects/Train/IR/OptimizerOpInterface.td"
include "dialects/Train/IR/TrainDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_FloatTensor : RankedTensorOf<[F32, F64]>;
def Train_FloatScalar : 0DTensorOf<[F32, F64]>;
def Train_StepScalar : 0DTensorOf<[I64]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI64Type())";
}

/// A resource standing for the persistent state that globals live in, so
/// that loads, stores and accumulations are ordered against each other.
def Train_StateResource : Resource<"::mlir::cleave::train::StateResource">;

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

//===- train.global -------------------------------------------------------===//
def Train_GlobalOp : Train_Op<"global", [Symbol,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "persistent training state";
  let description = [{
    A named tensor that lives across steps, owned by the runtime session:

    - `param`: a trainable parameter;
    - `buffer`: non-trainable model state (batch-norm running statistics);
    - `accumulator`: a gradient accumulation buffer (`of` names the
      parameter) or the window's sample count;
    - `state`: optimizer state (`of` names the parameter);
    - `counter`: an integer step counter.

    `initial_value` is a `#train.init` initialiser or an elements attribute
    holding the exact values (weights imported from ONNX); without it the
    global starts at zero. Every global is part of a checkpoint.

    Optimizer state sharded over data-parallel ranks (ZeRO-1) says so with
    `shards R`: it holds this rank's shard of a tensor shaped like its
    parameter, `tensor<ceil(n / R) x element>` (see `train.shard`).

    ```mlir
    train.global param @fc1.weight : tensor<512x784xf32> = #train.init<kaiming_uniform>
    train.global accumulator @fc1.weight.grad of @fc1.weight : tensor<512x784xf32>
    train.global state @fc1.weight.exp_avg of @fc1.weight shards 4 : tensor<100352xf32>
    train.global counter @train.step : tensor<i64>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Train_GlobalKindAttr:$kind,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       OptionalAttr<AnyAttr>:$initial_value,
                       OptionalAttr<FlatSymbolRefAttr>:$of,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$shards);
  // The kind is a bare keyword: the enum attribute's own syntax is meant for
  // attribute dictionaries and would print with a second leading space.
  let assemblyFormat = [{
    custom<EnumKeyword>($kind) $sym_name (`of` $of^)? (`shards` $shards^)?
    attr-dict `:` $type (`=` $initial_value^)?
  }];
  // The builder without `shards`, for everything but sharded state.
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$sym_name,
                   "::mlir::cleave::train::GlobalKind":$kind,
                   "::mlir::RankedTensorType":$type,
                   "::mlir::Attribute":$initial_value,
                   "::mlir::FlatSymbolRefAttr":$of), [{
      build($_builder, $_state, sym_name, kind, type, initial_value, of,
            ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

//===- train.load ---------------------------------------------------------===//
def Train_LoadOp : Train_Op<"load", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead<Train_StateResource>]>]> {
  let summary = "read the current value of a global";
  let description = [{
    ```mlir
    %w = train.load @fc1.weight : tensor<512x784xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$global);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$global attr-dict `:` type($result)";
}

//===- train.store --------------------------------------------------------===//
def Train_StoreOp : Train_Op<"store", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite<Train_StateResource>]>]> {
  let summary = "overwrite a global";
  let description = [{
    ```mlir
    train.store %w2, @fc1.weight : tensor<512x784xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, FlatSymbolRefAttr:$global);
  let assemblyFormat = "$value `,` $global attr-dict `:` type($value)";
}

//===- train.accumulate ---------------------------------------------------===//
def Train_AccumulateOp : Train_Op<"accumulate", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead<Train_StateResource>,
                   MemWrite<Train_StateResource>]>]> {
  let summary = "add a value into a global in place";
  let description = [{
    `global += value`. The micro-step graph adds each gradient of the summed
    loss, and the sample count, into accumulators with this op; code
    generation fuses the addition into the op producing `value` where it can
    (a GEMM with beta = 1).

    ```mlir
    train.accumulate %g, @fc1.weight.grad : tensor<512x784xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$value, FlatSymbolRefAttr:$global);
  let assemblyFormat = "$value `,` $global attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// The window cut
//===----------------------------------------------------------------------===//

//===- train.window_sum ---------------------------------------------------===//
def Train_WindowSumOp : Train_Op<"window_sum", [Pure,
    AllTypesMatch<["values", "results"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the sum of values over the micro-steps of a window";
  let description = [{
    Marks where a training step is cleaved. Its operands are computed once
    per micro-batch (gradients of the summed loss and the sample count); its
    results are their sums over the accumulation window and are what the
    optimizer consumes. In a step that is not split the window is one
    micro-batch and the op is the identity. `cleave-split-step` turns
    operands into `train.accumulate` in `@micro_step` and results into loads
    of the accumulators in `@apply_step`.

    `targets` names what each operand is, which names the accumulators the
    split creates: a parameter symbol (`@w` accumulates into `@w.grad`; it
    must name a `param` global of the operand's type) or a string
    (`"samples"` accumulates into `@train.samples`).

    ```mlir
    %gw, %n = train.window_sum %dw, %count {targets = [@w, "samples"]} : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$values,
                       OptionalAttr<ArrayAttr>:$targets);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

//===- train.sgd ----------------------------------------------------------===//
def Train_SgdOp : Train_Op<"sgd", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "new_param"]>,
    AllTypesMatch<["lr", "weight_decay"]>]> {
  let summary = "plain SGD update";
  let description = [{
    `g' = grad + weight_decay * param; new_param = param - lr * g'`, as
    `torch.optim.SGD` without momentum. Hyperparameters are rank-0 tensors
    so they can change at run time.

    ```mlir
    %p2 = train.sgd %p, %g lr %lr weight_decay %wd : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatScalar:$lr, Train_FloatScalar:$weight_decay);
  let results = (outs Train_FloatTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad `lr` $lr `weight_decay` $weight_decay attr-dict `:`
    type($param) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===- train.momentum -----------------------------------------------------===//
def Train_MomentumOp : Train_Op<"momentum", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "buf", "new_param", "new_buf"]>,
    AllTypesMatch<["lr", "momentum", "weight_decay"]>]> {
  let summary = "SGD with (Nesterov) momentum";
  let description = [{
    As `torch.optim.SGD(momentum=m, nesterov=...)` with zero dampening:
    `g' = grad + wd * param; buf' = m * buf + g'; d = nesterov ? g' + m * buf'
    : buf'; param' = param - lr * d`. The buffer starts at zero, which matches
    PyTorch's first step (`buf = g`).

    ```mlir
    %p2, %b2 = train.momentum %p, %g, %b lr %lr momentum %m weight_decay %wd {nesterov} : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$buf, Train_FloatScalar:$lr,
                       Train_FloatScalar:$momentum,
                       Train_FloatScalar:$weight_decay, UnitAttr:$nesterov);
  let results = (outs Train_FloatTensor:$new_param, Train_FloatTensor:$new_buf);
  let assemblyFormat = [{
    $param `,` $grad `,` $buf `lr` $lr `momentum` $momentum `weight_decay`
    $weight_decay attr-dict `:` type($param) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===- train.adam ---------------------------------------------------------===//
def Train_AdamOp : Train_Op<"adam", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>,
    AllTypesMatch<["lr", "beta1", "beta2", "eps", "weight_decay"]>]> {
  let summary = "Adam / AdamW update";
  let description = [{
    As `torch.optim.Adam` (or `AdamW` with `decoupled`), for optimizer step
    `step` (1 for the first update):
    `g' = grad + wd * param` (Adam) or `param *= 1 - lr * wd` (AdamW);
    `m' = b1 m + (1 - b1) g'; v' = b2 v + (1 - b2) g'^2;
    param' = param - lr / (1 - b1^step) * m' / (sqrt(v') / sqrt(1 - b2^step) + eps)`.

    ```mlir
    %p2, %m2, %v2 = train.adam %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$m, Train_FloatTensor:$v,
                       Train_StepScalar:$step, Train_FloatScalar:$lr,
                       Train_FloatScalar:$beta1, Train_FloatScalar:$beta2,
                       Train_FloatScalar:$eps, Train_FloatScalar:$weight_decay,
                       UnitAttr:$decoupled);
  let results = (outs Train_FloatTensor:$new_param, Train_FloatTensor:$new_m,
                      Train_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `step` $step `lr` $lr `betas` $beta1 `,`
    $beta2 `eps` $eps `weight_decay` $weight_decay attr-dict `:` type($param)
    `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===- train.rmsprop ------------------------------------------------------===//
def Train_RmspropOp : Train_Op<"rmsprop", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "square_avg", "new_param",
                   "new_square_avg"]>,
    AllTypesMatch<["lr", "alpha", "eps", "weight_decay"]>]> {
  let summary = "RMSprop update";
  let description = [{
    As `torch.optim.RMSprop` with `momentum=0, centered=False`:
    `g' = grad + wd * param; s' = alpha * s + (1 - alpha) * g'^2;
    param' = param - lr * g' / (sqrt(s') + eps)`. The square average starts
    at zero, as in PyTorch.

    ```mlir
    %p2, %s2 = train.rmsprop %p, %g, %s lr %lr alpha %a eps %eps weight_decay %wd : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$square_avg, Train_FloatScalar:$lr,
                       Train_FloatScalar:$alpha, Train_FloatScalar:$eps,
                       Train_FloatScalar:$weight_decay);
  let results = (outs Train_FloatTensor:$new_param,
                      Train_FloatTensor:$new_square_avg);
  let assemblyFormat = [{
    $param `,` $grad `,` $square_avg `lr` $lr `alpha` $alpha `eps` $eps
    `weight_decay` $weight_decay attr-dict `:` type($param) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===- train.adagrad ------------------------------------------------------===//
def Train_AdagradOp : Train_Op<"adagrad", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "sum", "new_param", "new_sum"]>,
    AllTypesMatch<["lr", "lr_decay", "eps", "weight_decay"]>]> {
  let summary = "Adagrad update";
  let description = [{
    As `torch.optim.Adagrad` with `initial_accumulator_value=0`, for optimizer
    step `step` (1 for the first update):
    `clr = lr / (1 + (step - 1) * lr_decay); g' = grad + wd * param;
    sum' = sum + g'^2; param' = param - clr * g' / (sqrt(sum') + eps)`.

    ```mlir
    %p2, %s2 = train.adagrad %p, %g, %s step %t lr %lr lr_decay %d eps %eps weight_decay %wd : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$sum, Train_StepScalar:$step,
                       Train_FloatScalar:$lr, Train_FloatScalar:$lr_decay,
                       Train_FloatScalar:$eps, Train_FloatScalar:$weight_decay);
  let results = (outs Train_FloatTensor:$new_param, Train_FloatTensor:$new_sum);
  let assemblyFormat = [{
    $param `,` $grad `,` $sum `step` $step `lr` $lr `lr_decay` $lr_decay `eps`
    $eps `weight_decay` $weight_decay attr-dict `:` type($param) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===- train.lamb ---------------------------------------------------------===//
def Train_LambOp : Train_Op<"lamb", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>,
    AllTypesMatch<["lr", "beta1", "beta2", "eps", "weight_decay"]>]> {
  let summary = "LAMB update (layer-wise adaptive Adam)";
  let description = [{
    LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning",
    algorithm 2), for optimizer step `step` (1 for the first update):
    `m' = b1 m + (1 - b1) grad; v' = b2 v + (1 - b2) grad^2;
    r = (m' / (1 - b1^step)) / (sqrt(v' / (1 - b2^step)) + eps) + wd * param;
    trust = |param| / |r|` (L2 norms over the whole tensor; 1 where either
    is 0); `param' = param - lr * trust * r`.

    With `no_adapt` (set for tensors the exclusion rule exempts, see
    docs/design/optimizers.md) there is no weight decay and `trust = 1`. The
    norms span the whole parameter, so the op cannot run on a shard.

    ```mlir
    %p2, %m2, %v2 = train.lamb %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$m, Train_FloatTensor:$v,
                       Train_StepScalar:$step, Train_FloatScalar:$lr,
                       Train_FloatScalar:$beta1, Train_FloatScalar:$beta2,
                       Train_FloatScalar:$eps, Train_FloatScalar:$weight_decay,
                       UnitAttr:$no_adapt);
  let results = (outs Train_FloatTensor:$new_param, Train_FloatTensor:$new_m,
                      Train_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `step` $step `lr` $lr `betas` $beta1 `,`
    $beta2 `eps` $eps `weight_decay` $weight_decay attr-dict `:` type($param)
    `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===- train.lars ---------------------------------------------------------===//
def Train_LarsOp : Train_Op<"lars", [Pure,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface>,
    AllTypesMatch<["param", "grad", "buf", "new_param", "new_buf"]>,
    AllTypesMatch<["lr", "momentum", "eta", "weight_decay"]>]> {
  let summary = "LARS update (layer-wise adaptive SGD with momentum)";
  let description = [{
    LARS (You et al. 2017, "Large Batch Training of Convolutional Networks")
    in the form of the common PyTorch implementations (kakaobrain/torchlars):
    `trust = eta * |param| / (|grad| + wd * |param|)` (L2 norms over the
    whole tensor; 1 where either norm is 0); `d = trust * (grad + wd * param);
    buf' = momentum * buf + d; param' = param - lr * buf'`.

    With `no_adapt` (set for tensors the exclusion rule exempts, see
    docs/design/optimizers.md) there is no weight decay and `trust = 1`. The
    norms span the whole parameter, so the op cannot run on a shard.

    ```mlir
    %p2, %b2 = train.lars %p, %g, %b lr %lr momentum %m eta %eta weight_decay %wd : tensor<10x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$buf, Train_FloatScalar:$lr,
                       Train_FloatScalar:$momentum, Train_FloatScalar:$eta,
                       Train_FloatScalar:$weight_decay, UnitAttr:$no_adapt);
  let results = (outs Train_FloatTensor:$new_param, Train_FloatTensor:$new_buf);
  let assemblyFormat = [{
    $param `,` $grad `,` $buf `lr` $lr `momentum` $momentum `eta` $eta
    `weight_decay` $weight_decay attr-dict `:` type($param) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Clipping and reduction
//===----------------------------------------------------------------------===//

//===- train.clip_by_global_norm ------------------------------------------===//
def Train_ClipByGlobalNormOp : Train_Op<"clip_by_global_norm", [Pure,
    AllTypesMatch<["grads", "results"]>, AllTypesMatch<["max_norm", "norm"]>]> {
  let summary = "scale gradients so their joint L2 norm is at most max_norm";
  let description = [{
    As `torch.nn.utils.clip_grad_norm_`: with `n` the L2 norm of all `grads`
    together, every gradient is multiplied by `min(1, max_norm / (n + 1e-6))`.
    A non-positive `max_norm` disables clipping. Also returns `n`.

    With `across_ranks`, each rank holds a shard of every gradient (ZeRO-1
    sharded optimizer state) and `n` is the norm of the whole gradients: the
    squared norms of the shards are summed across data-parallel ranks before
    the square root.

    ```mlir
    %g1, %g2, %norm = train.clip_by_global_norm %a, %b max_norm %c : tensor<4x3xf32>, tensor<3xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$grads,
                       Train_FloatScalar:$max_norm, UnitAttr:$across_ranks);
  let results = (outs Variadic<Train_FloatTensor>:$results,
                      Train_FloatScalar:$norm);
  // A plain `type($grads) `,` type($max_norm)` cannot be parsed: the variadic
  // type list would also take the last type.
  let assemblyFormat = [{
    $grads `max_norm` $max_norm attr-dict `:`
    custom<TypesThenLast>(type($grads), type($max_norm))
  }];
  let hasVerifier = 1;
}

//===- train.check_finite -------------------------------------------------===//
def Train_CheckFiniteOp : Train_Op<"check_finite", [Pure]> {
  let summary = "which of the values first holds a NaN or an infinity";
  let description = [{
    Returns 0 when every element of every operand is finite, else 1 + the
    position of the first operand that holds a NaN or an infinity: the
    apply step's verdict on a window (docs/design/numerics.md).

    With `across_ranks`, each data-parallel rank passes its own values (its
    window under Adasum, its shards of the gradients under ZeRO-1) and every
    rank gets the verdict on all ranks' values together: an operand is
    non-finite when it is on some rank. Every rank then makes the same
    decision.

    ```mlir
    %first = train.check_finite %g, %loss : tensor<4x3xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$values,
                       UnitAttr:$across_ranks);
  let results = (outs Train_StepScalar:$first);
  let assemblyFormat = [{
    $values attr-dict `:` type($values)
  }];
  let hasVerifier = 1;
}

//===- train.cross_rank_reduce --------------------------------------------===//
def Train_CrossRankReduceOp : Train_Op<"cross_rank_reduce", [
    AllTypesMatch<["values", "results"]>,
    MemoryEffects<[MemRead<Train_StateResource>,
                   MemWrite<Train_StateResource>]>]> {
  let summary = "combine values across data-parallel ranks";
  let description = [{
    Every rank passes its values; every rank gets the combination: `sum`,
    `mean`, or `adasum` (Maleki et al. 2021, applied per tensor over a fixed
    binary tree of ranks). With one rank it is the identity. It has effects
    so that it is neither duplicated nor reordered with other collectives.

    ```mlir
    %g, %n = train.cross_rank_reduce sum %a, %c : tensor<4x3xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_ReduceKindAttr:$kind,
                       Variadic<Train_FloatTensor>:$values);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    custom<EnumKeyword>($kind) $values attr-dict `:` type($values)
  }];
}

//===----------------------------------------------------------------------===//
// ZeRO-1 sharding
//===----------------------------------------------------------------------===//

// Sharded optimizer state splits every tensor of `n` elements, flattened,
// into `ranks` shards of `ceil(n / ranks)` elements; rank `r` owns elements
// `[r * s, (r + 1) * s)` and the part of the last shards beyond `n` is zero
// padding (docs/design/distributed.md).

//===- train.reduce_scatter -----------------------------------------------===//
def Train_ReduceScatterOp : Train_Op<"reduce_scatter", [
    MemoryEffects<[MemRead<Train_StateResource>,
                   MemWrite<Train_StateResource>]>]> {
  let summary = "this rank's shard of the sum of values across ranks";
  let description = [{
    Every rank passes full tensors; result `i` is this rank's shard of the
    elementwise sum over ranks of `values[i]`, flattened: a 1-D tensor of
    `ceil(n / ranks)` elements whose positions past the end of the tensor
    hold zeros. The job must have exactly `ranks` ranks. With one rank it is
    a reshape. It has effects so that it is neither duplicated nor reordered
    with other collectives.

    ```mlir
    %s:2 = train.reduce_scatter %gw, %gb ranks 4 : tensor<3x4xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<1xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$values,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$ranks);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    $values `ranks` $ranks attr-dict `:` type($values) `->` type($results)
  }];
  let hasVerifier = 1;
}

//===- train.all_gather ---------------------------------------------------===//
def Train_AllGatherOp : Train_Op<"all_gather", [
    MemoryEffects<[MemRead<Train_StateResource>,
                   MemWrite<Train_StateResource>]>]> {
  let summary = "the full tensors from every rank's shard";
  let description = [{
    The inverse of `train.reduce_scatter` without the sum: every rank passes
    its shard of each result (`ceil(n / ranks)` elements) and every rank gets
    the whole tensors, each shard in its place, the padding dropped.

    ```mlir
    %w, %b = train.all_gather %sw, %sb ranks 4 : tensor<3xf32>, tensor<1xf32> -> tensor<3x4xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$shards,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$ranks);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    $shards `ranks` $ranks attr-dict `:` type($shards) `->` type($results)
  }];
  let hasVerifier = 1;
}

//===- train.shard --------------------------------------------------------===//
def Train_ShardOp : Train_Op<"shard", [Pure]> {
  let summary = "this rank's shard of a tensor every rank holds";
  let description = [{
    Elements `[r * s, (r + 1) * s)` of `input`, flattened, on rank `r`, with
    `s = ceil(n / ranks)` and zeros past the end of the tensor: the part of a
    replicated value (a parameter) that this rank updates. Communicates
    nothing.

    ```mlir
    %ws = train.shard %w ranks 4 : tensor<3x4xf32> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$ranks);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `ranks` $ranks attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type of one of `ranks` shards of a tensor of type `full`:
    /// `tensor<ceil(n / ranks) x element>`.
    static ::mlir::RankedTensorType getShardType(::mlir::RankedTensorType full,
                                                 int64_t ranks);
  }];
}

#endif // CLEAVE_TRAIN_OPS

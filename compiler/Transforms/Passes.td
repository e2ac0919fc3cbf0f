//===- Passes.td - Cleave's graph transformations --------*- tablegen -*-===//
//
// From a model function to the two graphs of a training step.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRANSFORMS_PASSES
#define CLEAVE_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def CleaveAttachLoss : Pass<"cleave-attach-loss", "::mlir::ModuleOp"> {
  let summary = "Specialise a model to the micro-batch and append its loss";
  let description = [{
    Takes the model function (`function`, default `@forward`): arguments
    marked `train.param` or `train.buffer` are state, a `tensor<i64>`
    argument marked `train.rng` is the dropout seed, every other argument is
    a data input whose dimension 0 is the batch; results marked `train.buffer`
    are new values of buffers (batch-norm running statistics) and the first
    other result is the prediction.

    With `micro-batch` set, the batch dimension of every data input becomes
    that size and all result types are inferred again (an op that pins the
    batch size makes this fail with that op's diagnostic).

    It then adds `@loss`: the same computation plus the per-sample loss
    (`cross-entropy` with integer labels, `mse` against targets, or `none`
    when the prediction already is the per-sample loss `[B]`), weighted by a
    per-sample weight input and summed. The weights are 1 for real samples and
    0 for the padding of a short micro-batch, so `@loss` is the sum of the
    real samples' losses: the quantity whose gradient the micro-step
    accumulates. The same weights go to every training-mode
    `nn.batch_norm`, so that padding does not enter batch statistics.
    `@loss` returns that scalar first, then the buffer updates.

    With `inference`, the pass only names the data inputs and specialises
    the batch: no `@loss` is added (a forward-only artifact,
    `cleave-build-train-step` with `inference`).

    Token-level cross-entropy: when the prediction has more than two
    dimensions (`[B, T, ..., classes]`, a language model's logits), the
    labels are `[B, T, ...]` (marked `train.ignore_index`) and so are the
    weights: one per token, 1 for a real token of a real sample whose label
    is not `ignore-index`, else 0 (the runtime fills them). `@loss` is then
    the sum of the real tokens' losses, and the window's "sample" count the
    number of real tokens, so the window normalisation is exact for any mix
    of sequence lengths and padding.
  }];
  let dependentDialects = ["::mlir::cleave::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The model function">,
    Option<"loss", "loss", "::mlir::cleave::nn::LossKind",
           /*default=*/"::mlir::cleave::nn::LossKind::cross_entropy",
           "The per-sample loss",
           "::mlir::cleave::enumValues<::mlir::cleave::nn::LossKind>()">,
    Option<"microBatch", "micro-batch", "int64_t", /*default=*/"0",
           "Batch size to specialise to (0 keeps the model's)">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "Token-level cross-entropy: the label value of tokens that are "
           "not predicted (padding)">,
    Option<"inference", "inference", "bool", /*default=*/"false",
           "Forward only: specialise the batch, add no loss">,
  ];
}

def CleaveRecomposeAttention
    : Pass<"cleave-recompose-attention", "::mlir::ModuleOp"> {
  let summary = "Rebuild nn.attention from the ops an export spells it with";
  let description = [{
    Replaces `matmul(softmax(mask(scale(matmul(q, k, transpose_b)))), v)` by
    one `nn.attention %q, %k, %v`, where:

    - the key may also come as K^T, `matmul(q, kt)` without `transpose_b`
      (nn.MultiheadAttention's export): the op then takes
      `nn.transpose(kt)` of the last two dimensions, which
      `cleave-decompose-attention` multiplies as `kt` again;
    - the scale, optional, is `nn.div` by or `nn.mul` with a splat constant
      (finite, non-zero, not enlarging the scores);
    - the mask, optional, is either `nn.where(c, -inf, s)` with `c` a
      constant that is non-zero exactly above the diagonal of the last two
      dimensions (the causal mask, `causal`), or `nn.add` of a tensor that
      broadcasts to the scores without enlarging them (`mask`);
    - the softmax is over the last dimension;
    - the probabilities may go through `nn.dropout` before the product
      with v (nn.MultiheadAttention's export in training), which the op
      takes as its `seed`, `dropout_ratio` and `dropout_stream`;
    - q, k and v have one rank and the scores and probabilities have no
      other user.

    Anything else is left alone: a softmax over another axis, a mask
    filled with another value than -inf, a transposed query.
    The rewrite changes no value: `cleave-decompose-attention` rebuilds the
    same ops (docs/design/attention.md).
  }];
  let dependentDialects = ["::mlir::cleave::nn::NNDialect"];
}

def CleaveDecomposeAttention
    : Pass<"cleave-decompose-attention", "::mlir::ModuleOp"> {
  let summary = "Spell nn.attention with matmul, scale, mask and softmax";
  let description = [{
    Replaces every `nn.attention` by the ops it stands for (nn.matmul with
    `transpose_b`, nn.div or nn.mul by the scale, nn.add of the mask,
    nn.where of -inf above the diagonal when causal, nn.softmax over the
    last dimension, nn.dropout with the op's seed, ratio and stream when it
    has one, nn.matmul with the value): the form the back ends
    lower and autodiff differentiates op by op.

    With `fuse`, an `nn.attention` that cuda's fused kernel takes becomes
    `nn.fused_attention` instead, which autodiff differentiates as one op
    and the back end calls cuDNN's SDPA for (attention.md): static shapes,
    a head dimension that is a multiple of 8 and at most 128, equal to the
    value's, and no mask or one that depends on no argument of the
    function (a constant, which needs no gradient) and is one matrix for
    the whole batch. Dropout on the probabilities becomes the fused op's
    `keep` operand, the mask `nn.dropout` draws (1 kept, 0 dropped). The
    rest is spelt out, with a warning that says why.
  }];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"false",
           "Keep as one nn.fused_attention what cuda's fused kernel takes">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cleave::nn::NNDialect"];
}

def CleaveReinitializeParams
    : Pass<"cleave-reinitialize-params", "::mlir::ModuleOp"> {
  let summary = "Draw the model's parameters afresh instead of embedding "
                "their values";
  let description = [{
    An ONNX export carries every parameter's values, which the artifact
    then embeds: 4 bytes a parameter (GPT-2 small: about 500 MB), although
    a model exported before training holds nothing but a random draw. With
    `normal-std` > 0, every `train.param` argument of the model function
    (`function`) whose `train.init` is a dense tensor becomes
    `#train.init<normal, 0, normal-std>`, drawn by the runtime's seeded
    generator when a session starts, unless all of its elements are equal:
    that one becomes the constant (`zeros`, `ones` or `constant`), as a
    layer norm's scale and a zeroed bias are. That is GPT-2's own scheme
    (weights N(0, 0.02), biases 0, norms 1) but for its scaled residual
    projections. Parameters with an initialiser kind and buffers keep what
    they have; with `normal-std` = 0 the pass changes nothing.
  }];
  let dependentDialects = ["::mlir::cleave::train::TrainDialect"];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The model function">,
    Option<"normalStd", "normal-std", "double", /*default=*/"0.0",
           "The standard deviation of the normal draw (0: keep the values)">,
  ];
}

def CleaveAutodiff : Pass<"cleave-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode automatic differentiation of a scalar loss";
  let description = [{
    For the function named by `function` (default: every function with an
    argument marked `train.param` and a rank-0 first result), whose first
    result is a rank-0 float tensor, builds `@<name>_grad`: the same computation followed by the
    reverse sweep, returning the original results and then the gradient of
    the first result with respect to each argument marked `train.param` (in
    argument order; each gradient result carries `train.grad_of`).

    Only ops that depend on a differentiated argument and that the loss
    depends on get a vector-Jacobian product, and each VJP computes only the
    operand cotangents that lead back to such an argument: nothing nobody
    needs is computed. A value used several times gets the sum of its
    cotangents. An argument the loss does not depend on gets a zero gradient.
    The piecewise-constant ops (`nn.compare`, `nn.floor`, `nn.ceil`,
    `nn.round`, `nn.iota`) and `nn.cast` from or to an integer type end the
    dependence: their results are constants, whose derivative is 0 wherever
    it exists.

    Fails, naming the op, if a differentiated value flows through an op that
    does not implement `DifferentiableOpInterface` or into an operand that is
    not differentiable, and if the function has control flow.
  }];
  let dependentDialects = ["::mlir::cleave::nn::NNDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to differentiate (default: all with train.param "
           "arguments and a scalar first result)">,
  ];
}

def CleaveBuildTrainStep : Pass<"cleave-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Build the training step: state, gradients, optimizer";
  let description = [{
    From `@loss` and its gradient function (built by `cleave-autodiff`) and
    the model function, builds:

    - a `train.global` for every parameter and buffer (with its initialiser),
      for the optimizer state (`momentum_buffer`, `exp_avg` and
      `exp_avg_sq`, `square_avg` or `sum`: docs/design/optimizers.md) and for
      the optimizer step counter;
    - `@train_step(inputs..., hyperparameters...) -> loss`: loads the state,
      runs forward and backward, stores buffer updates, passes the gradients
      of the summed loss and the sample count through `train.window_sum`,
      divides by the count, optionally clips by global norm, advances the step
      counter and applies the optimizer. Hyperparameters are arguments marked
      `train.hyper` with their `train.default`, never constants. For `lamb`
      and `lars`, parameters of rank <= 1 (biases, normalisation weights)
      get `no_adapt`: no weight decay, no trust ratio;
    - `@eval_step(inputs...) -> prediction`: the model with parameters
      loaded, batch normalisation in inference mode and dropout removed.

    The source functions are erased.

    With `check-finite`, the window also sums the loss (target `loss`), and
    the update is guarded: after the cut, `train.check_finite` checks every
    window sum for NaN and infinity, and `train.nonfinite` (an i64 counter)
    records 1 + the position among the window's sums of the first that is
    not finite, or 0. Only when it is 0 do the parameters and optimizer
    state take their new values (`nn.where`) and `train.step` advance;
    otherwise `train.skipped_steps` counts the window. The accumulators are
    zeroed either way (`cleave-split-step`). The verdict is the same on
    every rank: the sums are reduced across ranks before the check, or,
    under Adasum and ZeRO-1, `cleave-split-step` makes the check span the
    ranks (`across_ranks`).

    With `inference` (a forward-only artifact), it needs no `@loss` and
    builds only the globals of parameters and buffers and `@eval_step`, and
    marks the module `train.manifest = {kind = "inference"}`: no optimizer
    state, step counter or hyperparameters. The parameters may then be of
    any float types, and a model without parameters is fine.
  }];
  let dependentDialects = ["::mlir::cleave::nn::NNDialect",
                           "::mlir::cleave::train::TrainDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"model", "model", "std::string", /*default=*/"\"forward\"",
           "The model function (for @eval_step)">,
    Option<"optimizer", "optimizer", "::mlir::cleave::train::OptimizerKind",
           /*default=*/"::mlir::cleave::train::OptimizerKind::sgd",
           "The update rule",
           "::mlir::cleave::enumValues<::mlir::cleave::train::OptimizerKind>()">,
    Option<"lr", "lr", "double", /*default=*/"0.01",
           "Default learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Default momentum (momentum, nesterov, lars)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "Default beta1 (adam, adamw, lamb)">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "Default beta2 (adam, adamw, lamb)">,
    Option<"eps", "eps", "double", /*default=*/"1e-8",
           "Default epsilon (adam, adamw, rmsprop, adagrad, lamb)">,
    Option<"alpha", "alpha", "double", /*default=*/"0.99",
           "Default smoothing constant (rmsprop)">,
    Option<"lrDecay", "lr-decay", "double", /*default=*/"0.0",
           "Default learning-rate decay (adagrad)">,
    Option<"eta", "eta", "double", /*default=*/"0.001",
           "Default trust coefficient (lars)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Default weight decay">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Compile global-norm clipping in, with this default max norm "
           "(0: no clipping)">,
    Option<"inference", "inference", "bool", /*default=*/"false",
           "Forward only: the globals and @eval_step, no training step">,
    Option<"checkFinite", "check-finite", "bool", /*default=*/"false",
           "Skip the update of a window whose sums (gradients, loss, "
           "sample count) are not all finite, recording it">,
  ];
}

def CleaveSplitStep : Pass<"cleave-split-step", "::mlir::ModuleOp"> {
  let summary = "Cleave a training step into @micro_step and @apply_step";
  let description = [{
    The mark_step pass. `train.window_sum` in `@train_step` is the cut: what
    precedes it becomes `@micro_step`, run on every micro-batch, which adds
    each window_sum operand (gradients of the summed loss, the sample count)
    into an accumulator global with `train.accumulate` and counts the
    micro-step; what follows it becomes `@apply_step`, run once per window,
    which reads the accumulators (combining them across ranks with
    `train.cross_rank_reduce` when `reduce` is `mean`), runs the rest of the
    step (normalisation, clipping, optimizer) and zeroes the accumulators and
    the counter. With `reduce=adasum` the optimizer runs on each rank's own
    window and the parameter deltas are Adasum-combined; the window check
    (`train.check_finite`) then spans the ranks (`across_ranks`), so every
    rank skips a window that is not finite on one.

    Loads, constants and pure ops on them are rematerialised in
    `@apply_step`; any other value crossing the cut is an error, as is a
    data input used after it or a hyperparameter used before it.

    With `shard-optimizer-state` (ZeRO-1, for `ranks` ranks), `@apply_step`
    reduce-scatters the gradient accumulators (`train.reduce_scatter`) and
    sums the other accumulators (the sample count); from there on every
    gradient, parameter (`train.shard` of it) and optimizer state is this
    rank's shard of `ceil(n / ranks)` elements, optimizer state globals are
    declared with that shape (`shards`), clipping sums its squared norm
    across ranks, the window check checks this rank's shards and spans the
    ranks, and one `train.all_gather` rebuilds the parameters before they
    are stored. Only elementwise ops (the optimizers, `nn` arithmetic, the
    guarded stores' `nn.where`) may touch a shard; anything else is an
    error naming the op. With
    `reduce-every-micro-step` the gradients are summed across ranks in
    `@micro_step`, before they are accumulated, and `@apply_step`
    communicates nothing: N times the traffic, for comparison in benchmarks.

    Ops whose result depends on how a batch is split into micro-batches
    (batch normalisation in training mode, dropout) are reported as warnings
    and listed in the `train.manifest` module attribute, which also records
    the default accumulation count `accumulate` (the runtime may change it
    without recompiling), the reduction and, when set, `window_samples`,
    `ranks`, `shard_optimizer_state` and `reduce_every_micro_step`.
  }];
  let dependentDialects = ["::mlir::cleave::nn::NNDialect",
                           "::mlir::cleave::train::TrainDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Default number of micro-steps per window">,
    Option<"windowSamples", "window-samples", "int64_t", /*default=*/"0",
           "Samples in one rank's window when its last micro-batch is short "
           "(0: accumulate whole micro-batches), recorded in train.manifest "
           "as window_samples">,
    Option<"reduce", "reduce", "::mlir::cleave::train::RankReduction",
           /*default=*/"::mlir::cleave::train::RankReduction::none",
           "How data-parallel ranks combine their windows",
           "::mlir::cleave::enumValues<::mlir::cleave::train::RankReduction>()">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "Number of data-parallel ranks the artifact is for (0: any)">,
    Option<"shardOptimizerState", "shard-optimizer-state", "bool",
           /*default=*/"false",
           "ZeRO-1: reduce-scatter the gradients, update a shard of every "
           "parameter and its optimizer state per rank, all-gather the "
           "parameters (needs reduce=mean and ranks)">,
    Option<"reduceEveryMicroStep", "reduce-every-micro-step", "bool",
           /*default=*/"false",
           "Sum the gradients across ranks in every micro-step instead of "
           "once per window (a baseline for benchmarks; needs reduce=mean)">,
  ];
}

#endif // CLEAVE_TRANSFORMS_PASSES

// RUN: split-file --leading-lines %s %t
// RUN: cleave-opt %t/step.mlir --cleave-split-step | FileCheck %s --check-prefix=SPLIT
// RUN: cleave-opt %t/step.mlir --cleave-split-step="accumulate=4 reduce=mean" | FileCheck %s --check-prefix=MEAN
// RUN: cleave-opt %t/step.mlir --cleave-split-step=reduce=adasum | FileCheck %s --check-prefix=ADASUM
// RUN: cleave-opt %t/warnings.mlir --verify-diagnostics --cleave-split-step | FileCheck %s --check-prefix=WARN
// RUN: cleave-opt %t/invalid.mlir --split-input-file --verify-diagnostics --cleave-split-step
// RUN: cleave-opt %t/writes.mlir --verify-diagnostics --cleave-split-step | FileCheck %s --check-prefix=WRITES
// RUN: not cleave-opt %t/step.mlir --cleave-split-step=reduce=ring 2>&1 | FileCheck %s --check-prefix=BAD-REDUCE
// RUN: not cleave-opt %t/step.mlir --cleave-split-step=accumulate=0 2>&1 | FileCheck %s --check-prefix=BAD-ACCUMULATE

// RUN: cleave-opt %t/zero.mlir --cleave-split-step="reduce=mean ranks=4 shard-optimizer-state" | FileCheck %s --check-prefix=ZERO
// RUN: cleave-opt %t/step.mlir --cleave-split-step="reduce=mean ranks=2" | FileCheck %s --check-prefix=RANKS
// RUN: cleave-opt %t/step.mlir --cleave-split-step="accumulate=4 reduce=mean reduce-every-micro-step" | FileCheck %s --check-prefix=EVERY
// RUN: cleave-opt %t/checked.mlir --cleave-split-step="reduce=mean ranks=2" | FileCheck %s --check-prefix=CHECKED-MEAN
// RUN: cleave-opt %t/checked.mlir --cleave-split-step="reduce=adasum" | FileCheck %s --check-prefix=CHECKED-ADASUM
// RUN: cleave-opt %t/checked.mlir --cleave-split-step="reduce=mean ranks=4 shard-optimizer-state" | FileCheck %s --check-prefix=CHECKED-ZERO
// RUN: cleave-opt %t/zero-invalid.mlir --split-input-file --verify-diagnostics --cleave-split-step="reduce=mean ranks=2 shard-optimizer-state"
// RUN: not cleave-opt %t/step.mlir --cleave-split-step="reduce=adasum ranks=2 shard-optimizer-state" 2>&1 | FileCheck %s --check-prefix=BAD-SHARD-ADASUM
// RUN: not cleave-opt %t/step.mlir --cleave-split-step="reduce=mean shard-optimizer-state" 2>&1 | FileCheck %s --check-prefix=BAD-SHARD-RANKS
// RUN: not cleave-opt %t/step.mlir --cleave-split-step="reduce=adasum reduce-every-micro-step" 2>&1 | FileCheck %s --check-prefix=BAD-EVERY
// RUN: not cleave-opt %t/step.mlir --cleave-split-step="reduce=mean ranks=-1" 2>&1 | FileCheck %s --check-prefix=BAD-RANKS

// BAD-REDUCE: for the --reduce option: Cannot find option named 'ring'!
// BAD-ACCUMULATE: error: accumulate must be >= 1, got
// BAD-SHARD-ADASUM: error: shard-optimizer-state needs reduce=mean and ranks >= 1, got reduce=adasum ranks=2
// BAD-SHARD-RANKS: error: shard-optimizer-state needs reduce=mean and ranks >= 1, got reduce=mean ranks=0
// BAD-EVERY: error: reduce-every-micro-step needs reduce=mean without shard-optimizer-state
// BAD-RANKS: error: ranks must be >= 0 (0: any number), got -1

//--- step.mlir

// A step as cleave-build-train-step builds it (with stand-in gradients).

// SPLIT: module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}}
// One accumulator per window_sum operand, after the existing globals, named
// after its target, and the micro-step counter.
// SPLIT: train.global counter @train.step : tensor<i64>
// SPLIT-NEXT: train.global accumulator @w.grad of @w : tensor<3x4xf32>
// SPLIT-NEXT: train.global accumulator @b.grad of @b : tensor<3xf32>
// SPLIT-NEXT: train.global accumulator @train.samples : tensor<f32>
// SPLIT-NEXT: train.global counter @train.micro_steps : tensor<i64>

// The micro-step runs what precedes the cut on the data inputs, adds the
// window_sum operands into the accumulators and counts itself.
// SPLIT-LABEL: func.func @micro_step(
// SPLIT-SAME: %[[X:[^:]+]]: tensor<8x4xf32> {train.input = "x"}, %[[WEIGHTS:[^:]+]]: tensor<8xf32> {train.input = "weights"})
// SPLIT-SAME: -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "micro_step"}
// SPLIT: %[[W:.+]] = train.load @w
// SPLIT: %[[B:.+]] = train.load @b
// SPLIT: %[[Y:.+]] = nn.linear %[[X]], %[[W]], %[[B]]
// SPLIT: %[[LOSS:.+]] = nn.reduce_sum %[[Y]]
// SPLIT: %[[DW:.+]] = nn.neg %[[W]]
// SPLIT: %[[DB:.+]] = nn.neg %[[B]]
// SPLIT: %[[N:.+]] = nn.reduce_sum %[[WEIGHTS]]
// SPLIT-NOT: train.window_sum
// SPLIT: train.accumulate %[[DW]], @w.grad : tensor<3x4xf32>
// SPLIT: train.accumulate %[[DB]], @b.grad : tensor<3xf32>
// SPLIT: train.accumulate %[[N]], @train.samples : tensor<f32>
// SPLIT: %[[MS:.+]] = train.load @train.micro_steps
// SPLIT: %[[ONE:.+]] = arith.constant dense<1> : tensor<i64>
// SPLIT: %[[MS1:.+]] = arith.addi %[[MS]], %[[ONE]]
// SPLIT: train.store %[[MS1]], @train.micro_steps
// SPLIT-NOT: train.sgd
// SPLIT: return %[[LOSS]] : tensor<f32>

// The apply step takes the hyperparameters, reads the sums, runs what follows
// the cut (loads and pure ops on them are rematerialised) and zeroes the
// accumulators and the micro-step counter.
// SPLIT-LABEL: func.func @apply_step(
// SPLIT-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"})
// SPLIT-SAME: attributes {train.entry = "apply_step"}
// SPLIT: %[[SW:.+]] = train.load @w.grad
// SPLIT: %[[SB:.+]] = train.load @b.grad
// SPLIT: %[[SN:.+]] = train.load @train.samples
// SPLIT-NOT: train.cross_rank_reduce
// SPLIT: %[[GW:.+]] = nn.div %[[SW]], %[[SN]]
// SPLIT: %[[GB:.+]] = nn.div %[[SB]], %[[SN]]
// SPLIT: train.store %{{.+}}, @train.step
// SPLIT: %[[W2:.+]] = train.load @w :
// SPLIT: %[[NW:.+]] = train.sgd %[[W2]], %[[GW]] lr %[[LR]]
// SPLIT: train.store %[[NW]], @w :
// SPLIT: %[[B2:.+]] = train.load @b :
// SPLIT: %[[NEGB:.+]] = nn.neg %[[B2]]
// SPLIT: %[[NB:.+]] = train.sgd %[[NEGB]], %[[GB]] lr %[[LR]]
// SPLIT: train.store %[[NB]], @b :
// SPLIT: %[[Z1:.+]] = arith.constant dense<0.000000e+00> : tensor<3x4xf32>
// SPLIT: train.store %[[Z1]], @w.grad
// SPLIT: %[[Z2:.+]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// SPLIT: train.store %[[Z2]], @b.grad
// SPLIT: %[[Z3:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// SPLIT: train.store %[[Z3]], @train.samples
// SPLIT: %[[Z4:.+]] = arith.constant dense<0> : tensor<i64>
// SPLIT: train.store %[[Z4]], @train.micro_steps
// SPLIT: return{{$}}
// SPLIT-NOT: func.func @train_step

// With reduce=mean the gradient sums and the sample count are summed across
// ranks before the single division.
// MEAN: module attributes {train.manifest = {accumulate = 4 : i64, reduce = "mean", warnings = []}}
// MEAN-LABEL: func.func @micro_step(
// MEAN-NOT: train.cross_rank_reduce
// MEAN-LABEL: func.func @apply_step(
// MEAN: %[[SW:.+]] = train.load @w.grad
// MEAN: %[[SB:.+]] = train.load @b.grad
// MEAN: %[[SN:.+]] = train.load @train.samples
// MEAN: %[[R:.+]]:3 = train.cross_rank_reduce sum %[[SW]], %[[SB]], %[[SN]] : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
// MEAN: nn.div %[[R]]#0, %[[R]]#2
// MEAN: nn.div %[[R]]#1, %[[R]]#2
// MEAN-NOT: train.cross_rank_reduce

// With reduce=adasum each rank updates with its own window and the parameter
// deltas are combined, in one collective after the last update.
// ADASUM: module attributes {train.manifest = {accumulate = 1 : i64, reduce = "adasum", warnings = []}}
// ADASUM-LABEL: func.func @apply_step(
// ADASUM: %[[OLDB:.+]] = train.load @b :
// ADASUM: %[[OLDW:.+]] = train.load @w :
// ADASUM-NOT: train.cross_rank_reduce sum
// ADASUM: %[[NW:.+]] = train.sgd
// ADASUM: %[[DW:.+]] = nn.sub %[[NW]], %[[OLDW]]
// ADASUM: %[[NB:.+]] = train.sgd
// ADASUM: %[[DB:.+]] = nn.sub %[[NB]], %[[OLDB]]
// ADASUM: %[[R:.+]]:2 = train.cross_rank_reduce adasum %[[DW]], %[[DB]] : tensor<3x4xf32>, tensor<3xf32>
// ADASUM: %[[W:.+]] = nn.add %[[OLDW]], %[[R]]#0
// ADASUM: train.store %[[W]], @w :
// ADASUM: %[[B:.+]] = nn.add %[[OLDB]], %[[R]]#1
// ADASUM: train.store %[[B]], @b :
// ADASUM-NOT: train.store %[[NW]]
// ADASUM-NOT: train.store %[[NB]]

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
train.global param @b : tensor<3xf32> = #train.init<zeros>
train.global counter @train.step : tensor<i64>
func.func @train_step(%x: tensor<8x4xf32> {train.input = "x"},
                      %weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-2 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %b = train.load @b : tensor<3xf32>
  %y = nn.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %loss = nn.reduce_sum %y [] : tensor<8x3xf32> -> tensor<f32>
  %dw = nn.neg %w : tensor<3x4xf32>
  %db = nn.neg %b : tensor<3xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:3 = train.window_sum %dw, %db, %n {targets = [@w, @b, "samples"]} : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
  %gw = nn.div %s#0, %s#2 : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
  %gb = nn.div %s#1, %s#2 : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %t = train.load @train.step : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %t1 = arith.addi %t, %one : tensor<i64>
  train.store %t1, @train.step : tensor<i64>
  %nw = train.sgd %w, %gw lr %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  train.store %nw, @w : tensor<3x4xf32>
  %b2 = nn.neg %b : tensor<3xf32>
  %nb = train.sgd %b2, %gb lr %lr weight_decay %lr : tensor<3xf32>, tensor<f32>
  train.store %nb, @b : tensor<3xf32>
  return %loss : tensor<f32>
}

// Without sharding, ranks only goes into the manifest.
// RANKS: module attributes {train.manifest = {accumulate = 1 : i64, ranks = 2 : i64, reduce = "mean", warnings = []}}
// RANKS-LABEL: func.func @apply_step(
// RANKS: train.cross_rank_reduce sum
// RANKS-NOT: train.reduce_scatter

// Reducing in every micro-step (a benchmark baseline): the micro-step sums
// what it accumulates across ranks, the apply step communicates nothing.
// EVERY: module attributes {train.manifest = {accumulate = 4 : i64, reduce = "mean", reduce_every_micro_step = true, warnings = []}}
// EVERY-LABEL: func.func @micro_step(
// EVERY: %[[DW:.+]] = nn.neg
// EVERY: %[[DB:.+]] = nn.neg
// EVERY: %[[N:.+]] = nn.reduce_sum %{{.+}} [] : tensor<8xf32>
// EVERY: %[[R:.+]]:3 = train.cross_rank_reduce sum %[[DW]], %[[DB]], %[[N]] : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
// EVERY: train.accumulate %[[R]]#0, @w.grad
// EVERY: train.accumulate %[[R]]#1, @b.grad
// EVERY: train.accumulate %[[R]]#2, @train.samples
// EVERY-LABEL: func.func @apply_step(
// EVERY-NOT: train.cross_rank_reduce
// EVERY: return

//--- warnings.mlir

// Ops whose result depends on how the batch is split into micro-batches are
// reported and listed in the manifest; inference-mode batch normalisation is
// not. A window_sum without targets gets positional accumulator names.

// WARN: module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = [
// WARN-SAME: {loc = "loc(\22{{.*}}warnings.mlir\22:{{[0-9]+}}:{{[0-9]+}})", message = "dropout draws a new mask for each micro-batch, so the masks differ from one large batch", op = "nn.dropout"},
// WARN-SAME: {loc = "loc(\22{{.*}}warnings.mlir\22:{{[0-9]+}}:{{[0-9]+}})", message = "dropout draws a new mask for each micro-batch, so the masks differ from one large batch", op = "nn.attention"},
// WARN-SAME: {loc = "loc(\22{{.*}}warnings.mlir\22:{{[0-9]+}}:{{[0-9]+}})", message = "batch normalisation in training mode uses the statistics of each micro-batch, not of the whole window", op = "nn.batch_norm"}]}}
// WARN: train.global accumulator @train.window_sum.0 : tensor<2xf32>
// WARN-LABEL: func.func @micro_step(
// WARN: nn.dropout
// WARN: nn.attention
// WARN: nn.batch_norm {{.+}} {training}
// WARN: nn.batch_norm {{.+}} : tensor<4x2xf32>
// WARN: train.accumulate %{{.+}}, @train.window_sum.0 : tensor<2xf32>

train.global param @g : tensor<2xf32>
train.global buffer @m : tensor<2xf32>
train.global counter @train.rng : tensor<i64>
func.func @train_step(%x: tensor<4x2xf32> {train.input = "x"}) -> tensor<f32> attributes {train.entry = "step"} {
  %g = train.load @g : tensor<2xf32>
  %m = train.load @m : tensor<2xf32>
  %seed = train.load @train.rng : tensor<i64>
  // expected-warning @+1 {{dropout draws a new mask for each micro-batch, so the masks differ from one large batch}}
  %d = nn.dropout %x, %seed {ratio = 0.5} : tensor<4x2xf32>, tensor<i64> -> tensor<4x2xf32>
  // expected-warning @+1 {{dropout draws a new mask for each micro-batch, so the masks differ from one large batch}}
  %a = nn.attention %d, %d, %d dropout(%seed : tensor<i64>) {dropout_ratio = 0.5 : f64} : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-warning @+1 {{batch normalisation in training mode uses the statistics of each micro-batch, not of the whole window}}
  %y, %rm, %rv = nn.batch_norm %a, %g, %g, %m, %m {training} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
  %z, %zm, %zv = nn.batch_norm %y, %g, %g, %m, %m : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
  %l = nn.reduce_sum %z [] : tensor<4x2xf32> -> tensor<f32>
  %s = train.window_sum %g : tensor<2xf32>
  train.store %s, @g : tensor<2xf32>
  return %l : tensor<f32>
}

//--- invalid.mlir

// expected-error @+1 {{no training step (a function with train.entry = "step"); run cleave-build-train-step first}}
module {
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{expected exactly one train.window_sum in @train_step, found 2}}
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  %0 = train.window_sum %x : tensor<4xf32>
  %1 = train.window_sum %0 : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{expected exactly one train.window_sum in @train_step, found 0}}
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{@train_step has control flow; cleave-split-step needs a single block}}
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  cf.br ^bb1
^bb1:
  %0 = train.window_sum %x : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  %0 = train.window_sum %x : tensor<4xf32>
  %1 = nn.neg %0 : tensor<4xf32>
  // expected-error @+1 {{'func.return' op returns the result of 'nn.neg', which is computed after the cut; a step returns per-micro-batch values}}
  return %1 : tensor<4xf32>
}

// -----

func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  %0 = train.window_sum %x : tensor<4xf32>
  // expected-error @+1 {{'nn.mul' op depends on argument 'x' after the cut; data inputs belong to the micro-step}}
  %1 = nn.mul %0, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{hyperparameter argument 'lr' is used before the cut; hyperparameters belong to the apply step}}
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}, %lr: tensor<f32> {train.hyper = "lr"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  %0 = nn.mul %x, %lr : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = train.window_sum %0 : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// A value with effects cannot be recomputed after the cut.
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  // expected-note @+1 {{computed here, before the cut}}
  %r = train.cross_rank_reduce sum %x : tensor<4xf32>
  %0 = train.window_sum %x : tensor<4xf32>
  // expected-error @+1 {{'nn.add' op depends on the result of 'train.cross_rank_reduce', which is computed per micro-batch; route it through train.window_sum}}
  %1 = nn.add %0, %r : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

train.global param @w : tensor<4xf32>
train.global accumulator @w.grad of @w : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  // expected-error @+1 {{'train.window_sum' op accumulator name 'w.grad' is taken}}
  %0 = train.window_sum %x {targets = [@w]} : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// A global written before the cut holds, in @apply_step, what the last
// micro-step wrote: a load of it cannot be recomputed there.
train.global buffer @m : tensor<4xf32>
train.global param @p : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  // expected-note @+1 {{written here, before the cut}}
  train.store %x, @m : tensor<4xf32>
  // expected-error @+1 {{'train.load' op reads @m, which 'train.store' writes before the cut, and its value is used after the cut: cleave-split-step would rematerialise the load in @apply_step, where it reads what the last micro-step wrote rather than this micro-batch's value; route the value through train.window_sum}}
  %m = train.load @m : tensor<4xf32>
  %0 = train.window_sum %x : tensor<4xf32>
  // expected-note @+1 {{used here, after the cut}}
  %1 = nn.add %0, %m : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  train.store %1, @p : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// The same when the load itself comes after the cut.
train.global accumulator @m : tensor<4xf32>
train.global param @p : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  // expected-note @+1 {{written here, before the cut}}
  train.accumulate %x, @m : tensor<4xf32>
  %0 = train.window_sum %x : tensor<4xf32>
  // expected-error @+1 {{'train.load' op reads @m after the cut, but 'train.accumulate' writes it before the cut: in @apply_step the load would read what the last micro-step wrote, not a value of the whole window}}
  %m = train.load @m : tensor<4xf32>
  %1 = nn.add %0, %m : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  train.store %1, @p : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// A load before the cut is recomputed in @apply_step where its value is
// first used; after the update of its global it would read the new value.
train.global param @w : tensor<4xf32>
train.global buffer @d : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<4xf32> attributes {train.entry = "step"} {
  // expected-error @+1 {{'train.load' op reads @w before the cut, and its value is used after 'train.store' updates it: cleave-split-step would rematerialise the load in @apply_step after that write, where it reads the updated value instead of the one the step read; use the value before the write}}
  %w = train.load @w : tensor<4xf32>
  %0 = train.window_sum %x {targets = [@w]} : tensor<4xf32>
  // expected-note @+1 {{written here, after the cut}}
  train.store %0, @w : tensor<4xf32>
  // expected-note @+1 {{used here, after the write}}
  %1 = nn.sub %0, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  train.store %1, @d : tensor<4xf32>
  return %x : tensor<4xf32>
}

//--- writes.mlir

// Writes the split keeps in order: a global written and read again before
// the cut stays in @micro_step (a dropout seed advanced per micro-batch); a
// load before the cut whose value is first used before the update after the
// cut is recomputed before that update, and later users share it.
// WRITES-LABEL: func.func @micro_step(
// WRITES: train.load @train.rng
// WRITES: train.store %{{.+}}, @train.rng
// WRITES: %[[AGAIN:.+]] = train.load @train.rng
// WRITES: nn.dropout %{{.+}}, %[[AGAIN]]
// WRITES-LABEL: func.func @apply_step(
// WRITES: %[[W:.+]] = train.load @w :
// WRITES: %[[NW:.+]] = nn.sub %[[W]], %{{.+}}
// WRITES: train.store %[[NW]], @w
// WRITES-NOT: train.load @w :
// WRITES: %[[D:.+]] = nn.sub %[[NW]], %[[W]]
// WRITES: train.store %[[D]], @d

train.global param @w : tensor<4xf32>
train.global buffer @d : tensor<4xf32>
train.global counter @train.rng : tensor<i64>
func.func @train_step(%x: tensor<4xf32> {train.input = "x"}) -> tensor<f32> attributes {train.entry = "step"} {
  %seed = train.load @train.rng : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %next = arith.addi %seed, %one : tensor<i64>
  train.store %next, @train.rng : tensor<i64>
  %again = train.load @train.rng : tensor<i64>
  // expected-warning @+1 {{dropout draws a new mask for each micro-batch, so the masks differ from one large batch}}
  %y = nn.dropout %x, %again {ratio = 0.5} : tensor<4xf32>, tensor<i64> -> tensor<4xf32>
  %l = nn.reduce_sum %y [] : tensor<4xf32> -> tensor<f32>
  %w = train.load @w : tensor<4xf32>
  %0 = train.window_sum %y {targets = [@w]} : tensor<4xf32>
  %nw = nn.sub %w, %0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  train.store %nw, @w : tensor<4xf32>
  %d = nn.sub %nw, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  train.store %d, @d : tensor<4xf32>
  return %l : tensor<f32>
}

//--- zero.mlir

// ZeRO-1 over 4 ranks, Adam with clipping. The optimizer state becomes this
// rank's shard of ceil(n / 4) elements: 3 of @w's 12, 1 of @b's 3.
// ZERO: module attributes {train.manifest = {accumulate = 1 : i64, ranks = 4 : i64, reduce = "mean", shard_optimizer_state = true, warnings = []}}
// ZERO: train.global state @w.exp_avg of @w shards 4 : tensor<3xf32>
// ZERO: train.global state @w.exp_avg_sq of @w shards 4 : tensor<3xf32>
// ZERO: train.global state @b.exp_avg of @b shards 4 : tensor<1xf32>
// ZERO: train.global state @b.exp_avg_sq of @b shards 4 : tensor<1xf32>
// ZERO: train.global accumulator @w.grad of @w : tensor<3x4xf32>

// The micro-step is unchanged: whole gradients, no communication.
// ZERO-LABEL: func.func @micro_step(
// ZERO-NOT: train.reduce_scatter
// ZERO-NOT: train.cross_rank_reduce
// ZERO: return

// One reduce-scatter of the gradient sums, one sum of the sample count.
// ZERO-LABEL: func.func @apply_step(
// ZERO: %[[SW:.+]] = train.load @w.grad : tensor<3x4xf32>
// ZERO: %[[SB:.+]] = train.load @b.grad : tensor<3xf32>
// ZERO: %[[SN:.+]] = train.load @train.samples : tensor<f32>
// ZERO: %[[G:.+]]:2 = train.reduce_scatter %[[SW]], %[[SB]] ranks 4 : tensor<3x4xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<1xf32>
// ZERO: %[[N:.+]] = train.cross_rank_reduce sum %[[SN]] : tensor<f32>
// ZERO: %[[GW:.+]] = nn.div %[[G]]#0, %[[N]] : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// ZERO: %[[GB:.+]] = nn.div %[[G]]#1, %[[N]] : tensor<1xf32>, tensor<f32> -> tensor<1xf32>
// Any nn op with the Elementwise trait runs on shards (a value clamp here).
// ZERO: %[[GWC:.+]] = nn.clamp %[[GW]], -1.000000e+00, 1.000000e+00 : tensor<3xf32>
// Clipping sums the shards' squared norms across ranks.
// ZERO: %[[C:.+]]:2, %{{.+}} = train.clip_by_global_norm %[[GWC]], %[[GB]] max_norm %{{.+}} {across_ranks} : tensor<3xf32>, tensor<1xf32>, tensor<f32>
// Each rank updates its slice of the parameter and its shard of the state.
// ZERO: %[[W:.+]] = train.load @w : tensor<3x4xf32>
// ZERO: %[[WS:.+]] = train.shard %[[W]] ranks 4 : tensor<3x4xf32> -> tensor<3xf32>
// ZERO: %[[M:.+]] = train.load @w.exp_avg : tensor<3xf32>
// ZERO: %[[V:.+]] = train.load @w.exp_avg_sq : tensor<3xf32>
// ZERO: %[[NW:.+]], %[[NM:.+]], %[[NV:.+]] = train.adam %[[WS]], %[[C]]#0, %[[M]], %[[V]] step {{.+}} : tensor<3xf32>, tensor<f32>
// ZERO: train.store %[[NM]], @w.exp_avg : tensor<3xf32>
// ZERO: train.store %[[NV]], @w.exp_avg_sq : tensor<3xf32>
// ZERO: %[[NB:.+]], %{{.+}}, %{{.+}} = train.adam %{{.+}}, %[[C]]#1, {{.+}} : tensor<1xf32>, tensor<f32>
// ZERO-NOT: train.store %[[NW]]
// One all-gather rebuilds the parameters, which are then stored whole.
// ZERO: %[[P:.+]]:2 = train.all_gather %[[NW]], %[[NB]] ranks 4 : tensor<3xf32>, tensor<1xf32> -> tensor<3x4xf32>, tensor<3xf32>
// ZERO: train.store %[[P]]#0, @w : tensor<3x4xf32>
// ZERO: train.store %[[P]]#1, @b : tensor<3xf32>
// ZERO: train.store %{{.+}}, @w.grad : tensor<3x4xf32>
// ZERO: return

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
train.global state @w.exp_avg of @w : tensor<3x4xf32>
train.global state @w.exp_avg_sq of @w : tensor<3x4xf32>
train.global param @b : tensor<3xf32> = #train.init<zeros>
train.global state @b.exp_avg of @b : tensor<3xf32>
train.global state @b.exp_avg_sq of @b : tensor<3xf32>
train.global counter @train.step : tensor<i64>
func.func @train_step(%x: tensor<8x4xf32> {train.input = "x"},
                      %weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-3 : f64},
                      %clip: tensor<f32> {train.hyper = "clip_norm", train.default = 1.0 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %b = train.load @b : tensor<3xf32>
  %y = nn.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %loss = nn.reduce_sum %y [] : tensor<8x3xf32> -> tensor<f32>
  %dw = nn.neg %w : tensor<3x4xf32>
  %db = nn.neg %b : tensor<3xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:3 = train.window_sum %dw, %db, %n {targets = [@w, @b, "samples"]} : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
  %gw = nn.div %s#0, %s#2 : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
  %gb = nn.div %s#1, %s#2 : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %gwc = nn.clamp %gw, -1.0, 1.0 : tensor<3x4xf32>
  %cg:2, %norm = train.clip_by_global_norm %gwc, %gb max_norm %clip : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
  %t = train.load @train.step : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %t1 = arith.addi %t, %one : tensor<i64>
  train.store %t1, @train.step : tensor<i64>
  %w2 = train.load @w : tensor<3x4xf32>
  %mw = train.load @w.exp_avg : tensor<3x4xf32>
  %vw = train.load @w.exp_avg_sq : tensor<3x4xf32>
  %nw, %nmw, %nvw = train.adam %w2, %cg#0, %mw, %vw step %t1 lr %lr betas %lr, %lr eps %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  train.store %nw, @w : tensor<3x4xf32>
  train.store %nmw, @w.exp_avg : tensor<3x4xf32>
  train.store %nvw, @w.exp_avg_sq : tensor<3x4xf32>
  %b2 = train.load @b : tensor<3xf32>
  %mb = train.load @b.exp_avg : tensor<3xf32>
  %vb = train.load @b.exp_avg_sq : tensor<3xf32>
  %nb, %nmb, %nvb = train.adam %b2, %cg#1, %mb, %vb step %t1 lr %lr betas %lr, %lr eps %lr weight_decay %lr : tensor<3xf32>, tensor<f32>
  train.store %nb, @b : tensor<3xf32>
  train.store %nmb, @b.exp_avg : tensor<3xf32>
  train.store %nvb, @b.exp_avg_sq : tensor<3xf32>
  return %loss : tensor<f32>
}

//--- zero-invalid.mlir

// What sharded optimizer state cannot do: ops that are not elementwise on a
// shard, broadcasting a shard, and reading a parameter after its update.

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
func.func @train_step(%weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-3 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:2 = train.window_sum %w, %n {targets = [@w, "samples"]} : tensor<3x4xf32>, tensor<f32>
  // expected-error @+1 {{'nn.transpose' op uses a shard of a gradient or optimizer state but is not elementwise; it cannot run on sharded optimizer state}}
  %t = nn.transpose %s#0 [1, 0] : tensor<3x4xf32> -> tensor<4x3xf32>
  return %n : tensor<f32>
}

// -----

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
train.global param @v : tensor<4xf32> = #train.init<zeros>
func.func @train_step(%weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-3 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:2 = train.window_sum %w, %n {targets = [@w, "samples"]} : tensor<3x4xf32>, tensor<f32>
  %v = train.load @v : tensor<4xf32>
  // expected-error @+1 {{'nn.mul' op combines a shard of 'tensor<3x4xf32>' with 'tensor<4xf32>'; only scalars broadcast against sharded values}}
  %g = nn.mul %s#0, %v : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  return %n : tensor<f32>
}

// -----

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
func.func @train_step(%weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-3 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:2 = train.window_sum %w, %n {targets = [@w, "samples"]} : tensor<3x4xf32>, tensor<f32>
  %w2 = train.sgd %w, %s#0 lr %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  train.store %w2, @w : tensor<3x4xf32>
  // expected-error @+1 {{'train.load' op reads @w after its sharded update; it is gathered at the end of the apply step}}
  %w3 = train.load @w : tensor<3x4xf32>
  %w4 = train.sgd %w3, %s#0 lr %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  return %n : tensor<f32>
}

// -----

// LAMB and LARS scale each update by norms of the whole parameter, which a
// rank holding a shard does not have.
train.global param @w : tensor<3x4xf32> = #train.init<zeros>
train.global state @w.exp_avg of @w : tensor<3x4xf32>
train.global state @w.exp_avg_sq of @w : tensor<3x4xf32>
train.global counter @train.step : tensor<i64>
func.func @train_step(%weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-3 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:2 = train.window_sum %w, %n {targets = [@w, "samples"]} : tensor<3x4xf32>, tensor<f32>
  %t = train.load @train.step : tensor<i64>
  %m = train.load @w.exp_avg : tensor<3x4xf32>
  %v = train.load @w.exp_avg_sq : tensor<3x4xf32>
  // expected-error @+1 {{'train.lamb' op needs the norms of whole parameters (the layer-wise trust ratio); the lamb optimizer cannot run with shard-optimizer-state (ZeRO-1)}}
  %w2, %m2, %v2 = train.lamb %w, %s#0, %m, %v step %t lr %lr betas %lr, %lr eps %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  return %n : tensor<f32>
}

// -----

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
train.global state @w.momentum_buffer of @w : tensor<3x4xf32>
func.func @train_step(%weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-3 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:2 = train.window_sum %w, %n {targets = [@w, "samples"]} : tensor<3x4xf32>, tensor<f32>
  %b = train.load @w.momentum_buffer : tensor<3x4xf32>
  // expected-error @+1 {{'train.lars' op needs the norms of whole parameters (the layer-wise trust ratio); the lars optimizer cannot run with shard-optimizer-state (ZeRO-1)}}
  %w2, %b2 = train.lars %w, %s#0, %b lr %lr momentum %lr eta %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  return %n : tensor<f32>
}

//--- checked.mlir

// A window checked for NaN and infinity, as cleave-build-train-step builds
// it with check-finite. With reduce=mean every rank checks the same reduced
// sums: no communication.
// CHECKED-MEAN-LABEL: func.func @apply_step(
// CHECKED-MEAN: %[[R:.+]]:3 = train.cross_rank_reduce sum
// CHECKED-MEAN: train.check_finite %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<3x4xf32>, tensor<f32>, tensor<f32>
// CHECKED-MEAN-NOT: across_ranks

// Under Adasum each rank checks its own window, and the verdicts are
// combined across ranks: a window that is not finite on one rank is skipped
// by all (its deltas are then zero on every rank).
// CHECKED-ADASUM-LABEL: func.func @apply_step(
// CHECKED-ADASUM: %[[SW:.+]] = train.load @w.grad
// CHECKED-ADASUM: %[[SL:.+]] = train.load @train.loss
// CHECKED-ADASUM: %[[SN:.+]] = train.load @train.samples
// CHECKED-ADASUM-NOT: train.cross_rank_reduce sum
// CHECKED-ADASUM: %[[FIRST:.+]] = train.check_finite %[[SW]], %[[SL]], %[[SN]] {across_ranks} : tensor<3x4xf32>, tensor<f32>, tensor<f32>
// CHECKED-ADASUM: train.store %[[FIRST]], @train.nonfinite
// CHECKED-ADASUM: %[[KEEP:.+]] = nn.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
// CHECKED-ADASUM: %[[DW:.+]] = nn.sub %[[KEEP]], %{{.+}}
// CHECKED-ADASUM: train.cross_rank_reduce adasum %[[DW]]

// Under ZeRO-1 each rank checks its shards of the gradient sums (and the
// sums every rank holds whole), and the verdicts are combined across ranks;
// the guarded updates select on the shards.
// CHECKED-ZERO-LABEL: func.func @apply_step(
// CHECKED-ZERO: %[[G:.+]] = train.reduce_scatter %{{.+}} ranks 4 : tensor<3x4xf32> -> tensor<3xf32>
// CHECKED-ZERO: %[[R:.+]]:2 = train.cross_rank_reduce sum %{{.+}}, %{{.+}} : tensor<f32>, tensor<f32>
// CHECKED-ZERO: %[[FIRST:.+]] = train.check_finite %[[G]], %[[R]]#0, %[[R]]#1 {across_ranks} : tensor<3xf32>, tensor<f32>, tensor<f32>
// CHECKED-ZERO: train.store %[[FIRST]], @train.nonfinite
// CHECKED-ZERO: %[[WS:.+]] = train.shard %{{.+}} ranks 4 : tensor<3x4xf32> -> tensor<3xf32>
// CHECKED-ZERO: %[[BUF:.+]] = train.load @w.momentum_buffer : tensor<3xf32>
// CHECKED-ZERO: %[[NW:.+]], %[[NBUF:.+]] = train.momentum %[[WS]], %{{.+}}, %[[BUF]]
// CHECKED-ZERO: %[[KEEP:.+]] = nn.where %{{.+}}, %[[NW]], %[[WS]] : tensor<f32>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECKED-ZERO: %[[KEEPBUF:.+]] = nn.where %{{.+}}, %[[NBUF]], %[[BUF]] : tensor<f32>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECKED-ZERO: train.store %[[KEEPBUF]], @w.momentum_buffer : tensor<3xf32>
// CHECKED-ZERO: %[[P:.+]] = train.all_gather %[[KEEP]] ranks 4 : tensor<3xf32> -> tensor<3x4xf32>
// CHECKED-ZERO: train.store %[[P]], @w : tensor<3x4xf32>

train.global param @w : tensor<3x4xf32> = #train.init<zeros>
train.global state @w.momentum_buffer of @w : tensor<3x4xf32>
train.global counter @train.step : tensor<i64>
train.global counter @train.nonfinite : tensor<i64>
func.func @train_step(%x: tensor<8x4xf32> {train.input = "x"},
                      %weights: tensor<8xf32> {train.input = "weights"},
                      %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-2 : f64})
    -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"} {
  %w = train.load @w : tensor<3x4xf32>
  %loss = nn.reduce_sum %x [] : tensor<8x4xf32> -> tensor<f32>
  %dw = nn.neg %w : tensor<3x4xf32>
  %n = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  %s:3 = train.window_sum %dw, %loss, %n {targets = [@w, "loss", "samples"]} : tensor<3x4xf32>, tensor<f32>, tensor<f32>
  %g = nn.div %s#0, %s#2 : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
  %first = train.check_finite %s#0, %s#1, %s#2 : tensor<3x4xf32>, tensor<f32>, tensor<f32>
  train.store %first, @train.nonfinite : tensor<i64>
  %zero = arith.constant dense<0.000000e+00> : tensor<f32>
  %firstf = arith.sitofp %first : tensor<i64> to tensor<f32>
  %ok = nn.compare <eq>, %firstf, %zero {dtype = f32} : tensor<f32>, tensor<f32> -> tensor<f32>
  %w2 = train.load @w : tensor<3x4xf32>
  %buf = train.load @w.momentum_buffer : tensor<3x4xf32>
  %nw, %nbuf = train.momentum %w2, %g, %buf lr %lr momentum %lr weight_decay %lr : tensor<3x4xf32>, tensor<f32>
  %kw = nn.where %ok, %nw, %w2 : tensor<f32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  train.store %kw, @w : tensor<3x4xf32>
  %kbuf = nn.where %ok, %nbuf, %buf : tensor<f32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  train.store %kbuf, @w.momentum_buffer : tensor<3x4xf32>
  return %loss : tensor<f32>
}

// RUN: cleave-opt %s --split-input-file --verify-diagnostics

// The train.* attributes the dialect verifies: every one where it belongs,
// then one violation per case.

module attributes {train.manifest = {accumulate = 4 : i64, ranks = 2 : i64, reduce = "mean", reduce_every_micro_step = true, shard_optimizer_state = false, warnings = [{loc = "loc(unknown)", message = "dropout draws a new mask for each micro-batch", op = "nn.dropout"}]}} {
  func.func @loss(%x: tensor<4x2xf32> {train.input = "x"},
                  %labels: tensor<4xi64> {train.input = "labels", train.index_bound = 10 : i64},
                  %lr: tensor<f32> {train.hyper = "lr", train.default = 1.0e-2 : f64},
                  %steps: tensor<i64> {train.hyper = "steps", train.default = 3 : i64},
                  %w: tensor<2x2xf32> {train.param = "w", train.init = #train.init<kaiming_uniform>},
                  %m: tensor<2xf32> {train.buffer = "m", train.init = dense<[0.0, 1.0]> : tensor<2xf32>},
                  %seed: tensor<i64> {train.rng})
      -> (tensor<f32> {train.output = "loss"}, tensor<2x2xf32> {train.grad_of = "w"}, tensor<2xf32> {train.buffer = "m"})
      attributes {train.entry = "eval_step", train.gradient_of = @model} {
    %0 = arith.constant dense<0.0> : tensor<f32>
    return %0, %w, %m : tensor<f32>, tensor<2x2xf32>, tensor<2xf32>
  }
}

// -----

// An unsigned data input and output (ONNX's UINT8 pixels, say).
func.func @unsigned(%x: tensor<4x2xi8> {train.input = "x", train.unsigned})
    -> (tensor<4x2xi8> {train.output = "y", train.unsigned}) {
  return %x : tensor<4x2xi8>
}

// -----

// expected-error @+1 {{argument #0: 'train.unsigned' marks a data input; the argument has no 'train.input'}}
func.func @f(%x: tensor<4xi8> {train.unsigned}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.unsigned' marks integer inputs, the argument is 'tensor<4xf16>'}}
func.func @f(%x: tensor<4xf16> {train.input = "x", train.unsigned}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.unsigned' must be a unit attribute, got true}}
func.func @f(%x: tensor<4xi8> {train.input = "x", train.unsigned = true}) {
  return
}

// -----

// expected-error @+1 {{result #0: 'train.unsigned' marks integer outputs, the result is 'tensor<4xf32>'}}
func.func @f(%x: tensor<4xf32> {train.input = "x"}) -> (tensor<4xf32> {train.unsigned}) {
  return %x : tensor<4xf32>
}

// -----

// A traced graph module names its entries freely.
module attributes {train.manifest = {kind = "graph"}} {
  func.func @graph() attributes {train.entry = "graph"} {
    return
  }
}

// -----

// expected-error @+1 {{unknown attribute 'train.entries'}}
func.func @f() attributes {train.entries = "step"} {
  return
}

// -----

// expected-error @+1 {{'train.input' belongs on a function argument or result, not on an operation}}
func.func @f() attributes {train.input = "x"} {
  return
}

// -----

// expected-error @+1 {{'train.entry' must be an entry name (letters, digits and '_', not starting with a digit), got 1 : i64}}
func.func @f() attributes {train.entry = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'train.entry' must be an entry name (letters, digits and '_', not starting with a digit), got "micro-step"}}
func.func @f() attributes {train.entry = "micro-step"} {
  return
}

// -----

// expected-error @+1 {{'train.entry' is a function attribute}}
module attributes {train.entry = "step"} {
}

// -----

module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  // expected-error @+1 {{'train.entry' of a training module must be step, micro_step, apply_step or eval_step, got "train_step"}}
  func.func @f() attributes {train.entry = "train_step"} {
    return
  }
}

// -----

// expected-error @+1 {{'train.gradient_of' must name a function, got "model"}}
func.func @f() attributes {train.gradient_of = "model"} {
  return
}

// -----

// expected-error @+1 {{'train.manifest' is a module attribute}}
func.func @f() attributes {train.manifest = {}} {
  return
}

// -----

// The micro-batch of a model without data inputs.
module attributes {train.micro_batch = 8 : i64} {
}

// -----

// expected-error @+1 {{'train.micro_batch' must be a positive integer, got 0 : i64}}
module attributes {train.micro_batch = 0 : i64} {
}

// -----

// expected-error @+1 {{'train.micro_batch' is a module attribute}}
func.func @f() attributes {train.micro_batch = 2 : i64} {
  return
}

// -----

// expected-error @+1 {{'train.manifest' must be a dictionary, got "graph"}}
module attributes {train.manifest = "graph"} {
}

// -----

// expected-error @+1 {{unknown 'train.manifest' entry 'micro_batch'; expected kind, accumulate, window_samples, reduce, ranks, shard_optimizer_state, reduce_every_micro_step or warnings}}
module attributes {train.manifest = {micro_batch = 8 : i64}} {
}

// -----

// expected-error @+1 {{'train.manifest' entry 'kind' must be "training", "inference" or "graph", got "step"}}
module attributes {train.manifest = {kind = "step"}} {
}

// -----

// expected-error @+1 {{'train.manifest' entry 'accumulate' must be a positive integer, got 0 : i64}}
module attributes {train.manifest = {accumulate = 0 : i64}} {
}

// -----

// expected-error @+1 {{'train.manifest' entry 'reduce' must be "none", "sum", "mean" or "adasum", got "ring"}}
module attributes {train.manifest = {reduce = "ring"}} {
}

// -----

// expected-error @+1 {{'train.manifest' entry 'shard_optimizer_state' must be a bool, got 1 : i64}}
module attributes {train.manifest = {shard_optimizer_state = 1 : i64}} {
}

// -----

// expected-error @+1 {{'train.manifest' entry 'warnings' must be an array of dictionaries, got ["dropout"]}}
module attributes {train.manifest = {warnings = ["dropout"]}} {
}

// -----

// The manifest's device and GPU arches are WriteManifestPass's own options,
// not something an earlier pass records.
// expected-error @+1 {{unknown 'train.manifest' entry 'device'; expected kind}}
module attributes {train.manifest = {device = "cuda"}} {
}

// -----

// A graph artifact has no accumulation window.
// expected-error @+1 {{'train.manifest' entry 'accumulate' is not allowed for graph}}
module attributes {train.manifest = {accumulate = 2 : i64, kind = "graph"}} {
}

// -----

// A warning is read as the runtime reads it: every field present.
// expected-error @+1 {{'train.manifest' entry 'warnings[0].loc' is missing}}
module attributes {train.manifest = {warnings = [{message = "m", op = "nn.dropout"}]}} {
}

// -----

// expected-error @+1 {{'train.manifest' entry 'warnings[0].op' must be a non-empty string, got ""}}
module attributes {train.manifest = {warnings = [{loc = "l", message = "m", op = ""}]}} {
}

// -----

// expected-error @+1 {{argument #0: 'train.input' must be a non-empty string, got ""}}
func.func @f(%x: tensor<4xf32> {train.input = ""}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.rng' must be a unit attribute, got "seed"}}
func.func @f(%x: tensor<i64> {train.rng = "seed"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.hyper' and 'train.input' both say what the argument is; it has one role}}
func.func @f(%x: tensor<f32> {train.input = "x", train.hyper = "x"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.index_bound' must be a positive integer, got 0 : i64}}
func.func @f(%x: tensor<4xi64> {train.input = "labels", train.index_bound = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.index_bound' bounds a data input; the argument has no 'train.input'}}
func.func @f(%x: tensor<4xi64> {train.index_bound = 10 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.index_bound' bounds integer inputs, the argument is 'tensor<4xf32>'}}
func.func @f(%x: tensor<4xf32> {train.input = "x", train.index_bound = 10 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.default' must be a number, got "0.1"}}
func.func @f(%lr: tensor<f32> {train.hyper = "lr", train.default = "0.1"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.default' is a hyperparameter's default; the argument has no 'train.hyper'}}
func.func @f(%lr: tensor<f32> {train.input = "lr", train.default = 1.0 : f64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.init' must be a #train.init or an elements attribute, got "zeros"}}
func.func @f(%w: tensor<4xf32> {train.param = "w", train.init = "zeros"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.init' has type 'tensor<3xf32>', the argument is 'tensor<4xf32>'}}
func.func @f(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<3xf32>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.init' initialises a global; the argument has neither 'train.param' nor 'train.buffer'}}
func.func @f(%w: tensor<4xf32> {train.input = "w", train.init = #train.init<zeros>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.output' belongs on a function result}}
func.func @f(%x: tensor<4xf32> {train.output = "x"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'train.label' is not a train argument attribute}}
func.func @f(%x: tensor<4xf32> {train.label = "x"}) {
  return
}

// -----

// expected-error @+1 {{result #0: 'train.input' belongs on a function argument}}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32> {train.input = "x"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'train.weight' is not a train result attribute}}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32> {train.weight = "x"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'train.output' must be a non-empty string, got 1 : i64}}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32> {train.output = 1 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'train.grad_of' names no argument of the function with 'train.param = "b"'}}
func.func @f(%w: tensor<4xf32> {train.param = "w"}) -> (tensor<4xf32> {train.grad_of = "b"}) {
  return %w : tensor<4xf32>
}

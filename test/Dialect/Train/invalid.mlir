// RUN: cleave-opt %s --split-input-file --verify-diagnostics

// Every constraint of the train ops and of #train.init, one violation per
// case.

// expected-error @+1 {{'train.global' op a counter must be tensor<i64>, got 'tensor<f32>'}}
train.global counter @c : tensor<f32>

// -----

// expected-error @+1 {{'train.global' op a counter must be tensor<i64>, got 'tensor<2xi64>'}}
train.global counter @c : tensor<2xi64>

// -----

// expected-error @+1 {{'train.global' op a param must have a floating-point type, got 'tensor<4xi32>'}}
train.global param @w : tensor<4xi32>

// -----

// expected-error @+1 {{'train.global' op globals need a static shape, got 'tensor<?x4xf32>'}}
train.global param @w : tensor<?x4xf32>

// -----

// expected-error @+1 {{'train.global' op initial value has type 'tensor<3xf32>', expected 'tensor<4xf32>'}}
train.global param @w : tensor<4xf32> = dense<1.0> : tensor<3xf32>

// -----

// expected-error @+1 {{'train.global' op initial value must be a #train.init or an elements attribute}}
train.global param @w : tensor<4xf32> = 1.0 : f32

// -----

// expected-error @+1 {{expected one of [param, buffer, accumulator, state, counter] for what a global holds, got: weight}}
train.global weight @w : tensor<4xf32>

// -----

train.global param @w : tensor<4xf32>
// expected-error @+1 {{'train.global' op only accumulators and optimizer state belong to a parameter ('of'), not a buffer}}
train.global buffer @b of @w : tensor<4xf32>

// -----

train.global buffer @b : tensor<4xf32>
// expected-error @+1 {{'train.global' op 'of' @b must name a param, not a buffer}}
train.global accumulator @b.grad of @b : tensor<4xf32>

// -----

// expected-error @+1 {{'train.global' op 'of' @w does not name a train.global}}
train.global state @w.exp_avg of @w : tensor<4xf32>

// -----

func.func private @w()
// expected-error @+1 {{'train.global' op 'of' @w does not name a train.global}}
train.global state @w.exp_avg of @w : tensor<4xf32>

// -----

train.global param @w : tensor<4xf32>
// expected-error @+1 {{'train.global' op 'of' @w has type 'tensor<4xf32>', expected 'tensor<4xf64>'}}
train.global accumulator @w.grad of @w : tensor<4xf64>

// -----

// expected-error @+1 {{initializer 'zeros' takes 0 parameter(s), got 1}}
train.global param @w : tensor<4xf32> = #train.init<zeros, 1.0>

// -----

// expected-error @+1 {{initializer 'kaiming_uniform' takes 0 parameter(s), got 1}}
train.global param @w : tensor<4xf32> = #train.init<kaiming_uniform, 5.0>

// -----

// expected-error @+1 {{initializer 'constant' takes 1 parameter(s), got 0}}
train.global param @w : tensor<4xf32> = #train.init<constant>

// -----

// expected-error @+1 {{initializer 'fan_in_uniform' takes 1 parameter(s), got 2}}
train.global param @w : tensor<4xf32> = #train.init<fan_in_uniform, 4.0, 5.0>

// -----

// expected-error @+1 {{initializer 'uniform' takes 2 parameter(s), got 1}}
train.global param @w : tensor<4xf32> = #train.init<uniform, 1.0>

// -----

// expected-error @+1 {{initializer 'normal' takes 2 parameter(s), got 3}}
train.global param @w : tensor<4xf32> = #train.init<normal, 0.0, 1.0, 2.0>

// -----

// expected-error @+1 {{uniform bounds must satisfy lo <= hi}}
train.global param @w : tensor<4xf32> = #train.init<uniform, 1.0, -1.0>

// -----

// expected-error @+1 {{normal std must be >= 0}}
train.global param @w : tensor<4xf32> = #train.init<normal, 0.0, -0.5>

// -----

// expected-error @+1 {{fan_in must be positive}}
train.global param @w : tensor<4xf32> = #train.init<fan_in_uniform, 0.0>

// -----

// expected-error @+1 {{unknown initializer 'xavier'}}
train.global param @w : tensor<4xf32> = #train.init<xavier>

// -----

// expected-error @+2 {{unexpected decimal integer literal for a floating point value}}
// expected-note @+1 {{add a trailing dot to make the literal a float}}
train.global param @w : tensor<4xf32> = #train.init<constant, 2>

// -----

func.func @load_unknown() {
  // expected-error @+1 {{'train.load' op refers to @nope, which is not a train.global}}
  %0 = train.load @nope : tensor<4xf32>
  return
}

// -----

func.func @load_function() {
  // expected-error @+1 {{'train.load' op refers to @load_function, which is not a train.global}}
  %0 = train.load @load_function : tensor<4xf32>
  return
}

// -----

train.global param @w : tensor<4xf32>
func.func @load_type_mismatch() {
  // expected-error @+1 {{'train.load' op uses type 'tensor<4xf64>' but @w has type 'tensor<4xf32>'}}
  %0 = train.load @w : tensor<4xf64>
  return
}

// -----

train.global param @w : tensor<4xf32>
func.func @store_type_mismatch(%v: tensor<5xf32>) {
  // expected-error @+1 {{'train.store' op uses type 'tensor<5xf32>' but @w has type 'tensor<4xf32>'}}
  train.store %v, @w : tensor<5xf32>
  return
}

// -----

func.func @store_unknown(%v: tensor<4xf32>) {
  // expected-error @+1 {{'train.store' op refers to @nope, which is not a train.global}}
  train.store %v, @nope : tensor<4xf32>
  return
}

// -----

train.global param @w : tensor<4xf32>
func.func @accumulate_into_param(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.accumulate' op accumulates into @w, which is a param, not an accumulator}}
  train.accumulate %g, @w : tensor<4xf32>
  return
}

// -----

train.global param @w : tensor<4xf32>
train.global accumulator @w.grad of @w : tensor<4xf32>
func.func @accumulate_type_mismatch(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{'train.accumulate' op uses type 'tensor<2x2xf32>' but @w.grad has type 'tensor<4xf32>'}}
  train.accumulate %g, @w.grad : tensor<2x2xf32>
  return
}

// -----

func.func @accumulate_unknown(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.accumulate' op refers to @nope, which is not a train.global}}
  train.accumulate %g, @nope : tensor<4xf32>
  return
}

// -----

train.global counter @c : tensor<i64>
func.func @accumulate_integer(%g: tensor<i64>) {
  // expected-error @+1 {{'train.accumulate' op operand #0 must be ranked tensor of 32-bit float or 64-bit float values, but got 'tensor<i64>'}}
  train.accumulate %g, @c : tensor<i64>
  return
}

// -----

train.global param @w : tensor<4xf32>
func.func @window_sum_targets_count(%g: tensor<4xf32>, %n: tensor<f32>) {
  // expected-error @+1 {{'train.window_sum' op has 1 targets for 2 values}}
  %0:2 = train.window_sum %g, %n {targets = [@w]} : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @window_sum_target_kind(%n: tensor<f32>) {
  // expected-error @+1 {{'train.window_sum' op targets must be parameter symbols or strings, got 1 : i64}}
  %0 = train.window_sum %n {targets = [1]} : tensor<f32>
  return
}

// -----

train.global buffer @b : tensor<4xf32>
func.func @window_sum_target_not_param(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.window_sum' op target #0 @b must name a param, not a buffer}}
  %0 = train.window_sum %g {targets = [@b]} : tensor<4xf32>
  return
}

// -----

train.global param @w : tensor<4xf32>
func.func @window_sum_target_type(%n: tensor<f32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'train.window_sum' op target #1 @w has type 'tensor<4xf32>', expected 'tensor<3xf32>'}}
  %0:2 = train.window_sum %n, %g {targets = ["samples", @w]} : tensor<f32>, tensor<3xf32>
  return
}

// -----

func.func @window_sum_target_unknown(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.window_sum' op target #0 @w does not name a train.global}}
  %0 = train.window_sum %g {targets = [@w]} : tensor<4xf32>
  return
}

// -----

func.func @window_sum_result_types(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.window_sum' op failed to verify that all of {values, results} have same type}}
  %0 = "train.window_sum"(%g) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @sgd_hyper_element_type(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'train.sgd' op hyperparameters have element type 'f64', expected 'f32' as the parameter}}
  %0 = train.sgd %p, %p lr %lr weight_decay %lr : tensor<4xf32>, tensor<f64>
  return
}

// -----

func.func @sgd_hyper_not_scalar(%p: tensor<4xf32>, %lr: tensor<1xf32>) {
  // expected-error @+1 {{'train.sgd' op operand #2 must be 0D tensor of 32-bit float or 64-bit float values, but got 'tensor<1xf32>'}}
  %0 = train.sgd %p, %p lr %lr weight_decay %lr : tensor<4xf32>, tensor<1xf32>
  return
}

// -----

func.func @sgd_grad_type(%p: tensor<4xf32>, %g: tensor<5xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'train.sgd' op failed to verify that all of {param, grad, new_param} have same type}}
  %0 = "train.sgd"(%p, %g, %lr, %lr) : (tensor<4xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @momentum_hyper_element_type(%p: tensor<4xf64>, %h: tensor<f32>) {
  // expected-error @+1 {{'train.momentum' op hyperparameters have element type 'f32', expected 'f64' as the parameter}}
  %0:2 = train.momentum %p, %p, %p lr %h momentum %h weight_decay %h : tensor<4xf64>, tensor<f32>
  return
}

// -----

func.func @momentum_buffer_type(%p: tensor<4xf32>, %b: tensor<4xf64>, %h: tensor<f32>) {
  // expected-error @+1 {{'train.momentum' op failed to verify that all of {param, grad, buf, new_param, new_buf} have same type}}
  %0:2 = "train.momentum"(%p, %p, %b, %h, %h, %h) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_hyper_element_type(%p: tensor<4xf32>, %t: tensor<i64>, %h: tensor<f64>) {
  // expected-error @+1 {{'train.adam' op hyperparameters have element type 'f64', expected 'f32' as the parameter}}
  %0:3 = train.adam %p, %p, %p, %p step %t lr %h betas %h, %h eps %h weight_decay %h : tensor<4xf32>, tensor<f64>
  return
}

// -----

func.func @rmsprop_hyper_element_type(%p: tensor<4xf32>, %h: tensor<f64>) {
  // expected-error @+1 {{'train.rmsprop' op hyperparameters have element type 'f64', expected 'f32' as the parameter}}
  %0:2 = train.rmsprop %p, %p, %p lr %h alpha %h eps %h weight_decay %h : tensor<4xf32>, tensor<f64>
  return
}

// -----

func.func @adagrad_sum_type(%p: tensor<4xf32>, %s: tensor<3xf32>, %t: tensor<i64>, %h: tensor<f32>) {
  // expected-error @+1 {{'train.adagrad' op failed to verify that all of {param, grad, sum, new_param, new_sum} have same type}}
  %0:2 = "train.adagrad"(%p, %p, %s, %t, %h, %h, %h, %h) : (tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<i64>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lamb_step_type(%p: tensor<4xf32>, %t: tensor<f32>, %h: tensor<f32>) {
  // expected-error @+1 {{'train.lamb' op operand #4 must be 0D tensor of 64-bit signless integer values, but got 'tensor<f32>'}}
  %0:3 = "train.lamb"(%p, %p, %p, %p, %t, %h, %h, %h, %h, %h) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lars_hyper_element_type(%p: tensor<4xf64>, %h: tensor<f32>) {
  // expected-error @+1 {{'train.lars' op hyperparameters have element type 'f32', expected 'f64' as the parameter}}
  %0:2 = train.lars %p, %p, %p lr %h momentum %h eta %h weight_decay %h : tensor<4xf64>, tensor<f32>
  return
}

// -----

func.func @adam_step_type(%p: tensor<4xf32>, %t: tensor<f32>, %h: tensor<f32>) {
  // expected-error @+1 {{'train.adam' op operand #4 must be 0D tensor of 64-bit signless integer values, but got 'tensor<f32>'}}
  %0:3 = "train.adam"(%p, %p, %p, %p, %t, %h, %h, %h, %h, %h) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @clip_element_type(%g: tensor<4xf32>, %c: tensor<f64>) {
  // expected-error @+1 {{'train.clip_by_global_norm' op hyperparameters have element type 'f64', expected 'f32' as the parameter}}
  %0:2 = train.clip_by_global_norm %g max_norm %c : tensor<4xf32>, tensor<f64>
  return
}

// -----

func.func @clip_no_grads(%c: tensor<f32>) {
  // expected-error @+1 {{'train.clip_by_global_norm' op needs at least one gradient}}
  %0 = "train.clip_by_global_norm"(%c) : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @check_finite_nothing() {
  // expected-error @+1 {{'train.check_finite' op needs at least one value}}
  %0 = "train.check_finite"() : () -> tensor<i64>
  return
}

// -----

func.func @check_finite_result(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.check_finite' op result #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<f32>'}}
  %0 = "train.check_finite"(%g) : (tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @clip_missing_type(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{expected at least two types, got 1}}
  %0:2 = train.clip_by_global_norm %g max_norm %c : tensor<4xf32>
  return
}

// -----

func.func @cross_rank_reduce_kind(%g: tensor<4xf32>) {
  // expected-error @+1 {{expected one of [sum, mean, adasum] for cross-rank reduction, got: max}}
  %0 = train.cross_rank_reduce max %g : tensor<4xf32>
  return
}


// -----

func.func @cross_rank_reduce_integer(%g: tensor<4xi32>) {
  // expected-error @+1 {{'train.cross_rank_reduce' op operand #0 must be variadic of ranked tensor of 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = train.cross_rank_reduce sum %g : tensor<4xi32>
  return
}

// -----

train.global param @w : tensor<10x4xf32>
// expected-error @+1 {{'train.global' op has 'shards', which only optimizer state of a parameter ('of') may have}}
train.global accumulator @w.grad of @w shards 4 : tensor<10xf32>

// -----

// expected-error @+1 {{'train.global' op has 'shards', which only optimizer state of a parameter ('of') may have}}
train.global state @scale shards 2 : tensor<1xf32>

// -----

train.global param @w : tensor<10x4xf32>
// expected-error @+1 {{'train.global' op a shard of @w ('tensor<10x4xf32>') over 4 ranks has type 'tensor<10xf32>', not 'tensor<10x4xf32>'}}
train.global state @w.exp_avg of @w shards 4 : tensor<10x4xf32>

// -----

train.global param @w : tensor<10x4xf32>
// expected-error @+1 {{'train.global' op attribute 'shards' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
train.global state @w.exp_avg of @w shards 0 : tensor<10xf32>

// -----

func.func @reduce_scatter_shard_type(%g: tensor<10x4xf32>) {
  // expected-error @+1 {{'train.reduce_scatter' op value #0: a shard of 'tensor<10x4xf32>' over 4 ranks is 'tensor<10xf32>', got 'tensor<11xf32>'}}
  %0 = train.reduce_scatter %g ranks 4 : tensor<10x4xf32> -> tensor<11xf32>
  return
}

// -----

func.func @reduce_scatter_counts(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.reduce_scatter' op has 2 operands and 1 results; expected one result per operand}}
  %0 = "train.reduce_scatter"(%g, %g) <{ranks = 2 : i64}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reduce_scatter_empty() {
  // expected-error @+1 {{'train.reduce_scatter' op needs at least one value}}
  "train.reduce_scatter"() <{ranks = 2 : i64}> : () -> ()
  return
}

// -----

func.func @reduce_scatter_ranks(%g: tensor<4xf32>) {
  // expected-error @+1 {{'train.reduce_scatter' op attribute 'ranks' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %0 = train.reduce_scatter %g ranks 0 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @all_gather_shard_type(%s: tensor<2xf32>) {
  // expected-error @+1 {{'train.all_gather' op result #0: a shard of 'tensor<10xf32>' over 4 ranks is 'tensor<3xf32>', got 'tensor<2xf32>'}}
  %0 = train.all_gather %s ranks 4 : tensor<2xf32> -> tensor<10xf32>
  return
}

// -----

func.func @shard_type(%w: tensor<10xf32>) {
  // expected-error @+1 {{'train.shard' op input: a shard of 'tensor<10xf32>' over 3 ranks is 'tensor<4xf32>', got 'tensor<3xf32>'}}
  %0 = train.shard %w ranks 3 : tensor<10xf32> -> tensor<3xf32>
  return
}

// -----

func.func @shard_element_type(%w: tensor<10xf32>) {
  // expected-error @+1 {{'train.shard' op input: a shard of 'tensor<10xf32>' over 2 ranks is 'tensor<5xf32>', got 'tensor<5xf64>'}}
  %0 = train.shard %w ranks 2 : tensor<10xf32> -> tensor<5xf64>
  return
}

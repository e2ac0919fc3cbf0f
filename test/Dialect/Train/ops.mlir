// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of every train op, every global kind and every #train.init form.

// The kind is a bare keyword after the op name, with a single space.
// CHECK-LABEL: module
// CHECK: train.global param @w : tensor<10x4xf32> = #train.init<kaiming_uniform>{{$}}
train.global param @w : tensor<10x4xf32> = #train.init<kaiming_uniform>
// CHECK: train.global param @b : tensor<10xf32> = #train.init<fan_in_uniform, 4.000000e+00>{{$}}
train.global param @b : tensor<10xf32> = #train.init<fan_in_uniform, 4.0>
// CHECK: train.global param @z : tensor<3xf64> = #train.init<zeros>{{$}}
train.global param @z : tensor<3xf64> = #train.init<zeros>
// CHECK: train.global param @o : tensor<3xf32> = #train.init<ones>{{$}}
train.global param @o : tensor<3xf32> = #train.init<ones>
// CHECK: train.global param @c : tensor<3xf32> = #train.init<constant, -2.500000e-01>{{$}}
train.global param @c : tensor<3xf32> = #train.init<constant, -0.25>
// CHECK: train.global param @u : tensor<3xf32> = #train.init<uniform, -1.000000e-01, 1.000000e-01>{{$}}
train.global param @u : tensor<3xf32> = #train.init<uniform, -0.1, 0.1>
// CHECK: train.global param @n : tensor<3xf32> = #train.init<normal, 0.000000e+00, 2.000000e-02>{{$}}
train.global param @n : tensor<3xf32> = #train.init<normal, 0.0, 0.02>
// CHECK: train.global param @e : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>{{$}}
train.global param @e : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
// CHECK: train.global buffer @running_mean : tensor<10xf32>{{$}}
train.global buffer @running_mean : tensor<10xf32>
// CHECK: train.global buffer @running_var : tensor<10xf32> = #train.init<ones>{{$}}
train.global buffer @running_var : tensor<10xf32> = #train.init<ones>
// CHECK: train.global accumulator @w.grad of @w : tensor<10x4xf32>{{$}}
train.global accumulator @w.grad of @w : tensor<10x4xf32>
// CHECK: train.global accumulator @train.samples : tensor<f32>{{$}}
train.global accumulator @train.samples : tensor<f32>
// CHECK: train.global state @w.exp_avg of @w : tensor<10x4xf32>{{$}}
train.global state @w.exp_avg of @w : tensor<10x4xf32>
// CHECK: train.global state @lr_scale : tensor<f32> = #train.init<constant, 1.000000e+00>{{$}}
train.global state @lr_scale : tensor<f32> = #train.init<constant, 1.0>
// CHECK: train.global counter @train.step : tensor<i64>{{$}}
train.global counter @train.step : tensor<i64>
// CHECK: train.global counter @start : tensor<i64> = dense<5> : tensor<i64>{{$}}
train.global counter @start : tensor<i64> = dense<5> : tensor<i64>

// CHECK-LABEL: func.func @state
// CHECK-SAME: (%[[G:.+]]: tensor<10x4xf32>, %[[N:.+]]: tensor<f32>)
func.func @state(%g: tensor<10x4xf32>, %n: tensor<f32>) -> tensor<10x4xf32> {
  // CHECK: %[[W:.+]] = train.load @w : tensor<10x4xf32>
  %w = train.load @w : tensor<10x4xf32>
  // CHECK: train.store %[[W]], @w : tensor<10x4xf32>
  train.store %w, @w : tensor<10x4xf32>
  // CHECK: train.accumulate %[[G]], @w.grad : tensor<10x4xf32>
  train.accumulate %g, @w.grad : tensor<10x4xf32>
  // CHECK: train.accumulate %[[N]], @train.samples : tensor<f32>
  train.accumulate %n, @train.samples : tensor<f32>
  // CHECK: %[[T:.+]] = train.load @train.step : tensor<i64>
  %t = train.load @train.step : tensor<i64>
  // CHECK: train.store %[[T]], @train.step : tensor<i64>
  train.store %t, @train.step : tensor<i64>
  return %w : tensor<10x4xf32>
}

// CHECK-LABEL: func.func @window
// CHECK-SAME: (%[[G:.+]]: tensor<10x4xf32>, %[[N:.+]]: tensor<f32>)
func.func @window(%g: tensor<10x4xf32>, %n: tensor<f32>) {
  // CHECK: %{{.+}}:2 = train.window_sum %[[G]], %[[N]] {targets = [@w, "samples"]} : tensor<10x4xf32>, tensor<f32>
  %0:2 = train.window_sum %g, %n {targets = [@w, "samples"]} : tensor<10x4xf32>, tensor<f32>
  // Without targets the accumulators get positional names.
  // CHECK: train.window_sum %[[N]] : tensor<f32>
  %1 = train.window_sum %n : tensor<f32>
  return
}

// CHECK-LABEL: func.func @optimizers
// CHECK-SAME: (%[[P:[^:]+]]: tensor<10x4xf32>, %[[G:[^:]+]]: tensor<10x4xf32>, %[[S:[^:]+]]: tensor<10x4xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[H:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<i64>, %[[D:[^:]+]]: tensor<3xf64>, %[[LR64:[^:]+]]: tensor<f64>)
func.func @optimizers(%p: tensor<10x4xf32>, %g: tensor<10x4xf32>, %s: tensor<10x4xf32>, %lr: tensor<f32>, %h: tensor<f32>, %t: tensor<i64>, %d: tensor<3xf64>, %lr64: tensor<f64>) {
  // CHECK: train.sgd %[[P]], %[[G]] lr %[[LR]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %0 = train.sgd %p, %g lr %lr weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.sgd %[[D]], %[[D]] lr %[[LR64]] weight_decay %[[LR64]] : tensor<3xf64>, tensor<f64>
  %1 = train.sgd %d, %d lr %lr64 weight_decay %lr64 : tensor<3xf64>, tensor<f64>
  // CHECK: train.momentum %[[P]], %[[G]], %[[S]] lr %[[LR]] momentum %[[H]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %2:2 = train.momentum %p, %g, %s lr %lr momentum %h weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.momentum %[[P]], %[[G]], %[[S]] lr %[[LR]] momentum %[[H]] weight_decay %[[H]] {nesterov} : tensor<10x4xf32>, tensor<f32>
  %3:2 = train.momentum %p, %g, %s lr %lr momentum %h weight_decay %h {nesterov} : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.adam %[[P]], %[[G]], %[[S]], %[[S]] step %[[T]] lr %[[LR]] betas %[[H]], %[[H]] eps %[[H]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %4:3 = train.adam %p, %g, %s, %s step %t lr %lr betas %h, %h eps %h weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.adam %[[P]], %[[G]], %[[S]], %[[S]] step %[[T]] lr %[[LR]] betas %[[H]], %[[H]] eps %[[H]] weight_decay %[[H]] {decoupled} : tensor<10x4xf32>, tensor<f32>
  %5:3 = train.adam %p, %g, %s, %s step %t lr %lr betas %h, %h eps %h weight_decay %h {decoupled} : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.rmsprop %[[P]], %[[G]], %[[S]] lr %[[LR]] alpha %[[H]] eps %[[H]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %6:2 = train.rmsprop %p, %g, %s lr %lr alpha %h eps %h weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.adagrad %[[P]], %[[G]], %[[S]] step %[[T]] lr %[[LR]] lr_decay %[[H]] eps %[[H]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %7:2 = train.adagrad %p, %g, %s step %t lr %lr lr_decay %h eps %h weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.lamb %[[P]], %[[G]], %[[S]], %[[S]] step %[[T]] lr %[[LR]] betas %[[H]], %[[H]] eps %[[H]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %8:3 = train.lamb %p, %g, %s, %s step %t lr %lr betas %h, %h eps %h weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.lamb %[[P]], %[[G]], %[[S]], %[[S]] step %[[T]] lr %[[LR]] betas %[[H]], %[[H]] eps %[[H]] weight_decay %[[H]] {no_adapt} : tensor<10x4xf32>, tensor<f32>
  %9:3 = train.lamb %p, %g, %s, %s step %t lr %lr betas %h, %h eps %h weight_decay %h {no_adapt} : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.lars %[[P]], %[[G]], %[[S]] lr %[[LR]] momentum %[[H]] eta %[[H]] weight_decay %[[H]] : tensor<10x4xf32>, tensor<f32>
  %10:2 = train.lars %p, %g, %s lr %lr momentum %h eta %h weight_decay %h : tensor<10x4xf32>, tensor<f32>
  // CHECK: train.lars %[[D]], %[[D]], %[[D]] lr %[[LR64]] momentum %[[LR64]] eta %[[LR64]] weight_decay %[[LR64]] {no_adapt} : tensor<3xf64>, tensor<f64>
  %11:2 = train.lars %d, %d, %d lr %lr64 momentum %lr64 eta %lr64 weight_decay %lr64 {no_adapt} : tensor<3xf64>, tensor<f64>
  return
}

// CHECK-LABEL: func.func @clip_and_reduce
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4x3xf32>, %[[B:[^:]+]]: tensor<3xf32>, %[[C:[^:]+]]: tensor<f32>)
func.func @clip_and_reduce(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<f32>) {
  // CHECK: train.clip_by_global_norm %[[A]], %[[B]] max_norm %[[C]] : tensor<4x3xf32>, tensor<3xf32>, tensor<f32>
  %0:3 = train.clip_by_global_norm %a, %b max_norm %c : tensor<4x3xf32>, tensor<3xf32>, tensor<f32>
  // CHECK: train.cross_rank_reduce sum %[[A]], %[[C]] : tensor<4x3xf32>, tensor<f32>
  %1:2 = train.cross_rank_reduce sum %a, %c : tensor<4x3xf32>, tensor<f32>
  // CHECK: train.cross_rank_reduce mean %[[B]] : tensor<3xf32>
  %2 = train.cross_rank_reduce mean %b : tensor<3xf32>
  // CHECK: train.cross_rank_reduce adasum %[[A]], %[[B]] : tensor<4x3xf32>, tensor<3xf32>
  %3:2 = train.cross_rank_reduce adasum %a, %b : tensor<4x3xf32>, tensor<3xf32>
  // CHECK: train.check_finite %[[A]], %[[C]] : tensor<4x3xf32>, tensor<f32>
  %4 = train.check_finite %a, %c : tensor<4x3xf32>, tensor<f32>
  // CHECK: train.check_finite %[[B]] {across_ranks} : tensor<3xf32>
  %5 = train.check_finite %b {across_ranks} : tensor<3xf32>
  return
}

// ZeRO-1: optimizer state sharded over 4 (or 3) ranks holds ceil(n / R)
// elements of its parameter, and the collectives around it.
// CHECK: train.global state @w.exp_avg_sq of @w shards 4 : tensor<10xf32>{{$}}
train.global state @w.exp_avg_sq of @w shards 4 : tensor<10xf32>
// CHECK: train.global state @b.exp_avg of @b shards 3 : tensor<4xf32>{{$}}
train.global state @b.exp_avg of @b shards 3 : tensor<4xf32>

// CHECK-LABEL: func.func @sharding
// CHECK-SAME: (%[[A:[^:]+]]: tensor<10x4xf32>, %[[B:[^:]+]]: tensor<10xf32>, %[[C:[^:]+]]: tensor<f32>, %[[S:[^:]+]]: tensor<10xf32>, %[[T:[^:]+]]: tensor<3xf32>)
func.func @sharding(%a: tensor<10x4xf32>, %b: tensor<10xf32>, %c: tensor<f32>, %s: tensor<10xf32>, %t: tensor<3xf32>) {
  // CHECK: train.reduce_scatter %[[A]], %[[B]] ranks 4 : tensor<10x4xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<3xf32>
  %0:2 = train.reduce_scatter %a, %b ranks 4 : tensor<10x4xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<3xf32>
  // CHECK: train.all_gather %[[S]], %[[T]] ranks 4 : tensor<10xf32>, tensor<3xf32> -> tensor<10x4xf32>, tensor<10xf32>
  %1:2 = train.all_gather %s, %t ranks 4 : tensor<10xf32>, tensor<3xf32> -> tensor<10x4xf32>, tensor<10xf32>
  // CHECK: train.shard %[[A]] ranks 3 : tensor<10x4xf32> -> tensor<14xf32>
  %2 = train.shard %a ranks 3 : tensor<10x4xf32> -> tensor<14xf32>
  // With one rank the shard is the whole tensor, flattened.
  // CHECK: train.shard %[[A]] ranks 1 : tensor<10x4xf32> -> tensor<40xf32>
  %3 = train.shard %a ranks 1 : tensor<10x4xf32> -> tensor<40xf32>
  // CHECK: train.clip_by_global_norm %[[S]], %[[T]] max_norm %[[C]] {across_ranks} : tensor<10xf32>, tensor<3xf32>, tensor<f32>
  %4:3 = train.clip_by_global_norm %s, %t max_norm %c {across_ranks} : tensor<10xf32>, tensor<3xf32>, tensor<f32>
  return
}

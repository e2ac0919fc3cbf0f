// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-lower-entry-abi | FileCheck %s

train.global param @w : tensor<4x8xf32> = #train.init<zeros>
train.global accumulator @w.grad of @w : tensor<4x8xf32>
train.global accumulator @train.samples : tensor<f32>
train.global counter @train.micro_steps : tensor<i64>

// Arguments: ctx, inputs, outputs, then the globals the entry touches in
// module order; each global is read once and written back once.
// CHECK-LABEL: func.func @micro_step
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr, %[[X:.+]]: memref<2x8xf32>, %[[DY:.+]]: memref<2x4xf32>, %[[LOSS:.+]]: memref<f32>, %[[W:.+]]: memref<4x8xf32>, %[[WG:.+]]: memref<4x8xf32>, %[[N:.+]]: memref<f32>, %[[C:.+]]: memref<i64>)
// CHECK-SAME: rt.abi = [{name = "x", role = "input"}, {name = "dy", role = "input"}, {name = "loss", role = "output"}, {name = "w", role = "global"}, {name = "w.grad", role = "global"}, {name = "train.samples", role = "global"}, {name = "train.micro_steps", role = "global"}]
// Read-only state is not writable.
// CHECK: bufferization.to_tensor %[[W]] restrict : memref<4x8xf32>
// CHECK: %[[ACC:.+]] = bufferization.to_tensor %[[WG]] restrict writable
// CHECK: %[[NT:.+]] = bufferization.to_tensor %[[N]] restrict writable
// CHECK: %[[XT:.+]] = bufferization.to_tensor %[[X]] restrict : memref<2x8xf32>
// The weight gradient GEMM accumulates into the accumulator.
// CHECK: %[[G:.+]] = rt.kernel matmul ins(%{{.+}}, %[[XT]] : tensor<2x4xf32>, tensor<2x8xf32>) outs(%[[ACC]] : tensor<4x8xf32>) {accumulate = true
// Other accumulations add in place.
// CHECK: %[[S:.+]] = linalg.generic {{.+}} outs(%[[NT]] : tensor<f32>)
// CHECK: arith.addf
// CHECK-NOT: train.
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[LOSS]]
// CHECK: bufferization.materialize_in_destination %[[G]] in restrict writable %[[WG]]
// CHECK: bufferization.materialize_in_destination %[[S]] in restrict writable %[[N]]
// CHECK: return
func.func @micro_step(%x: tensor<2x8xf32> {train.input = "x"}, %dy: tensor<2x4xf32> {train.input = "dy"}) -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "micro_step"} {
  %w = train.load @w : tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %g = rt.kernel matmul ins(%dy, %x : tensor<2x4xf32>, tensor<2x8xf32>) outs(%e : tensor<4x8xf32>) {trans_a = true, trans_b = false} -> tensor<4x8xf32>
  train.accumulate %g, @w.grad : tensor<4x8xf32>
  %one = arith.constant dense<2.0> : tensor<f32>
  train.accumulate %one, @train.samples : tensor<f32>
  %c = train.load @train.micro_steps : tensor<i64>
  %c1 = arith.constant dense<1> : tensor<i64>
  %n = arith.addi %c, %c1 : tensor<i64>
  train.store %n, @train.micro_steps : tensor<i64>
  return %one : tensor<f32>
}

// Hyperparameters keep their defaults in the ABI; storing a splat zero is a
// fill of the buffer, and a store followed by a load forwards the value.
// CHECK-LABEL: func.func @apply_step
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr, %[[LR:.+]]: memref<f32>, %[[W:.+]]: memref<4x8xf32>, %[[WG:.+]]: memref<4x8xf32>)
// CHECK-SAME: rt.abi = [{default = 5.000000e-01 : f64, name = "lr", role = "hyper"}, {name = "w", role = "global"}, {name = "w.grad", role = "global"}]
// CHECK: %[[GT:.+]] = bufferization.to_tensor %[[WG]] restrict writable
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[GT]] : tensor<4x8xf32>)
// CHECK: bufferization.materialize_in_destination %[[Z]] in restrict writable %[[WG]]
func.func @apply_step(%lr: tensor<f32> {train.hyper = "lr", train.default = 0.5 : f64}) attributes {train.entry = "apply_step"} {
  %w = train.load @w : tensor<4x8xf32>
  train.store %w, @w : tensor<4x8xf32>
  %z = arith.constant dense<0.0> : tensor<4x8xf32>
  train.store %z, @w.grad : tensor<4x8xf32>
  return
}

// -----

// expected-error @+1 {{@train_step is an unsplit step; run cleave-split-step before lowering}}
func.func @train_step() attributes {train.entry = "step"} {
  return
}

// -----

// expected-error @+1 {{argument #0 of an entry point has neither train.input nor train.hyper}}
func.func @eval_step(%x: tensor<2xf32>) attributes {train.entry = "eval_step"} {
  return
}

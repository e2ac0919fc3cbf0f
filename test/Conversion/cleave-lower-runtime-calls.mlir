// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-lower-runtime-calls | FileCheck %s
// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-lower-runtime-calls=precision=bf16 | FileCheck %s --check-prefix=BF16

// precision=bf16 marks the matmuls (and convolutions), never pooling.
// BF16: module attributes {rt.kernels = [
// BF16-SAME: {accumulate = false, activation = "relu", b_batched = false, batch = 1 : i64, bias = true, entry = "micro_step", id = 0 : i64, k = 16 : i64, m = 8 : i64, math = "bf16", n = 4 : i64, op = "matmul", trans_a = false, trans_b = true}
// BF16-SAME: {accumulate = true, activation = "none", b_batched = false, batch = 1 : i64, bias = false, entry = "micro_step", id = 1 : i64, k = 8 : i64, m = 4 : i64, math = "bf16", n = 16 : i64, op = "matmul", trans_a = true, trans_b = false}
// BF16-SAME: {c = 3 : i64, count_include_pad = false, dilations = array<i64: 1, 1>, entry = "micro_step", h = 8 : i64, id = 2 : i64, kernel = array<i64: 2, 2>, n = 2 : i64, oh = 4 : i64, op = "avg_pool2d_bwd"

// Each kernel gets an id into the module's table, which describes it fully,
// and becomes a call through the kernel ABI with raw pointers.
// CHECK: module attributes {rt.kernels = [
// CHECK-SAME: {accumulate = false, activation = "relu", b_batched = false, batch = 1 : i64, bias = true, entry = "micro_step", id = 0 : i64, k = 16 : i64, m = 8 : i64, n = 4 : i64, op = "matmul", trans_a = false, trans_b = true}
// CHECK-SAME: {accumulate = true, activation = "none", b_batched = false, batch = 1 : i64, bias = false, entry = "micro_step", id = 1 : i64, k = 8 : i64, m = 4 : i64, n = 16 : i64, op = "matmul", trans_a = true, trans_b = false}
// CHECK-SAME: {c = 3 : i64, count_include_pad = false, dilations = array<i64: 1, 1>, entry = "micro_step", h = 8 : i64, id = 2 : i64, kernel = array<i64: 2, 2>, n = 2 : i64, oh = 4 : i64, op = "avg_pool2d_bwd", ow = 4 : i64, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, w = 8 : i64}
// CHECK-LABEL: func.func @micro_step
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr,
// CHECK: %[[ID0:.+]] = arith.constant 0 : i64
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: llvm.inttoptr
// CHECK: call @cleave_kernel_matmul(%[[CTX]], %[[ID0]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: %[[ID1:.+]] = arith.constant 1 : i64
// A missing bias is a null pointer.
// CHECK: %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @cleave_kernel_matmul(%[[CTX]], %[[ID1]], %{{.+}}, %{{.+}}, %[[NULL]], %{{.+}})
// Average-pool backward needs no forward input.
// CHECK: %[[NOSRC:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @cleave_kernel_pool_bwd(%[[CTX]], %{{.+}}, %[[NOSRC]], %{{.+}}, %{{.+}})
// CHECK-NOT: rt.kernel
// CHECK: func.func private @cleave_kernel_matmul(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK: func.func private @cleave_kernel_pool_bwd(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
func.func @micro_step(%ctx: !llvm.ptr, %x: memref<8x16xf32>, %w: memref<4x16xf32>, %b: memref<4xf32>, %y: memref<8x4xf32>, %dw: memref<4x16xf32>, %dy: memref<2x3x4x4xf32>, %dx: memref<2x3x8x8xf32>) {
  rt.kernel matmul ins(%x, %w, %b : memref<8x16xf32>, memref<4x16xf32>, memref<4xf32>) outs(%y : memref<8x4xf32>) {trans_a = false, trans_b = true, activation = "relu"}
  rt.kernel matmul ins(%y, %x : memref<8x4xf32>, memref<8x16xf32>) outs(%dw : memref<4x16xf32>) {trans_a = true, trans_b = false, accumulate = true}
  rt.kernel avg_pool2d_bwd ins(%dy : memref<2x3x4x4xf32>) outs(%dx : memref<2x3x8x8xf32>) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false}
  return
}

// -----

// A strided operand is copied to a dense buffer first (and an output copied
// back after the call).
// CHECK-LABEL: func.func @strided
// CHECK: %[[DENSE:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: linalg.copy ins(%{{.+}} : memref<4x4xf32, strided<[8, 1]>>) outs(%[[DENSE]] : memref<4x4xf32>)
// CHECK: call @cleave_kernel_matmul
func.func @strided(%ctx: !llvm.ptr, %big: memref<4x8xf32>, %w: memref<4x4xf32>, %y: memref<4x4xf32>) {
  %s = memref.subview %big[0, 0] [4, 4] [1, 1] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 1]>>
  rt.kernel matmul ins(%s, %w : memref<4x4xf32, strided<[8, 1]>>, memref<4x4xf32>) outs(%y : memref<4x4xf32>) {trans_a = false, trans_b = false}
  return
}

// -----

// Collectives pass arrays of buffer pointers and sizes.
// CHECK-LABEL: func.func @apply_step
// CHECK: %[[SIXTEEN:.+]] = arith.constant 16 : i64
// CHECK: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK: %[[PTRS:.+]] = memref.alloca() : memref<2xi64>
// CHECK: memref.store %{{.+}}, %[[PTRS]]
// CHECK: %[[SIZES:.+]] = memref.alloca() : memref<2xi64>
// CHECK: memref.store %[[SIXTEEN]], %[[SIZES]]
// CHECK: memref.store %[[ONE]], %[[SIZES]]
// CHECK: call @cleave_cross_rank_reduce(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr) -> ()
func.func @apply_step(%ctx: !llvm.ptr, %g: memref<4x4xf32>, %n: memref<f32>) {
  rt.cross_rank_reduce sum outs(%g, %n : memref<4x4xf32>, memref<f32>)
  return
}

// -----

func.func @not_an_entry(%x: memref<4x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{is not inside an entry point taking the kernel context; run cleave-lower-entry-abi first}}
  rt.kernel matmul ins(%x, %x : memref<4x4xf32>, memref<4x4xf32>) outs(%y : memref<4x4xf32>) {trans_a = false, trans_b = false}
  return
}

// -----

func.func @on_tensors(%ctx: !llvm.ptr, %x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  // expected-error @+1 {{must be bufferized before it becomes a call}}
  %0 = rt.kernel matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {trans_a = false, trans_b = false} -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// ZeRO-1 collectives pass the context, the ranks, the number of tensors and
// arrays of input pointers, whole-tensor sizes and output pointers.
// CHECK-LABEL: func.func @zero
// CHECK: %[[TWELVE:.+]] = arith.constant 12 : i64
// CHECK: %[[INS:.+]] = memref.alloca() : memref<2xi64>
// CHECK: %[[SIZES:.+]] = memref.alloca() : memref<2xi64>
// CHECK: memref.store %[[TWELVE]], %[[SIZES]]
// CHECK: %[[OUTS:.+]] = memref.alloca() : memref<2xi64>
// CHECK: call @cleave_reduce_scatter(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: call @cleave_shard(
// CHECK: call @cleave_all_gather(
// CHECK-DAG: func.func private @cleave_reduce_scatter(!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @cleave_all_gather(!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @cleave_shard(!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
func.func @zero(%ctx: !llvm.ptr, %g: memref<3x4xf32>, %v: memref<3xf32>, %s: memref<3xf32>, %t: memref<1xf32>) {
  rt.reduce_scatter ranks 4 ins(%g, %v : memref<3x4xf32>, memref<3xf32>) outs(%s, %t : memref<3xf32>, memref<1xf32>)
  rt.shard ranks 4 ins(%g : memref<3x4xf32>) outs(%s : memref<3xf32>)
  rt.all_gather ranks 4 ins(%s, %t : memref<3xf32>, memref<1xf32>) outs(%g, %v : memref<3x4xf32>, memref<3xf32>)
  return
}

// -----

func.func @zero_shapes(%ctx: !llvm.ptr, %g: memref<3x4xf32>, %s: memref<4xf32>) {
  // expected-error @+1 {{'rt.reduce_scatter' op operand pair #0: a shard of 12 elements over 4 ranks has 3 elements in one dimension, got 'memref<4xf32>'}}
  rt.reduce_scatter ranks 4 ins(%g : memref<3x4xf32>) outs(%s : memref<4xf32>)
  return
}

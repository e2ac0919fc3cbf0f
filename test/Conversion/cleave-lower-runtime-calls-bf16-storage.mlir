// RUN: cleave-opt %s --cleave-lower-runtime-calls=precision=bf16 | FileCheck %s
// RUN: not cleave-opt %s --cleave-lower-runtime-calls 2>&1 | FileCheck %s --check-prefix=F32

// Activation operands stored in bf16 (mixed-precision.md, "bf16 storage"):
// the kernel table says how each is stored, so the runtime reads the buffer
// as it is; the weights and the outputs stay f32. A kernel that multiplies
// in f32 refuses them.

// CHECK: rt.kernels = [
// CHECK-SAME: {a_type = "bf16", accumulate = true, activation = "none", b_batched = false, b_type = "bf16", batch = 1 : i64, {{[^}]*}}, id = 0 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "matmul"
// The weights are no activation: b_type is absent (f32).
// CHECK-SAME: {a_type = "bf16", accumulate = false, activation = "none", b_batched = false, batch = 1 : i64, {{[^}]*}}, id = 1 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "matmul"
// CHECK-SAME: {activation = "none", bias = false, c = 3 : i64, dilations = {{[^}]*}}, id = 2 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "conv2d_fwd", {{[^}]*}}, src_type = "bf16"
// CHECK-SAME: {c = 3 : i64, diff_dst_type = "bf16", {{[^}]*}}, id = 3 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "conv2d_bwd_data", ow = 8 : i64, padding = {{[^}]*}}, strides
// CHECK-SAME: {accumulate = true, c = 3 : i64, diff_dst_type = "bf16", {{[^}]*}}, id = 4 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "conv2d_bwd_weights", {{[^}]*}}, src_type = "bf16"
// CHECK-LABEL: func.func @micro_step
// CHECK-COUNT-5: call @cleave_kernel_

// F32: error: 'rt.kernel' op has an operand stored in bf16 but multiplies in f32 (precision=bf16 makes it multiply in bf16)
func.func @micro_step(%ctx: !llvm.ptr, %h: memref<8x16xbf16>, %dy: memref<8x4xbf16>, %w: memref<4x16xf32>, %dw: memref<4x16xf32>, %x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xf32>, %y: memref<2x4x8x8xf32>, %g: memref<2x4x8x8xbf16>, %dx: memref<2x3x8x8xf32>, %dk: memref<4x3x3x3xf32>, %dh: memref<8x16xf32>) {
  // The weight gradient: both activations stored in bf16.
  rt.kernel matmul ins(%dy, %h : memref<8x4xbf16>, memref<8x16xbf16>) outs(%dw : memref<4x16xf32>) {trans_a = true, trans_b = false, accumulate = true}
  // The backward-data product: the weights stay f32.
  rt.kernel matmul ins(%dy, %w : memref<8x4xbf16>, memref<4x16xf32>) outs(%dh : memref<8x16xf32>) {trans_a = false, trans_b = false}
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xf32>) outs(%y : memref<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"}
  rt.kernel conv2d_bwd_data ins(%g, %k : memref<2x4x8x8xbf16>, memref<4x3x3x3xf32>) outs(%dx : memref<2x3x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
  rt.kernel conv2d_bwd_weights ins(%x, %g : memref<2x3x8x8xbf16>, memref<2x4x8x8xbf16>) outs(%dk : memref<4x3x3x3xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, accumulate = true}
  return
}

// RUN: cleave-opt %s --split-input-file --verify-diagnostics \
// RUN:   --cleave-lower-runtime-calls="precision=bf16 bf16-convolution-results=true" \
// RUN:   | FileCheck %s

// cuda's bf16 convolutions (mixed-precision.md, "On cuda"): cuDNN takes and
// gives bf16 tensors only, so cleave-store-bf16 stores every operand of a
// bf16 convolution in bf16, its result included, and the table says so for
// each (`wei_type`, `dst_type`). A convolution whose result is f32 is an f32
// kernel, though its K would make it bf16.

// CHECK: rt.kernels = [
// CHECK-SAME: {activation = "none", bias = false, c = 3 : i64, dilations = {{[^}]*}}, dst_type = "bf16", {{[^}]*}}, id = 0 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "conv2d_fwd", {{[^}]*}}, src_type = "bf16", strides = {{[^}]*}}, w = 8 : i64, wei_type = "bf16"}
// CHECK-SAME: {c = 3 : i64, diff_dst_type = "bf16", dilations = {{[^}]*}}, dst_type = "bf16", {{[^}]*}}, id = 1 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "conv2d_bwd_data", {{[^}]*}}, wei_type = "bf16"
// CHECK-SAME: {accumulate = false, c = 3 : i64, diff_dst_type = "bf16", dilations = {{[^}]*}}, dst_type = "bf16", {{[^}]*}}, id = 2 : i64, {{[^}]*}}, math = "bf16", {{[^}]*}}, op = "conv2d_bwd_weights", {{[^}]*}}, src_type = "bf16"
// An f32 convolution: no math, no types.
// CHECK-SAME: {activation = "none", bias = false, c = 3 : i64, dilations = {{[^}]*}}, id = 3 : i64, kh = 3 : i64, kw = 3 : i64, n = 2 : i64, o = 4 : i64, oh = 8 : i64, op = "conv2d_fwd"
// CHECK-LABEL: func.func @micro_step
// CHECK-COUNT-4: call @cleave_kernel_conv2d
func.func @micro_step(%ctx: !llvm.ptr, %x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xbf16>, %y: memref<2x4x8x8xbf16>, %g: memref<2x4x8x8xbf16>, %dx: memref<2x3x8x8xbf16>, %dk: memref<4x3x3x3xbf16>, %xf: memref<2x3x8x8xf32>, %kf: memref<4x3x3x3xf32>, %yf: memref<2x4x8x8xf32>) {
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>) outs(%y : memref<2x4x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"}
  rt.kernel conv2d_bwd_data ins(%g, %k : memref<2x4x8x8xbf16>, memref<4x3x3x3xbf16>) outs(%dx : memref<2x3x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
  rt.kernel conv2d_bwd_weights ins(%x, %g : memref<2x3x8x8xbf16>, memref<2x4x8x8xbf16>) outs(%dk : memref<4x3x3x3xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, accumulate = false}
  rt.kernel conv2d_fwd ins(%xf, %kf : memref<2x3x8x8xf32>, memref<4x3x3x3xf32>) outs(%yf : memref<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"}
  return
}

// -----

// A bf16 result with f32 weights: cuDNN has no such convolution.
func.func @micro_step(%ctx: !llvm.ptr, %x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xf32>, %y: memref<2x4x8x8xbf16>) {
  // expected-error @+1 {{has a bf16 result but an f32 input; with bf16-convolution-results every operand of a bf16 convolution is bf16}}
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xf32>) outs(%y : memref<2x4x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"}
  return
}

// -----

// An f32 result with bf16 operands: an f32 kernel cannot read them.
func.func @micro_step(%ctx: !llvm.ptr, %x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xbf16>, %y: memref<2x4x8x8xf32>) {
  // expected-error @+1 {{has an operand stored in bf16 but an f32 result; with bf16-convolution-results a convolution multiplies in bf16 only with its result in bf16 too}}
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>) outs(%y : memref<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"}
  return
}

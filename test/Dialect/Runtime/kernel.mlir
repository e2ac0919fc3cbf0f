// RUN: cleave-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// rt.kernel's element types: f32, but the multiplied inputs of the
// compute-bound kinds may be stored in bf16, and a convolution's result
// (mixed-precision.md).

// CHECK-LABEL: func.func @stored
func.func @stored(%a: memref<8x4xbf16>, %b: memref<8x16xbf16>, %w: memref<4x16xf32>, %c: memref<4x16xf32>, %d: memref<8x16xf32>, %x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xf32>, %y: memref<2x4x8x8xf32>, %g: memref<2x4x8x8xbf16>, %dx: memref<2x3x8x8xf32>) {
  rt.kernel matmul ins(%a, %b : memref<8x4xbf16>, memref<8x16xbf16>) outs(%c : memref<4x16xf32>) {trans_a = true, trans_b = false, accumulate = true}
  rt.kernel matmul ins(%a, %w : memref<8x4xbf16>, memref<4x16xf32>) outs(%d : memref<8x16xf32>) {trans_a = false, trans_b = false}
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xf32>) outs(%y : memref<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
  rt.kernel conv2d_bwd_data ins(%g, %k : memref<2x4x8x8xbf16>, memref<4x3x3x3xf32>) outs(%dx : memref<2x3x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
  return
}

// A convolution stored in bf16 throughout, as cleave-compile makes cuda's:
// weights and results too.
// CHECK-LABEL: func.func @conv_stored
func.func @conv_stored(%x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xbf16>, %y: memref<2x4x8x8xbf16>, %g: memref<2x4x8x8xbf16>, %dx: memref<2x3x8x8xbf16>, %dk: memref<4x3x3x3xbf16>) {
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>) outs(%y : memref<2x4x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"}
  rt.kernel conv2d_bwd_data ins(%g, %k : memref<2x4x8x8xbf16>, memref<4x3x3x3xbf16>) outs(%dx : memref<2x3x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
  rt.kernel conv2d_bwd_weights ins(%x, %g : memref<2x3x8x8xbf16>, memref<2x4x8x8xbf16>) outs(%dk : memref<4x3x3x3xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, accumulate = false}
  return
}

// -----

func.func @bf16_conv_accumulate(%x: memref<2x3x8x8xbf16>, %g: memref<2x4x8x8xbf16>, %dk: memref<4x3x3x3xbf16>) {
  // expected-error @+1 {{a bf16 output takes no bias, activation or accumulate (the sum would be rounded)}}
  rt.kernel conv2d_bwd_weights ins(%x, %g : memref<2x3x8x8xbf16>, memref<2x4x8x8xbf16>) outs(%dk : memref<4x3x3x3xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, accumulate = true}
  return
}

// -----

func.func @bf16_conv_bias(%x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xbf16>, %b: memref<4xf32>, %y: memref<2x4x8x8xbf16>) {
  // expected-error @+1 {{a bf16 output takes no bias, activation or accumulate}}
  rt.kernel conv2d_fwd ins(%x, %k, %b : memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>, memref<4xf32>) outs(%y : memref<2x4x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
  return
}

// -----

func.func @bf16_conv_relu(%x: memref<2x3x8x8xbf16>, %k: memref<4x3x3x3xbf16>, %y: memref<2x4x8x8xbf16>) {
  // expected-error @+1 {{a bf16 output takes no bias, activation or accumulate}}
  rt.kernel conv2d_fwd ins(%x, %k : memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>) outs(%y : memref<2x4x8x8xbf16>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "relu"}
  return
}

// -----

func.func @bf16_output(%a: memref<8x4xbf16>, %w: memref<4x16xf32>, %d: memref<8x16xbf16>) {
  // expected-error @+1 {{output 0 must be f32, got 'memref<8x16xbf16>'}}
  rt.kernel matmul ins(%a, %w : memref<8x4xbf16>, memref<4x16xf32>) outs(%d : memref<8x16xbf16>) {trans_a = false, trans_b = false}
  return
}

// -----

func.func @bf16_bias(%a: memref<8x4xf32>, %w: memref<4x16xf32>, %bias: memref<16xbf16>, %d: memref<8x16xf32>) {
  // expected-error @+1 {{input 2 of 'matmul' must be f32, got 'memref<16xbf16>'}}
  rt.kernel matmul ins(%a, %w, %bias : memref<8x4xf32>, memref<4x16xf32>, memref<16xbf16>) outs(%d : memref<8x16xf32>) {trans_a = false, trans_b = false}
  return
}

// -----

func.func @bf16_pool_output(%x: memref<2x3x8x8xf32>, %y: memref<2x3x4x4xbf16>) {
  // expected-error @+1 {{output 0 must be f32, got 'memref<2x3x4x4xbf16>'}}
  rt.kernel max_pool2d_fwd ins(%x : memref<2x3x8x8xf32>) outs(%y : memref<2x3x4x4xbf16>) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
  return
}

// -----

func.func @bf16_pooling(%x: memref<2x3x8x8xbf16>, %y: memref<2x3x4x4xf32>) {
  // expected-error @+1 {{input 0 of 'max_pool2d_fwd' must be f32, got 'memref<2x3x8x8xbf16>'}}
  rt.kernel max_pool2d_fwd ins(%x : memref<2x3x8x8xbf16>) outs(%y : memref<2x3x4x4xf32>) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
  return
}

// -----

func.func @f64(%a: memref<8x4xf64>, %w: memref<4x16xf32>, %d: memref<8x16xf32>) {
  // expected-error @+1 {{input 0 of 'matmul' must be f32 or bf16, got 'memref<8x4xf64>'}}
  rt.kernel matmul ins(%a, %w : memref<8x4xf64>, memref<4x16xf32>) outs(%d : memref<8x16xf32>) {trans_a = false, trans_b = false}
  return
}

// -----

// Attention: two outputs forward (o, lse) and three backward; every tensor
// may be bf16 but the log-sum-exp.
// CHECK-LABEL: func.func @sdpa
// CHECK:         rt.kernel sdpa_fwd
// CHECK:         rt.kernel sdpa_bwd
func.func @sdpa(%q: tensor<8x4x16xbf16>, %k: tensor<8x6x16xbf16>, %v: tensor<8x6x16xbf16>, %m: tensor<4x6xbf16>) -> (tensor<8x4x16xbf16>, tensor<8x6x16xbf16>) {
  %o0 = tensor.empty() : tensor<8x4x16xbf16>
  %l0 = tensor.empty() : tensor<8x4xf32>
  %o, %lse = rt.kernel sdpa_fwd ins(%q, %k, %v, %m : tensor<8x4x16xbf16>, tensor<8x6x16xbf16>, tensor<8x6x16xbf16>, tensor<4x6xbf16>) outs(%o0, %l0 : tensor<8x4x16xbf16>, tensor<8x4xf32>) {scale = 0.25 : f64, causal = false} -> tensor<8x4x16xbf16>, tensor<8x4xf32>
  %k0 = tensor.empty() : tensor<8x6x16xbf16>
  %dq, %dk, %dv = rt.kernel sdpa_bwd ins(%q, %k, %v, %o, %lse, %o, %m : tensor<8x4x16xbf16>, tensor<8x6x16xbf16>, tensor<8x6x16xbf16>, tensor<8x4x16xbf16>, tensor<8x4xf32>, tensor<8x4x16xbf16>, tensor<4x6xbf16>) outs(%o0, %k0, %k0 : tensor<8x4x16xbf16>, tensor<8x6x16xbf16>, tensor<8x6x16xbf16>) {scale = 0.25 : f64, causal = false} -> tensor<8x4x16xbf16>, tensor<8x6x16xbf16>, tensor<8x6x16xbf16>
  return %dq, %dk : tensor<8x4x16xbf16>, tensor<8x6x16xbf16>
}

// -----

// Dropout: keep [B, T, S] is the last input, after the mask.
// CHECK-LABEL: func.func @sdpa_dropout
// CHECK:         rt.kernel sdpa_fwd ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : {{.+}}) {{.+}} {causal = false, dropout = 2.500000e-01 : f64, scale = 2.500000e-01 : f64}
func.func @sdpa_dropout(%q: tensor<8x4x16xbf16>, %m: tensor<4x4xbf16>, %keep: tensor<8x4x4xbf16>) -> tensor<8x4x16xbf16> {
  %o0 = tensor.empty() : tensor<8x4x16xbf16>
  %l0 = tensor.empty() : tensor<8x4xf32>
  %o, %lse = rt.kernel sdpa_fwd ins(%q, %q, %q, %m, %keep : tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<4x4xbf16>, tensor<8x4x4xbf16>) outs(%o0, %l0 : tensor<8x4x16xbf16>, tensor<8x4xf32>) {scale = 0.25 : f64, causal = false, dropout = 0.25 : f64} -> tensor<8x4x16xbf16>, tensor<8x4xf32>
  return %o : tensor<8x4x16xbf16>
}

// -----

func.func @sdpa_keep_shape(%q: tensor<8x4x16xbf16>, %keep: tensor<4x4xbf16>) -> tensor<8x4x16xbf16> {
  %o0 = tensor.empty() : tensor<8x4x16xbf16>
  %l0 = tensor.empty() : tensor<8x4xf32>
  // expected-error @+1 {{keep must be [8, 4, 4], got 'tensor<4x4xbf16>'}}
  %o, %lse = rt.kernel sdpa_fwd ins(%q, %q, %q, %keep : tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<4x4xbf16>) outs(%o0, %l0 : tensor<8x4x16xbf16>, tensor<8x4xf32>) {scale = 0.25 : f64, causal = false, dropout = 0.25 : f64} -> tensor<8x4x16xbf16>, tensor<8x4xf32>
  return %o : tensor<8x4x16xbf16>
}

// -----

func.func @sdpa_dropout_one(%q: tensor<8x4x16xbf16>, %keep: tensor<8x4x4xbf16>) -> tensor<8x4x16xbf16> {
  %o0 = tensor.empty() : tensor<8x4x16xbf16>
  %l0 = tensor.empty() : tensor<8x4xf32>
  // expected-error @+1 {{config's 'dropout' must be in [0, 1), got 1}}
  %o, %lse = rt.kernel sdpa_fwd ins(%q, %q, %q, %keep : tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<8x4x4xbf16>) outs(%o0, %l0 : tensor<8x4x16xbf16>, tensor<8x4xf32>) {scale = 0.25 : f64, causal = false, dropout = 1.0 : f64} -> tensor<8x4x16xbf16>, tensor<8x4xf32>
  return %o : tensor<8x4x16xbf16>
}

// -----

func.func @sdpa_lse_bf16(%q: tensor<8x4x16xbf16>) -> tensor<8x4x16xbf16> {
  %o0 = tensor.empty() : tensor<8x4x16xbf16>
  %l0 = tensor.empty() : tensor<8x4xbf16>
  // expected-error @+1 {{output 1 must be f32, got 'tensor<8x4xbf16>'}}
  %o, %lse = rt.kernel sdpa_fwd ins(%q, %q, %q : tensor<8x4x16xbf16>, tensor<8x4x16xbf16>, tensor<8x4x16xbf16>) outs(%o0, %l0 : tensor<8x4x16xbf16>, tensor<8x4xbf16>) {scale = 0.25 : f64, causal = true} -> tensor<8x4x16xbf16>, tensor<8x4xbf16>
  return %o : tensor<8x4x16xbf16>
}

// -----

func.func @sdpa_one_output(%q: tensor<8x4x16xf32>) -> tensor<8x4x16xf32> {
  %o0 = tensor.empty() : tensor<8x4x16xf32>
  // expected-error @+1 {{'sdpa_fwd' has 2 outputs, got 1}}
  %o = rt.kernel sdpa_fwd ins(%q, %q, %q : tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>) outs(%o0 : tensor<8x4x16xf32>) {scale = 0.25 : f64, causal = true} -> tensor<8x4x16xf32>
  return %o : tensor<8x4x16xf32>
}

// -----

func.func @sdpa_mask_shape(%q: tensor<8x4x16xf32>, %m: tensor<4x5xf32>) -> tensor<8x4x16xf32> {
  %o0 = tensor.empty() : tensor<8x4x16xf32>
  %l0 = tensor.empty() : tensor<8x4xf32>
  // expected-error @+1 {{the mask must be [4, 4], got 'tensor<4x5xf32>'}}
  %o, %lse = rt.kernel sdpa_fwd ins(%q, %q, %q, %m : tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<4x5xf32>) outs(%o0, %l0 : tensor<8x4x16xf32>, tensor<8x4xf32>) {scale = 0.25 : f64, causal = true} -> tensor<8x4x16xf32>, tensor<8x4xf32>
  return %o : tensor<8x4x16xf32>
}

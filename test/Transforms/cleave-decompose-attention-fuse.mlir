// RUN: cleave-opt %s --split-input-file --cleave-decompose-attention=fuse=true 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err

// With `fuse`, attention that cuda's fused kernel takes stays one op,
// nn.fused_attention (its log-sum-exp unused until autodiff); the rest is
// spelt out as without it.

// Heads in their own dimension, causal, a head dimension of 8.
// CHECK-LABEL: func.func @causal(
// CHECK-NEXT:    %{{.+}}, %{{.+}} = nn.fused_attention %arg0, %arg1, %arg2 {causal, scale = 2.8284271247461903 : f64, scale_is_divisor} : (tensor<2x3x6x8xf32>, tensor<2x3x6x8xf32>, tensor<2x3x6x8xf32>) -> (tensor<2x3x6x8xf32>, tensor<2x3x6xf32>)
// CHECK-NOT:     nn.softmax
func.func @causal(%q: tensor<2x3x6x8xf32>, %k: tensor<2x3x6x8xf32>, %v: tensor<2x3x6x8xf32>) -> tensor<2x3x6x8xf32> {
  %0 = nn.attention %q, %k, %v {scale = 2.8284271247461903 : f64, scale_is_divisor, causal} : tensor<2x3x6x8xf32>, tensor<2x3x6x8xf32>, tensor<2x3x6x8xf32> -> tensor<2x3x6x8xf32>
  return %0 : tensor<2x3x6x8xf32>
}

// -----

// A constant mask, one matrix for the batch (here computed from constants).
// CHECK-LABEL: func.func @constant_mask(
// CHECK:         nn.fused_attention %arg0, %arg1, %arg2, %{{.+}} {scale = 1.250000e-01 : f64}
func.func @constant_mask(%q: tensor<4x5x16xf32>, %k: tensor<4x7x16xf32>, %v: tensor<4x7x16xf32>) -> tensor<4x5x16xf32> {
  %c = arith.constant dense<-1.0> : tensor<1x5x7xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %m = nn.mul %c, %two : tensor<1x5x7xf32>, tensor<f32> -> tensor<1x5x7xf32>
  %0 = nn.attention %q, %k, %v, %m {scale = 0.125 : f64} : tensor<4x5x16xf32>, tensor<4x7x16xf32>, tensor<4x7x16xf32>, tensor<1x5x7xf32> -> tensor<4x5x16xf32>
  return %0 : tensor<4x5x16xf32>
}

// -----

// Dropout on the probabilities: the kernel takes the mask nn.dropout draws
// (the op's seed and stream over the scores), as 1 where kept and 0 where
// dropped, and the ratio.
// CHECK-LABEL: func.func @dropout(
// CHECK:         %[[ONES:[^ ]+]] = arith.constant dense<1.000000e+00> : tensor<2x5x5xf32>
// CHECK-NEXT:    %[[DRAWN:.+]] = nn.dropout %[[ONES]], %arg3 {ratio = 1.000000e-01 : f64, stream = 2 : i64} : tensor<2x5x5xf32>, tensor<i64> -> tensor<2x5x5xf32>
// CHECK-DAG:     %[[ONE:[^ ]+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG:     %[[ZERO:[^ ]+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[KEEP:.+]] = nn.where %[[DRAWN]], %[[ONE]], %[[ZERO]] : tensor<2x5x5xf32>, tensor<f32>, tensor<f32> -> tensor<2x5x5xf32>
// CHECK-NEXT:    nn.fused_attention %arg0, %arg1, %arg2 keep(%[[KEEP]]) {causal, dropout_ratio = 1.000000e-01 : f64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32>) -> (tensor<2x5x8xf32>, tensor<2x5xf32>)
// CHECK-NOT:     nn.softmax
func.func @dropout(%q: tensor<2x5x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>, %seed: tensor<i64>) -> tensor<2x5x8xf32> {
  %0 = nn.attention %q, %k, %v dropout(%seed : tensor<i64>) {causal, dropout_ratio = 0.1 : f64, dropout_stream = 2 : i64} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x5x8xf32>
  return %0 : tensor<2x5x8xf32>
}

// -----

// What the kernel does not take is spelt out: a head dimension of 4; a
// mask that is an argument (a parameter has a gradient); a mask that
// differs across the batch; f64; a value dimension unlike the head
// dimension.
// WHY-COUNT-1: warning: attention is spelt out as matmuls and a softmax, not cuDNN's fused kernel: head dimension 4 is not a multiple of 8 up to 128
// WHY-COUNT-1: warning: {{.*}}: a mask that is not a constant
// WHY-COUNT-1: warning: {{.*}}: a mask that differs across the batch
// WHY-COUNT-1: warning: {{.*}}: not f32
// WHY-COUNT-1: warning: {{.*}}: value dimension differs from the head dimension
// CHECK-LABEL: func.func @not_fused(
// CHECK-NOT:     fused_attention
// CHECK-COUNT-5: nn.softmax
// CHECK-NOT:     fused_attention
func.func @not_fused(%q4: tensor<2x5x4xf32>, %q: tensor<2x5x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>, %m: tensor<5x5xf32>, %qd: tensor<2x5x8xf64>, %v16: tensor<2x5x16xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf64>, tensor<2x5x16xf32>) {
  %0 = nn.attention %q4, %q4, %q4 {causal} : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32> -> tensor<2x5x4xf32>
  %1 = nn.attention %q, %k, %v, %m : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<5x5xf32> -> tensor<2x5x8xf32>
  %c = arith.constant dense<-1.0> : tensor<2x5x5xf32>
  %2 = nn.attention %q, %k, %v, %c : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32> -> tensor<2x5x8xf32>
  %3 = nn.attention %qd, %qd, %qd {causal} : tensor<2x5x8xf64>, tensor<2x5x8xf64>, tensor<2x5x8xf64> -> tensor<2x5x8xf64>
  %4 = nn.attention %q, %k, %v16 {causal} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x16xf32> -> tensor<2x5x16xf32>
  return %0, %1, %2, %3, %4 : tensor<2x5x4xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf64>, tensor<2x5x16xf32>
}

// RUN: cleave-opt %s --split-input-file --cleave-recompose-attention | FileCheck %s
// RUN: cleave-opt %s --split-input-file --cleave-recompose-attention --cleave-decompose-attention --canonicalize | FileCheck %s --check-prefix=ROUND

// Scaled dot-product attention as the ONNX importer spells it becomes one
// nn.attention, and cleave-decompose-attention spells it again: the same ops
// in the same order (ROUND), so the CPU lowers what it lowered before. Only
// the operands of a commutative nn.mul or nn.add may swap, and the causal
// constant is [T, S].

// A GPT block's causal attention: divided by sqrt(D), masked_fill(-inf) with
// the upper triangle, softmax over the last axis (positive index).
// CHECK-LABEL: func.func @causal(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<?x6x8xf32>, %[[K:[^:]+]]: tensor<?x6x8xf32>, %[[V:[^:]+]]: tensor<?x6x8xf32>)
// CHECK-NEXT:    %[[A:.+]] = nn.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.8284270763397217 : f64, scale_is_divisor} : tensor<?x6x8xf32>, tensor<?x6x8xf32>, tensor<?x6x8xf32> -> tensor<?x6x8xf32>
// CHECK-NEXT:    return %[[A]]
// ROUND-LABEL: func.func @causal(
// ROUND-DAG:     %[[MASK:.+]] = arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00
// ROUND-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// ROUND-DAG:     %[[SCALE:.+]] = arith.constant dense<2.82842708> : tensor<f32>
// ROUND:         %[[S:.+]] = nn.matmul %arg0, %arg1 {transpose_b} : tensor<?x6x8xf32>, tensor<?x6x8xf32> -> tensor<?x6x6xf32>
// ROUND-NEXT:    %[[D:.+]] = nn.div %[[S]], %[[SCALE]]
// ROUND-NEXT:    %[[W:.+]] = nn.where %[[MASK]], %[[INF]], %[[D]] : tensor<6x6xf32>, tensor<f32>, tensor<?x6x6xf32> -> tensor<?x6x6xf32>
// ROUND-NEXT:    %[[P:.+]] = nn.softmax %[[W]] {axis = 2 : i64}
// ROUND-NEXT:    %[[O:.+]] = nn.matmul %[[P]], %arg2 : tensor<?x6x6xf32>, tensor<?x6x8xf32> -> tensor<?x6x8xf32>
// ROUND-NEXT:    return %[[O]]
func.func @causal(%q: tensor<?x6x8xf32>, %k: tensor<?x6x8xf32>, %v: tensor<?x6x8xf32>) -> tensor<?x6x8xf32> {
  %mask = arith.constant dense<[[[0.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x6x6xf32>
  %inf = arith.constant dense<0xFF800000> : tensor<f32>
  %c = arith.constant dense<2.82842708> : tensor<f32>
  %0 = nn.matmul %q, %k {transpose_b} : tensor<?x6x8xf32>, tensor<?x6x8xf32> -> tensor<?x6x6xf32>
  %1 = nn.div %0, %c : tensor<?x6x6xf32>, tensor<f32> -> tensor<?x6x6xf32>
  %2 = nn.where %mask, %inf, %1 : tensor<1x6x6xf32>, tensor<f32>, tensor<?x6x6xf32> -> tensor<?x6x6xf32>
  %3 = nn.softmax %2 {axis = 2 : i64} : tensor<?x6x6xf32>
  %4 = nn.matmul %3, %v : tensor<?x6x6xf32>, tensor<?x6x8xf32> -> tensor<?x6x8xf32>
  return %4 : tensor<?x6x8xf32>
}

// -----

// Heads in their own dimension, a multiplied scale (as the constant's
// operand on either side) and an additive padding mask of [B, 1, 1, S];
// key and value of another length than the query.
// CHECK-LABEL: func.func @padding_mask(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x5x8xf64>, %[[K:[^:]+]]: tensor<2x4x7x8xf64>, %[[V:[^:]+]]: tensor<2x4x7x3xf64>, %[[M:[^:]+]]: tensor<2x1x1x7xf64>)
// CHECK-NEXT:    nn.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 1.250000e-01 : f64} : tensor<2x4x5x8xf64>, tensor<2x4x7x8xf64>, tensor<2x4x7x3xf64>, tensor<2x1x1x7xf64> -> tensor<2x4x5x3xf64>
// ROUND-LABEL: func.func @padding_mask(
// ROUND:         %[[S:.+]] = nn.matmul %arg0, %arg1 {transpose_b}
// ROUND-NEXT:    %[[M:.+]] = nn.mul %[[S]], %{{.+}} : tensor<2x4x5x7xf64>, tensor<f64>
// ROUND-NEXT:    %[[A:.+]] = nn.add %[[M]], %arg3 : tensor<2x4x5x7xf64>, tensor<2x1x1x7xf64>
// ROUND-NEXT:    %[[P:.+]] = nn.softmax %[[A]] {axis = 3 : i64}
// ROUND-NEXT:    nn.matmul %[[P]], %arg2 :
func.func @padding_mask(%q: tensor<2x4x5x8xf64>, %k: tensor<2x4x7x8xf64>, %v: tensor<2x4x7x3xf64>, %m: tensor<2x1x1x7xf64>) -> tensor<2x4x5x3xf64> {
  %c = arith.constant dense<0.125> : tensor<f64>
  %0 = nn.matmul %q, %k {transpose_b} : tensor<2x4x5x8xf64>, tensor<2x4x7x8xf64> -> tensor<2x4x5x7xf64>
  %1 = nn.mul %c, %0 : tensor<f64>, tensor<2x4x5x7xf64> -> tensor<2x4x5x7xf64>
  %2 = nn.add %m, %1 : tensor<2x1x1x7xf64>, tensor<2x4x5x7xf64> -> tensor<2x4x5x7xf64>
  %3 = nn.softmax %2 {axis = -1 : i64} : tensor<2x4x5x7xf64>
  %4 = nn.matmul %3, %v : tensor<2x4x5x7xf64>, tensor<2x4x7x3xf64> -> tensor<2x4x5x3xf64>
  return %4 : tensor<2x4x5x3xf64>
}

// -----

// Neither scale nor mask.
// CHECK-LABEL: func.func @plain(
// CHECK-NEXT:    nn.attention %arg0, %arg1, %arg2 : tensor<5x8xf32>, tensor<7x8xf32>, tensor<7x3xf32> -> tensor<5x3xf32>
func.func @plain(%q: tensor<5x8xf32>, %k: tensor<7x8xf32>, %v: tensor<7x3xf32>) -> tensor<5x3xf32> {
  %0 = nn.matmul %q, %k {transpose_b} : tensor<5x8xf32>, tensor<7x8xf32> -> tensor<5x7xf32>
  %1 = nn.softmax %0 : tensor<5x7xf32>
  %2 = nn.matmul %1, %v : tensor<5x7xf32>, tensor<7x3xf32> -> tensor<5x3xf32>
  return %2 : tensor<5x3xf32>
}

// -----

// nn.MultiheadAttention's export: the query scaled before the product and
// the key given as K^T by a Transpose of the [T, B*H, D] projection. The
// op takes K (a transpose of the last two dimensions); the decomposition
// multiplies K^T again, so the round trip is the exported graph.
// CHECK-LABEL: func.func @transposed_key(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<?x8x4xf32>, %[[X:[^:]+]]: tensor<8x?x4xf32>, %[[V:[^:]+]]: tensor<?x8x4xf32>)
// CHECK:         %[[QS:.+]] = nn.div %[[Q]]
// CHECK-NEXT:    %[[KT:.+]] = nn.transpose %[[X]] [1, 2, 0]
// CHECK-NEXT:    %[[K:.+]] = nn.transpose %[[KT]] [0, 2, 1] : tensor<?x4x8xf32> -> tensor<?x8x4xf32>
// CHECK-NEXT:    nn.attention %[[QS]], %[[K]], %[[V]] : tensor<?x8x4xf32>, tensor<?x8x4xf32>, tensor<?x8x4xf32> -> tensor<?x8x4xf32>
// ROUND-LABEL: func.func @transposed_key(
// ROUND:         %[[QS:.+]] = nn.div %arg0
// ROUND-NEXT:    %[[KT:.+]] = nn.transpose %arg1 [1, 2, 0]
// ROUND-NEXT:    %[[S:.+]] = nn.matmul %[[QS]], %[[KT]] : tensor<?x8x4xf32>, tensor<?x4x8xf32> -> tensor<?x8x8xf32>
// ROUND-NEXT:    %[[P:.+]] = nn.softmax %[[S]] {axis = 2 : i64}
// ROUND-NEXT:    nn.matmul %[[P]], %arg2
// ROUND-NOT:     nn.transpose
func.func @transposed_key(%q: tensor<?x8x4xf32>, %x: tensor<8x?x4xf32>, %v: tensor<?x8x4xf32>) -> tensor<?x8x4xf32> {
  %c = arith.constant dense<2.0> : tensor<f32>
  %0 = nn.div %q, %c : tensor<?x8x4xf32>, tensor<f32> -> tensor<?x8x4xf32>
  %1 = nn.transpose %x [1, 2, 0] : tensor<8x?x4xf32> -> tensor<?x4x8xf32>
  %2 = nn.matmul %0, %1 : tensor<?x8x4xf32>, tensor<?x4x8xf32> -> tensor<?x8x8xf32>
  %3 = nn.softmax %2 {axis = 2 : i64} : tensor<?x8x8xf32>
  %4 = nn.matmul %3, %v : tensor<?x8x8xf32>, tensor<?x8x4xf32> -> tensor<?x8x4xf32>
  return %4 : tensor<?x8x4xf32>
}

// -----

// Dropout on the probabilities (nn.MultiheadAttention's export in
// training): the op takes its seed, ratio and stream, and the round trip
// draws the same mask.
// CHECK-LABEL: func.func @dropout(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x8xf32>, %[[K:[^:]+]]: tensor<2x4x8xf32>, %[[V:[^:]+]]: tensor<2x4x8xf32>, %[[SEED:[^:]+]]: tensor<i64>)
// CHECK-NEXT:    %[[A:.+]] = nn.attention %[[Q]], %[[K]], %[[V]] dropout(%[[SEED]] : tensor<i64>) {dropout_ratio = 1.000000e-01 : f64, dropout_stream = 3 : i64, scale = 2.000000e+00 : f64, scale_is_divisor} : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    return %[[A]]
// ROUND-LABEL: func.func @dropout(
// ROUND:         %[[S:.+]] = nn.matmul %arg0, %arg1 {transpose_b}
// ROUND-NEXT:    %[[D:.+]] = nn.div %[[S]]
// ROUND-NEXT:    %[[P:.+]] = nn.softmax %[[D]] {axis = 2 : i64}
// ROUND-NEXT:    %[[K:.+]] = nn.dropout %[[P]], %arg3 {ratio = 1.000000e-01 : f64, stream = 3 : i64} : tensor<2x4x4xf32>, tensor<i64> -> tensor<2x4x4xf32>
// ROUND-NEXT:    nn.matmul %[[K]], %arg2 :
func.func @dropout(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %seed: tensor<i64>) -> tensor<2x4x8xf32> {
  %c = arith.constant dense<2.0> : tensor<f32>
  %0 = nn.matmul %q, %k {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %1 = nn.div %0, %c : tensor<2x4x4xf32>, tensor<f32> -> tensor<2x4x4xf32>
  %2 = nn.softmax %1 {axis = 2 : i64} : tensor<2x4x4xf32>
  %3 = nn.dropout %2, %seed {ratio = 0.1 : f64, stream = 3 : i64} : tensor<2x4x4xf32>, tensor<i64> -> tensor<2x4x4xf32>
  %4 = nn.matmul %3, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %4 : tensor<2x4x8xf32>
}

// -----

// Left alone, each for one reason: a softmax over another axis; probabilities
// that another op also reads before their dropout; a mask filled with -1e4
// (not additive); a triangle that is not the causal one; scores another op
// also reads; a product with a transposed query; a scale that is not a
// constant.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     nn.attention
// CHECK:         return
func.func @left_alone(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %s: tensor<f32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %seed = arith.constant dense<7> : tensor<i64>
  %fill = arith.constant dense<-1.0e+04> : tensor<f32>
  %inf = arith.constant dense<0xFF800000> : tensor<f32>
  %lower = arith.constant dense<[[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]]> : tensor<4x4xf32>
  %upper = arith.constant dense<[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>

  %a0 = nn.matmul %q, %q {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %a1 = nn.softmax %a0 {axis = 1 : i64} : tensor<2x4x4xf32>
  %a = nn.matmul %a1, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>

  %b0 = nn.matmul %q, %q {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %b1 = nn.softmax %b0 : tensor<2x4x4xf32>
  %b2 = nn.dropout %b1, %seed {ratio = 0.1 : f64} : tensor<2x4x4xf32>, tensor<i64> -> tensor<2x4x4xf32>
  %b = nn.matmul %b2, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %b3 = nn.add %b1, %b2 : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>

  %c0 = nn.matmul %q, %q {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %c1 = nn.where %upper, %fill, %c0 : tensor<4x4xf32>, tensor<f32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %c2 = nn.softmax %c1 : tensor<2x4x4xf32>
  %c = nn.matmul %c2, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>

  %d0 = nn.matmul %q, %q {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %d1 = nn.where %lower, %inf, %d0 : tensor<4x4xf32>, tensor<f32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %d2 = nn.softmax %d1 : tensor<2x4x4xf32>
  %d = nn.matmul %d2, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>

  %e0 = nn.matmul %q, %q {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %e1 = nn.softmax %e0 : tensor<2x4x4xf32>
  %e = nn.matmul %e1, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>

  %f0 = nn.matmul %kt, %kt {transpose_a} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  %f1 = nn.softmax %f0 : tensor<2x4x4xf32>
  %f = nn.matmul %f1, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>

  %g0 = nn.matmul %q, %q {transpose_b} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %g1 = nn.div %g0, %s : tensor<2x4x4xf32>, tensor<f32> -> tensor<2x4x4xf32>
  %g2 = nn.softmax %g1 : tensor<2x4x4xf32>
  %g = nn.matmul %g2, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %a, %b, %b3, %c, %d, %e, %e0, %f, %g : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Each product checks its own operands only, so key and value may disagree
// in a batch dimension the query leaves dynamic, and an additive mask may
// fix one: no nn.attention has this type, and the chain is left alone.
// CHECK-LABEL: func.func @no_attention_of_this_type(
// CHECK-NOT:     nn.attention
// CHECK:         return
func.func @no_attention_of_this_type(%q: tensor<?x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<3x4x8xf32>, %m: tensor<2x1x4xf32>) -> (tensor<?x4x8xf32>, tensor<2x4x8xf32>) {
  %0 = nn.matmul %q, %k {transpose_b} : tensor<?x4x8xf32>, tensor<2x4x8xf32> -> tensor<?x4x4xf32>
  %1 = nn.softmax %0 : tensor<?x4x4xf32>
  %2 = nn.matmul %1, %v : tensor<?x4x4xf32>, tensor<3x4x8xf32> -> tensor<?x4x8xf32>
  %3 = nn.matmul %q, %k {transpose_b} : tensor<?x4x8xf32>, tensor<2x4x8xf32> -> tensor<?x4x4xf32>
  %4 = nn.add %3, %m : tensor<?x4x4xf32>, tensor<2x1x4xf32> -> tensor<2x4x4xf32>
  %5 = nn.softmax %4 : tensor<2x4x4xf32>
  %6 = nn.matmul %5, %k : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %2, %6 : tensor<?x4x8xf32>, tensor<2x4x8xf32>
}

// RUN: split-file --leading-lines %s %t
// RUN: cleave-opt %t/ops.mlir | cleave-opt | FileCheck %s
// RUN: cleave-opt %t/ops.mlir --mlir-print-op-generic | cleave-opt | FileCheck %s
// RUN: cleave-opt %t/invalid.mlir --split-input-file --verify-diagnostics
// The decomposition has the op's type, dynamic batches included.
// RUN: cleave-opt %t/ops.mlir --cleave-decompose-attention | FileCheck %s --check-prefix=PARTS

//--- ops.mlir

// nn.attention round-trips in its custom and generic forms: with and without
// a mask, scale and causal flag; the result's batch and head dimensions are
// the query's, as nn.matmul's (a dynamic batch in the query, a static one in
// the key); key and value of their own length S and value width Dv.

// CHECK-LABEL: func.func @attention(
// CHECK: nn.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.000000e+00 : f64, scale_is_divisor} : tensor<?x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<?x4x6x8xf32>
// CHECK: nn.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f64} : tensor<3x5x8xf64>, tensor<3x7x8xf64>, tensor<3x7x2xf64>, tensor<3x1x7xf64> -> tensor<3x5x2xf64>
// CHECK: nn.attention %{{.+}}, %{{.+}}, %{{.+}} : tensor<5x8xf32>, tensor<7x8xf32>, tensor<7x3xf32> -> tensor<5x3xf32>
// CHECK: nn.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} dropout(%{{.+}} : tensor<i64>) {dropout_ratio = 2.500000e-01 : f64, dropout_stream = 4 : i64} : tensor<3x5x8xf64>, tensor<3x7x8xf64>, tensor<3x7x2xf64>, tensor<3x1x7xf64> -> tensor<3x5x2xf64>
// CHECK: nn.attention %{{.+}}, %{{.+}}, %{{.+}} dropout(%{{.+}} : tensor<i64>) {causal, dropout_ratio = 1.000000e-01 : f64} : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x3xf32> -> tensor<5x3xf32>
func.func @attention(%q: tensor<?x4x6x8xf32>, %k: tensor<2x4x6x8xf32>,
                     %v: tensor<2x4x6x8xf32>, %q2: tensor<3x5x8xf64>,
                     %k2: tensor<3x7x8xf64>, %v2: tensor<3x7x2xf64>,
                     %m2: tensor<3x1x7xf64>, %q3: tensor<5x8xf32>,
                     %k3: tensor<7x8xf32>, %v3: tensor<7x3xf32>,
                     %seed: tensor<i64>, %v4: tensor<5x3xf32>) {
  %0 = nn.attention %q, %k, %v {scale = 2.0 : f64, scale_is_divisor, causal} : tensor<?x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<?x4x6x8xf32>
  %1 = nn.attention %q2, %k2, %v2, %m2 {scale = 0.125 : f64} : tensor<3x5x8xf64>, tensor<3x7x8xf64>, tensor<3x7x2xf64>, tensor<3x1x7xf64> -> tensor<3x5x2xf64>
  %2 = nn.attention %q3, %k3, %v3 : tensor<5x8xf32>, tensor<7x8xf32>, tensor<7x3xf32> -> tensor<5x3xf32>
  %3 = nn.attention %q2, %k2, %v2, %m2 dropout(%seed : tensor<i64>) {dropout_ratio = 0.25 : f64, dropout_stream = 4 : i64} : tensor<3x5x8xf64>, tensor<3x7x8xf64>, tensor<3x7x2xf64>, tensor<3x1x7xf64> -> tensor<3x5x2xf64>
  %4 = nn.attention %q3, %q3, %v4 dropout(%seed : tensor<i64>) {dropout_ratio = 0.1 : f64, causal} : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x3xf32> -> tensor<5x3xf32>
  return
}

// The fused forms take dropout as keep, the scores' shape, with the ratio.
// CHECK-LABEL: func.func @fused_dropout(
// CHECK: nn.fused_attention %{{.+}}, %{{.+}}, %{{.+}} keep(%{{.+}}) {causal, dropout_ratio = 2.500000e-01 : f64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32>) -> (tensor<2x5x8xf32>, tensor<2x5xf32>)
// CHECK: nn.fused_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} keep(%{{.+}}) {dropout_ratio = 2.500000e-01 : f64}
func.func @fused_dropout(%q: tensor<2x5x8xf32>, %keep: tensor<2x5x5xf32>, %m: tensor<5x5xf32>) {
  %o, %lse = nn.fused_attention %q, %q, %q keep(%keep) {causal, dropout_ratio = 0.25 : f64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32>) -> (tensor<2x5x8xf32>, tensor<2x5xf32>)
  %dq, %dk, %dv = nn.fused_attention_grad %q, %q, %q, %o, %lse, %o, %m keep(%keep) {dropout_ratio = 0.25 : f64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5xf32>, tensor<2x5x8xf32>, tensor<5x5xf32>, tensor<2x5x5xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>)
  return
}

// PARTS-LABEL: func.func @attention(
// PARTS-NOT:     nn.attention
// PARTS:         nn.matmul %{{.+}}, %{{.+}} : tensor<?x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<?x4x6x8xf32>
// PARTS:         nn.matmul %{{.+}}, %{{.+}} : tensor<3x5x7xf64>, tensor<3x7x2xf64> -> tensor<3x5x2xf64>
// PARTS:         nn.matmul %{{.+}}, %{{.+}} : tensor<5x7xf32>, tensor<7x3xf32> -> tensor<5x3xf32>
// PARTS:         %[[P:.+]] = nn.softmax %{{.+}} {axis = 2 : i64} : tensor<3x5x7xf64>
// PARTS-NEXT:    %[[K:.+]] = nn.dropout %[[P]], %arg10 {ratio = 2.500000e-01 : f64, stream = 4 : i64}
// PARTS-NEXT:    nn.matmul %[[K]], %arg5 : tensor<3x5x7xf64>, tensor<3x7x2xf64> -> tensor<3x5x2xf64>
// PARTS:         nn.where
// PARTS-NEXT:    %[[P:.+]] = nn.softmax %{{.+}} {axis = 1 : i64} : tensor<5x5xf32>
// PARTS-NEXT:    %[[K:.+]] = nn.dropout %[[P]], %arg10 {ratio = 1.000000e-01 : f64} : tensor<5x5xf32>, tensor<i64>
// PARTS-NEXT:    nn.matmul %[[K]], %arg11 : tensor<5x5xf32>, tensor<5x3xf32> -> tensor<5x3xf32>

//--- invalid.mlir

func.func @head_dimension(%q: tensor<2x6x8xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x8xf32>) {
  // expected-error @+2 {{query [2, 6, 8] and key [2, 6, 4] differ in the head dimension}}
  // expected-error @+1 {{'nn.attention' op failed to infer returned types}}
  %0 = nn.attention %q, %k, %v : tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<2x6x8xf32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @value_length(%q: tensor<2x6x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x5x8xf32>) {
  // expected-error @+2 {{key [2, 6, 8] and value [2, 5, 8] differ in length}}
  // expected-error @+1 {{'nn.attention' op failed to infer returned types}}
  %0 = nn.attention %q, %k, %v : tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x5x8xf32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @batch(%q: tensor<2x6x8xf32>, %k: tensor<3x6x8xf32>, %v: tensor<3x6x8xf32>) {
  // expected-error @+2 {{batch dimension 0 differs: query [2, 6, 8], key [3, 6, 8]}}
  // expected-error @+1 {{'nn.attention' op failed to infer returned types}}
  %0 = nn.attention %q, %k, %v : tensor<2x6x8xf32>, tensor<3x6x8xf32>, tensor<3x6x8xf32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @batch_key_value(%q: tensor<?x6x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<3x6x8xf32>) {
  // expected-error @+2 {{batch dimension 0 differs: key [2, 6, 8], value [3, 6, 8]}}
  // expected-error @+1 {{'nn.attention' op failed to infer returned types}}
  %0 = nn.attention %q, %k, %v : tensor<?x6x8xf32>, tensor<2x6x8xf32>, tensor<3x6x8xf32> -> tensor<?x6x8xf32>
  return
}

// -----

func.func @mask_fixes_a_dynamic_dimension(%q: tensor<?x6x8xf32>, %m: tensor<2x1x6xf32>) {
  // expected-error @+1 {{'nn.attention' op mask [2, 1, 6] fixes dimension 0 of the scores [?, 6, 6], which the query and key leave dynamic}}
  %0 = nn.attention %q, %q, %q, %m : tensor<?x6x8xf32>, tensor<?x6x8xf32>, tensor<?x6x8xf32>, tensor<2x1x6xf32> -> tensor<?x6x8xf32>
  return
}

// -----

func.func @rank(%q: tensor<2x6x8xf32>, %k: tensor<6x8xf32>, %v: tensor<6x8xf32>) {
  // expected-error @+2 {{query, key and value must have one rank >= 2, got 3, 2 and 2}}
  // expected-error @+1 {{'nn.attention' op failed to infer returned types}}
  %0 = nn.attention %q, %k, %v : tensor<2x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @element_type(%q: tensor<6x8xf32>, %k: tensor<6x8xf64>, %v: tensor<6x8xf32>) {
  // expected-error @+2 {{query and key must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.attention' op failed to infer returned types}}
  %0 = nn.attention %q, %k, %v : tensor<6x8xf32>, tensor<6x8xf64>, tensor<6x8xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @mask_shape(%q: tensor<2x6x8xf32>, %m: tensor<2x6x5xf32>) {
  // expected-error @+1 {{'nn.attention' op mask [2, 6, 5] does not broadcast to the scores [2, 6, 6]}}
  %0 = nn.attention %q, %q, %q, %m : tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x5xf32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @mask_enlarges(%q: tensor<6x8xf32>, %m: tensor<2x6x6xf32>) {
  // expected-error @+1 {{'nn.attention' op mask [2, 6, 6] does not broadcast to the scores [6, 6]}}
  %0 = nn.attention %q, %q, %q, %m : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<2x6x6xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @mask_type(%q: tensor<6x8xf32>, %m: tensor<6x6xf64>) {
  // expected-error @+1 {{'nn.attention' op mask must have the element type of query, got 'f64'}}
  %0 = nn.attention %q, %q, %q, %m : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x6xf64> -> tensor<6x8xf32>
  return
}

// -----

func.func @divisor_without_scale(%q: tensor<6x8xf32>) {
  // expected-error @+1 {{'nn.attention' op scale_is_divisor needs a scale}}
  %0 = nn.attention %q, %q, %q {scale_is_divisor} : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @zero_scale(%q: tensor<6x8xf32>) {
  // expected-error @+1 {{'nn.attention' op scale must be finite and non-zero, got 0}}
  %0 = nn.attention %q, %q, %q {scale = 0.0 : f64} : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @causal_dynamic(%q: tensor<2x?x8xf32>) {
  // expected-error @+1 {{'nn.attention' op a causal mask needs static query and key lengths, got scores [2, ?, ?]}}
  %0 = nn.attention %q, %q, %q {causal} : tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32> -> tensor<2x?x8xf32>
  return
}

// -----

func.func @seed_without_ratio(%q: tensor<5x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'nn.attention' op dropout needs both a seed and a dropout_ratio, got a seed only}}
  %0 = nn.attention %q, %q, %q dropout(%seed : tensor<i64>) : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return
}

// -----

func.func @ratio_without_seed(%q: tensor<5x8xf32>) {
  // expected-error @+1 {{'nn.attention' op dropout needs both a seed and a dropout_ratio, got a dropout_ratio only}}
  %0 = nn.attention %q, %q, %q {dropout_ratio = 0.5 : f64} : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return
}

// -----

func.func @ratio_one(%q: tensor<5x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'nn.attention' op dropout_ratio must be in [0, 1), got 1}}
  %0 = nn.attention %q, %q, %q dropout(%seed : tensor<i64>) {dropout_ratio = 1.0 : f64} : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return
}

// -----

func.func @keep_without_ratio(%q: tensor<2x5x8xf32>, %keep: tensor<2x5x5xf32>) {
  // expected-error @+1 {{'nn.fused_attention' op dropout needs both keep and a dropout_ratio, got keep only}}
  %o, %lse = nn.fused_attention %q, %q, %q keep(%keep) : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32>) -> (tensor<2x5x8xf32>, tensor<2x5xf32>)
  return
}

// -----

func.func @keep_shape(%q: tensor<2x5x8xf32>, %keep: tensor<5x5xf32>) {
  // expected-error @+1 {{'nn.fused_attention' op keep must be 'tensor<2x5x5xf32>' (the scores), got 'tensor<5x5xf32>'}}
  %o, %lse = nn.fused_attention %q, %q, %q keep(%keep) {dropout_ratio = 0.5 : f64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<5x5xf32>) -> (tensor<2x5x8xf32>, tensor<2x5xf32>)
  return
}

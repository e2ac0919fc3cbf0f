// A pre-norm transformer block over token embeddings, exported by torch.onnx
// in training mode at opset 13 (layer norm as ReduceMean/Sub/Pow/.../Add,
// nn.Linear as MatMul(x, Transpose(W)) + b) and at opset 17
// (LayerNormalization). Both import to the same graph: embedding, layer
// norms, linears, multi-head attention with batch-symbolic reshapes, erf
// GELU, two dropouts on their own streams, residual adds.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_block13 %t.13.onnx
// RUN: cleave-opt --import-onnx %t.13.onnx | FileCheck %s
// RUN: %python %S/Inputs/make_model.py torch_block17 %t.17.onnx
// RUN: cleave-opt --import-onnx %t.17.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x8xi64> {train.input = "ids"},
// CHECK-SAME:    %[[EMB:[a-z0-9_]+]]: tensor<50x16xf32> {{[^}]+}}train.param = "embed.weight"},
// CHECK-SAME:    %[[G1:[a-z0-9_]+]]: tensor<16xf32> {{[^}]+}}train.param = "ln1.weight"},
// CHECK-SAME:    %[[B1:[a-z0-9_]+]]: tensor<16xf32> {{[^}]+}}train.param = "ln1.bias"},
// CHECK-SAME:    %[[WQ:[a-z0-9_]+]]: tensor<16x16xf32> {{[^}]+}}train.param = "q.weight"},
// CHECK-SAME:    %[[BQ:[a-z0-9_]+]]: tensor<16xf32> {{[^}]+}}train.param = "q.bias"},
// CHECK-SAME:    %[[WK:[a-z0-9_]+]]: tensor<16x16xf32> {{[^}]+}}train.param = "k.weight"},
// CHECK-SAME:    %[[BK:[a-z0-9_]+]]: tensor<16xf32> {{[^}]+}}train.param = "k.bias"},
// CHECK-SAME:    %[[WV:[a-z0-9_]+]]: tensor<16x16xf32> {{[^}]+}}train.param = "v.weight"},
// CHECK-SAME:    %[[BV:[a-z0-9_]+]]: tensor<16xf32> {{[^}]+}}train.param = "v.bias"},
// CHECK-SAME:    train.param = "proj.weight"
// CHECK-SAME:    train.param = "ln2.weight"
// CHECK-SAME:    train.param = "fc1.weight"
// CHECK-SAME:    train.param = "fc2.weight"
// CHECK-SAME:    train.param = "head.weight"
// CHECK-SAME:    %[[SEED:[a-z0-9_]+]]: tensor<i64> {train.rng})
// CHECK-SAME:    -> tensor<?x5xf32>
// The attention scale, sqrt(16 / 2), folded from Shape/Gather/Div/Cast/Pow.
// CHECK-NEXT:    %[[SCALE:.+]] = arith.constant dense<2.82842708> : tensor<f32>
// CHECK-NEXT:    %[[X:.+]] = nn.embedding %[[IDS]], %[[EMB]] : tensor<?x8xi64>, tensor<50x16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[H:.+]] = nn.layer_norm %[[X]], %[[G1]] bias %[[B1]] : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[Q:.+]] = nn.linear %[[H]], %[[WQ]], %[[BQ]] : tensor<?x8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[QH:.+]] = nn.reshape %[[Q]] [-1, 8, 2, 8] : tensor<?x8x16xf32> -> tensor<?x8x2x8xf32>
// CHECK-NEXT:    %[[QT:.+]] = nn.transpose %[[QH]] [0, 2, 1, 3] : tensor<?x8x2x8xf32> -> tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[K:.+]] = nn.linear %[[H]], %[[WK]], %[[BK]]
// CHECK-NEXT:    %[[KH:.+]] = nn.reshape %[[K]] [-1, 8, 2, 8]
// CHECK-NEXT:    %[[V:.+]] = nn.linear %[[H]], %[[WV]], %[[BV]]
// CHECK-NEXT:    %[[VH:.+]] = nn.reshape %[[V]] [-1, 8, 2, 8]
// CHECK-NEXT:    %[[VT:.+]] = nn.transpose %[[VH]] [0, 2, 1, 3]
// CHECK-NEXT:    %[[KT:.+]] = nn.transpose %[[KH]] [0, 2, 3, 1] : tensor<?x8x2x8xf32> -> tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[S:.+]] = nn.matmul %[[QT]], %[[KT]] : tensor<?x2x8x8xf32>, tensor<?x2x8x8xf32> -> tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[SS:.+]] = nn.div %[[S]], %[[SCALE]] : tensor<?x2x8x8xf32>, tensor<f32> -> tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[P:.+]] = nn.softmax %[[SS]] {axis = 3 : i64} : tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[PD:.+]] = nn.dropout %[[P]], %[[SEED]] {ratio = 1.000000e-01 : f64} : tensor<?x2x8x8xf32>, tensor<i64> -> tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[A:.+]] = nn.matmul %[[PD]], %[[VT]]
// CHECK-NEXT:    %[[AT:.+]] = nn.transpose %[[A]] [0, 2, 1, 3] : tensor<?x2x8x8xf32> -> tensor<?x8x2x8xf32>
// CHECK-NEXT:    %[[AM:.+]] = nn.reshape %[[AT]] [-1, 8, 16] : tensor<?x8x2x8xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[O:.+]] = nn.linear %[[AM]], %{{.+}}, %{{.+}} : tensor<?x8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[R1:.+]] = nn.add %[[X]], %[[O]] : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[H2:.+]] = nn.layer_norm %[[R1]], %{{.+}} bias %{{.+}} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[U:.+]] = nn.linear %[[H2]], %{{.+}}, %{{.+}} : tensor<?x8x16xf32>, tensor<64x16xf32>, tensor<64xf32> -> tensor<?x8x64xf32>
// CHECK-NEXT:    %[[GU:.+]] = nn.gelu %[[U]] : tensor<?x8x64xf32>
// CHECK-NEXT:    %[[GD:.+]] = nn.dropout %[[GU]], %[[SEED]] {ratio = 1.000000e-01 : f64, stream = 1 : i64}
// CHECK-NEXT:    %[[D:.+]] = nn.linear %[[GD]], %{{.+}}, %{{.+}} : tensor<?x8x64xf32>, tensor<16x64xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK-NEXT:    %[[R2:.+]] = nn.add %[[R1]], %[[D]]
// CHECK-NEXT:    %[[POOL:.+]] = nn.reduce_mean %[[R2]] [1] : tensor<?x8x16xf32> -> tensor<?x16xf32>
// CHECK-NEXT:    %[[LOGITS:.+]] = nn.linear %[[POOL]], %{{.+}}, %{{.+}} : tensor<?x16xf32>, tensor<5x16xf32>, tensor<5xf32> -> tensor<?x5xf32>
// CHECK-NEXT:    return %[[LOGITS]] : tensor<?x5xf32>

// nn.MultiheadAttention as torch 1.13 exports it for training (dropout 0):
// the query divided by sqrt(D) before the product, the key as K^T (a
// Transpose of the [T, B*H, D] projection), the scores from baddbmm (times
// alpha = 1, plus the key-padding mask of [B*H, 1, S] times beta = 1).
// cleave-recompose-attention makes it one nn.attention with the mask as an
// operand, and cleave-decompose-attention gives back the imported graph to
// the byte once canonicalised. With dropout on the probabilities
// (torch.nn.TransformerEncoderLayer in training, torch-encoder.mlir's
// model) each layer's attention is one nn.attention that takes the
// dropout's seed and stream, and the round trip is again the imported graph.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_encoder_key_padding %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx --cleave-recompose-attention | FileCheck %s
// RUN: cleave-opt --import-onnx %t.onnx --canonicalize -o %t.imported.mlir
// RUN: cleave-opt --import-onnx %t.onnx --cleave-recompose-attention --cleave-decompose-attention --canonicalize -o %t.round.mlir
// RUN: diff %t.imported.mlir %t.round.mlir
// RUN: %python %S/Inputs/make_model.py torch_encoder %t.dropout.onnx
// RUN: cleave-opt --import-onnx %t.dropout.onnx --cleave-recompose-attention | FileCheck %s --check-prefix=DROPOUT
// RUN: cleave-opt --import-onnx %t.dropout.onnx --canonicalize -o %t.dropout.imported.mlir
// RUN: cleave-opt --import-onnx %t.dropout.onnx --cleave-recompose-attention --cleave-decompose-attention --canonicalize -o %t.dropout.round.mlir
// RUN: diff %t.dropout.imported.mlir %t.dropout.round.mlir

// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     nn.softmax
// CHECK:         %[[Q:.+]] = nn.div
// CHECK-NEXT:    %[[KT:.+]] = nn.transpose %{{.+}} [1, 2, 0] : tensor<6x?x4xf32> -> tensor<?x4x6xf32>
// CHECK-NEXT:    %[[MASK:.+]] = nn.mul %{{.+}}, %{{.+}} : tensor<?x1x6xf32>, tensor<f32> -> tensor<?x1x6xf32>
// CHECK-NEXT:    %[[K:.+]] = nn.transpose %[[KT]] [0, 2, 1] : tensor<?x4x6xf32> -> tensor<?x6x4xf32>
// CHECK-NEXT:    nn.attention %[[Q]], %[[K]], %{{.+}}, %[[MASK]] {scale = 1.000000e+00 : f64} : tensor<?x6x4xf32>, tensor<?x6x4xf32>, tensor<?x6x4xf32>, tensor<?x1x6xf32> -> tensor<?x6x4xf32>
// CHECK-NOT:     nn.softmax

// DROPOUT-LABEL: func.func @forward(
// DROPOUT-SAME:    %[[SEED:[^:]+]]: tensor<i64> {train.rng}
// DROPOUT-NOT:     nn.softmax
// DROPOUT:         nn.attention %{{.+}}, %{{.+}}, %{{.+}} dropout(%[[SEED]] : tensor<i64>) {dropout_ratio = 1.000000e-01 : f64} : tensor<?x8x8xf32>, tensor<?x8x8xf32>, tensor<?x8x8xf32> -> tensor<?x8x8xf32>
// DROPOUT-NOT:     nn.softmax
// DROPOUT:         nn.attention %{{.+}}, %{{.+}}, %{{.+}} dropout(%[[SEED]] : tensor<i64>) {dropout_ratio = 1.000000e-01 : f64, dropout_stream = 4 : i64} : tensor<?x8x8xf32>, tensor<?x8x8xf32>, tensor<?x8x8xf32> -> tensor<?x8x8xf32>
// DROPOUT-NOT:     nn.softmax

// Shapes whose entries are multiples k * B of the batch size B (heads * B
// in nn.MultiheadAttention): nn.broadcast_to's -1 is B itself, so such an
// entry is broadcast as the two axes [B, k] and merged by a reshape, which
// specialises with the batch like any other.
//
// RUN: %python %S/Inputs/make_model.py batch_multiples %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s
// The same folded back into rows of the batch (a prediction must start
// with the batch) specialises to micro-batch 3.
// RUN: %python %S/Inputs/make_model.py batch_multiples_rows %t.rows.onnx
// RUN: cleave-compile %t.rows.onnx --loss=mse --micro-batch=3 --compile-to=loss | FileCheck %s --check-prefix=SPECIALISED
// Without that, the prediction's first dimension is 2 * B: refused.
// RUN: not cleave-compile %t.onnx --loss=mse --micro-batch=3 --compile-to=loss 2>&1 | FileCheck %s --check-prefix=NOT-BATCH-FIRST
// torch.nn.TransformerEncoder with src_key_padding_mask (torch 1.13): the
// mask [B, T] is expanded over the heads and reshaped to [B * heads, 1, T],
// and the zeros it selects -inf against are a ConstantOfShape of that shape.
// RUN: %python %S/Inputs/make_model.py torch_encoder_key_padding %t.encoder.onnx
// RUN: cleave-opt --import-onnx %t.encoder.onnx | FileCheck %s --check-prefix=ENCODER

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x6xf32> {train.input = "x"},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: tensor<1x4xf32> {{.+}}train.param = "b"
// CHECK-SAME:    -> (tensor<?x4xf32>, tensor<?x1x3xf32>)
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[B3:.+]] = nn.reshape %[[B]] [1, 1, 4] : tensor<1x4xf32> -> tensor<1x1x4xf32>
// CHECK-NEXT:    %[[BB:.+]] = nn.broadcast_to %[[B3]] [-1, 2, 4] batch_of %[[X]] : tensor<1x1x4xf32>, tensor<?x6xf32> -> tensor<?x2x4xf32>
// CHECK-NEXT:    %[[Y:.+]] = nn.reshape %[[BB]] [-1, 4] : tensor<?x2x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    %[[Z4:.+]] = nn.broadcast_to %[[ZERO]] [-1, 2, 1, 3] batch_of %[[X]] : tensor<f32>, tensor<?x6xf32> -> tensor<?x2x1x3xf32>
// CHECK-NEXT:    %[[Z:.+]] = nn.reshape %[[Z4]] [-1, 1, 3] : tensor<?x2x1x3xf32> -> tensor<?x1x3xf32>
// CHECK-NEXT:    %[[FLAT:.+]] = nn.reshape %[[X]] [-1, 1, 3] : tensor<?x6xf32> -> tensor<?x1x3xf32>
// CHECK-NEXT:    %[[SUM:.+]] = nn.add %[[Z]], %[[FLAT]] : tensor<?x1x3xf32>, tensor<?x1x3xf32> -> tensor<?x1x3xf32>
// CHECK-NEXT:    return %[[Y]], %[[SUM]]

// At micro-batch 3 every size is static: 2 * B is 6.
// SPECIALISED-LABEL: func.func @forward(
// SPECIALISED:         nn.broadcast_to {{.+}} -> tensor<3x2x4xf32>
// SPECIALISED-NEXT:    nn.reshape {{.+}} : tensor<3x2x4xf32> -> tensor<6x4xf32>
// SPECIALISED-NEXT:    nn.broadcast_to {{.+}} -> tensor<3x2x1x3xf32>
// SPECIALISED-NEXT:    nn.reshape {{.+}} : tensor<3x2x1x3xf32> -> tensor<6x1x3xf32>
// SPECIALISED:         nn.reshape {{.+}} : tensor<6x4xf32> -> tensor<3x8xf32>

// NOT-BATCH-FIRST: error: the prediction 'tensor<6x4xf32>' does not start with the batch dimension of input 'x' 'tensor<3x6xf32>'; the loss is per sample along the prediction's first dimension

// ENCODER-LABEL: func.func @forward(
// ENCODER-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x6xi64> {train.input = "ids"},
// ENCODER-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// ENCODER-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// ENCODER:         %[[PAD:.+]] = nn.compare <eq>, %[[IDS]]
// ENCODER:         %[[M4:.+]] = nn.reshape %[[PAD]] [-1, 1, 1, 6] : tensor<?x6xf32> -> tensor<?x1x1x6xf32>
// ENCODER-NEXT:    %[[HEADS:.+]] = nn.broadcast_to %[[M4]] [-1, 2, 1, 6] batch_of %[[IDS]]
// ENCODER-NEXT:    %[[M:.+]] = nn.reshape %[[HEADS]] [-1, 1, 6] : tensor<?x2x1x6xf32> -> tensor<?x1x6xf32>
// ENCODER-NEXT:    %[[Z4:.+]] = nn.broadcast_to %[[ZERO]] [-1, 2, 1, 6] batch_of %[[IDS]] : tensor<f32>, tensor<?x6xi64> -> tensor<?x2x1x6xf32>
// ENCODER-NEXT:    %[[Z:.+]] = nn.reshape %[[Z4]] [-1, 1, 6] : tensor<?x2x1x6xf32> -> tensor<?x1x6xf32>
// ENCODER-NEXT:    %[[MB:.+]] = nn.compare <ne>, %[[M]], %[[ZERO]]
// ENCODER-NEXT:    %[[BIAS:.+]] = nn.where %[[MB]], %[[INF]], %[[Z]] : tensor<?x1x6xf32>, tensor<f32>, tensor<?x1x6xf32> -> tensor<?x1x6xf32>
// ENCODER:         %[[SCORES:.+]] = nn.matmul
// ENCODER:         nn.add %{{.+}}, %{{.+}} : tensor<?x6x6xf32>, tensor<?x1x6xf32> -> tensor<?x6x6xf32>

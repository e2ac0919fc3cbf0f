// torch.nn.TransformerEncoder (pre-norm, GELU, batch_first, dropout on),
// exported by torch.onnx for training at opset 14 with a dynamic batch.
// nn.MultiheadAttention runs sequence-first, so the batch is dimension 1 of
// its tensors: the packed q/k/v projection is split with Slice along the
// features of a [T, B, 3D] tensor, and the heads are reshaped to
// [T, B * H, D / H] with shapes computed from Shape/Gather/Mul. Both import
// with the batch kept symbolic, and the model compiles to an artifact.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_encoder %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s
// Dropout on the attention probabilities is part of each layer's
// nn.attention (torch-attention.mlir checks the op and the round trip). On
// cuda in bf16 both layers' attention is cuDNN's fused kernel, forward and
// backward, multiplying the probabilities by the keep mask nn.dropout draws.
// RUN: cleave-opt --import-onnx %t.onnx --cleave-recompose-attention | FileCheck %s --check-prefix=RECOMPOSED
// RECOMPOSED-NOT: nn.softmax
// RECOMPOSED-COUNT-2: nn.attention {{.+}} dropout(
// RECOMPOSED-NOT: nn.softmax
// RUN: cleave-compile %t.onnx --target=cuda --precision=bf16 --micro-batch=4 --compile-to=grad 2>&1 | FileCheck %s --check-prefix=CUDA-BF16
// CUDA-BF16-NOT: warning: attention is spelt out
// CUDA-BF16-LABEL: func.func @loss_grad(
// CUDA-BF16-COUNT-2: nn.fused_attention {{.+}} keep({{.+}}) {dropout_ratio = 1.000000e-01 : f64}
// CUDA-BF16-COUNT-2: nn.fused_attention_grad {{.+}} keep({{.+}}) {dropout_ratio = 1.000000e-01 : f64}
// RUN: cleave-compile %t.onnx --micro-batch=4 --compile-to=split | FileCheck %s --check-prefix=SPLIT
// RUN: cleave-compile %t.onnx --micro-batch=4 --accumulate=2 -o %t.cleave

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x8x6xf32> {train.input = "x"},
// CHECK-SAME:    train.param = "encoder.layers.0.self_attn.in_proj_weight"
// CHECK-SAME:    -> tensor<?x5xf32>
// CHECK:         %[[H:.+]] = nn.layer_norm
// CHECK-NEXT:    %[[HT:.+]] = nn.transpose %[[H]] [1, 0, 2] : tensor<?x8x16xf32> -> tensor<8x?x16xf32>
// CHECK-NEXT:    %[[QKV:.+]] = nn.linear %[[HT]], %{{.+}}, %{{.+}} : tensor<8x?x16xf32>, tensor<48x16xf32>, tensor<48xf32> -> tensor<8x?x48xf32>
// CHECK-NEXT:    %[[Q:.+]] = nn.slice %[[QKV]] starts [0, 0, 0] sizes [8, -1, 16] strides [1, 1, 1] : tensor<8x?x48xf32> -> tensor<8x?x16xf32>
// CHECK-NEXT:    %[[K:.+]] = nn.slice %[[QKV]] starts [0, 0, 16] sizes [8, -1, 16] strides [1, 1, 1] : tensor<8x?x48xf32> -> tensor<8x?x16xf32>
// CHECK-NEXT:    %[[V:.+]] = nn.slice %[[QKV]] starts [0, 0, 32] sizes [8, -1, 16] strides [1, 1, 1] : tensor<8x?x48xf32> -> tensor<8x?x16xf32>
// CHECK-NEXT:    %[[QH:.+]] = nn.reshape %[[Q]] [8, -1, 8] : tensor<8x?x16xf32> -> tensor<8x?x8xf32>
// CHECK-NEXT:    nn.transpose %[[QH]] [1, 0, 2] : tensor<8x?x8xf32> -> tensor<?x8x8xf32>
// CHECK:         nn.matmul {{.+}} : tensor<?x8x8xf32>, tensor<?x8x8xf32> -> tensor<?x8x8xf32>
// CHECK-NEXT:    nn.softmax
// CHECK-NEXT:    nn.dropout
// CHECK:         %[[HEADS:.+]] = nn.transpose %{{.+}} [1, 0, 2] : tensor<?x8x8xf32> -> tensor<8x?x8xf32>
// CHECK-NEXT:    %[[ROWS:.+]] = nn.reshape %[[HEADS]] [-1, 16] : tensor<8x?x8xf32> -> tensor<?x16xf32>
// CHECK-NEXT:    %[[O:.+]] = nn.linear %[[ROWS]]
// CHECK-NEXT:    nn.reshape %[[O]] [8, -1, 16] : tensor<?x16xf32> -> tensor<8x?x16xf32>

// Specialised to the micro-batch: the slices are static, and their
// gradients pad back into the packed projection.
// SPLIT-LABEL: func.func @micro_step(
// SPLIT:         nn.slice %{{.+}} starts [0, 0, 16] sizes [8, 4, 16] strides [1, 1, 1] : tensor<8x4x48xf32> -> tensor<8x4x16xf32>
// SPLIT:         nn.pad %{{.+}} starts [0, 0, 16] strides [1, 1, 1] shape [8, 4, 48] : tensor<8x4x16xf32> -> tensor<8x4x48xf32>
// SPLIT-LABEL: func.func @apply_step(

// Causal self-attention as GPT-style decoders write it, exported by
// torch.onnx for training at opset 14 with a dynamic batch. The mask is a
// registered buffer: an initializer that only views (Slice) and a
// comparison read, so it stays a constant and folds, while the position
// embedding, sliced the same way but added to activations, is a parameter.
// masked_fill(-inf) is an nn.where.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_causal %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s
// The mask built in forward (torch.triu of ones: ConstantOfShape, Trilu)
// folds to the same constant.
// RUN: %python %S/Inputs/make_model.py torch_causal_triu %t.triu.onnx
// RUN: cleave-opt --import-onnx %t.triu.onnx | FileCheck %s --check-prefix=TRIU
// The chain from Q K^T to P V is one nn.attention: causal, divided by
// sqrt(D).
// RUN: cleave-opt --import-onnx %t.onnx --cleave-recompose-attention | FileCheck %s --check-prefix=FUSED
// On cuda the mask is read by the kernels from their own modules (device
// memory), never passed from the host, where it is an address in the
// artifact's read-only data.
// RUN: cleave-compile %t.onnx --micro-batch=4 --target=cuda --compile-to=gpu | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x6xi64> {train.input = "ids"},
// CHECK-SAME:    train.param = "embed.weight"
// CHECK-SAME:    %[[POS:[a-z0-9_]+]]: tensor<1x6x8xf32> {{.+}}train.param = "pos"
// CHECK-NOT:     "mask"
// CHECK-SAME:    -> tensor<?x20xf32>
// CHECK-DAG:     %[[MASK:.+]] = arith.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00]
// CHECK-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// CHECK:         nn.slice %[[POS]] starts [0, 0, 0] sizes [1, 6, 8] strides [1, 1, 1]
// CHECK:         %[[S:.+]] = nn.div
// CHECK-NEXT:    %[[W:.+]] = nn.where %[[MASK]], %[[INF]], %[[S]] : tensor<1x6x6xf32>, tensor<f32>, tensor<?x6x6xf32> -> tensor<?x6x6xf32>
// CHECK-NEXT:    nn.softmax %[[W]] {axis = 2 : i64}

// FUSED-LABEL: func.func @forward(
// FUSED-NOT:     nn.softmax
// FUSED:         %[[Q:.+]] = nn.slice %[[QKV:.+]] starts [0, 0, 0] sizes [-1, 6, 8]
// FUSED-NEXT:    %[[K:.+]] = nn.slice %[[QKV]] starts [0, 0, 8] sizes [-1, 6, 8]
// FUSED-NEXT:    %[[V:.+]] = nn.slice %[[QKV]] starts [0, 0, 16] sizes [-1, 6, 8]
// FUSED-NEXT:    nn.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.8284270763397217 : f64, scale_is_divisor} : tensor<?x6x8xf32>, tensor<?x6x8xf32>, tensor<?x6x8xf32> -> tensor<?x6x8xf32>
// FUSED-NOT:     nn.softmax

// TRIU-LABEL: func.func @forward(
// TRIU-DAG:     %[[MASK:.+]] = arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00
// TRIU-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// TRIU:         %[[S:.+]] = nn.div
// TRIU-NEXT:    %[[W:.+]] = nn.where %[[MASK]], %[[INF]], %[[S]] : tensor<6x6xf32>, tensor<f32>, tensor<?x6x6xf32> -> tensor<?x6x6xf32>
// TRIU-NEXT:    nn.softmax %[[W]] {axis = 2 : i64}

// CUDA-NOT:     memref.global
// CUDA-LABEL:   func.func @micro_step(
// CUDA-NOT:     memref.get_global
// CUDA:         return
// CUDA:         gpu.module
// (The mask is the [T, S] one cleave-decompose-attention builds.)
// CUDA:         memref.get_global @[[MASK:__constant_6x6xf32]] : memref<6x6xf32>
// CUDA:         memref.global "private" constant @[[MASK]] : memref<6x6xf32> = dense<{{\[\[}}0.000000e+00, 1.000000e+00

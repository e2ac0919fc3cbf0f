// An MLP exported by torch.onnx (opset 13): Flatten, then nn.Linear as
// Gemm(transB = 1), then Relu. Imported, then trained through the whole
// pipeline to the two graphs of a step.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_mlp %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s
// RUN: cleave-opt --import-onnx %t.onnx \
// RUN:   --cleave-train-pipeline="micro-batch=4 accumulate=2 optimizer=adam" \
// RUN:   | FileCheck %s --check-prefix=SPLIT

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x4x4xf32> {train.input = "image"},
// CHECK-SAME:    %[[W1:[a-z0-9_]+]]: tensor<8x16xf32> {train.init = dense<{{[^}]+}}> : tensor<8x16xf32>, train.param = "1.weight"},
// CHECK-SAME:    %[[B1:[a-z0-9_]+]]: tensor<8xf32> {train.init = dense<{{[^}]+}}> : tensor<8xf32>, train.param = "1.bias"},
// CHECK-SAME:    %[[W2:[a-z0-9_]+]]: tensor<3x8xf32> {train.init = dense<{{[^}]+}}> : tensor<3x8xf32>, train.param = "3.weight"},
// CHECK-SAME:    %[[B2:[a-z0-9_]+]]: tensor<3xf32> {train.init = dense<{{[^}]+}}> : tensor<3xf32>, train.param = "3.bias"})
// CHECK-SAME:    -> tensor<?x3xf32>
// CHECK-NEXT:    %[[F:.+]] = nn.flatten %[[X]] : tensor<?x1x4x4xf32> -> tensor<?x16xf32>
// CHECK-NEXT:    %[[H:.+]] = nn.linear %[[F]], %[[W1]], %[[B1]] : tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<?x8xf32>
// CHECK-NEXT:    %[[R:.+]] = nn.relu %[[H]] : tensor<?x8xf32>
// CHECK-NEXT:    %[[Y:.+]] = nn.linear %[[R]], %[[W2]], %[[B2]] : tensor<?x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<?x3xf32>
// CHECK-NEXT:    return %[[Y]] : tensor<?x3xf32>

// The exported weights are the parameters' initial values.
// SPLIT:       train.global param @"1.weight" : tensor<8x16xf32> = dense<
// SPLIT:       train.global param @"3.bias" : tensor<3xf32> = dense<
// SPLIT-LABEL: func.func @micro_step(
// SPLIT-SAME:    tensor<4x1x4x4xf32> {train.input = "image"}
// SPLIT:         nn.linear
// SPLIT:         train.accumulate
// SPLIT-LABEL: func.func @apply_step(
// SPLIT:         train.adam

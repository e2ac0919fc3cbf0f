// A LeNet-style CNN exported by torch.onnx at opsets 13 and 17. The
// `x.view(x.size(0), -1)` before the classifier is exported as
// Shape/Gather/Unsqueeze/Concat/Reshape; it folds to one nn.reshape whose
// batch dimension stays symbolic.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_lenet13 %t.13.onnx
// RUN: cleave-opt --import-onnx %t.13.onnx | FileCheck %s
// RUN: %python %S/Inputs/make_model.py torch_lenet17 %t.17.onnx
// RUN: cleave-opt --import-onnx %t.17.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x28x28xf32> {train.input = "image"},
// CHECK-SAME:    %[[W1:[a-z0-9_]+]]: tensor<6x1x5x5xf32> {{[^}]+}}train.param = "conv1.weight"},
// CHECK-SAME:    %[[B1:[a-z0-9_]+]]: tensor<6xf32> {{[^}]+}}train.param = "conv1.bias"},
// CHECK-SAME:    %[[W2:[a-z0-9_]+]]: tensor<16x6x5x5xf32> {{[^}]+}}train.param = "conv2.weight"},
// CHECK-SAME:    %[[B2:[a-z0-9_]+]]: tensor<16xf32> {{[^}]+}}train.param = "conv2.bias"},
// CHECK-SAME:    %[[W3:[a-z0-9_]+]]: tensor<10x400xf32> {{[^}]+}}train.param = "fc.weight"},
// CHECK-SAME:    %[[B3:[a-z0-9_]+]]: tensor<10xf32> {{[^}]+}}train.param = "fc.bias"})
// CHECK-SAME:    -> tensor<?x10xf32>
// CHECK-NOT:     arith.constant
// CHECK:         %[[C1:.+]] = nn.conv2d %[[X]], %[[W1]], %[[B1]] {padding = array<i64: 2, 2, 2, 2>} : tensor<?x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32> -> tensor<?x6x28x28xf32>
// CHECK-NEXT:    %[[R1:.+]] = nn.relu %[[C1]]
// CHECK-NEXT:    %[[P1:.+]] = nn.max_pool2d %[[R1]] {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<?x6x28x28xf32> -> tensor<?x6x14x14xf32>
// CHECK-NEXT:    %[[C2:.+]] = nn.conv2d %[[P1]], %[[W2]], %[[B2]] : tensor<?x6x14x14xf32>, tensor<16x6x5x5xf32>, tensor<16xf32> -> tensor<?x16x10x10xf32>
// CHECK-NEXT:    %[[R2:.+]] = nn.relu %[[C2]]
// CHECK-NEXT:    %[[P2:.+]] = nn.max_pool2d %[[R2]] {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<?x16x10x10xf32> -> tensor<?x16x5x5xf32>
// CHECK-NEXT:    %[[F:.+]] = nn.reshape %[[P2]] [-1, 400] : tensor<?x16x5x5xf32> -> tensor<?x400xf32>
// CHECK-NEXT:    %[[Y:.+]] = nn.linear %[[F]], %[[W3]], %[[B3]] : tensor<?x400xf32>, tensor<10x400xf32>, tensor<10xf32> -> tensor<?x10xf32>
// CHECK-NEXT:    return %[[Y]]

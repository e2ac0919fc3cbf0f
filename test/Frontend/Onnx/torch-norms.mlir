// nn.GroupNorm, nn.InstanceNorm2d and AdaptiveMaxPool2d(1) exported by
// torch.onnx at opsets 13 and 17 (training mode, no constant folding).
// torch 1.13 writes GroupNorm as InstanceNormalization of x reshaped to
// [N, G, -1] with constant unit scale and zero bias (left out here), the
// reshape back through Shape(x), and the per-channel affine map as Mul/Add.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_norms13 %t.13.onnx
// RUN: cleave-opt --import-onnx %t.13.onnx | FileCheck %s
// RUN: %python %S/Inputs/make_model.py torch_norms17 %t.17.onnx
// RUN: cleave-opt --import-onnx %t.17.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x6x6xf32> {train.input = "image"},
// CHECK-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x2x3x3xf32> {{[^}]+}}train.param = "0.weight"},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {{[^}]+}}train.param = "0.bias"},
// CHECK-SAME:    %[[GG:[a-z0-9_]+]]: tensor<4xf32> {{[^}]+}}train.param = "1.weight"},
// CHECK-SAME:    %[[GB:[a-z0-9_]+]]: tensor<4xf32> {{[^}]+}}train.param = "1.bias"},
// CHECK-SAME:    %[[IG:[a-z0-9_]+]]: tensor<4xf32> {{[^}]+}}train.param = "3.weight"},
// CHECK-SAME:    %[[IB:[a-z0-9_]+]]: tensor<4xf32> {{[^}]+}}train.param = "3.bias"})
// CHECK-NOT:     arith.constant
// CHECK:         %[[C:.+]] = nn.conv2d %[[X]], %[[W]], %[[B]]
// CHECK-NEXT:    %[[G:.+]] = nn.reshape %[[C]] [-1, 2, 72] : tensor<?x4x6x6xf32> -> tensor<?x2x72xf32>
// CHECK-NEXT:    %[[GN:.+]] = nn.layer_norm %[[G]] {axis = 2 : i64} : tensor<?x2x72xf32> -> tensor<?x2x72xf32>
// CHECK-NEXT:    %[[U:.+]] = nn.reshape %[[GN]] [-1, 4, 6, 6] : tensor<?x2x72xf32> -> tensor<?x4x6x6xf32>
// CHECK-NEXT:    %[[GGC:.+]] = nn.reshape %[[GG]] [4, 1, 1]
// CHECK-NEXT:    %[[M:.+]] = nn.mul %[[U]], %[[GGC]]
// CHECK-NEXT:    %[[GBC:.+]] = nn.reshape %[[GB]] [4, 1, 1]
// CHECK-NEXT:    %[[A:.+]] = nn.add %[[M]], %[[GBC]]
// CHECK-NEXT:    %[[R:.+]] = nn.relu %[[A]]
// CHECK-NEXT:    %[[IN:.+]] = nn.layer_norm %[[R]] {axis = 2 : i64} : tensor<?x4x6x6xf32> -> tensor<?x4x6x6xf32>
// CHECK-NEXT:    %[[IGC:.+]] = nn.reshape %[[IG]] [4, 1, 1]
// CHECK-NEXT:    %[[IM:.+]] = nn.mul %[[IN]], %[[IGC]]
// CHECK-NEXT:    %[[IBC:.+]] = nn.reshape %[[IB]] [4, 1, 1]
// CHECK-NEXT:    %[[IA:.+]] = nn.add %[[IM]], %[[IBC]]
// CHECK-NEXT:    %[[P:.+]] = nn.max_pool2d %[[IA]] {kernel_size = array<i64: 6, 6>, strides = array<i64: 6, 6>} : tensor<?x4x6x6xf32> -> tensor<?x4x1x1xf32>
// CHECK-NEXT:    %[[F:.+]] = nn.flatten %[[P]]
// CHECK-NEXT:    return %[[F]]

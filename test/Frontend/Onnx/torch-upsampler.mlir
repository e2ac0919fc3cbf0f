// nn.ConvTranspose2d and F.interpolate exported by torch.onnx at opsets 13
// and 17 (training mode, no constant folding): Resize with the scales
// Concat(Constant, Constant) in nearest (asymmetric, floor) and bilinear
// (half_pixel) modes, and with the sizes Concat(Shape(y)[:2], [5, 7]) in
// bilinear align_corners mode. Each Resize is two products with constant
// interpolation matrices.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_upsampler13 %t.13.onnx
// RUN: cleave-opt --import-onnx %t.13.onnx | FileCheck %s
// RUN: %python %S/Inputs/make_model.py torch_upsampler17 %t.17.onnx
// RUN: cleave-opt --import-onnx %t.17.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4x4xf32> {train.input = "image"},
// CHECK-SAME:    %[[W:[a-z0-9_]+]]: tensor<3x2x3x3xf32> {{[^}]+}}train.param = "up.weight"},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: tensor<2xf32> {{[^}]+}}train.param = "up.bias"})
// CHECK-SAME:    -> (tensor<?x2x16x16xf32>, tensor<?x2x5x7xf32>)
// CHECK-DAG:     %[[ROWS:.+]] = arith.constant dense<{{.+}}> : tensor<5x8xf32>
// CHECK-DAG:     %[[COLS:.+]] = arith.constant dense<{{.+}}> : tensor<7x8xf32>
// CHECK:         %[[T:.+]] = nn.conv2d_grad_input %[[X]], %[[W]] {input_size = array<i64: 8, 8>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<?x3x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<?x2x8x8xf32>
// CHECK-NEXT:    %[[BC:.+]] = nn.reshape %[[B]] [2, 1, 1]
// CHECK-NEXT:    %[[Y:.+]] = nn.add %[[T]], %[[BC]]
// CHECK-NEXT:    %[[N1:.+]] = nn.matmul %[[Y]], %[[NEAR:.+]] {transpose_a, transpose_b} : tensor<?x2x8x8xf32>, tensor<16x8xf32> -> tensor<?x2x8x16xf32>
// CHECK-NEXT:    %[[N2:.+]] = nn.matmul %[[N1]], %[[NEAR]] {transpose_a, transpose_b} : tensor<?x2x8x16xf32>, tensor<16x8xf32> -> tensor<?x2x16x16xf32>
// CHECK-NEXT:    %[[L1:.+]] = nn.matmul %[[Y]], %[[BILIN:.+]] {transpose_a, transpose_b}
// CHECK-NEXT:    %[[L2:.+]] = nn.matmul %[[L1]], %[[BILIN]] {transpose_a, transpose_b}
// CHECK-NEXT:    %[[C1:.+]] = nn.matmul %[[Y]], %[[ROWS]] {transpose_a, transpose_b} : tensor<?x2x8x8xf32>, tensor<5x8xf32> -> tensor<?x2x8x5xf32>
// CHECK-NEXT:    %[[C2:.+]] = nn.matmul %[[C1]], %[[COLS]] {transpose_a, transpose_b} : tensor<?x2x8x5xf32>, tensor<7x8xf32> -> tensor<?x2x5x7xf32>
// CHECK-NEXT:    %[[SUM:.+]] = nn.add %[[N2]], %[[L2]]
// CHECK-NEXT:    return %[[SUM]], %[[C2]]

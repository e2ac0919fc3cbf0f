// Conv, MaxPool, AveragePool and GlobalAveragePool. ONNX pads
// [x1_begin, x2_begin, x1_end, x2_end] is nn's [top, left, bottom, right].
//
// RUN: %python %S/Inputs/make_model.py conv %t.conv.onnx
// RUN: cleave-opt --import-onnx %t.conv.onnx | FileCheck %s --check-prefix=CONV
// RUN: %python %S/Inputs/make_model.py conv_same_upper %t.upper.onnx
// RUN: cleave-opt --import-onnx %t.upper.onnx | FileCheck %s --check-prefix=UPPER
// RUN: %python %S/Inputs/make_model.py conv_same_lower %t.lower.onnx
// RUN: cleave-opt --import-onnx %t.lower.onnx | FileCheck %s --check-prefix=LOWER
// RUN: %python %S/Inputs/make_model.py maxpool %t.maxpool.onnx
// RUN: cleave-opt --import-onnx %t.maxpool.onnx | FileCheck %s --check-prefix=MAXPOOL
// RUN: %python %S/Inputs/make_model.py avgpool %t.avgpool.onnx
// RUN: cleave-opt --import-onnx %t.avgpool.onnx | FileCheck %s --check-prefix=AVGPOOL
// RUN: %python %S/Inputs/make_model.py global_avgpool %t.global.onnx
// RUN: cleave-opt --import-onnx %t.global.onnx | FileCheck %s --check-prefix=GLOBAL

// Grouped, strided, dilated, asymmetrically padded, with a bias.
// CONV-LABEL: func.func @forward(
// CONV-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x8x8xf32> {train.input = "x"},
// CONV-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x1x3x3xf32> {{.+}}train.param = "w"},
// CONV-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "b"})
// CONV-NEXT:    nn.conv2d %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 2>, groups = 2 : i64, padding = array<i64: 1, 0, 1, 2>, strides = array<i64: 2, 1>}
// CONV-SAME:      : tensor<?x2x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xf32> -> tensor<?x4x4x6xf32>

// SAME on 7x7 with a 4x4 kernel and stride 2: 3 padding rows and columns,
// the odd one at the end (SAME_UPPER) or the beginning (SAME_LOWER).
// UPPER-LABEL: func.func @forward(
// UPPER-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x7x7xf32> {train.input = "x"},
// UPPER-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x1x4x4xf32>
// UPPER-NEXT:    nn.conv2d %[[X]], %[[W]] {padding = array<i64: 1, 1, 2, 2>, strides = array<i64: 2, 2>} : tensor<?x1x7x7xf32>, tensor<2x1x4x4xf32> -> tensor<?x2x4x4xf32>

// LOWER-LABEL: func.func @forward(
// LOWER-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x7x7xf32> {train.input = "x"},
// LOWER-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x1x4x4xf32>
// LOWER-NEXT:    nn.conv2d %[[X]], %[[W]] {padding = array<i64: 2, 2, 1, 1>, strides = array<i64: 2, 2>} : tensor<?x1x7x7xf32>, tensor<2x1x4x4xf32> -> tensor<?x2x4x4xf32>

// MAXPOOL-LABEL: func.func @forward(
// MAXPOOL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x8x8xf32> {train.input = "x"})
// MAXPOOL-NEXT:    nn.max_pool2d %[[X]] {ceil_mode, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<?x3x8x8xf32> -> tensor<?x3x5x5xf32>

// ONNX strides default to 1 (nn's to the kernel size): they are explicit.
// AVGPOOL-LABEL: func.func @forward(
// AVGPOOL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x6x6xf32> {train.input = "x"})
// AVGPOOL-NEXT:    nn.avg_pool2d %[[X]] {count_include_pad, kernel_size = array<i64: 2, 3>, padding = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 1>} : tensor<?x3x6x6xf32> -> tensor<?x3x5x6xf32>

// GLOBAL-LABEL: func.func @forward(
// GLOBAL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x6x6xf32> {train.input = "x"})
// GLOBAL-NEXT:    nn.global_avg_pool %[[X]] : tensor<?x3x6x6xf32> -> tensor<?x3x1x1xf32>

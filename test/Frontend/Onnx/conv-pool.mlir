// Conv, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
// ConvTranspose and Resize, in 1-D, 2-D and 3-D. ONNX pads
// [x1_begin, x2_begin, x1_end, x2_end] is nn's [top, left, bottom, right].
//
// RUN: %python %S/Inputs/make_model.py conv %t.conv.onnx
// RUN: cleave-opt --import-onnx %t.conv.onnx | FileCheck %s --check-prefix=CONV
// RUN: %python %S/Inputs/make_model.py conv1d_pool %t.conv1d.onnx
// RUN: cleave-opt --import-onnx %t.conv1d.onnx | FileCheck %s --check-prefix=CONV1D
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
// RUN: %python %S/Inputs/make_model.py global_maxpool %t.global_max.onnx
// RUN: cleave-opt --import-onnx %t.global_max.onnx | FileCheck %s --check-prefix=GLOBAL-MAX
// RUN: %python %S/Inputs/make_model.py conv_transpose %t.convt.onnx
// RUN: cleave-opt --import-onnx %t.convt.onnx | FileCheck %s --check-prefix=CONVT
// RUN: %python %S/Inputs/make_model.py conv_transpose_plain %t.convt_plain.onnx
// RUN: cleave-opt --import-onnx %t.convt_plain.onnx | FileCheck %s --check-prefix=CONVT-PLAIN
// RUN: %python %S/Inputs/make_model.py pool_wide_pads %t.wide_pads.onnx
// RUN: cleave-opt --import-onnx %t.wide_pads.onnx | FileCheck %s --check-prefix=WIDE-PADS
// RUN: %python %S/Inputs/make_model.py conv_transpose_same %t.convt_same.onnx
// RUN: cleave-opt --import-onnx %t.convt_same.onnx | FileCheck %s --check-prefix=CONVT-UPPER
// RUN: %python %S/Inputs/make_model.py conv_transpose_output_shape %t.convt_shape.onnx
// RUN: cleave-opt --import-onnx %t.convt_shape.onnx | FileCheck %s --check-prefix=CONVT-SHAPE
// RUN: %python %S/Inputs/make_model.py conv_transpose_1d %t.convt_1d.onnx
// RUN: cleave-opt --import-onnx %t.convt_1d.onnx | FileCheck %s --check-prefix=CONVT-1D
// RUN: %python %S/Inputs/make_model.py maxpool_uint8 %t.pool-u8.onnx
// RUN: cleave-opt --import-onnx %t.pool-u8.onnx | FileCheck %s --check-prefix=POOL-U8
// RUN: %python %S/Inputs/make_model.py pool3d %t.pool3d.onnx
// RUN: cleave-opt --import-onnx %t.pool3d.onnx | FileCheck %s --check-prefix=POOL3D
// RUN: %python %S/Inputs/make_model.py conv3d %t.conv3d.onnx
// RUN: cleave-opt --import-onnx %t.conv3d.onnx | FileCheck %s --check-prefix=CONV3D
// RUN: %python %S/Inputs/make_model.py conv_transpose_3d %t.convt3d.onnx
// RUN: cleave-opt --import-onnx %t.convt3d.onnx | FileCheck %s --check-prefix=CONVT3D
// RUN: %python %S/Inputs/make_model.py resize_nearest %t.nearest.onnx
// RUN: cleave-opt --import-onnx %t.nearest.onnx | FileCheck %s --check-prefix=NEAREST
// RUN: %python %S/Inputs/make_model.py resize_linear_sizes %t.linear_sizes.onnx
// RUN: cleave-opt --import-onnx %t.linear_sizes.onnx | FileCheck %s --check-prefix=LINEAR-SIZES
// RUN: %python %S/Inputs/make_model.py resize_linear_rows %t.linear_rows.onnx
// RUN: cleave-opt --import-onnx %t.linear_rows.onnx | FileCheck %s --check-prefix=LINEAR-ROWS
// RUN: %python %S/Inputs/make_model.py resize_cubic %t.cubic.onnx
// RUN: cleave-opt --import-onnx %t.cubic.onnx | FileCheck %s --check-prefix=CUBIC
// RUN: %python %S/Inputs/make_model.py resize_axes_opset18 %t.axes18.onnx
// RUN: cleave-opt --import-onnx %t.axes18.onnx | FileCheck %s --check-prefix=AXES18

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

// One window over the whole image: the pooling kernels, and a gradient to
// the first maximum in row-major order, as PyTorch's adaptive_max_pool2d.
// GLOBAL-MAX-LABEL: func.func @forward(
// GLOBAL-MAX-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x5x4xf32> {train.input = "x"})
// GLOBAL-MAX-NEXT:    nn.max_pool2d %[[X]] {kernel_size = array<i64: 5, 4>, strides = array<i64: 1, 1>} : tensor<?x3x5x4xf32> -> tensor<?x3x1x1xf32>

// ConvTranspose is the backward-data convolution: its [C_in, C_out / group,
// kH, kW] weight is the convolution's [O, C / group, kH, kW], and the
// output size (H - 1) * stride + output_padding + dilation * (k - 1) + 1 -
// pads is the attribute: (5-1)*2 + 1 + 1*2 + 1 - 2 = 10 rows and
// (4-1)*3 + 2 + 2*1 + 1 - 1 = 13 columns. The bias is added per channel.
// CONVT-LABEL: func.func @forward(
// CONVT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4x5x4xf32> {train.input = "x"},
// CONVT-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x3x3x2xf32> {{.+}}train.param = "w"},
// CONVT-SAME:    %[[B:[a-z0-9_]+]]: tensor<6xf32> {{.+}}train.param = "b"})
// CONVT-NEXT:    %[[Y:.+]] = nn.conv2d_grad_input %[[X]], %[[W]] {dilations = array<i64: 1, 2>, groups = 2 : i64, input_size = array<i64: 10, 13>, padding = array<i64: 1, 0, 1, 1>, strides = array<i64: 2, 3>} : tensor<?x4x5x4xf32>, tensor<4x3x3x2xf32> -> tensor<?x6x10x13xf32>
// CONVT-NEXT:    %[[BC:.+]] = nn.reshape %[[B]] [6, 1, 1] : tensor<6xf32> -> tensor<6x1x1xf32>
// CONVT-NEXT:    %[[R:.+]] = nn.add %[[Y]], %[[BC]] : tensor<?x6x10x13xf32>, tensor<6x1x1xf32> -> tensor<?x6x10x13xf32>
// CONVT-NEXT:    return %[[R]]

// CONVT-PLAIN-LABEL: func.func @forward(
// CONVT-PLAIN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x3xf32> {train.input = "x"},
// CONVT-PLAIN-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x1x3x3xf32>
// CONVT-PLAIN-NEXT:    %[[Y:.+]] = nn.conv2d_grad_input %[[X]], %[[W]] {input_size = array<i64: 5, 5>} : tensor<?x2x3x3xf32>, tensor<2x1x3x3xf32> -> tensor<?x1x5x5xf32>
// CONVT-PLAIN-NEXT:    return %[[Y]]

// Pads of 2 around a 3x3 window exceed the kernels' limit (half the
// window): the padding is explicit, -inf blocks around the max pool's input
// and zeros around the average's, concatenated along H and then W; the
// average over the input elements alone is the padded average times
// 9 / (elements held): 9 in a corner window, which holds one.
// WIDE-PADS-LABEL: func.func @forward(
// WIDE-PADS-DAG:     %[[SCALE:.+]] = arith.constant dense<{{\[}}[9.000000e+00, 4.500000e+00, 4.500000e+00, 9.000000e+00], [4.500000e+00, 2.250000e+00, 2.250000e+00, 4.500000e+00], [4.500000e+00, 2.250000e+00, 2.250000e+00, 4.500000e+00], [9.000000e+00, 4.500000e+00, 4.500000e+00, 9.000000e+00]]> : tensor<4x4xf32>
// WIDE-PADS-DAG:     %[[NEGINF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// WIDE-PADS:         nn.broadcast_to %[[NEGINF]] [-1, 1, 2, 2]
// WIDE-PADS:         %[[MAXIN:.+]] = nn.concat {{.+}} {axis = 3 : i64} {{.+}} -> tensor<?x1x6x6xf32>
// WIDE-PADS-NEXT:    %[[MAX:.+]] = nn.max_pool2d %[[MAXIN]] {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>} : tensor<?x1x6x6xf32> -> tensor<?x1x4x4xf32>
// WIDE-PADS:         %[[AVGIN:.+]] = nn.concat {{.+}} {axis = 3 : i64} {{.+}} -> tensor<?x1x6x6xf32>
// WIDE-PADS-NEXT:    %[[SUM:.+]] = nn.avg_pool2d %[[AVGIN]] {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>} : tensor<?x1x6x6xf32> -> tensor<?x1x4x4xf32>
// WIDE-PADS-NEXT:    %[[AVG:.+]] = nn.mul %[[SUM]], %[[SCALE]]
// WIDE-PADS-NEXT:    return %[[MAX]], %[[AVG]]

// SAME_UPPER with stride 2: 6 = 3 * 2 of the 7 positions the input reaches,
// the odd one cut off at the end (ONNX's rule for ConvTranspose).
// CONVT-UPPER:         nn.conv2d_grad_input %{{.+}}, %{{.+}} {input_size = array<i64: 6, 6>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : tensor<?x2x3x3xf32>, tensor<2x1x3x3xf32> -> tensor<?x1x6x6xf32>

// output_shape [6, 6] without auto_pad: the odd position is cut off at the
// beginning.
// CONVT-SHAPE:         nn.conv2d_grad_input %{{.+}}, %{{.+}} {input_size = array<i64: 6, 6>, padding = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>} : tensor<?x2x3x3xf32>, tensor<2x1x3x3xf32> -> tensor<?x1x6x6xf32>

// 1-D: a 2-D one of height 1, as Conv.
// CONVT-1D-LABEL: func.func @forward(
// CONVT-1D-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3xf32> {train.input = "x"},
// CONVT-1D-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x1x3xf32>
// CONVT-1D:         %[[X2:.+]] = nn.reshape %[[X]] [-1, 2, 1, 3] : tensor<?x2x3xf32> -> tensor<?x2x1x3xf32>
// CONVT-1D-NEXT:    %[[W2:.+]] = nn.reshape %[[W]] [2, 1, 1, 3] : tensor<2x1x3xf32> -> tensor<2x1x1x3xf32>
// CONVT-1D-NEXT:    %[[Y:.+]] = nn.conv2d_grad_input %[[X2]], %[[W2]] {input_size = array<i64: 1, 5>} : tensor<?x2x1x3xf32>, tensor<2x1x1x3xf32> -> tensor<?x1x1x5xf32>
// CONVT-1D-NEXT:    %[[R:.+]] = nn.reshape %[[Y]] [-1, 1, 5] : tensor<?x1x1x5xf32> -> tensor<?x1x5xf32>
// CONVT-1D-NEXT:    return %[[R]]

// MaxPool on uint8 (held in i32): pooled in f32, which holds every value
// exactly, and converted back; a maximum is one of its inputs, so the
// result needs no wrapping into the type's values.
// POOL-U8-LABEL: func.func @forward(
// POOL-U8-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x4x4xi8> {train.input = "x", train.unsigned}
// POOL-U8:         %[[W:.+]] = nn.cast unsigned %[[X]] : tensor<?x1x4x4xi8> -> tensor<?x1x4x4xi32>
// POOL-U8-NEXT:    %[[F:.+]] = nn.cast %[[W]] : tensor<?x1x4x4xi32> -> tensor<?x1x4x4xf32>
// POOL-U8-NEXT:    %[[P:.+]] = nn.max_pool2d %[[F]] {kernel_size = array<i64: 2, 2>, strides = array<i64: 1, 1>}
// POOL-U8-NEXT:    %[[I:.+]] = nn.cast %[[P]] : tensor<?x1x3x3xf32> -> tensor<?x1x3x3xi32>
// POOL-U8-NEXT:    %[[N:.+]] = nn.cast %[[I]] : tensor<?x1x3x3xi32> -> tensor<?x1x3x3xi8>
// POOL-U8-NEXT:    return %[[N]]

// 3-D pools are two 2-D ones: over (H, W) on the [N, C * D, H, W] view, then
// over D on the [N, C, D, H' * W'] view with a [kD, 1] window; the pads of
// each pass are those of its axes. GlobalMaxPool pools the whole volume.
// POOL3D-LABEL: func.func @forward(
// POOL3D-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x5x6x7xf32>
// POOL3D:         %[[P:.+]] = nn.reshape %[[X]] [-1, 10, 6, 7]
// POOL3D-NEXT:    %[[HW:.+]] = nn.max_pool2d %[[P]] {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 0>, strides = array<i64: 2, 2>} : tensor<?x10x6x7xf32> -> tensor<?x10x3x3xf32>
// POOL3D-NEXT:    %[[C:.+]] = nn.reshape %[[HW]] [-1, 2, 5, 9]
// POOL3D-NEXT:    %[[D:.+]] = nn.max_pool2d %[[C]] {kernel_size = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 0>, strides = array<i64: 1, 1>} : tensor<?x2x5x9xf32> -> tensor<?x2x6x9xf32>
// POOL3D-NEXT:    %[[M:.+]] = nn.reshape %[[D]] [-1, 2, 6, 3, 3]
// POOL3D:         nn.avg_pool2d %{{.+}} {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<?x10x6x7xf32> -> tensor<?x10x3x3xf32>
// POOL3D:         nn.avg_pool2d %{{.+}} {kernel_size = array<i64: 3, 1>, strides = array<i64: 2, 1>} : tensor<?x2x5x9xf32> -> tensor<?x2x2x9xf32>
// POOL3D:         nn.max_pool2d %{{.+}} {kernel_size = array<i64: 6, 7>, strides = array<i64: 1, 1>} : tensor<?x10x6x7xf32> -> tensor<?x10x1x1xf32>
// POOL3D:         nn.max_pool2d %{{.+}} {kernel_size = array<i64: 5, 1>, strides = array<i64: 1, 1>} : tensor<?x2x5x1xf32> -> tensor<?x2x1x1xf32>
// POOL3D:         return %[[M]],

// A 3-D convolution is one 2-D one: the input padded along D, the kD taps
// (strided slices along D) stacked into the channels, each group's together,
// [N * D', G * kD * C / G, H, W], against the weight rearranged to
// [O, kD * C / G, kH, kW].
// CONV3D-LABEL: func.func @forward(
// CONV3D-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x5x4x4xf32> {train.input = "x"}
// CONV3D-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x1x3x2x2xf32>
// CONV3D-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32>
// CONV3D:         %[[PAD:.+]] = nn.concat %{{.+}}, %[[X]], %{{.+}} {axis = 2 : i64} {{.+}} -> tensor<?x2x7x4x4xf32>
// CONV3D-NEXT:    %[[S0:.+]] = nn.slice %[[PAD]] starts [0, 0, 0, 0, 0] sizes [-1, 2, 3, 4, 4] strides [1, 1, 2, 1, 1]
// CONV3D-NEXT:    %[[T0:.+]] = nn.reshape %[[S0]] [-1, 2, 1, 1, 3, 16]
// CONV3D-NEXT:    %[[S1:.+]] = nn.slice %[[PAD]] starts [0, 0, 1, 0, 0]
// CONV3D-NEXT:    %[[T1:.+]] = nn.reshape %[[S1]]
// CONV3D-NEXT:    %[[S2:.+]] = nn.slice %[[PAD]] starts [0, 0, 2, 0, 0]
// CONV3D-NEXT:    %[[T2:.+]] = nn.reshape %[[S2]]
// CONV3D-NEXT:    %[[TAPS:.+]] = nn.concat %[[T0]], %[[T1]], %[[T2]] {axis = 2 : i64} {{.+}} -> tensor<?x2x3x1x3x16xf32>
// CONV3D-NEXT:    %[[T:.+]] = nn.transpose %[[TAPS]] [0, 4, 1, 2, 3, 5] : tensor<?x2x3x1x3x16xf32> -> tensor<?x3x2x3x1x16xf32>
// CONV3D-NEXT:    %[[PLANES:.+]] = nn.reshape %[[T]] [-1, 6, 4, 4]
// CONV3D-NEXT:    %[[WT:.+]] = nn.transpose %[[W]] [0, 2, 1, 3, 4] : tensor<4x1x3x2x2xf32> -> tensor<4x3x1x2x2xf32>
// CONV3D-NEXT:    %[[W2:.+]] = nn.reshape %[[WT]] [4, 3, 2, 2]
// CONV3D-NEXT:    %[[Y:.+]] = nn.conv2d %[[PLANES]], %[[W2]], %[[B]] {groups = 2 : i64, padding = array<i64: 0, 1, 0, 0>} : tensor<?x6x4x4xf32>, tensor<4x3x2x2xf32>, tensor<4xf32> -> tensor<?x4x3x4xf32>
// CONV3D-NEXT:    %[[V:.+]] = nn.reshape %[[Y]] [-1, 3, 4, 3, 4]
// CONV3D-NEXT:    %[[OUT:.+]] = nn.transpose %[[V]] [0, 2, 1, 3, 4] : tensor<?x3x4x3x4xf32> -> tensor<?x4x3x3x4xf32>
// CONV3D-NEXT:    return %[[OUT]]

// A 3-D transposed convolution: one 2-D one of the [N * D, C, H, W] planes
// whose output channels stack the kD taps, then each tap's planes spread
// along the depth by the stride (a zero plane after each), shifted by the
// tap's offset and summed, and the depth cut to the output's.
// CONVT3D-LABEL: func.func @forward(
// CONVT3D-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x3x3xf32>
// CONVT3D-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x1x2x3x3xf32>
// CONVT3D:         %[[XT:.+]] = nn.transpose %[[X]] [0, 2, 1, 3, 4]
// CONVT3D-NEXT:    %[[PLANES:.+]] = nn.reshape %[[XT]] [-1, 2, 3, 3]
// CONVT3D-NEXT:    %[[WT:.+]] = nn.transpose %[[W]] [0, 2, 1, 3, 4] : tensor<2x1x2x3x3xf32> -> tensor<2x2x1x3x3xf32>
// CONVT3D-NEXT:    %[[W2:.+]] = nn.reshape %[[WT]] [2, 2, 3, 3]
// CONVT3D-NEXT:    %[[Y:.+]] = nn.conv2d_grad_input %[[PLANES]], %[[W2]] {input_size = array<i64: 5, 5>} : tensor<?x2x3x3xf32>, tensor<2x2x3x3xf32> -> tensor<?x2x5x5xf32>
// CONVT3D-NEXT:    %[[TAPS:.+]] = nn.reshape %[[Y]] [-1, 3, 1, 2, 1, 25]
// CONVT3D-NEXT:    nn.slice %[[TAPS]] starts [0, 0, 0, 0, 0, 0] sizes [-1, 3, 1, 1, 1, 25]
// CONVT3D:         %[[SPREAD0:.+]] = nn.reshape %{{.+}} [-1, 6, 25]
// CONVT3D:         %[[TAP0:.+]] = nn.concat %[[SPREAD0]], %{{.+}} {axis = 1 : i64} {{.+}} -> tensor<?x7x25xf32>
// CONVT3D:         nn.slice %[[TAPS]] starts [0, 0, 0, 1, 0, 0] sizes [-1, 3, 1, 1, 1, 25]
// CONVT3D:         %[[SPREAD1:.+]] = nn.reshape %{{.+}} [-1, 6, 25]
// CONVT3D:         %[[TAP1:.+]] = nn.concat %{{.+}}, %[[SPREAD1]] {axis = 1 : i64} {{.+}} -> tensor<?x7x25xf32>
// CONVT3D-NEXT:    %[[SUM:.+]] = nn.add %[[TAP0]], %[[TAP1]]
// CONVT3D-NEXT:    %[[CUT:.+]] = nn.slice %[[SUM]] starts [0, 0, 0] sizes [-1, 6, 25]
// CONVT3D-NEXT:    %[[V:.+]] = nn.reshape %[[CUT]] [-1, 6, 1, 5, 5]
// CONVT3D-NEXT:    %[[OUT:.+]] = nn.transpose %[[V]] [0, 2, 1, 3, 4] : tensor<?x6x1x5x5xf32> -> tensor<?x1x6x5x5xf32>
// CONVT3D:         nn.add %[[OUT]], %{{.+}} : tensor<?x1x6x5x5xf32>, tensor<1x1x1x1xf32>

// Resize is A_h X A_w^T with constant interpolation matrices: nearest
// (asymmetric, floor) doubles each row and column.
// NEAREST-LABEL: func.func @forward(
// NEAREST-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"})
// NEAREST-DAG:     %[[AW:.+]] = arith.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00]]> : tensor<8x4xf32>
// NEAREST-DAG:     %[[AH:.+]] = arith.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00]]> : tensor<6x3xf32>
// NEAREST:         %[[T:.+]] = nn.matmul %[[X]], %[[AH]] {transpose_a, transpose_b} : tensor<?x2x3x4xf32>, tensor<6x3xf32> -> tensor<?x2x4x6xf32>
// NEAREST-NEXT:    %[[Y:.+]] = nn.matmul %[[T]], %[[AW]] {transpose_a, transpose_b} : tensor<?x2x4x6xf32>, tensor<8x4xf32> -> tensor<?x2x6x8xf32>
// NEAREST-NEXT:    return %[[Y]]

// Bilinear, half_pixel, to sizes Concat(Shape(x)[:2], [3, 6]): the rows
// keep their size and need no product; output column j samples
// (j + 0.5) * 4 / 6 - 0.5, clamped to [0, 3]. X A_w^T is an nn.linear.
// Bicubic (Keys' kernel, A = -0.75) 2x upsampling, half_pixel: four taps
// per output, those past the edge reading the edge (PyTorch's
// upsample_bicubic2d and ONNX's reference weights).
// CUBIC-LABEL: func.func @forward(
// CUBIC-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"})
// CUBIC-DAG:     %[[AW:.+]] = arith.constant dense<{{\[}}[1.10546875, -0.10546875, 0.000000e+00, 0.000000e+00], [0.7734375, 0.26171875, -0.03515625, 0.000000e+00], [0.2265625, 0.87890625, -0.10546875, 0.000000e+00], [-0.10546875, 0.87890625, 0.26171875, -0.03515625], {{.+}}]> : tensor<8x4xf32>
// CUBIC-DAG:     %[[AH:.+]] = arith.constant dense<{{\[}}[1.10546875, -0.10546875, 0.000000e+00], {{.+}}]> : tensor<6x3xf32>
// CUBIC:         %[[R:.+]] = nn.matmul %[[X]], %[[AH]] {transpose_a, transpose_b} : tensor<?x2x3x4xf32>, tensor<6x3xf32> -> tensor<?x2x4x6xf32>
// CUBIC-NEXT:    %[[Y:.+]] = nn.matmul %[[R]], %[[AW]] {transpose_a, transpose_b} : tensor<?x2x4x6xf32>, tensor<8x4xf32> -> tensor<?x2x6x8xf32>
// CUBIC-NEXT:    return %[[Y]]

// LINEAR-SIZES-LABEL: func.func @forward(
// LINEAR-SIZES-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"})
// LINEAR-SIZES-NEXT:    %[[AW:.+]] = arith.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [5.000000e-01, 5.000000e-01, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.833333313, 0.166666672, 0.000000e+00], [0.000000e+00, 0.166666672, 0.833333313, 0.000000e+00], [0.000000e+00, 0.000000e+00, 5.000000e-01, 5.000000e-01], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00]]> : tensor<6x4xf32>
// LINEAR-SIZES-NEXT:    %[[Y:.+]] = nn.linear %[[X]], %[[AW]] : tensor<?x2x3x4xf32>, tensor<6x4xf32> -> tensor<?x2x3x6xf32>
// LINEAR-SIZES-NEXT:    return %[[Y]]

// align_corners: output row i samples i * 2 / 5. Only the rows change: one
// product, transposed back.
// LINEAR-ROWS-LABEL: func.func @forward(
// LINEAR-ROWS-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"})
// LINEAR-ROWS-NEXT:    %[[AH:.+]] = arith.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, 0.000000e+00], [6.000000e-01, 4.000000e-01, 0.000000e+00], [2.000000e-01, 8.000000e-01, 0.000000e+00], [0.000000e+00, 8.000000e-01, 2.000000e-01], [0.000000e+00, 4.000000e-01, 6.000000e-01], [0.000000e+00, 0.000000e+00, 1.000000e+00]]> : tensor<6x3xf32>
// LINEAR-ROWS-NEXT:    %[[T:.+]] = nn.matmul %[[X]], %[[AH]] {transpose_a, transpose_b} : tensor<?x2x3x4xf32>, tensor<6x3xf32> -> tensor<?x2x4x6xf32>
// LINEAR-ROWS-NEXT:    %[[Y:.+]] = nn.transpose %[[T]] [0, 1, 3, 2] : tensor<?x2x4x6xf32> -> tensor<?x2x6x4xf32>
// LINEAR-ROWS-NEXT:    return %[[Y]]

// Opset 18: scales for the listed axes only; antialias changes nothing when
// bilinear enlarges the image.
// AXES18-LABEL: func.func @forward(
// AXES18:         nn.matmul %{{.+}}, %{{.+}} {transpose_a, transpose_b} : tensor<?x2x3x4xf32>, tensor<6x3xf32> -> tensor<?x2x4x6xf32>
// AXES18:         nn.matmul %{{.+}}, %{{.+}} {transpose_a, transpose_b} : tensor<?x2x4x6xf32>, tensor<8x4xf32> -> tensor<?x2x6x8xf32>

// A 1-D convolution and pool run as 2-D ones over an image of height 1: the
// input and the kernel are lifted, the attributes too (stride 1 and no
// padding along the height), and the result is lowered back.
// CONV1D-LABEL: func.func @forward(
// CONV1D-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x9xf32> {train.input = "x"}
// CONV1D-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x2x3xf32>
// CONV1D:         %[[X2:.+]] = nn.reshape %[[X]] [-1, 2, 1, 9] : tensor<?x2x9xf32> -> tensor<?x2x1x9xf32>
// CONV1D-NEXT:    %[[W2:.+]] = nn.reshape %[[W]] [4, 2, 1, 3] : tensor<4x2x3xf32> -> tensor<4x2x1x3xf32>
// CONV1D-NEXT:    %[[C:.+]] = nn.conv2d %[[X2]], %[[W2]], %{{.+}} {padding = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 2>} : {{.*}} -> tensor<?x4x1x5xf32>
// CONV1D-NEXT:    %[[C1:.+]] = nn.reshape %[[C]] [-1, 4, 5]
// CONV1D-NEXT:    %[[P2:.+]] = nn.reshape %[[C1]] [-1, 4, 1, 5]
// CONV1D-NEXT:    %[[P:.+]] = nn.max_pool2d %[[P2]] {kernel_size = array<i64: 1, 2>, strides = array<i64: 1, 2>} : tensor<?x4x1x5xf32> -> tensor<?x4x1x2xf32>
// CONV1D-NEXT:    %[[Y:.+]] = nn.reshape %[[P]] [-1, 4, 2]
// CONV1D-NEXT:    return %[[Y]]

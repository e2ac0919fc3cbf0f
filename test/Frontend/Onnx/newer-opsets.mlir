// Opsets 18 to 21: the forms that changed (reduction axes as an input,
// Split's num_outputs, Cast's saturate), the ops they added (Gelu), and the
// ONNX checker, which the system library (opset 17) is given the newer
// schemas for. ReduceMin and ReduceL2 are composed of nn ops.
//
// RUN: %python %S/Inputs/make_model.py opset18 %t.opset18.onnx
// RUN: cleave-opt --import-onnx %t.opset18.onnx | FileCheck %s --check-prefix=OPSET18
// RUN: %python %S/Inputs/make_model.py opset21 %t.opset21.onnx
// RUN: cleave-opt --import-onnx %t.opset21.onnx | FileCheck %s --check-prefix=OPSET21
// RUN: %python %S/Inputs/make_model.py reductions_opset18 %t.reductions.onnx
// RUN: cleave-opt --import-onnx %t.reductions.onnx | FileCheck %s --check-prefix=REDUCE
// RUN: %python %S/Inputs/make_model.py split_num_outputs %t.split.onnx
// RUN: cleave-opt --import-onnx %t.split.onnx | FileCheck %s --check-prefix=SPLIT
// RUN: %python %S/Inputs/make_model.py gelu_opset20 %t.gelu.onnx
// RUN: cleave-opt --import-onnx %t.gelu.onnx | FileCheck %s --check-prefix=GELU
// RUN: %python %S/Inputs/make_model.py gelu_opset17 %t.gelu17.onnx
// RUN: not cleave-opt --import-onnx %t.gelu17.onnx 2>&1 | FileCheck %s --check-prefix=GELU17
// RUN: %python %S/Inputs/make_model.py gelu_bad_form %t.gelu-bad.onnx
// RUN: not cleave-opt --import-onnx %t.gelu-bad.onnx 2>&1 | FileCheck %s --check-prefix=GELU-BAD
// RUN: %python %S/Inputs/make_model.py split_uneven_outputs %t.split-uneven.onnx
// RUN: not cleave-opt --import-onnx %t.split-uneven.onnx 2>&1 | FileCheck %s --check-prefix=SPLIT-UNEVEN
// RUN: %python %S/Inputs/make_model.py reduce_axes_attribute_opset18 %t.axes-attr.onnx
// RUN: not cleave-opt --import-onnx %t.axes-attr.onnx 2>&1 | FileCheck %s --check-prefix=AXES-ATTR

// OPSET18-LABEL: func.func @forward(
// OPSET18:         nn.relu

// Cast to its own type (with opset 19's saturate) is the identity.
// OPSET21-LABEL: func.func @forward(
// OPSET21-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"})
// OPSET21-NEXT:    %[[Y:.+]] = nn.relu %[[X]] : tensor<?x4xf32>
// OPSET21-NEXT:    return %[[Y]]

// Axes as an input; ReduceMin is -max(-x) and ReduceL2 sqrt(sum(x * x));
// noop_with_empty_axes without axes passes its input through.
// REDUCE-LABEL: func.func @forward(
// REDUCE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"})
// REDUCE-NEXT:    %[[MEAN:.+]] = nn.reduce_mean %[[X]] [1] {keepdims} : tensor<?x3x4xf32> -> tensor<?x1x4xf32>
// REDUCE-NEXT:    %[[MAX:.+]] = nn.reduce_max %[[MEAN]] [-1] : tensor<?x1x4xf32> -> tensor<?x1xf32>
// REDUCE-NEXT:    %[[NEG:.+]] = nn.neg %[[X]] : tensor<?x3x4xf32>
// REDUCE-NEXT:    %[[NMAX:.+]] = nn.reduce_max %[[NEG]] [-1] : tensor<?x3x4xf32> -> tensor<?x3xf32>
// REDUCE-NEXT:    %[[MIN:.+]] = nn.neg %[[NMAX]] : tensor<?x3xf32>
// REDUCE-NEXT:    %[[SQ:.+]] = nn.mul %[[X]], %[[X]] : tensor<?x3x4xf32>, tensor<?x3x4xf32> -> tensor<?x3x4xf32>
// REDUCE-NEXT:    %[[SS:.+]] = nn.reduce_sum %[[SQ]] [1] {keepdims} : tensor<?x3x4xf32> -> tensor<?x1x4xf32>
// REDUCE-NEXT:    %[[L2:.+]] = nn.sqrt %[[SS]] : tensor<?x1x4xf32>
// REDUCE-NEXT:    %[[SUM:.+]] = nn.reduce_sum %[[L2]] [-1] : tensor<?x1x4xf32> -> tensor<?x1xf32>
// REDUCE-NEXT:    return %[[MAX]], %[[MIN]], %[[SUM]]

// num_outputs 3 of 5: ceil(5 / 3) = 2, 2, and the rest.
// SPLIT-LABEL: func.func @forward(
// SPLIT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x5xf32> {train.input = "x"})
// SPLIT-NEXT:    %[[A:.+]] = nn.slice %[[X]] starts [0, 0] sizes [-1, 2] strides [1, 1] : tensor<?x5xf32> -> tensor<?x2xf32>
// SPLIT-NEXT:    %[[B:.+]] = nn.slice %[[X]] starts [0, 2] sizes [-1, 2] strides [1, 1] : tensor<?x5xf32> -> tensor<?x2xf32>
// SPLIT-NEXT:    %[[C:.+]] = nn.slice %[[X]] starts [0, 4] sizes [-1, 1] strides [1, 1] : tensor<?x5xf32> -> tensor<?x1xf32>
// SPLIT-NEXT:    return %[[A]], %[[B]], %[[C]]

// GELU-LABEL: func.func @forward(
// GELU-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"})
// GELU-NEXT:    %[[G:.+]] = nn.gelu %[[X]] : tensor<?x4xf32>
// GELU-NEXT:    %[[T:.+]] = nn.gelu %[[G]] {approximate = #nn.gelu_approximation<tanh>} : tensor<?x4xf32>
// GELU-NEXT:    return %[[T]]

// GELU17: error: node 'g' has unsupported op type 'Gelu' (opset 17)

// GELU-BAD: error: Gelu approximate 'sigmoid' is not supported (expected 'none' or 'tanh')
// GELU-BAD-NEXT: note: while importing ONNX node 'y' (Gelu, opset 20)

// SPLIT-UNEVEN: error: Split sizes [2, 2, 1] do not partition dimension 1 of size 5 into 4 outputs

// AXES-ATTR: error: '{{.*}}' is not a valid ONNX model: Unrecognized attribute: axes for operator ReduceMean

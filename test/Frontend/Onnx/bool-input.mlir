// A boolean graph input (a padding mask the model is given) is an f32 data
// input holding 0 and 1, the form of nn.compare's masks: the runtime and
// cleave-run feed it as float32.
//
// RUN: %python %S/Inputs/make_model.py bool_input %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[C:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "c"},
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"})
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// CHECK:         %[[Y:.+]] = nn.where %[[C]], %[[INF]], %[[X]] : tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    %[[KEEP:.+]] = nn.compare <eq>, %[[C]], %[[ZERO]] {dtype = f32}
// CHECK-NEXT:    %[[Z:.+]] = nn.mul %[[X]], %[[KEEP]]
// CHECK-NEXT:    return %[[Y]], %[[Z]]

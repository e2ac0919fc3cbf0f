// Gathers on activations at run-time indices: ONNX Gather (any axis) and
// GatherElements become nn.gather and nn.gather_elements; indices computed
// at run time from the ids (a sequence length) are carried as exact floats.
//
// RUN: %python %S/Inputs/make_model.py gather_runtime %t.runtime.onnx
// RUN: cleave-opt --import-onnx %t.runtime.onnx | FileCheck %s --check-prefix=RUNTIME
// RUN: %python %S/Inputs/make_model.py gather_float_indices %t.float.onnx
// RUN: cleave-opt --import-onnx %t.float.onnx | FileCheck %s --check-prefix=FLOAT
// RUN: %python %S/Inputs/make_model.py gather_float_data_indices %t.data.onnx
// RUN: not cleave-opt --import-onnx %t.data.onnx 2>&1 | FileCheck %s --check-prefix=DATA
// RUN: %python %S/Inputs/make_model.py carried_integers %t.carried.onnx
// RUN: cleave-opt --import-onnx %t.carried.onnx | FileCheck %s --check-prefix=CARRIED
// RUN: %python %S/Inputs/make_model.py range_batch %t.iota.onnx
// RUN: cleave-opt --import-onnx %t.iota.onnx | FileCheck %s --check-prefix=IOTA
// RUN: %python %S/Inputs/make_model.py gather_elements_out_of_range %t.range-index.onnx
// RUN: not cleave-opt --import-onnx %t.range-index.onnx 2>&1 | FileCheck %s --check-prefix=OUT-OF-RANGE
// RUN: %python %S/Inputs/make_model.py range_batch_offset %t.range.onnx
// RUN: not cleave-opt --import-onnx %t.range.onnx 2>&1 | FileCheck %s --check-prefix=RANGE

// Gather's negative axis counts from the end; its result holds the indices'
// shape in place of the axis. GatherElements keeps the indices' shape.
// RUNTIME-LABEL: func.func @forward(
// RUNTIME-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x5x3xf32> {train.input = "x"},
// RUNTIME-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<2x2xi64> {train.input = "ids"},
// RUNTIME-SAME:    %[[PICKS:[a-z0-9_]+]]: tensor<?x2x3xi64> {train.input = "picks"})
// RUNTIME-NEXT:    %[[ROWS:.+]] = nn.gather %[[X]], %[[IDS]] {axis = 1 : i64} : tensor<?x5x3xf32>, tensor<2x2xi64> -> tensor<?x2x2x3xf32>
// RUNTIME-NEXT:    %[[PICKED:.+]] = nn.gather_elements %[[X]], %[[PICKS]] {axis = 1 : i64} : tensor<?x5x3xf32>, tensor<?x2x3xi64> -> tensor<?x2x3xf32>
// RUNTIME-NEXT:    return %[[ROWS]], %[[PICKED]]

// The int64 lengths are the float sums of the mask; the int64 constants
// they meet (4, 1) become floats of the same value.
// CARRIED-LABEL: func.func @forward(
// CARRIED-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x4xi64> {train.input = "ids"},
// CARRIED-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"})
// CARRIED-DAG:     %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CARRIED-DAG:     %[[FOUR:.+]] = arith.constant dense<4.000000e+00> : tensor<f32>
// CARRIED:         %[[PAD:.+]] = nn.compare <eq>, %[[IDS]]
// CARRIED-NEXT:    %[[REAL:.+]] = nn.compare <eq>, %[[PAD]]
// CARRIED-NEXT:    %[[LEN:.+]] = nn.reduce_sum %[[REAL]] [1] {keepdims} : tensor<?x4xf32> -> tensor<?x1xf32>
// CARRIED-NEXT:    %[[FULL:.+]] = nn.compare <eq>, %[[LEN]], %[[FOUR]] {dtype = f32} : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
// CARRIED-NEXT:    %[[LAST:.+]] = nn.sub %[[LEN]], %[[ONE]]
// CARRIED-NEXT:    %[[Z:.+]] = nn.gather_elements %[[X]], %[[LAST]] {axis = 1 : i64} : tensor<?x4xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
// CARRIED-NEXT:    return %[[FULL]], %[[Z]]

// Range(0, B, 1) is the positions along the batch of the data input; its
// Cast to float is the carrier itself.
// IOTA-LABEL: func.func @forward(
// IOTA-SAME:    %[[X:[a-z0-9_]+]]: tensor<?xf32> {train.input = "x"})
// IOTA-NEXT:    %[[P:.+]] = nn.iota %[[X]] {axis = 0 : i64, dtype = f32} : tensor<?xf32> -> tensor<?xf32>
// IOTA-NEXT:    %[[Y:.+]] = nn.add %[[X]], %[[P]]
// IOTA-NEXT:    return %[[Y]]

// A Cast of float data to an integer type truncates (nn.cast), rather than
// being carried as the float tensor: the gather takes the integers.
// FLOAT-LABEL: func.func @forward(
// FLOAT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x5xf32> {train.input = "x"}
// FLOAT-SAME:    %[[F:[a-z0-9_]+]]: tensor<?xf32> {train.input = "f"}
// FLOAT-NEXT:    %[[IDS:.+]] = nn.cast %[[F]] : tensor<?xf32> -> tensor<?xi64>
// FLOAT-NEXT:    %[[Y:.+]] = nn.gather %[[X]], %[[IDS]] {axis = 1 : i64}
// FLOAT-NEXT:    return %[[Y]]

// DATA: error: GatherElements indices ('f') of type 'tensor<?x5xf32>' are not integers: only integer inputs and integers computed from masks, constants and positions are supported
// DATA-NEXT: note: while importing ONNX node 'y' (GatherElements, opset 13)

// Negative indices count from the end (-5 is 0); 5 is past it.
// OUT-OF-RANGE: error: GatherElements index 5 is out of range for an axis of size 5
// OUT-OF-RANGE-NEXT: note: while importing ONNX node 'y' (GatherElements, opset 13)

// RANGE: error: Range(1, B, 1) is not supported: a range whose bounds depend on the batch size B must be Range(0, k * B, k)
// RANGE-NEXT: note: while importing ONNX node 'r' (Range, opset 13)

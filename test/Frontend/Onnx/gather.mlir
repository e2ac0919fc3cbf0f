// Gathers on activations at run-time indices: ONNX Gather (any axis) and
// GatherElements become nn.gather and nn.gather_elements; indices computed
// at run time from the ids (a sequence length) are carried as exact floats.
//
// RUN: %python %S/Inputs/make_model.py gather_runtime %t.runtime.onnx
// RUN: cleave-opt --import-onnx %t.runtime.onnx | FileCheck %s --check-prefix=RUNTIME
// RUN: %python %S/Inputs/make_model.py gather_float_indices %t.float.onnx
// RUN: not cleave-opt --import-onnx %t.float.onnx 2>&1 | FileCheck %s --check-prefix=FLOAT
// RUN: %python %S/Inputs/make_model.py gather_float_data_indices %t.data.onnx
// RUN: not cleave-opt --import-onnx %t.data.onnx 2>&1 | FileCheck %s --check-prefix=DATA
// RUN: %python %S/Inputs/make_model.py range_batch %t.iota.onnx
// RUN: cleave-opt --import-onnx %t.iota.onnx | FileCheck %s --check-prefix=IOTA
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

// Range(0, B, 1) is the positions along the batch of the data input; its
// Cast to float is the carrier itself.
// IOTA-LABEL: func.func @forward(
// IOTA-SAME:    %[[X:[a-z0-9_]+]]: tensor<?xf32> {train.input = "x"})
// IOTA-NEXT:    %[[P:.+]] = nn.iota %[[X]] {axis = 0 : i64, dtype = f32} : tensor<?xf32> -> tensor<?xf32>
// IOTA-NEXT:    %[[Y:.+]] = nn.add %[[X]], %[[P]]
// IOTA-NEXT:    return %[[Y]]

// A Cast of float data to an integer type truncates: refused, not carried.
// FLOAT: error: Cast of a run-time 'f32' tensor to 'i64' is not supported: only integers computed from masks, constants and positions convert (nn has no rounding conversion)
// FLOAT-NEXT: note: while importing ONNX node 'ids' (Cast, opset 13)

// DATA: error: GatherElements indices ('f') of type 'tensor<?x5xf32>' are not integers: only integer inputs and integers computed from masks, constants and positions are supported
// DATA-NEXT: note: while importing ONNX node 'y' (GatherElements, opset 13)

// RANGE: error: Range(1, B, 1) is not supported: a range whose bounds depend on the batch size B must be Range(0, k * B, k)
// RANGE-NEXT: note: while importing ONNX node 'r' (Range, opset 13)

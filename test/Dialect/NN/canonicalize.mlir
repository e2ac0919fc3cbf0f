// RUN: cleave-opt %s --split-input-file --canonicalize | FileCheck %s

// Folders and canonicalization patterns of the nn ops, each with the cases
// that must stay as they are.

// CHECK-LABEL: func.func @shape_ops_to_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4x6xf32>)
// CHECK-NOT: nn.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @shape_ops_to_same_type(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = nn.reshape %x [4, 6] : tensor<4x6xf32> -> tensor<4x6xf32>
  %1 = nn.broadcast_to %x [4, 6] : tensor<4x6xf32> -> tensor<4x6xf32>
  %2 = nn.transpose %x [0, 1] : tensor<4x6xf32> -> tensor<4x6xf32>
  %3 = nn.flatten %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %4 = nn.concat %x {axis = 0} : tensor<4x6xf32> -> tensor<4x6xf32>
  %5 = nn.slice %x starts [0, 0] sizes [4, 6] strides [1, 1] : tensor<4x6xf32> -> tensor<4x6xf32>
  %6 = nn.pad %x starts [0, 0] strides [1, 1] shape [4, 6] : tensor<4x6xf32> -> tensor<4x6xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// A transpose with a non-identity permutation is not the identity even when
// its result type is the input type.
// CHECK-LABEL: func.func @square_transpose_kept
// CHECK-SAME: (%[[X:.+]]: tensor<4x4xf32>)
// CHECK: %[[T:.+]] = nn.transpose %[[X]] [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK: return %[[T]]
func.func @square_transpose_kept(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = nn.transpose %x [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @shifted_slice_and_pad_kept
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[Y:.+]]: tensor<2xf32>)
// CHECK: nn.slice %[[X]] starts [1] sizes [2] strides [1]
// CHECK: nn.pad %[[Y]] starts [1] strides [1] shape [4]
// CHECK: nn.slice %[[X]] starts [0] sizes [2] strides [2]
func.func @shifted_slice_and_pad_kept(%x: tensor<4xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<4xf32>, tensor<2xf32>) {
  %0 = nn.slice %x starts [1] sizes [2] strides [1] : tensor<4xf32> -> tensor<2xf32>
  %1 = nn.pad %y starts [1] strides [1] shape [4] : tensor<2xf32> -> tensor<4xf32>
  %2 = nn.slice %x starts [0] sizes [2] strides [2] : tensor<4xf32> -> tensor<2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<4xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<4x6xf32>)
// CHECK: %[[R:.+]] = nn.reshape %[[X]] [3, -1] : tensor<4x6xf32> -> tensor<3x8xf32>
// CHECK-NOT: nn.reshape
// CHECK-NOT: nn.flatten
// CHECK: return %[[R]], %[[X]]
func.func @reshape_of_reshape(%x: tensor<4x6xf32>) -> (tensor<3x8xf32>, tensor<4x6xf32>) {
  %0 = nn.reshape %x [24] : tensor<4x6xf32> -> tensor<24xf32>
  %1 = nn.reshape %0 [3, -1] : tensor<24xf32> -> tensor<3x8xf32>
  %2 = nn.flatten %x {axis = 2} : tensor<4x6xf32> -> tensor<24x1xf32>
  %3 = nn.reshape %2 [4, 6] : tensor<24x1xf32> -> tensor<4x6xf32>
  return %1, %3 : tensor<3x8xf32>, tensor<4x6xf32>
}

// -----

// Against a dynamic source, a -1 would resolve to a dynamic size: the outer
// reshape keeps its static input. Without -1 the source is used directly.
// CHECK-LABEL: func.func @reshape_of_reshape_dynamic
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
// CHECK: %[[A:.+]] = nn.reshape %[[X]] [8] : tensor<?x4xf32> -> tensor<8xf32>
// CHECK: %[[B:.+]] = nn.reshape %[[A]] [-1, 2] : tensor<8xf32> -> tensor<4x2xf32>
// CHECK: %[[C:.+]] = nn.reshape %[[X]] [2, 4] : tensor<?x4xf32> -> tensor<2x4xf32>
// CHECK: return %[[B]], %[[C]]
func.func @reshape_of_reshape_dynamic(%x: tensor<?x4xf32>) -> (tensor<4x2xf32>, tensor<2x4xf32>) {
  %0 = nn.reshape %x [8] : tensor<?x4xf32> -> tensor<8xf32>
  %1 = nn.reshape %0 [-1, 2] : tensor<8xf32> -> tensor<4x2xf32>
  %2 = nn.reshape %0 [2, 4] : tensor<8xf32> -> tensor<2x4xf32>
  return %1, %2 : tensor<4x2xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.+]] = nn.transpose %[[X]] [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NOT: nn.transpose
// CHECK: return %[[T]], %[[X]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  // [1, 0, 2] then [2, 1, 0]: result dim i is source dim [1, 0, 2][[2, 1, 0][i]].
  %0 = nn.transpose %x [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = nn.transpose %0 [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  // A rotation and its inverse.
  %2 = nn.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %3 = nn.transpose %2 [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1, %3 : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_of_broadcast
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>)
// CHECK: %[[B:.+]] = nn.broadcast_to %[[X]] [5, 4, 3] : tensor<3xf32> -> tensor<5x4x3xf32>
// CHECK-NOT: nn.broadcast_to
// CHECK: return %[[B]]
func.func @broadcast_of_broadcast(%x: tensor<3xf32>) -> tensor<5x4x3xf32> {
  %0 = nn.broadcast_to %x [4, 3] : tensor<3xf32> -> tensor<4x3xf32>
  %1 = nn.broadcast_to %0 [5, 4, 3] : tensor<4x3xf32> -> tensor<5x4x3xf32>
  return %1 : tensor<5x4x3xf32>
}

// -----

// CHECK-LABEL: func.func @neutral_operands
// CHECK-SAME: (%[[X:.+]]: tensor<4x3xf32>, %[[Y:.+]]: tensor<2xf64>)
// CHECK-NOT: nn.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[Y]], %[[X]]
func.func @neutral_operands(%x: tensor<4x3xf32>, %y: tensor<2xf64>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2xf64>, tensor<4x3xf32>) {
  %one = arith.constant dense<1.0> : tensor<3xf32>
  %negzero = arith.constant dense<-0.0> : tensor<4x3xf32>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %one64 = arith.constant dense<1.0> : tensor<2xf64>
  %0 = nn.mul %x, %one : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = nn.mul %one, %x : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %2 = nn.add %negzero, %x : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %3 = nn.mul %y, %one64 : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
  %4 = nn.sub %x, %zero : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  return %0, %1, %2, %3, %4 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2xf64>, tensor<4x3xf32>
}

// -----

// Kept: a constant that broadcasts the other operand, a constant that is not
// neutral, +0.0 in an addition (-0.0 + +0.0 is +0.0), 0 - x, and a non-splat.
// CHECK-LABEL: func.func @non_neutral_operands
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>, %[[Z:.+]]: tensor<2xf32>)
// CHECK: nn.mul %[[X]], %{{.+}} : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK: nn.mul %[[X]], %{{.+}} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: nn.add %[[X]], %{{.+}} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: nn.sub %{{.+}}, %[[X]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: nn.mul %[[Z]], %{{.+}} : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
func.func @non_neutral_operands(%x: tensor<3xf32>, %z: tensor<2xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>) {
  %ones = arith.constant dense<1.0> : tensor<4x3xf32>
  %two = arith.constant dense<2.0> : tensor<3xf32>
  %zero = arith.constant dense<0.0> : tensor<3xf32>
  %mixed = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = nn.mul %x, %ones : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %1 = nn.mul %x, %two : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %2 = nn.add %x, %zero : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %3 = nn.sub %zero, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %4 = nn.mul %z, %mixed : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0, %1, %2, %3, %4 : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>)
// CHECK: %[[N:.+]] = nn.neg %[[X]]
// CHECK-NOT: nn.neg
// CHECK: return %[[X]], %[[N]]
func.func @neg_neg(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = nn.neg %x : tensor<3xf32>
  %1 = nn.neg %0 : tensor<3xf32>
  %2 = nn.neg %1 : tensor<3xf32>
  return %1, %2 : tensor<3xf32>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @splat_constants
// CHECK-DAG: %[[R:.+]] = arith.constant dense<2.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[B:.+]] = arith.constant dense<-1.000000e+00> : tensor<4x3xf64>
// CHECK-DAG: %[[T:.+]] = arith.constant dense<5.000000e-01> : tensor<3x2xf32>
// CHECK-DAG: %[[F:.+]] = arith.constant dense<2.000000e+00> : tensor<1x6xf32>
// CHECK-NOT: nn.
// CHECK: return %[[R]], %[[B]], %[[T]], %[[F]]
func.func @splat_constants() -> (tensor<2x3xf32>, tensor<4x3xf64>, tensor<3x2xf32>, tensor<1x6xf32>) {
  %c = arith.constant dense<2.0> : tensor<6xf32>
  %d = arith.constant dense<-1.0> : tensor<3xf64>
  %h = arith.constant dense<0.5> : tensor<2x3xf32>
  %0 = nn.reshape %c [2, 3] : tensor<6xf32> -> tensor<2x3xf32>
  %1 = nn.broadcast_to %d [4, 3] : tensor<3xf64> -> tensor<4x3xf64>
  %2 = nn.transpose %h [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %3 = nn.flatten %0 {axis = 0} : tensor<2x3xf32> -> tensor<1x6xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4x3xf64>, tensor<3x2xf32>, tensor<1x6xf32>
}

// -----

// A constant that is not a splat would need its elements moved: kept.
// CHECK-LABEL: func.func @non_splat_constant_kept
// CHECK: %[[C:.+]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: nn.broadcast_to %[[C]] [3, 2]
func.func @non_splat_constant_kept() -> tensor<3x2xf32> {
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = nn.broadcast_to %c [3, 2] : tensor<2xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_unit_dims
// CHECK-SAME: (%[[X:.+]]: tensor<1x1xf32>, %[[Y:.+]]: tensor<4x1xf32>, %[[S:.+]]: tensor<f32>, %[[D:.+]]: tensor<?x1xf32>)
// CHECK-DAG: %[[R0:.+]] = nn.reshape %[[X]] [] : tensor<1x1xf32> -> tensor<f32>
// CHECK-DAG: %[[R1:.+]] = nn.reshape %[[Y]] [4] : tensor<4x1xf32> -> tensor<4xf32>
// CHECK-DAG: %[[R2:.+]] = nn.reshape %[[D]] [-1] : tensor<?x1xf32> -> tensor<?xf32>
// CHECK-NOT: nn.reduce
// CHECK: return %[[R0]], %[[X]], %[[Y]], %[[R1]], %[[S]], %[[R2]]
func.func @reduce_unit_dims(%x: tensor<1x1xf32>, %y: tensor<4x1xf32>, %s: tensor<f32>, %d: tensor<?x1xf32>) -> (tensor<f32>, tensor<1x1xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<f32>, tensor<?xf32>) {
  %0 = nn.reduce_sum %x [] : tensor<1x1xf32> -> tensor<f32>
  %1 = nn.reduce_sum %x [] {keepdims} : tensor<1x1xf32> -> tensor<1x1xf32>
  %2 = nn.reduce_mean %y [1] {keepdims} : tensor<4x1xf32> -> tensor<4x1xf32>
  %3 = nn.reduce_max %y [-1] : tensor<4x1xf32> -> tensor<4xf32>
  %4 = nn.reduce_sum %s [] : tensor<f32> -> tensor<f32>
  %5 = nn.reduce_sum %d [1] : tensor<?x1xf32> -> tensor<?xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<f32>, tensor<1x1xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<f32>, tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_kept
// CHECK-SAME: (%[[X:.+]]: tensor<4x1xf32>, %[[D:.+]]: tensor<?x1xf32>)
// CHECK: nn.reduce_sum %[[X]] [0] {keepdims} : tensor<4x1xf32> -> tensor<1x1xf32>
// CHECK: nn.reduce_mean %[[X]] [] : tensor<4x1xf32> -> tensor<f32>
// CHECK: nn.reduce_max %[[D]] [0] : tensor<?x1xf32> -> tensor<1xf32>
func.func @reduce_kept(%x: tensor<4x1xf32>, %d: tensor<?x1xf32>) -> (tensor<1x1xf32>, tensor<f32>, tensor<1xf32>) {
  %0 = nn.reduce_sum %x [0] {keepdims} : tensor<4x1xf32> -> tensor<1x1xf32>
  %1 = nn.reduce_mean %x [] : tensor<4x1xf32> -> tensor<f32>
  %2 = nn.reduce_max %d [0] : tensor<?x1xf32> -> tensor<1xf32>
  return %0, %1, %2 : tensor<1x1xf32>, tensor<f32>, tensor<1xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_ratio_zero
// CHECK-SAME: (%[[X:.+]]: tensor<4x3xf32>, %[[SEED:.+]]: tensor<i64>)
// CHECK: %[[D:.+]] = nn.dropout %[[X]], %[[SEED]] {ratio = 1.000000e-01 : f64}
// CHECK-NOT: nn.dropout
// CHECK: return %[[X]], %[[D]]
func.func @dropout_ratio_zero(%x: tensor<4x3xf32>, %seed: tensor<i64>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = nn.dropout %x, %seed {ratio = 0.0} : tensor<4x3xf32>, tensor<i64> -> tensor<4x3xf32>
  %1 = nn.dropout %x, %seed {ratio = 0.1} : tensor<4x3xf32>, tensor<i64> -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Specialised (static) slices write their -1 sizes out; a dynamic one keeps
// them.
// CHECK-LABEL: func.func @slice_to_end_sizes
// CHECK: nn.slice %{{.+}} starts [0, 2] sizes [4, 3] strides [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
// CHECK: nn.slice %{{.+}} starts [0, 2] sizes [-1, -1] strides [1, 2] : tensor<?x8xf32> -> tensor<?x3xf32>
func.func @slice_to_end_sizes(%x: tensor<4x8xf32>, %y: tensor<?x8xf32>) -> (tensor<4x3xf32>, tensor<?x3xf32>) {
  %0 = nn.slice %x starts [0, 2] sizes [-1, -1] strides [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
  %1 = nn.slice %y starts [0, 2] sizes [-1, -1] strides [1, 2] : tensor<?x8xf32> -> tensor<?x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<?x3xf32>
}

// -----

// A broadcast to the batch drops its batch source once the batch is static.
// CHECK-LABEL: func.func @broadcast_to_batch_of
// CHECK: nn.broadcast_to %{{.+}} [4, 1, 3] : tensor<1x1x3xf32> -> tensor<4x1x3xf32>
// CHECK: nn.broadcast_to %{{.+}} [-1, 1, 3] batch_of %{{.+}} : tensor<1x1x3xf32>, tensor<?x5xi64> -> tensor<?x1x3xf32>
func.func @broadcast_to_batch_of(%c: tensor<1x1x3xf32>, %x: tensor<4x5xi64>, %y: tensor<?x5xi64>) -> (tensor<4x1x3xf32>, tensor<?x1x3xf32>) {
  %0 = nn.broadcast_to %c [-1, 1, 3] batch_of %x : tensor<1x1x3xf32>, tensor<4x5xi64> -> tensor<4x1x3xf32>
  %1 = nn.broadcast_to %c [-1, 1, 3] batch_of %y : tensor<1x1x3xf32>, tensor<?x5xi64> -> tensor<?x1x3xf32>
  return %0, %1 : tensor<4x1x3xf32>, tensor<?x1x3xf32>
}

// -----

// A cast to the input's own type is the input; any other stays, a round trip
// through another type included (f64 -> f32 -> f64 rounds).
// CHECK-LABEL: func.func @cast_to_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4xf64>)
// CHECK: %[[F:.+]] = nn.cast %[[X]] : tensor<4xf64> -> tensor<4xf32>
// CHECK: %[[D:.+]] = nn.cast %[[F]] : tensor<4xf32> -> tensor<4xf64>
// CHECK: return %[[X]], %[[D]]
func.func @cast_to_same_type(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %0 = nn.cast %x : tensor<4xf64> -> tensor<4xf64>
  %1 = nn.cast %x : tensor<4xf64> -> tensor<4xf32>
  %2 = nn.cast %1 : tensor<4xf32> -> tensor<4xf64>
  return %0, %2 : tensor<4xf64>, tensor<4xf64>
}

// -----

// Narrowing back what a cast widened exactly is the original (the ONNX
// importer's round trip that keeps a narrow type's values); a round trip
// that loses values, or that starts wide, stays.
// CHECK-LABEL: func.func @cast_round_trip
// CHECK-SAME: (%[[U:.+]]: tensor<4xi8>, %[[H:.+]]: tensor<4xf16>, %[[B:.+]]: tensor<4xbf16>, %[[W:.+]]: tensor<4xi32>)
// CHECK-DAG: %[[N:.+]] = nn.cast %[[W]] : tensor<4xi32> -> tensor<4xi8>
// CHECK-DAG: %[[NW:.+]] = nn.cast %[[N]] : tensor<4xi8> -> tensor<4xi32>
// CHECK-DAG: %[[BH:.+]] = nn.cast %[[B]] : tensor<4xbf16> -> tensor<4xf16>
// CHECK-DAG: %[[BHB:.+]] = nn.cast %[[BH]] : tensor<4xf16> -> tensor<4xbf16>
// CHECK: return %[[U]], %[[H]], %[[B]], %[[NW]], %[[BHB]]
func.func @cast_round_trip(%u: tensor<4xi8>, %h: tensor<4xf16>, %b: tensor<4xbf16>, %w: tensor<4xi32>)
    -> (tensor<4xi8>, tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xbf16>) {
  %0 = nn.cast unsigned %u : tensor<4xi8> -> tensor<4xi32>
  %1 = nn.cast %0 : tensor<4xi32> -> tensor<4xi8>
  %2 = nn.cast %h : tensor<4xf16> -> tensor<4xf32>
  %3 = nn.cast %2 : tensor<4xf32> -> tensor<4xf16>
  %4 = nn.cast %b : tensor<4xbf16> -> tensor<4xf32>
  %5 = nn.cast %4 : tensor<4xf32> -> tensor<4xbf16>
  %6 = nn.cast %w : tensor<4xi32> -> tensor<4xi8>
  %7 = nn.cast %6 : tensor<4xi8> -> tensor<4xi32>
  // f16 holds neither bf16's range nor its values beyond 65504.
  %8 = nn.cast %b : tensor<4xbf16> -> tensor<4xf16>
  %9 = nn.cast %8 : tensor<4xf16> -> tensor<4xbf16>
  return %1, %3, %5, %7, %9 : tensor<4xi8>, tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xbf16>
}

// RUN: cleave-opt %s --split-input-file --cleave-convert-nn-to-linalg | FileCheck %s

// The gathers of cleave-convert-nn-to-linalg (kept apart from
// cleave-convert-nn-to-linalg.mlir): a linalg.generic over the result that
// reads the input with tensor.extract at a wrapped and clamped index, and
// scatter-add loops for the gradients.

// Gather along axis 1: the indices are read at the result's dimension 1; a
// negative index gets the axis size (6) added, and the result is clamped
// into [0, 5]. Float indices convert with fptosi.
// CHECK-DAG: #[[$IDX:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[$ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.+]]: tensor<4x6x8xf32>, %[[I:.+]]: tensor<3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$IDX]], #[[$ID3]]]
// CHECK-SAME: ins(%[[I]] : tensor<3xf32>)
// CHECK: ^bb0(%[[V:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[D0:.+]] = linalg.index 0
// CHECK: %[[N:.+]] = arith.fptosi %[[V]] : f32 to i64
// CHECK: %[[C:.+]] = arith.index_cast %[[N]]
// CHECK: %[[NEG:.+]] = arith.cmpi slt, %[[C]]
// CHECK: %[[W:.+]] = arith.addi %[[C]], %c6
// CHECK: %[[S:.+]] = arith.select %[[NEG]], %[[W]], %[[C]]
// CHECK: %[[LO:.+]] = arith.maxsi %[[S]]
// CHECK: %[[K:.+]] = arith.minsi %[[LO]], %c5
// CHECK: %[[D2:.+]] = linalg.index 2
// CHECK: tensor.extract %[[X]][%[[D0]], %[[K]], %[[D2]]]
func.func @gather(%x: tensor<4x6x8xf32>, %i: tensor<3xf32>) -> tensor<4x3x8xf32> {
  %0 = nn.gather %x, %i {axis = 1} : tensor<4x6x8xf32>, tensor<3xf32> -> tensor<4x3x8xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// The gradient: one loop per dimension of the cotangent, in order, adding
// into a zero tensor of the input's shape.
// CHECK-LABEL: func.func @gather_grad
// CHECK: %[[Z:.+]] = linalg.fill
// CHECK: scf.for %[[A:[a-z0-9_]+]] = {{.+}} iter_args(%[[T0:[a-z0-9_]+]] = %[[Z]])
// CHECK: scf.for %[[B:[a-z0-9_]+]] = {{.+}} iter_args(%[[T1:[a-z0-9_]+]] = %[[T0]])
// CHECK: scf.for %[[C:[a-z0-9_]+]] = {{.+}} iter_args(%[[T2:[a-z0-9_]+]] = %[[T1]])
// CHECK: %[[ID:.+]] = tensor.extract %{{.+}}[%[[B]]] : tensor<3xi64>
// CHECK: %[[ROW:.+]] = arith.minsi
// CHECK: %[[CUR:.+]] = tensor.extract %[[T2]][%[[A]], %[[ROW]], %[[C]]]
// CHECK: %[[G:.+]] = tensor.extract %{{.+}}[%[[A]], %[[B]], %[[C]]]
// CHECK: %[[SUM:.+]] = arith.addf %[[CUR]], %[[G]]
// CHECK: tensor.insert %[[SUM]] into %[[T2]][%[[A]], %[[ROW]], %[[C]]]
func.func @gather_grad(%dy: tensor<4x3x8xf32>, %i: tensor<3xi64>) -> tensor<4x6x8xf32> {
  %0 = nn.gather_grad %dy, %i {axis = 1, dim_size = 6} : tensor<4x3x8xf32>, tensor<3xi64> -> tensor<4x6x8xf32>
  return %0 : tensor<4x6x8xf32>
}

// -----

// GatherElements reads the indices at the result's own position and
// replaces the axis coordinate only.
// CHECK-LABEL: func.func @gather_elements
// CHECK-SAME: (%[[X:.+]]: tensor<4x6xf32>, %[[I:.+]]: tensor<4x2xi32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[I]] : tensor<4x2xi32>)
// CHECK: ^bb0(%[[V:.+]]: i32, %{{.+}}: f32):
// CHECK: %[[D0:.+]] = linalg.index 0
// CHECK: arith.index_cast %[[V]] : i32 to index
// CHECK: %[[K:.+]] = arith.minsi
// CHECK: tensor.extract %[[X]][%[[D0]], %[[K]]]
func.func @gather_elements(%x: tensor<4x6xf32>, %i: tensor<4x2xi32>) -> tensor<4x2xf32> {
  %0 = nn.gather_elements %x, %i {axis = 1} : tensor<4x6xf32>, tensor<4x2xi32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @gather_elements_grad
// CHECK: scf.for %[[A:[a-z0-9_]+]] =
// CHECK: scf.for %[[B:[a-z0-9_]+]] =
// CHECK: %[[ID:.+]] = tensor.extract %{{.+}}[%[[A]], %[[B]]] : tensor<4x2xi32>
// CHECK: %[[COL:.+]] = arith.minsi
// CHECK: tensor.insert %{{.+}} into %{{.+}}[%[[A]], %[[COL]]]
func.func @gather_elements_grad(%dy: tensor<4x2xf32>, %i: tensor<4x2xi32>) -> tensor<4x6xf32> {
  %0 = nn.gather_elements_grad %dy, %i {axis = 1, shape = array<i64: 4, 6>} : tensor<4x2xf32>, tensor<4x2xi32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @iota
// CHECK: linalg.generic
// CHECK: %[[I:.+]] = linalg.index 0
// CHECK: %[[N:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK: arith.sitofp %[[N]] : i64 to f32
func.func @iota(%x: tensor<5x3xf32>) -> tensor<5xf32> {
  %0 = nn.iota %x {axis = 0, dtype = f32} : tensor<5x3xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of the gathers at run-time indices, their gradients and
// nn.iota (kept apart from ops.mlir, which they would otherwise join).

// CHECK-LABEL: func.func @gathers
// CHECK-SAME: (%[[H:.+]]: tensor<24x16xf32>, %[[I:.+]]: tensor<4xi64>, %[[F:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<?x6x16xf32>, %[[E:.+]]: tensor<?x1x16xi32>, %[[DY:.+]]: tensor<4x16xf32>, %[[DE:.+]]: tensor<4x1x16xf32>, %[[E4:.+]]: tensor<4x1x16xi32>)
func.func @gathers(%h: tensor<24x16xf32>, %i: tensor<4xi64>, %f: tensor<4xf32>,
                   %x: tensor<?x6x16xf32>, %e: tensor<?x1x16xi32>,
                   %dy: tensor<4x16xf32>, %de: tensor<4x1x16xf32>,
                   %e4: tensor<4x1x16xi32>) {
  // CHECK: nn.gather %[[H]], %[[I]] {axis = 0 : i64} : tensor<24x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  %0 = nn.gather %h, %i {axis = 0} : tensor<24x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  // CHECK: nn.gather %[[X]], %[[F]] {axis = 1 : i64} : tensor<?x6x16xf32>, tensor<4xf32> -> tensor<?x4x16xf32>
  %1 = nn.gather %x, %f {axis = 1} : tensor<?x6x16xf32>, tensor<4xf32> -> tensor<?x4x16xf32>
  // CHECK: nn.gather_grad %[[DY]], %[[I]] {axis = 0 : i64, dim_size = 24 : i64} : tensor<4x16xf32>, tensor<4xi64> -> tensor<24x16xf32>
  %2 = nn.gather_grad %dy, %i {axis = 0, dim_size = 24} : tensor<4x16xf32>, tensor<4xi64> -> tensor<24x16xf32>
  // CHECK: nn.gather_elements %[[X]], %[[E]] {axis = 1 : i64} : tensor<?x6x16xf32>, tensor<?x1x16xi32> -> tensor<?x1x16xf32>
  %3 = nn.gather_elements %x, %e {axis = 1} : tensor<?x6x16xf32>, tensor<?x1x16xi32> -> tensor<?x1x16xf32>
  // CHECK: nn.gather_elements_grad %[[DE]], %[[E4]] {axis = 1 : i64, shape = array<i64: 4, 6, 16>} : tensor<4x1x16xf32>, tensor<4x1x16xi32> -> tensor<4x6x16xf32>
  %4 = nn.gather_elements_grad %de, %e4 {axis = 1, shape = array<i64: 4, 6, 16>} : tensor<4x1x16xf32>, tensor<4x1x16xi32> -> tensor<4x6x16xf32>
  // CHECK: nn.iota %[[X]] {axis = 0 : i64, dtype = f32} : tensor<?x6x16xf32> -> tensor<?xf32>
  %5 = nn.iota %x {axis = 0, dtype = f32} : tensor<?x6x16xf32> -> tensor<?xf32>
  // CHECK: nn.iota %[[H]] {axis = 1 : i64, dtype = f64} : tensor<24x16xf32> -> tensor<16xf64>
  %6 = nn.iota %h {axis = 1, dtype = f64} : tensor<24x16xf32> -> tensor<16xf64>
  return
}

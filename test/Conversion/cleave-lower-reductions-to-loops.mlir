// RUN: cleave-opt %s --split-input-file --cleave-lower-reductions-to-loops | FileCheck %s

// A layer norm's variance: each row's output element is loaded once,
// carried through the reduction loop and stored once; the add that folds
// into it may be reassociated, the other arithmetic is unchanged.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_variance
// CHECK-SAME: (%[[X:.+]]: memref<8x128xf32>, %[[MEAN:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<8xf32>)
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %[[C8]]
// CHECK:   %[[INIT:.+]] = memref.load %[[OUT]][%[[I]]]
// CHECK:   %[[SUM:.+]] = scf.for %[[J:.+]] = %{{.+}} to %[[C128]] {{.*}}iter_args(%[[ACC:.+]] = %[[INIT]]) -> (f32)
// CHECK:     %[[V:.+]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK:     %[[M:.+]] = memref.load %[[MEAN]][%[[I]]]
// CHECK:     %[[D:.+]] = arith.subf %[[V]], %[[M]] : f32
// CHECK:     %[[SQ:.+]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK:     %[[NEW:.+]] = arith.addf %[[SQ]], %[[ACC]] fastmath<reassoc> : f32
// CHECK:     scf.yield %[[NEW]]
// CHECK-NOT: memref.store
// CHECK:   }
// CHECK:   memref.store %[[SUM]], %[[OUT]][%[[I]]]
// CHECK-NOT: linalg.generic
func.func @row_variance(%x: memref<8x128xf32>, %mean: memref<8xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : memref<8x128xf32>, memref<8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %m: f32, %acc: f32):
    %d = arith.subf %in, %m : f32
    %sq = arith.mulf %d, %d : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Softmax's row maximum over two reduction loops, with two outputs (the
// maximum and a count of indices): max is exact in any order and keeps its
// flags; `linalg.index` becomes the loop's induction variable; an add that
// does not fold into its own output is not marked.
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-LABEL: func.func @two_outputs
// CHECK: scf.for %[[I:.+]] =
// CHECK:   memref.load %{{.+}}[%[[I]]] : memref<4xf32>
// CHECK:   memref.load %{{.+}}[%[[I]]] : memref<4xf32>
// CHECK:   scf.for %[[J:.+]] = {{.*}}iter_args(%[[MAX:.+]] = %{{.+}}, %[[CNT:.+]] = %{{.+}}) -> (f32, f32)
// CHECK:     scf.for %[[K:.+]] = {{.*}}iter_args(%[[MAX2:.+]] = %[[MAX]], %[[CNT2:.+]] = %[[CNT]]) -> (f32, f32)
// CHECK:       %[[V:.+]] = memref.load %{{.+}}[%[[I]], %[[J]], %[[K]]]
// CHECK:       %[[NEWMAX:.+]] = arith.maximumf %[[V]], %[[MAX2]] : f32
// CHECK:       %[[KI:.+]] = arith.index_cast %[[K]] : index to i32
// CHECK:       %[[KF:.+]] = arith.sitofp %[[KI]] : i32 to f32
// CHECK:       %[[T:.+]] = arith.addf %[[KF]], %[[V]] : f32
// CHECK:       %[[NEWCNT:.+]] = arith.mulf %[[T]], %[[CNT2]] : f32
// CHECK:       scf.yield %[[NEWMAX]], %[[NEWCNT]]
// CHECK:   memref.store
// CHECK:   memref.store
func.func @two_outputs(%x: memref<4x3x5xf32>, %max: memref<4xf32>, %prod: memref<4xf32>) {
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<4x3x5xf32>) outs(%max, %prod : memref<4xf32>, memref<4xf32>) {
  ^bb0(%in: f32, %m: f32, %p: f32):
    %0 = arith.maximumf %in, %m : f32
    %k = linalg.index 2 : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %t = arith.addf %kf, %in : f32
    %1 = arith.mulf %t, %p : f32
    linalg.yield %0, %1 : f32, f32
  }
  return
}

// -----

// A full reduction (no parallel loop) still accumulates in a register.
#all = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @full_sum
// CHECK: %[[INIT:.+]] = memref.load %{{.+}}[] : memref<f32>
// CHECK: %[[SUM:.+]] = scf.for {{.*}}iter_args(%[[ACC:.+]] = %[[INIT]])
// CHECK:   arith.addf %[[ACC]], %{{.+}} fastmath<reassoc> : f32
// CHECK: memref.store %[[SUM]], %{{.+}}[] : memref<f32>
func.func @full_sum(%x: memref<64xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<64xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A bias gradient reduces over rows with a parallel innermost loop, which
// vectorises as it is: left to convert-linalg-to-loops.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @outer_reduction
// CHECK: linalg.generic
// CHECK-NOT: scf.for
func.func @outer_reduction(%x: memref<8x128xf32>, %out: memref<128xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x128xf32>) outs(%out : memref<128xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Elementwise nests and ops on tensors are not this pass's business.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-NOT: scf.for
func.func @left_alone(%x: memref<8x128xf32>, %y: memref<8x128xf32>, %t: tensor<8x128xf32>, %r: tensor<8xf32>) -> tensor<8xf32> {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x128xf32>) outs(%y : memref<8x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = arith.addf %in, %out : f32
    linalg.yield %e : f32
  }
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<8x128xf32>) outs(%r : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// An output that is also read as an input must see every store: left to
// convert-linalg-to-loops.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @output_read_as_input
// CHECK: linalg.generic
// CHECK-NOT: scf.for
func.func @output_read_as_input(%x: memref<8x128xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %out : memref<8x128xf32>, memref<8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %old: f32, %acc: f32):
    %p = arith.mulf %in, %old : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  return
}

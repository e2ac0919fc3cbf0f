// RUN: cleave-opt %s --cleave-rematerialize --split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: cleave-opt %s --cleave-rematerialize="budget=0" --split-input-file | FileCheck %s --check-prefix=ALL
// RUN: cleave-opt %s --cleave-rematerialize="budget=300" --split-input-file | FileCheck %s --check-prefix=SOME
// RUN: cleave-opt %s --cleave-rematerialize="budget-fraction=0.5" --split-input-file | FileCheck %s --check-prefix=SOME
// RUN: not cleave-opt %s --cleave-rematerialize="budget=-5" 2>&1 | FileCheck %s --check-prefix=BAD

// A two-layer step: z = x.w (held for relu's gradient), h = relu(z) (held
// for the weight gradient, through a view), the loss sums h. Without a
// budget only h is recomputed: a loop nest over z, which is held anyway.
// budget=0 recomputes z too (a GEMM of the input and a parameter), and h
// from the recomputed z. budget=300 (and 50%) is met by h alone: the loop
// nest is taken first, the GEMM never.

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
module {
  func.func @micro_step(%ctx: !llvm.ptr, %xm: memref<4x8xf32>, %lossm: memref<f32>, %wm: memref<16x8xf32>, %gm: memref<16x8xf32>)
      attributes {rt.abi = [{name = "x", role = "input"}, {name = "loss", role = "output"}, {name = "w", role = "global"}, {name = "w.grad", role = "global"}], train.entry = "micro_step"} {
    %zero = arith.constant 0.000000e+00 : f32
    %x = bufferization.to_tensor %xm restrict : memref<4x8xf32> to tensor<4x8xf32>
    %w = bufferization.to_tensor %wm restrict : memref<16x8xf32> to tensor<16x8xf32>
    %g = bufferization.to_tensor %gm restrict writable : memref<16x8xf32> to tensor<16x8xf32>
    %e = tensor.empty() : tensor<4x16xf32>
    %z = rt.kernel matmul ins(%x, %w : tensor<4x8xf32>, tensor<16x8xf32>) outs(%e : tensor<4x16xf32>) {trans_a = false, trans_b = true} -> tensor<4x16xf32>
    %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<4x16xf32>
    %hv = tensor.expand_shape %h [[0], [1, 2]] output_shape [4, 16, 1] : tensor<4x16xf32> into tensor<4x16x1xf32>
    %hc = tensor.collapse_shape %hv [[0], [1, 2]] : tensor<4x16x1xf32> into tensor<4x16xf32>
    %s0 = tensor.empty() : tensor<f32>
    %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
    %loss = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%hc : tensor<4x16xf32>) outs(%s1 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    // Backward: the seed is 1 for every element of h.
    %dz = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %c = arith.cmpf ogt, %in, %zero : f32
      %one = arith.constant 1.000000e+00 : f32
      %r = arith.select %c, %one, %zero : f32
      linalg.yield %r : f32
    } -> tensor<4x16xf32>
    %dw = rt.kernel matmul ins(%dz, %hc : tensor<4x16xf32>, tensor<4x16xf32>) outs(%g : tensor<16x8xf32>) {accumulate = true, trans_a = true, trans_b = false} -> tensor<16x8xf32>
    bufferization.materialize_in_destination %loss in restrict writable %lossm : (tensor<f32>, memref<f32>) -> ()
    bufferization.materialize_in_destination %dw in restrict writable %gm : (tensor<16x8xf32>, memref<16x8xf32>) -> ()
    return
  }
}

// AUTO-LABEL: func.func @micro_step
// AUTO-SAME:    cleave.remat = {after = 256 : i64, before = 512 : i64, bytes = 256 : i64, flops = 64 : i64, forward_flops = 1153 : i64, values = 1 : i64}
// AUTO:         %[[Z:.*]] = rt.kernel matmul
// AUTO:         %[[H:.*]] = linalg.generic {{.*}} ins(%[[Z]] :
// AUTO:         %[[HV:.*]] = tensor.expand_shape %[[H]]
// AUTO-NEXT:    %[[HC:.*]] = tensor.collapse_shape %[[HV]]
// AUTO:         linalg.generic {{.*}} ins(%[[HC]] :
// AUTO:         %[[DZ:.*]] = linalg.generic {{.*}} ins(%[[Z]] :
// The weight gradient reads h through views: h and both views are
// recomputed from z right before it.
// AUTO:         %[[H2:.*]] = linalg.generic {{.*}} ins(%[[Z]] : {{.*}}cleave.remat
// AUTO:         %[[HV2:.*]] = tensor.expand_shape %[[H2]] {{.*}}{cleave.remat}
// AUTO-NEXT:    %[[HC2:.*]] = tensor.collapse_shape %[[HV2]] {{.*}}{cleave.remat}
// AUTO-NEXT:    rt.kernel matmul ins(%[[DZ]], %[[HC2]] :

// ALL-LABEL: func.func @micro_step
// ALL-SAME:    cleave.remat = {after = 0 : i64, before = 512 : i64, bytes = 512 : i64, flops = 2112 : i64, forward_flops = 1153 : i64, values = 2 : i64}
// ALL:         %[[Z:.*]] = rt.kernel matmul
// ALL:         linalg.generic {{.*}} ins(%[[Z]] :
// ALL:         %[[Z2:.*]] = rt.kernel matmul {{.*}}{cleave.remat}
// ALL-NEXT:    %[[DZ:.*]] = linalg.generic {{.*}} ins(%[[Z2]] :
// ALL:         %[[Z3:.*]] = rt.kernel matmul {{.*}}{cleave.remat}
// ALL-NEXT:    %[[H3:.*]] = linalg.generic {{.*}} ins(%[[Z3]] : {{.*}}cleave.remat
// ALL:         tensor.expand_shape %[[H3]] {{.*}}{cleave.remat}
// ALL-NEXT:    tensor.collapse_shape {{.*}}{cleave.remat}
// ALL-NEXT:    rt.kernel matmul ins(%[[DZ]],

// SOME-LABEL: func.func @micro_step
// SOME-SAME:    cleave.remat = {after = 256 : i64, before = 512 : i64, bytes = 256 : i64
// SOME-COUNT-1: rt.kernel matmul {{.*}}trans_b = true
// SOME-NOT:     rt.kernel matmul {{.*}}trans_b = true

// BAD: budget must be at least 0 bytes

// -----

// No loss output (an apply step, say): nothing is held, nothing changes.
// AUTO-LABEL: func.func @no_loss
// AUTO-NOT:   cleave.remat
// ALL-LABEL: func.func @no_loss
// ALL-NOT:   cleave.remat
func.func @no_loss(%ctx: !llvm.ptr, %xm: memref<4xf32>)
    attributes {rt.abi = [{name = "x", role = "global"}], train.entry = "micro_step"} {
  return
}

// -----

// A forward value read only through an entry output stays: the runtime
// reads it where it is written.
// AUTO-LABEL: func.func @output
// ALL-LABEL:  func.func @output
// ALL-SAME:     bytes = 0 : i64
// AUTO-SAME:    cleave.remat = {after = 64 : i64, before = 64 : i64, bytes = 0 : i64
// AUTO-NOT:     {cleave.remat}
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0) -> ()>
func.func @output(%ctx: !llvm.ptr, %xm: memref<16xf32>, %lossm: memref<f32>, %ym: memref<16xf32>)
    attributes {rt.abi = [{name = "x", role = "input"}, {name = "loss", role = "output"}, {name = "y", role = "output"}], train.entry = "micro_step"} {
  %zero = arith.constant 0.000000e+00 : f32
  %x = bufferization.to_tensor %xm restrict : memref<16xf32> to tensor<16xf32>
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["reduction"]} ins(%y : tensor<16xf32>) outs(%s1 : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  bufferization.materialize_in_destination %loss in restrict writable %lossm : (tensor<f32>, memref<f32>) -> ()
  bufferization.materialize_in_destination %y in restrict writable %ym : (tensor<16xf32>, memref<16xf32>) -> ()
  return
}

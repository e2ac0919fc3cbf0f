// RUN: cleave-opt %s --split-input-file --cleave-store-bf16 | FileCheck %s
// RUN: cleave-opt %s --split-input-file --cleave-store-bf16=convolutions=false | FileCheck %s --check-prefix=NOCONV
// RUN: cleave-opt %s --split-input-file --cleave-store-bf16="convolutions=false parameters=true" | FileCheck %s --check-prefix=PARAMS
// RUN: cleave-opt %s --split-input-file --cleave-store-bf16="parameters=true convolution-results=true" | FileCheck %s --check-prefix=CUDA

// bf16 kernels read their activation inputs stored in bf16, narrowed in the
// loop that computes each (mixed-precision.md, "bf16 storage").

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A hidden layer's ReLU output feeds the next matmul (a) and the weight
// gradient (b): the ReLU loop yields bf16 alone, both kernels read it. The
// output gradient feeds two matmuls and a bias-gradient reduction: its loop
// yields f32 (for the reduction) and bf16. The input image has no loop to
// fuse into: one narrowing loop, shared by the forward matmul and the
// weight gradient. The weights (a global) stay f32. ReLU's backward mask
// reads the bf16 ReLU output instead of the f32 pre-activation, which then
// dies in the forward pass.

// CHECK-LABEL: func.func @micro_step
// CHECK: %[[X:.*]] = bufferization.to_tensor %arg1
// CHECK: %[[XB:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xbf16>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: bf16):
// CHECK-NEXT: arith.truncf
// CHECK: %[[W:.*]] = bufferization.to_tensor %arg2
// CHECK: %[[Z:.*]] = rt.kernel matmul ins(%[[XB]], %[[W]] : tensor<8x16xbf16>, tensor<4x16xf32>)
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[Z]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xbf16>)
// CHECK: arith.maximumf
// CHECK: arith.truncf
// CHECK: rt.kernel matmul ins(%[[H]], %{{.*}} : tensor<8x4xbf16>, tensor<4x4xf32>)
// CHECK: %[[DY:.*]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<8x4xbf16>)
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: rt.kernel matmul ins(%[[DY]]#1, %[[H]] : tensor<8x4xbf16>, tensor<8x4xbf16>)
// CHECK: rt.kernel matmul ins(%[[DY]]#1, %[[XB]] : tensor<8x4xbf16>, tensor<8x16xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[DY]]#0 : tensor<8x4xf32>)
// CHECK: %[[DH:.*]] = rt.kernel matmul ins(%[[DY]]#1, %[[W2:.*]] : tensor<8x4xbf16>, tensor<4x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[DH]], %[[H]] : tensor<8x4xf32>, tensor<8x4xbf16>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[HI:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[HW:.*]] = arith.extf %[[HI]] : bf16 to f32
// CHECK-NEXT: arith.cmpf ogt, %[[HW]], %{{.*}} : f32

// With `parameters` (cuda, whose cuBLASLt multiplies bf16 only on two bf16
// operands) each weight is narrowed once, right after it is read, and the
// forward and backward-data matmuls share the copy.
// PARAMS-LABEL: func.func @micro_step
// PARAMS: %[[W:.*]] = bufferization.to_tensor %arg2
// PARAMS: %[[WB:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xbf16>)
// PARAMS: %[[W2:.*]] = bufferization.to_tensor %arg3
// PARAMS: %[[W2B:.*]] = linalg.generic {{.*}} ins(%[[W2]] : tensor<4x4xf32>) outs(%{{.*}} : tensor<4x4xbf16>)
// PARAMS: rt.kernel matmul ins(%{{.*}}, %[[WB]] : tensor<8x16xbf16>, tensor<4x16xbf16>)
// PARAMS: rt.kernel matmul ins(%{{.*}}, %[[W2B]] : tensor<8x4xbf16>, tensor<4x4xbf16>)
// PARAMS: rt.kernel matmul ins(%{{.*}}, %[[W2B]] : tensor<8x4xbf16>, tensor<4x4xbf16>) {{.*}} {trans_a = false, trans_b = false}

func.func @micro_step(%ctx: !llvm.ptr, %xm: memref<8x16xf32>, %wm: memref<4x16xf32>, %w2m: memref<4x4xf32>, %gm: memref<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<8x4xf32>)
    attributes {rt.abi = [{name = "x", role = "input"}, {name = "w", role = "global"}, {name = "w2", role = "global"}, {name = "g", role = "input"}]} {
  %x = bufferization.to_tensor %xm restrict : memref<8x16xf32> to tensor<8x16xf32>
  %w = bufferization.to_tensor %wm restrict : memref<4x16xf32> to tensor<4x16xf32>
  %w2 = bufferization.to_tensor %w2m restrict : memref<4x4xf32> to tensor<4x4xf32>
  %g = bufferization.to_tensor %gm restrict : memref<8x4xf32> to tensor<8x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = rt.kernel matmul ins(%x, %w : tensor<8x16xf32>, tensor<4x16xf32>) outs(%e : tensor<8x4xf32>) {trans_a = false, trans_b = true} -> tensor<8x4xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %y = rt.kernel matmul ins(%h, %w2 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%e : tensor<8x4xf32>) {trans_a = false, trans_b = true} -> tensor<8x4xf32>
  %dy = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %g : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %dw2 = rt.kernel matmul ins(%dy, %h : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<4x4xf32>) {trans_a = true, trans_b = false} -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<4x16xf32>
  %dw = rt.kernel matmul ins(%dy, %x : tensor<8x4xf32>, tensor<8x16xf32>) outs(%e3 : tensor<4x16xf32>) {trans_a = true, trans_b = false} -> tensor<4x16xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %db = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["reduction", "parallel"]} ins(%dy : tensor<8x4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %dh = rt.kernel matmul ins(%dy, %w2 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%e : tensor<8x4xf32>) {trans_a = false, trans_b = false} -> tensor<8x4xf32>
  %dz = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%dh, %z : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%gi: f32, %zi: f32, %out: f32):
    %pos = arith.cmpf ogt, %zi, %zero : f32
    %s = arith.select %pos, %gi, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %y, %dw2, %dw, %db, %dz : tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<8x4xf32>
}

// -----

// Convolutions: the source and the output gradient, unless they stay f32
// (convolutions=false, the cuda target); pooling never.

// CHECK-LABEL: func.func @conv
// CHECK: rt.kernel conv2d_fwd ins(%{{.*}}, %{{.*}} : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xf32>)
// CHECK: rt.kernel max_pool2d_fwd ins(%{{.*}} : tensor<2x4x8x8xf32>)
// NOCONV-LABEL: func.func @conv
// NOCONV-NOT: bf16
func.func @conv(%ctx: !llvm.ptr, %xm: memref<2x3x8x8xf32>, %km: memref<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    attributes {rt.abi = [{name = "x", role = "input"}, {name = "k", role = "global"}]} {
  %x = bufferization.to_tensor %xm restrict : memref<2x3x8x8xf32> to tensor<2x3x8x8xf32>
  %k = bufferization.to_tensor %km restrict : memref<4x3x3x3xf32> to tensor<4x3x3x3xf32>
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %y = rt.kernel conv2d_fwd ins(%x, %k : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%e : tensor<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"} -> tensor<2x4x8x8xf32>
  %e2 = tensor.empty() : tensor<2x4x4x4xf32>
  %p = rt.kernel max_pool2d_fwd ins(%y : tensor<2x4x8x8xf32>) outs(%e2 : tensor<2x4x4x4xf32>) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false} -> tensor<2x4x4x4xf32>
  return %p : tensor<2x4x4x4xf32>
}

// -----

// A backward loop that reads the pre-activation for more than its sign (a
// smooth activation's derivative) keeps reading it in f32.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @not_a_mask
// NOCONV-LABEL: func.func @not_a_mask
// CHECK: %[[Z:.*]] = rt.kernel matmul
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] : tensor<8x4xf32>, tensor<8x4xf32>)
// CHECK-NOT: arith.extf
// CHECK: return
func.func @not_a_mask(%ctx: !llvm.ptr, %xm: memref<8x16xf32>, %wm: memref<4x16xf32>, %w2m: memref<4x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
    attributes {rt.abi = [{name = "x", role = "input"}, {name = "w", role = "global"}, {name = "w2", role = "global"}]} {
  %x = bufferization.to_tensor %xm restrict : memref<8x16xf32> to tensor<8x16xf32>
  %w = bufferization.to_tensor %wm restrict : memref<4x16xf32> to tensor<4x16xf32>
  %w2 = bufferization.to_tensor %w2m restrict : memref<4x4xf32> to tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = rt.kernel matmul ins(%x, %w : tensor<8x16xf32>, tensor<4x16xf32>) outs(%e : tensor<8x4xf32>) {trans_a = false, trans_b = true} -> tensor<8x4xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %y = rt.kernel matmul ins(%h, %w2 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%e : tensor<8x4xf32>) {trans_a = false, trans_b = true} -> tensor<8x4xf32>
  %dz = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %z : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%gi: f32, %zi: f32, %out: f32):
    %pos = arith.cmpf ogt, %zi, %zero : f32
    %m = arith.mulf %gi, %zi : f32
    %s = arith.select %pos, %m, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %y, %dz : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A convolution with a single input channel stays f32: oneDNN has no bf16
// JIT kernel for it (Bf16Rule.h).

// CHECK-LABEL: func.func @single_channel
// CHECK-NOT: bf16
// CHECK: return
// NOCONV-LABEL: func.func @single_channel
func.func @single_channel(%ctx: !llvm.ptr, %xm: memref<2x1x8x8xf32>, %km: memref<4x1x3x3xf32>) -> tensor<2x4x8x8xf32>
    attributes {rt.abi = [{name = "x", role = "input"}, {name = "k", role = "global"}]} {
  %x = bufferization.to_tensor %xm restrict : memref<2x1x8x8xf32> to tensor<2x1x8x8xf32>
  %k = bufferization.to_tensor %km restrict : memref<4x1x3x3xf32> to tensor<4x1x3x3xf32>
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %y = rt.kernel conv2d_fwd ins(%x, %k : tensor<2x1x8x8xf32>, tensor<4x1x3x3xf32>) outs(%e : tensor<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "none"} -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// -----

// cuda (convolution-results): cuDNN multiplies bf16 only on bf16 tensors,
// so a bf16 convolution has every operand in bf16, the weights (a global)
// narrowed once for the forward and backward-data kernels, and writes a bf16
// result, which a loop widens to f32 while doing what the kernel did after
// the products: the bias and the ReLU, or the sum into the accumulator the
// kernel had (which the loop then writes, in f32).

// CUDA-LABEL: func.func @conv_train
// CUDA: %[[X:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x3x8x8xf32>) outs(%{{.*}} : tensor<2x3x8x8xbf16>)
// CUDA: %[[K:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x3x3x3xf32>) outs(%{{.*}} : tensor<4x3x3x3xbf16>)
// CUDA: %[[ACC:.*]] = bufferization.to_tensor %arg5
// CUDA: %[[Y:.*]] = rt.kernel conv2d_fwd ins(%[[X]], %[[K]] : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>) outs(%{{.*}} : tensor<2x4x8x8xbf16>) {activation = "none", {{.*}}} -> tensor<2x4x8x8xbf16>
// CUDA: %[[YF:.*]] = linalg.generic {{.*}} ins(%[[Y]], %{{.*}} : tensor<2x4x8x8xbf16>, tensor<4xf32>) outs(%{{.*}} : tensor<2x4x8x8xf32>)
// CUDA-NEXT: ^bb0(%[[R:.*]]: bf16, %[[B:.*]]: f32, %{{.*}}: f32):
// CUDA-NEXT: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CUDA-NEXT: %[[S:.*]] = arith.addf %[[W]], %[[B]] : f32
// CUDA-NEXT: %[[Z:.*]] = arith.maximumf %[[S]], %{{.*}} : f32
// CUDA-NEXT: linalg.yield %[[Z]] : f32
// CUDA: %[[DX:.*]] = rt.kernel conv2d_bwd_data ins(%{{.*}}, %[[K]] : tensor<2x4x8x8xbf16>, tensor<4x3x3x3xbf16>) outs(%{{.*}} : tensor<2x3x8x8xbf16>)
// CUDA: %[[DXF:.*]] = linalg.generic {{.*}} ins(%[[DX]] : tensor<2x3x8x8xbf16>) outs(%{{.*}} : tensor<2x3x8x8xf32>)
// CUDA: %[[DK:.*]] = rt.kernel conv2d_bwd_weights ins(%[[X]], %{{.*}} : tensor<2x3x8x8xbf16>, tensor<2x4x8x8xbf16>) outs(%{{.*}} : tensor<4x3x3x3xbf16>) {accumulate = false, {{.*}}} -> tensor<4x3x3x3xbf16>
// CUDA: %[[DKF:.*]] = linalg.generic {{.*}} ins(%[[DK]] : tensor<4x3x3x3xbf16>) outs(%[[ACC]] : tensor<4x3x3x3xf32>)
// CUDA-NEXT: ^bb0(%[[R:.*]]: bf16, %[[OLD:.*]]: f32):
// CUDA-NEXT: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CUDA-NEXT: %[[SUM:.*]] = arith.addf %[[OLD]], %[[W]] : f32
// CUDA-NEXT: linalg.yield %[[SUM]] : f32
// CUDA: return %[[YF]], %[[DXF]], %[[DKF]]
func.func @conv_train(%ctx: !llvm.ptr, %xm: memref<2x3x8x8xf32>, %km: memref<4x3x3x3xf32>, %bm: memref<4xf32>, %gm: memref<2x4x8x8xf32>, %am: memref<4x3x3x3xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>)
    attributes {rt.abi = [{name = "x", role = "input"}, {name = "k", role = "global"}, {name = "b", role = "global"}, {name = "g", role = "input"}, {name = "acc", role = "global"}]} {
  %x = bufferization.to_tensor %xm restrict : memref<2x3x8x8xf32> to tensor<2x3x8x8xf32>
  %k = bufferization.to_tensor %km restrict : memref<4x3x3x3xf32> to tensor<4x3x3x3xf32>
  %b = bufferization.to_tensor %bm restrict : memref<4xf32> to tensor<4xf32>
  %g = bufferization.to_tensor %gm restrict : memref<2x4x8x8xf32> to tensor<2x4x8x8xf32>
  %acc = bufferization.to_tensor %am restrict : memref<4x3x3x3xf32> to tensor<4x3x3x3xf32>
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %y = rt.kernel conv2d_fwd ins(%x, %k, %b : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) outs(%e : tensor<2x4x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "relu"} -> tensor<2x4x8x8xf32>
  %e2 = tensor.empty() : tensor<2x3x8x8xf32>
  %dx = rt.kernel conv2d_bwd_data ins(%g, %k : tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) outs(%e2 : tensor<2x3x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} -> tensor<2x3x8x8xf32>
  %dk = rt.kernel conv2d_bwd_weights ins(%x, %g : tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) outs(%acc : tensor<4x3x3x3xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, accumulate = true} -> tensor<4x3x3x3xf32>
  return %y, %dx, %dk : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}

// -----

// A widening with one reader, an elementwise loop (here a ReLU backward's
// product with the mask), fuses into it: the f32 result is never stored.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CUDA-LABEL: func.func @widen_into_reader
// CUDA: %[[DX:.*]] = rt.kernel conv2d_bwd_data {{.*}} -> tensor<2x3x8x8xbf16>
// CUDA-NEXT: tensor.empty() : tensor<2x3x8x8xf32>
// CUDA-NEXT: %[[R:.*]] = linalg.generic {{.*}} ins(%[[DX]], %{{.*}} : tensor<2x3x8x8xbf16>, tensor<2x3x8x8xf32>)
// CUDA: arith.extf
// CUDA: arith.select
// CUDA-NOT: linalg.generic
// CUDA: return %[[R]]
func.func @widen_into_reader(%ctx: !llvm.ptr, %gm: memref<2x4x8x8xf32>, %km: memref<4x3x3x3xf32>, %zm: memref<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    attributes {rt.abi = [{name = "g", role = "input"}, {name = "k", role = "global"}, {name = "z", role = "input"}]} {
  %g = bufferization.to_tensor %gm restrict : memref<2x4x8x8xf32> to tensor<2x4x8x8xf32>
  %k = bufferization.to_tensor %km restrict : memref<4x3x3x3xf32> to tensor<4x3x3x3xf32>
  %z = bufferization.to_tensor %zm restrict : memref<2x3x8x8xf32> to tensor<2x3x8x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x8x8xf32>
  %dx = rt.kernel conv2d_bwd_data ins(%g, %k : tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) outs(%e : tensor<2x3x8x8xf32>) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} -> tensor<2x3x8x8xf32>
  %dz = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dx, %z : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) outs(%e : tensor<2x3x8x8xf32>) {
  ^bb0(%gi: f32, %zi: f32, %out: f32):
    %pos = arith.cmpf ogt, %zi, %zero : f32
    %s = arith.select %pos, %gi, %zero : f32
    linalg.yield %s : f32
  } -> tensor<2x3x8x8xf32>
  return %dz : tensor<2x3x8x8xf32>
}

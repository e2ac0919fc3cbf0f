// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of every nn op in its custom assembly form, including every
// optional operand and every non-default attribute.

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<32x10xf32>, %[[B:.+]]: tensor<10xf32>, %[[C:.+]]: tensor<?x1xf64>, %[[D:.+]]: tensor<4xf64>)
func.func @binary(%a: tensor<32x10xf32>, %b: tensor<10xf32>, %c: tensor<?x1xf64>, %d: tensor<4xf64>) {
  // CHECK: nn.add %[[A]], %[[B]] : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %0 = nn.add %a, %b : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  // CHECK: nn.sub %[[B]], %[[A]] : tensor<10xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  %1 = nn.sub %b, %a : tensor<10xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  // CHECK: nn.mul %[[A]], %[[A]] : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  %2 = nn.mul %a, %a : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  // CHECK: nn.div %[[C]], %[[D]] : tensor<?x1xf64>, tensor<4xf64> -> tensor<?x4xf64>
  %3 = nn.div %c, %d : tensor<?x1xf64>, tensor<4xf64> -> tensor<?x4xf64>
  // CHECK: nn.maximum %[[A]], %[[B]] : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %4 = nn.maximum %a, %b : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  // CHECK: nn.minimum %[[C]], %[[D]] : tensor<?x1xf64>, tensor<4xf64> -> tensor<?x4xf64>
  %5 = nn.minimum %c, %d : tensor<?x1xf64>, tensor<4xf64> -> tensor<?x4xf64>
  // CHECK: nn.powf %[[A]], %[[B]] : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %6 = nn.powf %a, %b : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  // CHECK: nn.powf %[[C]], %[[D]] : tensor<?x1xf64>, tensor<4xf64> -> tensor<?x4xf64>
  %7 = nn.powf %c, %d : tensor<?x1xf64>, tensor<4xf64> -> tensor<?x4xf64>
  return
}

// Integer arithmetic and data movement.
// CHECK-LABEL: func.func @integers
// CHECK-SAME: (%[[A:.+]]: tensor<4x3xi64>, %[[B:.+]]: tensor<3xi64>, %[[C:.+]]: tensor<3xi32>, %[[M:.+]]: tensor<4x3xf32>)
func.func @integers(%a: tensor<4x3xi64>, %b: tensor<3xi64>, %c: tensor<3xi32>, %m: tensor<4x3xf32>) {
  // CHECK: nn.add %[[A]], %[[B]] : tensor<4x3xi64>, tensor<3xi64> -> tensor<4x3xi64>
  %0 = nn.add %a, %b : tensor<4x3xi64>, tensor<3xi64> -> tensor<4x3xi64>
  // CHECK: nn.div %[[C]], %[[C]] : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  %1 = nn.div %c, %c : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  // CHECK: nn.maximum %[[A]], %[[B]] : tensor<4x3xi64>, tensor<3xi64> -> tensor<4x3xi64>
  %2 = nn.maximum %a, %b : tensor<4x3xi64>, tensor<3xi64> -> tensor<4x3xi64>
  // CHECK: nn.neg %[[C]] : tensor<3xi32>
  %3 = nn.neg %c : tensor<3xi32>
  // CHECK: nn.where %[[M]], %[[A]], %[[B]] : tensor<4x3xf32>, tensor<4x3xi64>, tensor<3xi64> -> tensor<4x3xi64>
  %4 = nn.where %m, %a, %b : tensor<4x3xf32>, tensor<4x3xi64>, tensor<3xi64> -> tensor<4x3xi64>
  // CHECK: nn.concat %[[A]], %[[A]] {axis = 0 : i64} : tensor<4x3xi64>, tensor<4x3xi64> -> tensor<8x3xi64>
  %5 = nn.concat %a, %a {axis = 0 : i64} : tensor<4x3xi64>, tensor<4x3xi64> -> tensor<8x3xi64>
  // CHECK: nn.transpose %[[A]] [1, 0] : tensor<4x3xi64> -> tensor<3x4xi64>
  %6 = nn.transpose %a [1, 0] : tensor<4x3xi64> -> tensor<3x4xi64>
  return
}

// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[IDS:.+]]: tensor<?x8xi64>, %[[Z:.+]]: tensor<i64>, %[[A:.+]]: tensor<32x10xf32>, %[[B:.+]]: tensor<10xf32>)
func.func @compare(%ids: tensor<?x8xi64>, %z: tensor<i64>, %a: tensor<32x10xf32>, %b: tensor<10xf32>) {
  // CHECK: nn.compare <eq>, %[[IDS]], %[[Z]] {dtype = f32} : tensor<?x8xi64>, tensor<i64> -> tensor<?x8xf32>
  %0 = nn.compare <eq>, %ids, %z {dtype = f32} : tensor<?x8xi64>, tensor<i64> -> tensor<?x8xf32>
  // CHECK: nn.compare <ne>, %[[A]], %[[B]] {dtype = f64} : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf64>
  %1 = nn.compare <ne>, %a, %b {dtype = f64} : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf64>
  // CHECK: nn.compare <lt>
  %2 = nn.compare <lt>, %a, %b {dtype = f32} : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  // CHECK: nn.compare <le>
  %3 = nn.compare <le>, %a, %b {dtype = f32} : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
  // CHECK: nn.compare <gt>
  %4 = nn.compare <gt>, %ids, %z {dtype = f32} : tensor<?x8xi64>, tensor<i64> -> tensor<?x8xf32>
  // CHECK: nn.compare <ge>
  %5 = nn.compare <ge>, %ids, %z {dtype = f32} : tensor<?x8xi64>, tensor<i64> -> tensor<?x8xf32>
  return
}

// The result type states the target; `dtype` is read off it.
// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[I:.+]]: tensor<4x3xi32>, %[[X:.+]]: tensor<?x3xf32>, %[[L:.+]]: tensor<2xi64>, %[[D:.+]]: tensor<f64>)
func.func @cast(%i: tensor<4x3xi32>, %x: tensor<?x3xf32>, %l: tensor<2xi64>, %d: tensor<f64>) {
  // CHECK: nn.cast %[[I]] : tensor<4x3xi32> -> tensor<4x3xf32>
  %0 = nn.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  // CHECK: nn.cast %[[X]] : tensor<?x3xf32> -> tensor<?x3xf64>
  %1 = nn.cast %x : tensor<?x3xf32> -> tensor<?x3xf64>
  // CHECK: nn.cast %[[X]] : tensor<?x3xf32> -> tensor<?x3xi64>
  %2 = nn.cast %x : tensor<?x3xf32> -> tensor<?x3xi64>
  // CHECK: nn.cast %[[L]] : tensor<2xi64> -> tensor<2xi32>
  %3 = nn.cast %l : tensor<2xi64> -> tensor<2xi32>
  // CHECK: nn.cast %[[D]] : tensor<f64> -> tensor<f32>
  %4 = nn.cast %d : tensor<f64> -> tensor<f32>
  // CHECK: nn.cast %[[I]] : tensor<4x3xi32> -> tensor<4x3xi32>
  %5 = nn.cast %i : tensor<4x3xi32> -> tensor<4x3xi32>
  return
}

// The narrow types models exchange data in, and integers read as unsigned.
// CHECK-LABEL: func.func @cast_narrow
func.func @cast_narrow(%p: tensor<2x4xi8>, %h: tensor<3xf16>, %b: tensor<3xbf16>, %s: tensor<5xi16>) {
  // CHECK: nn.cast unsigned %{{.+}} : tensor<2x4xi8> -> tensor<2x4xi32>
  %0 = nn.cast unsigned %p : tensor<2x4xi8> -> tensor<2x4xi32>
  // CHECK: nn.cast unsigned %{{.+}} : tensor<2x4xi8> -> tensor<2x4xf32>
  %1 = nn.cast unsigned %p : tensor<2x4xi8> -> tensor<2x4xf32>
  // CHECK: nn.cast %{{.+}} : tensor<3xf16> -> tensor<3xf32>
  %2 = nn.cast %h : tensor<3xf16> -> tensor<3xf32>
  // CHECK: nn.cast %{{.+}} : tensor<3xbf16> -> tensor<3xf16>
  %3 = nn.cast %b : tensor<3xbf16> -> tensor<3xf16>
  // CHECK: nn.cast %{{.+}} : tensor<5xi16> -> tensor<5xi64>
  %4 = nn.cast %s : tensor<5xi16> -> tensor<5xi64>
  // CHECK: nn.cast %{{.+}} : tensor<2x4xi32> -> tensor<2x4xi8>
  %5 = nn.cast %0 : tensor<2x4xi32> -> tensor<2x4xi8>
  return
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.+]]: tensor<8x16xf32>, %[[Y:.+]]: tensor<?x3xf64>)
func.func @unary(%x: tensor<8x16xf32>, %y: tensor<?x3xf64>) {
  // CHECK: nn.neg %[[X]] : tensor<8x16xf32>
  %0 = nn.neg %x : tensor<8x16xf32>
  // CHECK: nn.exp %[[X]] : tensor<8x16xf32>
  %1 = nn.exp %x : tensor<8x16xf32>
  // CHECK: nn.log %[[X]] : tensor<8x16xf32>
  %2 = nn.log %x : tensor<8x16xf32>
  // CHECK: nn.sqrt %[[X]] : tensor<8x16xf32>
  %3 = nn.sqrt %x : tensor<8x16xf32>
  // CHECK: nn.erf %[[X]] : tensor<8x16xf32>
  %4 = nn.erf %x : tensor<8x16xf32>
  // CHECK: nn.relu %[[Y]] : tensor<?x3xf64>
  %5 = nn.relu %y : tensor<?x3xf64>
  // CHECK: nn.sigmoid %[[X]] : tensor<8x16xf32>
  %6 = nn.sigmoid %x : tensor<8x16xf32>
  // CHECK: nn.tanh %[[X]] : tensor<8x16xf32>
  %7 = nn.tanh %x : tensor<8x16xf32>
  // CHECK: nn.pow %[[X]], 3.000000e+00 : tensor<8x16xf32>
  %8 = nn.pow %x, 3.0 : tensor<8x16xf32>
  // CHECK: nn.leaky_relu %[[X]] : tensor<8x16xf32>
  %9 = nn.leaky_relu %x : tensor<8x16xf32>
  // CHECK: nn.leaky_relu %[[X]] {alpha = 2.000000e-01 : f64} : tensor<8x16xf32>
  %10 = nn.leaky_relu %x {alpha = 0.2 : f64} : tensor<8x16xf32>
  // CHECK: nn.gelu %[[X]] : tensor<8x16xf32>
  %11 = nn.gelu %x : tensor<8x16xf32>
  // CHECK: nn.gelu %[[X]] {approximate = #nn.gelu_approximation<tanh>} : tensor<8x16xf32>
  %12 = nn.gelu %x {approximate = #nn.gelu_approximation<tanh>} : tensor<8x16xf32>
  // CHECK: nn.clamp %[[X]], 0.000000e+00, 6.000000e+00 : tensor<8x16xf32>
  %13 = nn.clamp %x, 0.0, 6.0 : tensor<8x16xf32>
  // CHECK: nn.clamp %[[Y]], 0xFFF0000000000000, 1.000000e+00 : tensor<?x3xf64>
  %14 = nn.clamp %y, 0xFFF0000000000000, 1.0 : tensor<?x3xf64>
  // CHECK: nn.sin %[[X]] : tensor<8x16xf32>
  %15 = nn.sin %x : tensor<8x16xf32>
  // CHECK: nn.cos %[[Y]] : tensor<?x3xf64>
  %16 = nn.cos %y : tensor<?x3xf64>
  // CHECK: nn.floor %[[X]] : tensor<8x16xf32>
  %17 = nn.floor %x : tensor<8x16xf32>
  // CHECK: nn.ceil %[[Y]] : tensor<?x3xf64>
  %18 = nn.ceil %y : tensor<?x3xf64>
  // CHECK: nn.round %[[X]] : tensor<8x16xf32>
  %19 = nn.round %x : tensor<8x16xf32>
  return
}

// CHECK-LABEL: func.func @activation_grads
// CHECK-SAME: (%[[DY:.+]]: tensor<8x16xf32>, %[[X:.+]]: tensor<8x16xf32>)
func.func @activation_grads(%dy: tensor<8x16xf32>, %x: tensor<8x16xf32>) {
  // CHECK: nn.relu_grad %[[DY]], %[[X]] : tensor<8x16xf32>
  %0 = nn.relu_grad %dy, %x : tensor<8x16xf32>
  // CHECK: nn.leaky_relu_grad %[[DY]], %[[X]] : tensor<8x16xf32>
  %1 = nn.leaky_relu_grad %dy, %x : tensor<8x16xf32>
  // CHECK: nn.leaky_relu_grad %[[DY]], %[[X]] {alpha = 1.000000e-01 : f64} : tensor<8x16xf32>
  %2 = nn.leaky_relu_grad %dy, %x {alpha = 0.1 : f64} : tensor<8x16xf32>
  // CHECK: nn.gelu_grad %[[DY]], %[[X]] : tensor<8x16xf32>
  %3 = nn.gelu_grad %dy, %x : tensor<8x16xf32>
  // CHECK: nn.gelu_grad %[[DY]], %[[X]] {approximate = #nn.gelu_approximation<tanh>} : tensor<8x16xf32>
  %4 = nn.gelu_grad %dy, %x {approximate = #nn.gelu_approximation<tanh>} : tensor<8x16xf32>
  // CHECK: nn.clamp_grad %[[DY]], %[[X]], -1.000000e+00, 1.000000e+00 : tensor<8x16xf32>
  %5 = nn.clamp_grad %dy, %x, -1.0, 1.0 : tensor<8x16xf32>
  return
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.+]]: tensor<8x32x64xf32>, %[[B:.+]]: tensor<16x64xf32>, %[[C:.+]]: tensor<8x64x16xf32>, %[[D:.+]]: tensor<64x32xf32>)
func.func @matmul(%a: tensor<8x32x64xf32>, %b: tensor<16x64xf32>, %c: tensor<8x64x16xf32>, %d: tensor<64x32xf32>) {
  // CHECK: nn.matmul %[[A]], %[[B]] {transpose_b} : tensor<8x32x64xf32>, tensor<16x64xf32> -> tensor<8x32x16xf32>
  %0 = nn.matmul %a, %b {transpose_b} : tensor<8x32x64xf32>, tensor<16x64xf32> -> tensor<8x32x16xf32>
  // CHECK: nn.matmul %[[A]], %[[C]] : tensor<8x32x64xf32>, tensor<8x64x16xf32> -> tensor<8x32x16xf32>
  %1 = nn.matmul %a, %c : tensor<8x32x64xf32>, tensor<8x64x16xf32> -> tensor<8x32x16xf32>
  // CHECK: nn.matmul %[[D]], %[[D]] {transpose_a} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<32x32xf32>
  %2 = nn.matmul %d, %d {transpose_a} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<32x32xf32>
  // CHECK: nn.matmul %[[D]], %[[B]] {transpose_a, transpose_b} : tensor<64x32xf32>, tensor<16x64xf32> -> tensor<32x16xf32>
  %3 = nn.matmul %d, %b {transpose_a, transpose_b} : tensor<64x32xf32>, tensor<16x64xf32> -> tensor<32x16xf32>
  return
}

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<?x784xf32>, %[[W:.+]]: tensor<512x784xf32>, %[[B:.+]]: tensor<512xf32>, %[[S:.+]]: tensor<4x16x784xf32>)
func.func @linear(%x: tensor<?x784xf32>, %w: tensor<512x784xf32>, %b: tensor<512xf32>, %s: tensor<4x16x784xf32>) {
  // CHECK: nn.linear %[[X]], %[[W]], %[[B]] : tensor<?x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<?x512xf32>
  %0 = nn.linear %x, %w, %b : tensor<?x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<?x512xf32>
  // CHECK: nn.linear %[[S]], %[[W]] : tensor<4x16x784xf32>, tensor<512x784xf32> -> tensor<4x16x512xf32>
  %1 = nn.linear %s, %w : tensor<4x16x784xf32>, tensor<512x784xf32> -> tensor<4x16x512xf32>
  return
}

// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME: (%[[X:.+]]: tensor<32x1x28x28xf32>, %[[A:.+]]: tensor<4x3xf32>, %[[B:.+]]: tensor<4x5xf32>, %[[V:.+]]: tensor<10xf32>)
func.func @shape_ops(%x: tensor<32x1x28x28xf32>, %a: tensor<4x3xf32>, %b: tensor<4x5xf32>, %v: tensor<10xf32>) {
  // CHECK: nn.reshape %[[X]] [-1, 784] : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
  %0 = nn.reshape %x [-1, 784] : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
  // CHECK: nn.flatten %[[X]] : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
  %1 = nn.flatten %x : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
  // CHECK: nn.flatten %[[X]] {axis = 2 : i64} : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
  %2 = nn.flatten %x {axis = 2} : tensor<32x1x28x28xf32> -> tensor<32x784xf32>
  // CHECK: nn.flatten %[[X]] {axis = 0 : i64} : tensor<32x1x28x28xf32> -> tensor<1x25088xf32>
  %3 = nn.flatten %x {axis = 0} : tensor<32x1x28x28xf32> -> tensor<1x25088xf32>
  // CHECK: nn.transpose %[[X]] [0, 2, 3, 1] : tensor<32x1x28x28xf32> -> tensor<32x28x28x1xf32>
  %4 = nn.transpose %x [0, 2, 3, 1] : tensor<32x1x28x28xf32> -> tensor<32x28x28x1xf32>
  // CHECK: nn.concat %[[A]], %[[B]], %[[A]] {axis = 1 : i64} : tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
  %5 = nn.concat %a, %b, %a {axis = 1} : tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
  // CHECK: nn.concat %[[A]], %[[A]] {axis = -2 : i64} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %6 = nn.concat %a, %a {axis = -2} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  // CHECK: nn.slice %[[B]] starts [1, 0] sizes [2, 3] strides [2, 2] : tensor<4x5xf32> -> tensor<2x3xf32>
  %7 = nn.slice %b starts [1, 0] sizes [2, 3] strides [2, 2] : tensor<4x5xf32> -> tensor<2x3xf32>
  // CHECK: nn.pad %[[A]] starts [0, 2] strides [1, 1] shape [4, 8] : tensor<4x3xf32> -> tensor<4x8xf32>
  %8 = nn.pad %a starts [0, 2] strides [1, 1] shape [4, 8] : tensor<4x3xf32> -> tensor<4x8xf32>
  // CHECK: nn.broadcast_to %[[V]] [32, 10] : tensor<10xf32> -> tensor<32x10xf32>
  %9 = nn.broadcast_to %v [32, 10] : tensor<10xf32> -> tensor<32x10xf32>
  return
}

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.+]]: tensor<32x10xf32>, %[[DY:.+]]: tensor<32xf32>, %[[DK:.+]]: tensor<1x10xf32>)
func.func @reductions(%x: tensor<32x10xf32>, %dy: tensor<32xf32>, %dk: tensor<1x10xf32>) {
  // CHECK: nn.reduce_sum %[[X]] [1] : tensor<32x10xf32> -> tensor<32xf32>
  %0 = nn.reduce_sum %x [1] : tensor<32x10xf32> -> tensor<32xf32>
  // CHECK: nn.reduce_sum %[[X]] [] : tensor<32x10xf32> -> tensor<f32>
  %1 = nn.reduce_sum %x [] : tensor<32x10xf32> -> tensor<f32>
  // CHECK: nn.reduce_mean %[[X]] [-1] {keepdims} : tensor<32x10xf32> -> tensor<32x1xf32>
  %2 = nn.reduce_mean %x [-1] {keepdims} : tensor<32x10xf32> -> tensor<32x1xf32>
  // CHECK: nn.reduce_max %[[X]] [0, 1] {keepdims} : tensor<32x10xf32> -> tensor<1x1xf32>
  %3 = nn.reduce_max %x [0, 1] {keepdims} : tensor<32x10xf32> -> tensor<1x1xf32>
  // CHECK: nn.reduce_max_grad %[[DY]], %[[X]] [1] : tensor<32xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  %4 = nn.reduce_max_grad %dy, %x [1] : tensor<32xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  // CHECK: nn.reduce_max_grad %[[DK]], %[[X]] [0] {keepdims} : tensor<1x10xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  %5 = nn.reduce_max_grad %dk, %x [0] {keepdims} : tensor<1x10xf32>, tensor<32x10xf32> -> tensor<32x10xf32>
  return
}

// CHECK-LABEL: func.func @softmax_and_losses
// CHECK-SAME: (%[[X:.+]]: tensor<32x10xf32>, %[[L:.+]]: tensor<32xi64>, %[[L32:.+]]: tensor<32xi32>, %[[T:.+]]: tensor<32x10xf32>)
func.func @softmax_and_losses(%x: tensor<32x10xf32>, %l: tensor<32xi64>, %l32: tensor<32xi32>, %t: tensor<32x10xf32>) {
  // CHECK: nn.softmax %[[X]] : tensor<32x10xf32>
  %0 = nn.softmax %x : tensor<32x10xf32>
  // CHECK: nn.softmax %[[X]] {axis = 0 : i64} : tensor<32x10xf32>
  %1 = nn.softmax %x {axis = 0} : tensor<32x10xf32>
  // CHECK: nn.log_softmax %[[X]] : tensor<32x10xf32>
  %2 = nn.log_softmax %x : tensor<32x10xf32>
  // CHECK: nn.log_softmax %[[X]] {axis = 0 : i64} : tensor<32x10xf32>
  %3 = nn.log_softmax %x {axis = 0} : tensor<32x10xf32>
  // CHECK: nn.one_hot %[[L]] {dtype = f32, num_classes = 10 : i64} : tensor<32xi64> -> tensor<32x10xf32>
  %4 = nn.one_hot %l {num_classes = 10, dtype = f32} : tensor<32xi64> -> tensor<32x10xf32>
  // CHECK: nn.one_hot %[[L32]] {dtype = f64, num_classes = 3 : i64} : tensor<32xi32> -> tensor<32x3xf64>
  %5 = nn.one_hot %l32 {num_classes = 3, dtype = f64} : tensor<32xi32> -> tensor<32x3xf64>
  // CHECK: nn.cross_entropy %[[X]], %[[L]] : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %6 = nn.cross_entropy %x, %l : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  // CHECK: nn.cross_entropy %[[X]], %[[L32]] {reduction = #nn.reduction<none>} : tensor<32x10xf32>, tensor<32xi32> -> tensor<32xf32>
  %7 = nn.cross_entropy %x, %l32 {reduction = #nn.reduction<none>} : tensor<32x10xf32>, tensor<32xi32> -> tensor<32xf32>
  // CHECK: nn.cross_entropy %[[X]], %[[L]] {reduction = #nn.reduction<sum>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %8 = nn.cross_entropy %x, %l {reduction = #nn.reduction<sum>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  // CHECK: nn.mse_loss %[[X]], %[[T]] : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<f32>
  %9 = nn.mse_loss %x, %t : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<f32>
  // CHECK: nn.mse_loss %[[X]], %[[T]] {reduction = #nn.reduction<none>} : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<32xf32>
  %10 = nn.mse_loss %x, %t {reduction = #nn.reduction<none>} : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<32xf32>
  // CHECK: nn.mse_loss %[[X]], %[[T]] {reduction = #nn.reduction<sum>} : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<f32>
  %11 = nn.mse_loss %x, %t {reduction = #nn.reduction<sum>} : tensor<32x10xf32>, tensor<32x10xf32> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @convolution
// CHECK-SAME: (%[[X:.+]]: tensor<32x4x28x28xf32>, %[[W:.+]]: tensor<6x4x5x5xf32>, %[[B:.+]]: tensor<6xf32>, %[[WG:.+]]: tensor<6x2x3x3xf32>, %[[DY:.+]]: tensor<32x6x24x24xf32>)
func.func @convolution(%x: tensor<32x4x28x28xf32>, %w: tensor<6x4x5x5xf32>, %b: tensor<6xf32>, %wg: tensor<6x2x3x3xf32>, %dy: tensor<32x6x24x24xf32>) {
  // CHECK: nn.conv2d %[[X]], %[[W]], %[[B]] {padding = array<i64: 2, 2, 2, 2>} : tensor<32x4x28x28xf32>, tensor<6x4x5x5xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>
  %0 = nn.conv2d %x, %w, %b {padding = array<i64: 2, 2, 2, 2>} : tensor<32x4x28x28xf32>, tensor<6x4x5x5xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>
  // CHECK: nn.conv2d %[[X]], %[[W]] : tensor<32x4x28x28xf32>, tensor<6x4x5x5xf32> -> tensor<32x6x24x24xf32>
  %1 = nn.conv2d %x, %w : tensor<32x4x28x28xf32>, tensor<6x4x5x5xf32> -> tensor<32x6x24x24xf32>
  // CHECK: nn.conv2d %[[X]], %[[WG]] {dilations = array<i64: 2, 1>, groups = 2 : i64, padding = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 3>} : tensor<32x4x28x28xf32>, tensor<6x2x3x3xf32> -> tensor<32x6x13x9xf32>
  %2 = nn.conv2d %x, %wg {strides = array<i64: 2, 3>, padding = array<i64: 1, 0, 0, 1>, dilations = array<i64: 2, 1>, groups = 2} : tensor<32x4x28x28xf32>, tensor<6x2x3x3xf32> -> tensor<32x6x13x9xf32>
  // CHECK: nn.conv2d_grad_input %[[DY]], %[[W]] {input_size = array<i64: 28, 28>} : tensor<32x6x24x24xf32>, tensor<6x4x5x5xf32> -> tensor<32x4x28x28xf32>
  %3 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 28, 28>} : tensor<32x6x24x24xf32>, tensor<6x4x5x5xf32> -> tensor<32x4x28x28xf32>
  // CHECK: nn.conv2d_grad_weight %[[DY]], %[[X]] {kernel_size = array<i64: 5, 5>} : tensor<32x6x24x24xf32>, tensor<32x4x28x28xf32> -> tensor<6x4x5x5xf32>
  %4 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 5, 5>} : tensor<32x6x24x24xf32>, tensor<32x4x28x28xf32> -> tensor<6x4x5x5xf32>
  return
}

// CHECK-LABEL: func.func @grouped_conv_grads
// CHECK-SAME: (%[[DY:.+]]: tensor<32x6x13x9xf32>, %[[W:.+]]: tensor<6x2x3x3xf32>, %[[X:.+]]: tensor<32x4x28x28xf32>)
func.func @grouped_conv_grads(%dy: tensor<32x6x13x9xf32>, %w: tensor<6x2x3x3xf32>, %x: tensor<32x4x28x28xf32>) {
  // CHECK: nn.conv2d_grad_input %[[DY]], %[[W]] {dilations = array<i64: 2, 1>, groups = 2 : i64, input_size = array<i64: 28, 28>, padding = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 3>} : tensor<32x6x13x9xf32>, tensor<6x2x3x3xf32> -> tensor<32x4x28x28xf32>
  %0 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 28, 28>, strides = array<i64: 2, 3>, padding = array<i64: 1, 0, 0, 1>, dilations = array<i64: 2, 1>, groups = 2} : tensor<32x6x13x9xf32>, tensor<6x2x3x3xf32> -> tensor<32x4x28x28xf32>
  // CHECK: nn.conv2d_grad_weight %[[DY]], %[[X]] {dilations = array<i64: 2, 1>, groups = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 3>} : tensor<32x6x13x9xf32>, tensor<32x4x28x28xf32> -> tensor<6x2x3x3xf32>
  %1 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 3>, padding = array<i64: 1, 0, 0, 1>, dilations = array<i64: 2, 1>, groups = 2} : tensor<32x6x13x9xf32>, tensor<32x4x28x28xf32> -> tensor<6x2x3x3xf32>
  return
}

// CHECK-LABEL: func.func @pooling
// CHECK-SAME: (%[[X:.+]]: tensor<32x6x28x28xf32>, %[[DY:.+]]: tensor<32x6x14x14xf32>, %[[Z:.+]]: tensor<32x6x7x7xf32>, %[[DC:.+]]: tensor<32x6x10x10xf32>)
func.func @pooling(%x: tensor<32x6x28x28xf32>, %dy: tensor<32x6x14x14xf32>, %z: tensor<32x6x7x7xf32>, %dc: tensor<32x6x10x10xf32>) {
  // CHECK: nn.max_pool2d %[[X]] {kernel_size = array<i64: 2, 2>} : tensor<32x6x28x28xf32> -> tensor<32x6x14x14xf32>
  %0 = nn.max_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<32x6x28x28xf32> -> tensor<32x6x14x14xf32>
  // Attributes equal to their default (dilations) are elided.
  // CHECK: nn.max_pool2d %[[X]] {ceil_mode, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 3, 3>} : tensor<32x6x28x28xf32> -> tensor<32x6x10x10xf32>
  %1 = nn.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : tensor<32x6x28x28xf32> -> tensor<32x6x10x10xf32>
  // CHECK: nn.max_pool2d_grad %[[DY]], %[[X]] {kernel_size = array<i64: 2, 2>} : tensor<32x6x14x14xf32>, tensor<32x6x28x28xf32> -> tensor<32x6x28x28xf32>
  %2 = nn.max_pool2d_grad %dy, %x {kernel_size = array<i64: 2, 2>} : tensor<32x6x14x14xf32>, tensor<32x6x28x28xf32> -> tensor<32x6x28x28xf32>
  // CHECK: nn.max_pool2d_grad %[[DC]], %[[X]] {ceil_mode, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : tensor<32x6x10x10xf32>, tensor<32x6x28x28xf32> -> tensor<32x6x28x28xf32>
  %3 = nn.max_pool2d_grad %dc, %x {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, ceil_mode} : tensor<32x6x10x10xf32>, tensor<32x6x28x28xf32> -> tensor<32x6x28x28xf32>
  // CHECK: nn.avg_pool2d %[[X]] {kernel_size = array<i64: 2, 2>} : tensor<32x6x28x28xf32> -> tensor<32x6x14x14xf32>
  %4 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<32x6x28x28xf32> -> tensor<32x6x14x14xf32>
  // CHECK: nn.avg_pool2d %[[X]] {count_include_pad, kernel_size = array<i64: 4, 4>, padding = array<i64: 0, 0, 2, 2>, strides = array<i64: 4, 4>} : tensor<32x6x28x28xf32> -> tensor<32x6x7x7xf32>
  %5 = nn.avg_pool2d %x {kernel_size = array<i64: 4, 4>, strides = array<i64: 4, 4>, padding = array<i64: 0, 0, 2, 2>, count_include_pad} : tensor<32x6x28x28xf32> -> tensor<32x6x7x7xf32>
  // CHECK: nn.avg_pool2d_grad %[[DY]] {input_size = array<i64: 28, 28>, kernel_size = array<i64: 2, 2>} : tensor<32x6x14x14xf32> -> tensor<32x6x28x28xf32>
  %6 = nn.avg_pool2d_grad %dy {kernel_size = array<i64: 2, 2>, input_size = array<i64: 28, 28>} : tensor<32x6x14x14xf32> -> tensor<32x6x28x28xf32>
  // CHECK: nn.avg_pool2d_grad %[[Z]] {count_include_pad, input_size = array<i64: 28, 28>, kernel_size = array<i64: 4, 4>, padding = array<i64: 0, 0, 2, 2>, strides = array<i64: 4, 4>} : tensor<32x6x7x7xf32> -> tensor<32x6x28x28xf32>
  %7 = nn.avg_pool2d_grad %z {kernel_size = array<i64: 4, 4>, strides = array<i64: 4, 4>, padding = array<i64: 0, 0, 2, 2>, count_include_pad, input_size = array<i64: 28, 28>} : tensor<32x6x7x7xf32> -> tensor<32x6x28x28xf32>
  // CHECK: nn.global_avg_pool %[[X]] : tensor<32x6x28x28xf32> -> tensor<32x6x1x1xf32>
  %8 = nn.global_avg_pool %x : tensor<32x6x28x28xf32> -> tensor<32x6x1x1xf32>
  return
}

// CHECK-LABEL: func.func @normalisation
// CHECK-SAME: (%[[X:.+]]: tensor<32x6x28x28xf32>, %[[C:.+]]: tensor<6xf32>, %[[S:.+]]: tensor<4x16x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[G2:.+]]: tensor<16x32xf32>)
func.func @normalisation(%x: tensor<32x6x28x28xf32>, %c: tensor<6xf32>, %s: tensor<4x16x32xf32>, %g: tensor<32xf32>, %g2: tensor<16x32xf32>) {
  // CHECK: nn.batch_norm %[[X]], %[[C]], %[[C]], %[[C]], %[[C]] : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
  %0:3 = nn.batch_norm %x, %c, %c, %c, %c : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
  // CHECK: nn.batch_norm %[[X]], %[[C]], %[[C]], %[[C]], %[[C]] {epsilon = 1.000000e-03 : f64, momentum = 0.000000e+00 : f64, training} : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
  %1:3 = nn.batch_norm %x, %c, %c, %c, %c {training, epsilon = 1.0e-3 : f64, momentum = 0.0 : f64} : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
  // CHECK: nn.batch_norm %[[X]], %[[C]], %[[C]], %[[C]], %[[C]] sample_weights %[[W:.+]] {training} : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<32xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
  %w = arith.constant dense<1.0> : tensor<32xf32>
  %bnw:3 = nn.batch_norm %x, %c, %c, %c, %c sample_weights %w {training} : tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<32xf32> -> tensor<32x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
  // CHECK: nn.layer_norm %[[S]] : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %2 = nn.layer_norm %s : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  // CHECK: nn.layer_norm %[[S]], %[[G]] : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  %3 = nn.layer_norm %s, %g : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  // CHECK: nn.layer_norm %[[S]] bias %[[G]] : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  %4 = nn.layer_norm %s bias %g : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  // CHECK: nn.layer_norm %[[S]], %[[G2]] bias %[[G2]] {axis = 1 : i64, epsilon = 1.000000e-03 : f64} : tensor<4x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<4x16x32xf32>
  %5 = nn.layer_norm %s, %g2 bias %g2 {axis = 1, epsilon = 1.0e-3 : f64} : tensor<4x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<4x16x32xf32>
  return
}

// CHECK-LABEL: func.func @dropout_and_embedding
// CHECK-SAME: (%[[X:.+]]: tensor<32x512xf32>, %[[SEED:.+]]: tensor<i64>, %[[IDS:.+]]: tensor<4x16xi64>, %[[IDS32:.+]]: tensor<7xi32>, %[[T:.+]]: tensor<100x32xf32>, %[[DY:.+]]: tensor<4x16x32xf32>)
func.func @dropout_and_embedding(%x: tensor<32x512xf32>, %seed: tensor<i64>, %ids: tensor<4x16xi64>, %ids32: tensor<7xi32>, %t: tensor<100x32xf32>, %dy: tensor<4x16x32xf32>) {
  // CHECK: nn.dropout %[[X]], %[[SEED]] {ratio = 1.000000e-01 : f64} : tensor<32x512xf32>, tensor<i64> -> tensor<32x512xf32>
  %0 = nn.dropout %x, %seed {ratio = 0.1} : tensor<32x512xf32>, tensor<i64> -> tensor<32x512xf32>
  // CHECK: nn.dropout %[[X]], %[[SEED]] {ratio = 5.000000e-01 : f64, stream = 3 : i64} : tensor<32x512xf32>, tensor<i64> -> tensor<32x512xf32>
  %1 = nn.dropout %x, %seed {ratio = 0.5, stream = 3} : tensor<32x512xf32>, tensor<i64> -> tensor<32x512xf32>
  // CHECK: nn.embedding %[[IDS]], %[[T]] : tensor<4x16xi64>, tensor<100x32xf32> -> tensor<4x16x32xf32>
  %2 = nn.embedding %ids, %t : tensor<4x16xi64>, tensor<100x32xf32> -> tensor<4x16x32xf32>
  // CHECK: nn.embedding %[[IDS32]], %[[T]] : tensor<7xi32>, tensor<100x32xf32> -> tensor<7x32xf32>
  %3 = nn.embedding %ids32, %t : tensor<7xi32>, tensor<100x32xf32> -> tensor<7x32xf32>
  // CHECK: nn.embedding_grad %[[DY]], %[[IDS]] {num_embeddings = 100 : i64} : tensor<4x16x32xf32>, tensor<4x16xi64> -> tensor<100x32xf32>
  %4 = nn.embedding_grad %dy, %ids {num_embeddings = 100} : tensor<4x16x32xf32>, tensor<4x16xi64> -> tensor<100x32xf32>
  return
}

// Constant tensors in a model (non-splat, so they bufferize to globals): a
// fixed projection that a GEMM (a library call) reads, and a mask that only
// an elementwise loop nest reads.
func.func @forward(
    %x: tensor<?x4xf32> {train.input = "x"},
    %w: tensor<3x4xf32> {train.param = "fc.weight", train.init = #train.init<kaiming_uniform>},
    %b: tensor<3xf32> {train.param = "fc.bias", train.init = #train.init<fan_in_uniform, 4.0>})
    -> tensor<?x3xf32> {
  %proj = arith.constant dense<[[1.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.5, 0.0], [0.0, 0.0, 1.0, 0.5], [0.5, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>
  %mask = arith.constant dense<[1.0, 0.0, 1.0]> : tensor<3xf32>
  %0 = nn.matmul %x, %proj : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %1 = nn.linear %0, %w, %b : tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %2 = nn.mul %1, %mask : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  return %2 : tensor<?x3xf32>
}

// ReLU, max pooling, a linear layer and its ReLU (a pair the kernels could
// fuse), clamp and maximum: each passes a NaN on as PyTorch's does.
func.func @forward(%x: tensor<?x1x4x4xf32> {train.input = "x"},
    %w: tensor<4x4xf32> {train.param = "w", train.init = #train.init<ones>},
    %b: tensor<4xf32> {train.param = "b", train.init = #train.init<zeros>}) -> tensor<?x4xf32> {
  %0 = nn.relu %x : tensor<?x1x4x4xf32>
  %1 = nn.max_pool2d %0 {kernel_size = array<i64: 2, 2>} : tensor<?x1x4x4xf32> -> tensor<?x1x2x2xf32>
  %2 = nn.flatten %1 : tensor<?x1x2x2xf32> -> tensor<?x4xf32>
  %3 = nn.clamp %2, 0.0, 100.0 : tensor<?x4xf32>
  %4 = nn.maximum %3, %b : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x4xf32>
  %5 = nn.linear %4, %w, %b : tensor<?x4xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<?x4xf32>
  %6 = nn.relu %5 : tensor<?x4xf32>
  return %6 : tensor<?x4xf32>
}

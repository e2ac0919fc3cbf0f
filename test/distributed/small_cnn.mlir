// A small convolutional Fashion-MNIST classifier for the data-parallel
// tests: two 3x3 convolutions of stride 2 (1 -> 8 -> 16 channels, 28 -> 14
// -> 7), then 784 -> 10. The second convolution runs on oneDNN's blocked
// layouts, so its weights and weight gradients go through the runtime's
// layout cache, whose held-back gradients must reach the reduction.
func.func @forward(
    %x: tensor<?x1x28x28xf32> {train.input = "image"},
    %c1w: tensor<8x1x3x3xf32> {train.param = "conv1.weight", train.init = #train.init<kaiming_uniform>},
    %c1b: tensor<8xf32> {train.param = "conv1.bias", train.init = #train.init<fan_in_uniform, 9.0>},
    %c2w: tensor<16x8x3x3xf32> {train.param = "conv2.weight", train.init = #train.init<kaiming_uniform>},
    %c2b: tensor<16xf32> {train.param = "conv2.bias", train.init = #train.init<fan_in_uniform, 72.0>},
    %fw: tensor<10x784xf32> {train.param = "fc.weight", train.init = #train.init<kaiming_uniform>},
    %fb: tensor<10xf32> {train.param = "fc.bias", train.init = #train.init<fan_in_uniform, 784.0>})
    -> tensor<?x10xf32> {
  %0 = nn.conv2d %x, %c1w, %c1b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<?x1x28x28xf32>, tensor<8x1x3x3xf32>, tensor<8xf32> -> tensor<?x8x14x14xf32>
  %1 = nn.relu %0 : tensor<?x8x14x14xf32>
  %2 = nn.conv2d %1, %c2w, %c2b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<?x8x14x14xf32>, tensor<16x8x3x3xf32>, tensor<16xf32> -> tensor<?x16x7x7xf32>
  %3 = nn.relu %2 : tensor<?x16x7x7xf32>
  %4 = nn.flatten %3 : tensor<?x16x7x7xf32> -> tensor<?x784xf32>
  %5 = nn.linear %4, %fw, %fb : tensor<?x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<?x10xf32>
  return %5 : tensor<?x10xf32>
}

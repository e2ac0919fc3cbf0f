// A small CNN over 1x6x6 "images" into 3 classes (conv 3x3 with padding 1,
// ReLU, 2x2 max pooling, linear): the convolutional model of
// EquivalenceTest.cpp. PyTorch's nn.Conv2d and nn.Linear initialisers.
func.func @forward(
    %x: tensor<?x1x6x6xf32> {train.input = "image"},
    %cw: tensor<2x1x3x3xf32> {train.param = "conv.weight", train.init = #train.init<kaiming_uniform>},
    %cb: tensor<2xf32> {train.param = "conv.bias", train.init = #train.init<fan_in_uniform, 9.0>},
    %w: tensor<3x18xf32> {train.param = "fc.weight", train.init = #train.init<kaiming_uniform>},
    %b: tensor<3xf32> {train.param = "fc.bias", train.init = #train.init<fan_in_uniform, 18.0>})
    -> tensor<?x3xf32> {
  %0 = nn.conv2d %x, %cw, %cb {padding = array<i64: 1, 1, 1, 1>} : tensor<?x1x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32> -> tensor<?x2x6x6xf32>
  %1 = nn.relu %0 : tensor<?x2x6x6xf32>
  %2 = nn.max_pool2d %1 {kernel_size = array<i64: 2, 2>} : tensor<?x2x6x6xf32> -> tensor<?x2x3x3xf32>
  %3 = nn.flatten %2 : tensor<?x2x3x3xf32> -> tensor<?x18xf32>
  %4 = nn.linear %3, %w, %b : tensor<?x18xf32>, tensor<3x18xf32>, tensor<3xf32> -> tensor<?x3xf32>
  return %4 : tensor<?x3xf32>
}

// A small Fashion-MNIST classifier for the data-parallel tests and the
// benchmark: 784-32-10 with ReLU (25 450 parameters, 4 tensors), so that
// R = 4 ranks on two cores still run many windows in seconds.
func.func @forward(
    %x: tensor<?x1x28x28xf32> {train.input = "image"},
    %w1: tensor<32x784xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<32xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 784.0>},
    %w2: tensor<10x32xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<10xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 32.0>})
    -> tensor<?x10xf32> {
  %0 = nn.flatten %x : tensor<?x1x28x28xf32> -> tensor<?x784xf32>
  %1 = nn.linear %0, %w1, %b1 : tensor<?x784xf32>, tensor<32x784xf32>, tensor<32xf32> -> tensor<?x32xf32>
  %2 = nn.relu %1 : tensor<?x32xf32>
  %3 = nn.linear %2, %w2, %b2 : tensor<?x32xf32>, tensor<10x32xf32>, tensor<10xf32> -> tensor<?x10xf32>
  return %3 : tensor<?x10xf32>
}

// nn.cast in a regression model: the hidden layer is squared in f64 and
// cast back (a differentiable float-to-float round trip), truncated through
// i32 and i64 (constants to autodiff), and integer ids are cast to floats.
// Every cast changes the element type between a linalg.generic's operand
// and its result, which bufferization must give buffers of both types.
func.func @forward(
    %x: tensor<?x8xf32> {train.input = "features"},
    %ids: tensor<?x16xi64> {train.input = "ids"},
    %w1: tensor<16x8xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<16xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 8.0>},
    %w2: tensor<2x16xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>})
    -> tensor<?x2xf32> {
  %0 = nn.linear %x, %w1, %b1 : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1 = nn.cast %0 : tensor<?x16xf32> -> tensor<?x16xf64>
  %2 = nn.mul %1, %1 : tensor<?x16xf64>, tensor<?x16xf64> -> tensor<?x16xf64>
  %3 = nn.cast %2 : tensor<?x16xf64> -> tensor<?x16xf32>
  %4 = nn.cast %0 : tensor<?x16xf32> -> tensor<?x16xi32>
  %5 = nn.cast %4 : tensor<?x16xi32> -> tensor<?x16xi64>
  %6 = nn.cast %5 : tensor<?x16xi64> -> tensor<?x16xf32>
  %7 = nn.cast %ids : tensor<?x16xi64> -> tensor<?x16xf32>
  %8 = nn.add %3, %6 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %9 = nn.add %8, %7 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %10 = nn.linear %9, %w2 : tensor<?x16xf32>, tensor<2x16xf32> -> tensor<?x2xf32>
  return %10 : tensor<?x2xf32>
}

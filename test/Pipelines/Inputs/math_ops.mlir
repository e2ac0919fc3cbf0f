// Every elementwise math op of nn (sin, cos, floor, ceil, round, powf with
// a broadcast tensor exponent) in a regression model, so that each is
// lowered in the forward and, where it has one, the backward pass.
func.func @forward(
    %x: tensor<?x8xf32> {train.input = "features"},
    %w1: tensor<16x8xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<16xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 8.0>},
    %e: tensor<16xf32> {train.param = "exponent", train.init = #train.init<ones>},
    %w2: tensor<2x16xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>})
    -> tensor<?x2xf32> {
  %0 = nn.linear %x, %w1, %b1 : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1 = nn.sin %0 : tensor<?x16xf32>
  %2 = nn.cos %0 : tensor<?x16xf32>
  %3 = nn.floor %0 : tensor<?x16xf32>
  %4 = nn.ceil %1 : tensor<?x16xf32>
  %5 = nn.round %2 : tensor<?x16xf32>
  %6 = nn.mul %1, %2 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %7 = nn.add %3, %4 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %8 = nn.add %7, %5 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %9 = nn.sigmoid %6 : tensor<?x16xf32>
  %10 = nn.powf %9, %e : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %11 = nn.mul %10, %8 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %12 = nn.linear %11, %w2 : tensor<?x16xf32>, tensor<2x16xf32> -> tensor<?x2xf32>
  return %12 : tensor<?x2xf32>
}

// Batch and layer normalisation, GELU and dropout on a small MLP: the op
// classes of the CUDA back end's tests that the examples do not have.
func.func @forward(
    %x: tensor<?x8xf32> {train.input = "x"},
    %w1: tensor<16x8xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<16xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 8.0>},
    %g: tensor<16xf32> {train.param = "bn.weight", train.init = #train.init<ones>},
    %beta: tensor<16xf32> {train.param = "bn.bias", train.init = #train.init<zeros>},
    %m: tensor<16xf32> {train.buffer = "bn.running_mean", train.init = #train.init<zeros>},
    %v: tensor<16xf32> {train.buffer = "bn.running_var", train.init = #train.init<ones>},
    %lg: tensor<16xf32> {train.param = "ln.weight", train.init = #train.init<ones>},
    %lb: tensor<16xf32> {train.param = "ln.bias", train.init = #train.init<zeros>},
    %w2: tensor<3x16xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<3xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 16.0>},
    %seed: tensor<i64> {train.rng})
    -> (tensor<?x3xf32>, tensor<16xf32> {train.buffer = "bn.running_mean"},
        tensor<16xf32> {train.buffer = "bn.running_var"}) {
  %0 = nn.linear %x, %w1, %b1 : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1, %m2, %v2 = nn.batch_norm %0, %g, %beta, %m, %v {training} : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>
  %2 = nn.layer_norm %1, %lg bias %lb : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %3 = nn.gelu %2 : tensor<?x16xf32>
  %4 = nn.dropout %3, %seed {ratio = 0.1} : tensor<?x16xf32>, tensor<i64> -> tensor<?x16xf32>
  %5 = nn.linear %4, %w2, %b2 : tensor<?x16xf32>, tensor<3x16xf32>, tensor<3xf32> -> tensor<?x3xf32>
  return %5, %m2, %v2 : tensor<?x3xf32>, tensor<16xf32>, tensor<16xf32>
}

// A small regression: 8 features -> 16 (tanh) -> 2 targets, for
// cleave-compile --loss=mse. The loss pass adds an f32 input "targets" of
// the prediction's shape, which cleave-train fills from float32 y arrays.
//
//   cleave-compile examples/regression.mlir --loss=mse --micro-batch=16 -o r.cleave
//   cleave-train r.cleave --data=data.npz
func.func @forward(
    %x: tensor<?x8xf32> {train.input = "features"},
    %w1: tensor<16x8xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<16xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 8.0>},
    %w2: tensor<2x16xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<2xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 16.0>})
    -> tensor<?x2xf32> {
  %0 = nn.linear %x, %w1, %b1 : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1 = nn.tanh %0 : tensor<?x16xf32>
  %2 = nn.linear %1, %w2, %b2 : tensor<?x16xf32>, tensor<2x16xf32>, tensor<2xf32> -> tensor<?x2xf32>
  return %2 : tensor<?x2xf32>
}

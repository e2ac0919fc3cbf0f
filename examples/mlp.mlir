// The Fashion-MNIST classifier: 784-512-512-10 with ReLU, trained with
// cross-entropy. Batch-polymorphic: the compiler specialises the `?` to the
// micro-batch size. Parameters use PyTorch's nn.Linear initialisers.
//
//   cleave-opt examples/mlp.mlir --cleave-train-pipeline="micro-batch=32 accumulate=4"
func.func @forward(
    %x: tensor<?x1x28x28xf32> {train.input = "image"},
    %w1: tensor<512x784xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<512xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 784.0>},
    %w2: tensor<512x512xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<512xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 512.0>},
    %w3: tensor<10x512xf32> {train.param = "fc3.weight", train.init = #train.init<kaiming_uniform>},
    %b3: tensor<10xf32> {train.param = "fc3.bias", train.init = #train.init<fan_in_uniform, 512.0>})
    -> tensor<?x10xf32> {
  %0 = nn.flatten %x : tensor<?x1x28x28xf32> -> tensor<?x784xf32>
  %1 = nn.linear %0, %w1, %b1 : tensor<?x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<?x512xf32>
  %2 = nn.relu %1 : tensor<?x512xf32>
  %3 = nn.linear %2, %w2, %b2 : tensor<?x512xf32>, tensor<512x512xf32>, tensor<512xf32> -> tensor<?x512xf32>
  %4 = nn.relu %3 : tensor<?x512xf32>
  %5 = nn.linear %4, %w3, %b3 : tensor<?x512xf32>, tensor<10x512xf32>, tensor<10xf32> -> tensor<?x10xf32>
  return %5 : tensor<?x10xf32>
}

// A small MLP over 1x4x4 "images" into 3 classes: the model the traced
// training loop of EquivalenceTest.cpp is compared with, compiled by
// cleave-compile and trained by a runtime session. Parameters use PyTorch's
// nn.Linear initialisers, in the order the traced model creates them.
func.func @forward(
    %x: tensor<?x1x4x4xf32> {train.input = "image"},
    %w1: tensor<12x16xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<12xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 16.0>},
    %w2: tensor<3x12xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<3xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 12.0>})
    -> tensor<?x3xf32> {
  %0 = nn.flatten %x : tensor<?x1x4x4xf32> -> tensor<?x16xf32>
  %1 = nn.linear %0, %w1, %b1 : tensor<?x16xf32>, tensor<12x16xf32>, tensor<12xf32> -> tensor<?x12xf32>
  %2 = nn.relu %1 : tensor<?x12xf32>
  %3 = nn.linear %2, %w2, %b2 : tensor<?x12xf32>, tensor<3x12xf32>, tensor<3xf32> -> tensor<?x3xf32>
  return %3 : tensor<?x3xf32>
}

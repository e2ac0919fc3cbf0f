// The CIFAR-10 network of PyTorch's "Training a classifier" tutorial: (conv
// 5x5 -> relu -> max-pool 2) twice on 3x32x32 colour images, then three
// linear layers. Batch-polymorphic; PyTorch's default initialisers.
//
//   cleave-compile examples/cifar_cnn.mlir --micro-batch=32 -o cifar.cleave
//   cleave-train cifar.cleave --data=cifar-10-batches-bin
func.func @forward(
    %x: tensor<?x3x32x32xf32> {train.input = "image"},
    %c1w: tensor<6x3x5x5xf32> {train.param = "conv1.weight", train.init = #train.init<kaiming_uniform>},
    %c1b: tensor<6xf32> {train.param = "conv1.bias", train.init = #train.init<fan_in_uniform, 75.0>},
    %c2w: tensor<16x6x5x5xf32> {train.param = "conv2.weight", train.init = #train.init<kaiming_uniform>},
    %c2b: tensor<16xf32> {train.param = "conv2.bias", train.init = #train.init<fan_in_uniform, 150.0>},
    %f1w: tensor<120x400xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %f1b: tensor<120xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 400.0>},
    %f2w: tensor<84x120xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %f2b: tensor<84xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 120.0>},
    %f3w: tensor<10x84xf32> {train.param = "fc3.weight", train.init = #train.init<kaiming_uniform>},
    %f3b: tensor<10xf32> {train.param = "fc3.bias", train.init = #train.init<fan_in_uniform, 84.0>})
    -> tensor<?x10xf32> {
  %0 = nn.conv2d %x, %c1w, %c1b : tensor<?x3x32x32xf32>, tensor<6x3x5x5xf32>, tensor<6xf32> -> tensor<?x6x28x28xf32>
  %1 = nn.relu %0 : tensor<?x6x28x28xf32>
  %2 = nn.max_pool2d %1 {kernel_size = array<i64: 2, 2>} : tensor<?x6x28x28xf32> -> tensor<?x6x14x14xf32>
  %3 = nn.conv2d %2, %c2w, %c2b : tensor<?x6x14x14xf32>, tensor<16x6x5x5xf32>, tensor<16xf32> -> tensor<?x16x10x10xf32>
  %4 = nn.relu %3 : tensor<?x16x10x10xf32>
  %5 = nn.max_pool2d %4 {kernel_size = array<i64: 2, 2>} : tensor<?x16x10x10xf32> -> tensor<?x16x5x5xf32>
  %6 = nn.flatten %5 : tensor<?x16x5x5xf32> -> tensor<?x400xf32>
  %7 = nn.linear %6, %f1w, %f1b : tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32> -> tensor<?x120xf32>
  %8 = nn.relu %7 : tensor<?x120xf32>
  %9 = nn.linear %8, %f2w, %f2b : tensor<?x120xf32>, tensor<84x120xf32>, tensor<84xf32> -> tensor<?x84xf32>
  %10 = nn.relu %9 : tensor<?x84xf32>
  %11 = nn.linear %10, %f3w, %f3b : tensor<?x84xf32>, tensor<10x84xf32>, tensor<10xf32> -> tensor<?x10xf32>
  return %11 : tensor<?x10xf32>
}

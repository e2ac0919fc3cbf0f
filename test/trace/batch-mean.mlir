// Batch reductions count real samples: mse_loss and Tensor::mean over a
// batch divide by the sum of the per-sample weights (the number of real
// samples), never by the compiled capacity.

// RUN: cleave-trace-ir mse-mean | FileCheck %s

// CHECK-LABEL: func.func @graph(
// CHECK-SAME:    %[[X:arg[0-9]+]]: tensor<3x16xf32> {train.input = "in0"}, %[[T:arg[0-9]+]]: tensor<3x2xf32> {train.input = "in1"}, %[[W:arg[0-9]+]]: tensor<3xf32> {train.input = "weights"}) -> (tensor<f32> {train.output = "out0"}, tensor<f32> {train.output = "out1"})
// CHECK-DAG:     %[[INNER:[a-z_0-9]+]] = arith.constant dense<1.600000e+01> : tensor<f32>
// CHECK:         %[[MSE:[a-z_0-9]+]] = nn.mse_loss %{{.+}}, %[[T]] {reduction = #nn.reduction<none>} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3xf32>
// CHECK:         %[[COUNT:[a-z_0-9]+]] = nn.reduce_sum %[[W]] [] : tensor<3xf32> -> tensor<f32>
// CHECK:         %[[WMSE:[a-z_0-9]+]] = nn.mul %[[MSE]], %[[W]]
// CHECK:         %[[SUM:[a-z_0-9]+]] = nn.reduce_sum %[[WMSE]] []
// CHECK:         %[[LOSS:[a-z_0-9]+]] = nn.div %[[SUM]], %[[COUNT]]
// CHECK:         %[[ROWS:[a-z_0-9]+]] = nn.reduce_sum %[[X]] [1] : tensor<3x16xf32> -> tensor<3xf32>
// CHECK:         %[[WROWS:[a-z_0-9]+]] = nn.mul %[[ROWS]], %[[W]]
// CHECK:         %[[XSUM:[a-z_0-9]+]] = nn.reduce_sum %[[WROWS]] []
// CHECK:         %[[PER:[a-z_0-9]+]] = nn.div %[[XSUM]], %[[COUNT]]
// CHECK:         %[[XMEAN:[a-z_0-9]+]] = nn.div %[[PER]], %[[INNER]]
// CHECK:         return %[[LOSS]], %[[XMEAN]]

// The RATEX micro-step: an MLP's forward pass, cross_entropy(...) / N and
// backward(). Parameters and their gradients are globals; the gradients are
// derived by cleave-autodiff and added into the accumulators, exactly as in
// @micro_step; the batch is the compiled capacity and the losses weight
// samples by the per-sample weights.

// RUN: cleave-trace-ir micro-step | FileCheck %s

// CHECK-LABEL: module attributes {train.manifest = {kind = "graph"}}
// CHECK-DAG:   train.global param @[[W1:param[0-9]+]] : tensor<12x16xf32>
// CHECK-DAG:   train.global param @[[B1:param[0-9]+]] : tensor<12xf32>
// CHECK-DAG:   train.global param @[[W2:param[0-9]+]] : tensor<3x12xf32>
// CHECK-DAG:   train.global param @[[B2:param[0-9]+]] : tensor<3xf32>
// CHECK-DAG:   train.global accumulator @[[GW1:grad[0-9]+]] of @[[W1]] : tensor<12x16xf32>
// CHECK-DAG:   train.global accumulator @[[GB1:grad[0-9]+]] of @[[B1]] : tensor<12xf32>
// CHECK-DAG:   train.global accumulator @[[GW2:grad[0-9]+]] of @[[W2]] : tensor<3x12xf32>
// CHECK-DAG:   train.global accumulator @[[GB2:grad[0-9]+]] of @[[B2]] : tensor<3xf32>
// CHECK:       func.func @graph(%[[X:arg[0-9]+]]: tensor<8x1x4x4xf32> {train.input = "in0"}, %[[Y:arg[0-9]+]]: tensor<8xi64> {train.input = "in1"}, %[[W:arg[0-9]+]]: tensor<8xf32> {train.input = "weights"}) -> (tensor<f32> {train.output = "out0"}) attributes {train.entry = "graph"}
// CHECK-DAG:     %[[N:[a-z_0-9]+]] = arith.constant dense<4.000000e+00> : tensor<f32>
// CHECK:         %[[LOGITS:[a-z_0-9]+]] = nn.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<8x12xf32>, tensor<3x12xf32>, tensor<3xf32> -> tensor<8x3xf32>
// CHECK:         %[[CE:[a-z_0-9]+]] = nn.cross_entropy %[[LOGITS]], %[[Y]] {reduction = #nn.reduction<none>}
// CHECK:         %[[COUNT:[a-z_0-9]+]] = nn.reduce_sum %[[W]] [] : tensor<8xf32> -> tensor<f32>
// CHECK:         %[[WCE:[a-z_0-9]+]] = nn.mul %[[CE]], %[[W]]
// CHECK:         %[[SUM:[a-z_0-9]+]] = nn.reduce_sum %[[WCE]] []
// CHECK:         %[[MEAN:[a-z_0-9]+]] = nn.div %[[SUM]], %[[COUNT]]
// CHECK:         %[[LOSS:[a-z_0-9]+]] = nn.div %[[MEAN]], %[[N]]
// The reverse sweep reuses the forward pass (one nn.linear per layer).
// CHECK-NOT:     nn.linear
// CHECK:         nn.relu_grad
// CHECK-DAG:     train.accumulate %{{.+}}, @[[GW1]] : tensor<12x16xf32>
// CHECK-DAG:     train.accumulate %{{.+}}, @[[GB1]] : tensor<12xf32>
// CHECK-DAG:     train.accumulate %{{.+}}, @[[GW2]] : tensor<3x12xf32>
// CHECK-DAG:     train.accumulate %{{.+}}, @[[GB2]] : tensor<3xf32>
// CHECK-NOT:     train.store
// CHECK:         return %[[LOSS]] : tensor<f32>
// The loss function autodiff differentiated is gone.
// CHECK-NOT:   func.func

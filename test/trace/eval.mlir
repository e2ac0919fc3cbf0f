// A forward pass under NoGradGuard: parameters are read-only globals, the
// prediction is an output of the batch capacity, and with no batch
// reduction there is no per-sample weights input.

// RUN: cleave-trace-ir conv-eval | FileCheck %s

// CHECK-LABEL: func.func @graph(
// CHECK-SAME:    %[[X:arg[0-9]+]]: tensor<5x1x6x6xf32> {train.input = "in0"}) -> (tensor<5x3xf32> {train.output = "out0"})
// CHECK:         nn.conv2d %[[X]], %{{.+}}, %{{.+}} {padding = array<i64: 1, 1, 1, 1>} : tensor<5x1x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32> -> tensor<5x2x6x6xf32>
// CHECK:         nn.max_pool2d %{{.+}} {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}
// CHECK:         %[[Y:[0-9]+]] = nn.linear
// CHECK-NOT:     train.store
// CHECK-NOT:     train.accumulate
// CHECK:         return %[[Y]] : tensor<5x3xf32>

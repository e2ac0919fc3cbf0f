// The shipped examples through the training pipeline: two graphs each.
// RUN: cleave-opt %cleave_src/examples/mlp.mlir --cleave-train-pipeline="micro-batch=32 accumulate=4 optimizer=adam" | FileCheck %s --check-prefix=MLP
// RUN: cleave-opt %cleave_src/examples/lenet.mlir --cleave-train-pipeline="micro-batch=16 accumulate=4 optimizer=momentum" | FileCheck %s --check-prefix=LENET

// MLP: module attributes {train.manifest = {accumulate = 4 : i64, reduce = "none", warnings = []}}
// MLP-DAG: train.global param @fc1.weight : tensor<512x784xf32> = #train.init<kaiming_uniform>
// MLP-DAG: train.global state @fc3.bias.exp_avg_sq of @fc3.bias : tensor<10xf32>
// MLP-DAG: train.global accumulator @fc1.weight.grad of @fc1.weight : tensor<512x784xf32>
// MLP-DAG: train.global accumulator @train.samples : tensor<f32>
// MLP-DAG: train.global counter @train.step : tensor<i64>
// MLP-DAG: train.global counter @train.micro_steps : tensor<i64>
// MLP-LABEL: func.func @micro_step(%{{.+}}: tensor<32x1x28x28xf32> {train.input = "image"}, %{{.+}}: tensor<32xi64> {train.input = "labels"}, %{{.+}}: tensor<32xf32> {train.input = "weights", train.sample_weights}) -> (tensor<f32> {train.output = "loss"})
// MLP-COUNT-6: train.accumulate
// MLP: train.accumulate %{{.+}}, @train.samples
// MLP-NOT: train.adam
// MLP: return
// MLP-LABEL: func.func @apply_step(%{{.+}}: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"}
// MLP-COUNT-6: train.adam
// MLP-LABEL: func.func @eval_step(
// MLP-SAME: -> (tensor<32x10xf32> {train.output = "prediction"})

// LENET-LABEL: func.func @micro_step(%{{.+}}: tensor<16x1x28x28xf32>
// LENET: nn.conv2d
// LENET: nn.max_pool2d_grad
// LENET: nn.conv2d_grad_weight
// LENET-LABEL: func.func @apply_step
// LENET-COUNT-8: train.momentum

// Without micro-batch the batch stays `?`, which autodiff cannot handle: a
// clear error naming the op and what to set, not a crash.
// RUN: not cleave-opt %cleave_src/examples/mlp.mlir --cleave-train-pipeline="accumulate=4" 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// DYNAMIC: error: 'nn.reduce_sum' op has the dynamic type 'tensor<?xf32>': cleave-autodiff needs static shapes; specialise the batch dimension first (micro-batch=B in cleave-attach-loss or the training pipeline)

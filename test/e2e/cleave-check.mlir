// cleave-check compiles a model for N micro-batches of B and for one batch of
// N*B, trains both on the same windows and compares the loss and every
// parameter after each window (docs/user/cleave-check.md). CheckTest.cpp
// checks the exit statuses and a real mismatch.
//
// REQUIRES: cleave-runtime
// RUN: split-file %s %t

// The example MLP, as docs/user/cleave-check.md shows it: the runs agree.
// RUN: cleave-check %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 \
// RUN:   | FileCheck %s --check-prefix=MLP
// MLP:      model:        {{.*}}examples/mlp.mlir
// MLP-NEXT: accumulating: micro-batch 32, 4 micro-steps per optimizer step
// MLP-NEXT: reference:    micro-batch 128, 1 micro-step per optimizer step
// MLP-NEXT: data:         3 windows of 128 samples, random (seed 0)
// MLP-NOT:  split-observable
// MLP-NEXT: relative difference  window 1    window 2    window 3
// MLP-NEXT:   loss               {{[0-9.]+e[-+][0-9]+}}    {{[0-9.]+e[-+][0-9]+}}    {{[0-9.]+e[-+][0-9]+$}}
// MLP-NEXT:   fc1.weight         {{[0-9.]+e[-+][0-9]+}}    {{[0-9.]+e[-+][0-9]+}}    {{[0-9.]+e[-+][0-9]+$}}
// MLP-NEXT:   fc1.bias
// MLP-NEXT:   fc2.weight
// MLP-NEXT:   fc2.bias
// MLP-NEXT:   fc3.weight
// MLP-NEXT:   fc3.bias
// MLP-NOT:  *
// MLP-NEXT: agree: 4 micro-batches of 32 give the update of one batch of 128; largest relative difference {{[0-9.]+e-0[5-9]}} ({{loss|fc[123].(weight|bias)}}, window {{[123]}}), within --rtol=1.00e-04

// LeNet with momentum, fewer windows, a tighter tolerance.
// RUN: cleave-check %cleave_src/examples/lenet.mlir --micro-batch=4 --accumulate=3 \
// RUN:   --optimizer=momentum --windows=2 --rtol=1e-5 --seed=3 \
// RUN:   | FileCheck %s --check-prefix=LENET
// LENET:      accumulating: micro-batch 4, 3 micro-steps per optimizer step
// LENET-NEXT: reference:    micro-batch 12, 1 micro-step per optimizer step
// LENET-NEXT: data:         2 windows of 12 samples, random (seed 3)
// LENET:        conv1.weight
// LENET:        fc2.bias
// LENET-NEXT: agree: 3 micro-batches of 4 give the update of one batch of 12; {{.+}} within --rtol=1.00e-05

// Batch norm in training mode: the statistics of 4 micro-batches are not
// those of the batch. The op is reported, the runs differ (first in the
// loss of window 1, which sees the same parameters), and that is not called
// a mismatch. The exit status is 3 (CheckTest.cpp).
// RUN: not cleave-check %t/bn.mlir --micro-batch=4 --accumulate=4 --windows=2 \
// RUN:   | FileCheck %s --check-prefix=BN
// BN:      split-observable: nn.batch_norm at loc("{{.*}}bn.mlir":{{[0-9]+}}:{{[0-9]+}}): batch normalisation in training mode uses the statistics of each micro-batch, not of the whole window
// BN-NEXT: relative difference
// BN-NEXT:   loss               {{[0-9.]+e-0[0-3]}}*
// BN:        bn.running_mean    {{[0-9.]+e-0[0-3]}}*
// BN:      (* exceeds --rtol=1.00e-04)
// BN-NEXT: differ as expected: {{.+}} exceeds --rtol=1.00e-04, and the model has 1 split-observable op (above) whose results depend on the micro-batch; not counted as a mismatch, and not a proof of equivalence

// A check that cannot run (exit status 2): nothing is compiled.
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --accumulate=4 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-B
// NO-B: cleave-check: error: --micro-batch=B is required (B >= 1)
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-N
// NO-N: cleave-check: error: --accumulate=N must be at least 2 (with N = 1 both runs are the same artifact), got 1
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 \
// RUN:   --optimizer=lion 2>&1 | FileCheck %s --check-prefix=BAD-OPT
// BAD-OPT: cleave-check: for the --optimizer option: Cannot find option named 'lion'!
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 \
// RUN:   --windows=0 2>&1 | FileCheck %s --check-prefix=WINDOWS
// WINDOWS: cleave-check: error: --windows=K must be at least 1, got 0
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 \
// RUN:   --rtol=-1 2>&1 | FileCheck %s --check-prefix=RTOL
// RTOL: cleave-check: error: --rtol must be a positive number, got -1
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 \
// RUN:   --target=cuda 2>&1 | FileCheck %s --check-prefix=CUDA
// CUDA: cleave-check: error: --target=cuda: cleave-check runs both artifacts on this machine's CPU; the split it checks is the same for every target
// RUN: not cleave-check %t/missing.mlir --micro-batch=8 --accumulate=2 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// MISSING: error: cannot open '{{.*}}missing.mlir'
// MISSING-NOT: model:

//--- bn.mlir
func.func @forward(
    %x: tensor<?x8xf32> {train.input = "x"},
    %w1: tensor<6x8xf32> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<6xf32> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 8.0>},
    %g: tensor<6xf32> {train.param = "bn.weight", train.init = #train.init<ones>},
    %beta: tensor<6xf32> {train.param = "bn.bias", train.init = #train.init<zeros>},
    %m: tensor<6xf32> {train.buffer = "bn.running_mean", train.init = #train.init<zeros>},
    %v: tensor<6xf32> {train.buffer = "bn.running_var", train.init = #train.init<ones>},
    %w2: tensor<3x6xf32> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<3xf32> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 6.0>})
    -> (tensor<?x3xf32>, tensor<6xf32> {train.buffer = "bn.running_mean"},
        tensor<6xf32> {train.buffer = "bn.running_var"}) {
  %0 = nn.linear %x, %w1, %b1 : tensor<?x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<?x6xf32>
  %1, %m2, %v2 = nn.batch_norm %0, %g, %beta, %m, %v {training} : tensor<?x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<?x6xf32>, tensor<6xf32>, tensor<6xf32>
  %2 = nn.relu %1 : tensor<?x6xf32>
  %3 = nn.linear %2, %w2, %b2 : tensor<?x6xf32>, tensor<3x6xf32>, tensor<3xf32> -> tensor<?x3xf32>
  return %3, %m2, %v2 : tensor<?x3xf32>, tensor<6xf32>, tensor<6xf32>
}

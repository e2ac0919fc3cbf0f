// cleave-run on compiled example models: evaluation, a micro-step, the
// window, the optimizer update, padding. Zeroing the last layer makes every
// logit 0, so the prediction is 0, the cross-entropy of any label is ln 10 =
// 2.30259 and the gradient of the last bias is softmax - onehot = 0.1 - [c ==
// label]: with lr = 1 one SGD step sets the bias to -0.1 except 0.9 at the
// label.
//
// REQUIRES: cleave-runtime
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --accumulate=2 -o %t.mlp.cleave

// RUN: cleave-run %t.mlp.cleave --global fc3.weight=0 --global fc3.bias=0 \
// RUN:   --input image=0.5 --samples=2 | FileCheck %s --check-prefix=EVAL
// EVAL:      eval_step.prediction: f32 [4, 10]
// EVAL-NEXT: [0] 0 0 0 0 0 0 0 0 0 0
// EVAL-NEXT: [1] 0 0 0 0 0 0 0 0 0 0
// EVAL-NOT:  [2]

// Two real samples of label 3 in a micro-batch of 4: the runtime pads with
// two copies of the last sample at weight 0, which count for nothing (the
// loss and gradients are those of the two samples). N = 2: the micro-step
// only accumulates; the flush applies.
// RUN: cleave-run %t.mlp.cleave --entry=micro_step --global fc3.weight=0 \
// RUN:   --global fc3.bias=0 --input image=0.25 --input labels=3 --samples=2 \
// RUN:   --hyper lr=1 --print=loss --print=step --print=micro_steps \
// RUN:   --print=global:fc3.bias --flush | FileCheck %s --check-prefix=STEP
// STEP:      loss = 2.3025{{[89]}}
// STEP-NEXT: step = 0
// STEP-NEXT: micro_steps = 1
// STEP-NEXT: fc3.bias: f32 [10]
// STEP-NEXT: 0 0 0 0 0 0 0 0 0 0
// STEP-NEXT: flushed: step = 1
// STEP-NEXT: step = 1
// STEP-NEXT: micro_steps = 0
// STEP-NEXT: fc3.bias: f32 [10]
// STEP-NEXT: -0.1 -0.1 -0.1 0.9 -0.1 -0.1 -0.1 -0.1 -0.1 -0.1

// A label outside [0, 10) is refused, not clamped into another class.
// RUN: not cleave-run %t.mlp.cleave --entry=micro_step --input labels=1,2,10,3 \
// RUN:   --print=loss 2>&1 | FileCheck %s --check-prefix=LABEL
// RUN: not cleave-run %t.mlp.cleave --entry=micro_step --input labels=-1 \
// RUN:   --samples=1 --print=loss 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// LABEL: cleave-run: error: batch: input 'labels' element 2 is 10, expected 0 to 9 (a class label or an index into 10 rows)
// NEGATIVE: cleave-run: error: batch: input 'labels' element 0 is -1, expected 0 to 9

// A model too large for the machine (3 TiB at this micro-batch) is refused
// when the session is created, not killed by the OOM killer later.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=300000000 -o %t.huge.cleave
// RUN: not cleave-run %t.huge.cleave 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: cleave-run: error: {{.+}}.huge.cleave: a session needs {{[0-9]+}} MiB (parameters, state, accumulators and one micro-batch's inputs and activations), more than this machine's {{[0-9]+}} MiB of memory; compile with a smaller --micro-batch

// N = 1 at run time (no recompile): every micro-step applies.
// RUN: cleave-run %t.mlp.cleave --entry=micro_step --accumulate=1 --repeat=2 \
// RUN:   --input labels=1,2,3,4 --print=step | FileCheck %s --check-prefix=N1
// N1:      step = 1
// N1-NEXT: step = 2

// Inputs from raw little-endian files: 4 labels of 8 bytes each.
// RUN: printf '\007\0\0\0\0\0\0\0\007\0\0\0\0\0\0\0\007\0\0\0\0\0\0\0\007\0\0\0\0\0\0\0' > %t.labels.bin
// RUN: cleave-run %t.mlp.cleave --entry=micro_step --accumulate=1 \
// RUN:   --global fc3.weight=0 --global fc3.bias=0 --input labels=%t.labels.bin \
// RUN:   --hyper lr=1 --print=global:fc3.bias | FileCheck %s --check-prefix=FILE
// FILE: -0.1 -0.1 -0.1 -0.1 -0.1 -0.1 -0.1 0.9 -0.1 -0.1

// The same through LeNet's convolutions and pooling.
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=2 -o %t.lenet.cleave
// RUN: cleave-run %t.lenet.cleave --entry=micro_step --global fc2.weight=0 \
// RUN:   --global fc2.bias=0 --input image=0.5 --input labels=9 --hyper lr=1 \
// RUN:   --print=loss --print=global:fc2.bias | FileCheck %s --check-prefix=LENET
// LENET:      loss = 2.3025{{[89]}}
// LENET-NEXT: fc2.bias: f32 [10]
// LENET-NEXT: -0.1 -0.1 -0.1 -0.1 -0.1 -0.1 -0.1 -0.1 -0.1 0.9

// Errors are one line on stderr and a non-zero exit.
// RUN: not cleave-run %t.mlp.cleave --print=global:nope 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: cleave-run: error: {{.*}}mlp.cleave has no global 'nope'

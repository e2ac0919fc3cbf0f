// An input the model reads only through its shape (Shape -> Expand of a
// parameter): the training step does not read it, the evaluation does, and
// the artifact lists it so that both run (it used to compile into an
// artifact the runtime refused).
//
// REQUIRES: cleave-runtime
// RUN: %python %S/Inputs/make_model.py shape_only_input %t.onnx
// RUN: cleave-compile %t.onnx --loss=mse --micro-batch=2 --lr=0.5 -o %t.cleave
// RUN: cleave-run %t.cleave --input x=7 | FileCheck %s --check-prefix=EVAL
// RUN: cleave-run %t.cleave --entry=micro_step --input targets=0 --print=loss --print=global:p | FileCheck %s --check-prefix=STEP

// EVAL:      eval_step.prediction: f32 [2, 4]
// EVAL-NEXT:   [0] 1 2 3 4
// EVAL-NEXT:   [1] 1 2 3 4

// The per-sample MSE is the mean of the squares, (1 + 4 + 9 + 16) / 4; one
// SGD step on it moves each element of p by lr * 2 p / 4.
// STEP:      loss = 7.5
// STEP:      p: f32 [1, 4]
// STEP-NEXT:   0.75 1.5 2.25 3

// Forward-only artifacts: a graph without trainable parameters (or without
// inputs) compiled with --loss=none, and one with initializers compiled with
// --inference, give an artifact with eval_step alone, returning every output of the graph by its
// position (prediction, output1, ...). cleave-run evaluates it and refuses
// to train it.
//
// REQUIRES: cleave-runtime
// RUN: %python %S/Inputs/make_model.py forward_only %t.onnx
// RUN: cleave-compile %t.onnx --loss=none --micro-batch=2 -o %t.cleave
// RUN: cleave-run %t.cleave --input x=-1,2,-3,4,-5,6 | FileCheck %s
// RUN: not cleave-run %t.cleave --entry=micro_step 2>&1 | FileCheck %s --check-prefix=NO-STEP
// RUN: not cleave-run %t.cleave --flush 2>&1 | FileCheck %s --check-prefix=NO-FLUSH
// RUN: not cleave-compile %t.onnx --micro-batch=2 -o %t.bad 2>&1 | FileCheck %s --check-prefix=NOTHING

// CHECK:      eval_step.prediction: f32 [2, 3]
// CHECK-NEXT:   [0] 0 2 0
// CHECK-NEXT:   [1] 4 0 6
// CHECK:      eval_step.output1: f32 [2, 3]
// CHECK-NEXT:   [0] 1 -2 3
// CHECK-NEXT:   [1] -4 5 -6

// NO-STEP:  has no micro_step entry
// NO-FLUSH: an inference artifact (compiled forward-only) cannot apply a window; it has eval_step alone

// Asked to train, a model without parameters is refused with the way out.
// NOTHING: error: @forward has no trainable parameter, so there is nothing to train; compile it forward-only (--inference, or --loss=none) to evaluate it

// RUN: %python %S/Inputs/make_model.py forward_only_affine %t-affine.onnx
// RUN: cleave-compile %t-affine.onnx --inference --micro-batch=1 -o %t-affine.cleave
// RUN: cleave-run %t-affine.cleave --input x=1,1 --print=output --print=global:w | FileCheck %s --check-prefix=AFFINE
// RUN: cleave-compile %t-affine.onnx --inference --micro-batch=1 --compile-to=step | FileCheck %s --check-prefix=IR
// RUN: not cleave-compile %t-affine.onnx --inference --reduce=mean --micro-batch=1 -o %t.bad 2>&1 | FileCheck %s --check-prefix=NO-RANKS

// The initializers are the parameters' initial values.
// AFFINE:      eval_step.prediction: f32 [1, 2]
// AFFINE-NEXT:   4.5 5.5
// AFFINE:      w: f32 [2, 2]

// Parameters and buffers become globals; there is no optimizer state, step
// counter, hyperparameter or training step.
// IR:     module attributes {train.manifest = {kind = "inference"}}
// IR-NEXT:  train.global param @w
// IR-NEXT:  train.global param @b
// IR-NOT:   train.global
// IR-NOT:   train.hyper
// IR:       func.func @eval_step(%{{.*}}: tensor<1x2xf32> {train.input = "x"}) -> (tensor<1x2xf32> {train.output = "prediction"})
// IR-NOT:   func.func

// NO-RANKS: inference (a forward-only artifact) has no gradients to reduce across ranks

// A graph without inputs evaluates to the same rows for any batch: integer
// shape arithmetic folds into a constant output, the float part runs.
// RUN: %python %S/Inputs/make_model.py forward_only_no_input %t-none.onnx
// RUN: cleave-compile %t-none.onnx --inference --micro-batch=2 -o %t-none.cleave
// RUN: cleave-run %t-none.cleave | FileCheck %s --check-prefix=NO-INPUT
// NO-INPUT:      eval_step.prediction: i64 [4]
// NO-INPUT-NEXT:   0 1 4 9
// NO-INPUT:      eval_step.output1: f32 [4]
// NO-INPUT-NEXT:   1 0.540302 -0.416147 -0.989992

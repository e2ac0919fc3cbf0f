// RUN: split-file --leading-lines %s %t
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step | FileCheck %s --check-prefix=SGD
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step=optimizer=momentum | FileCheck %s --check-prefixes=MOM,MOM-PLAIN
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=nesterov momentum=0.5" | FileCheck %s --check-prefixes=MOM,MOM-NESTEROV
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step=optimizer=adam | FileCheck %s --check-prefixes=ADAM,ADAM-PLAIN
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=adamw lr=0.5 beta1=0.75 beta2=0.875 eps=0.25 weight-decay=0.125" | FileCheck %s --check-prefixes=ADAM,ADAMW
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=rmsprop alpha=0.5 eps=0.25" | FileCheck %s --check-prefix=RMSPROP
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=adagrad lr-decay=0.125" | FileCheck %s --check-prefix=ADAGRAD
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=lamb weight-decay=0.125" | FileCheck %s --check-prefix=LAMB
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=lars eta=0.02" | FileCheck %s --check-prefix=LARS
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step=clip-norm=2.0 | FileCheck %s --check-prefix=CLIP
// RUN: cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=momentum check-finite=true" | FileCheck %s --check-prefix=FINITE
// RUN: not cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=rmsprop alpha=1" 2>&1 | FileCheck %s --check-prefix=BAD-ALPHA
// RUN: not cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=lars eta=-1" 2>&1 | FileCheck %s --check-prefix=BAD-ETA
// RUN: not cleave-opt %t/model.mlir --cleave-build-train-step="optimizer=adagrad lr-decay=-0.5" 2>&1 | FileCheck %s --check-prefix=BAD-LR-DECAY
// RUN: cleave-opt %t/state.mlir --cleave-build-train-step | FileCheck %s --check-prefix=STATE
// RUN: cleave-opt %t/inference.mlir --cleave-build-train-step=inference=true | FileCheck %s --check-prefix=INFER
// RUN: cleave-opt %t/invalid.mlir --split-input-file --verify-diagnostics --cleave-build-train-step
// RUN: not cleave-opt %t/model.mlir --cleave-build-train-step=optimizer=lion 2>&1 | FileCheck %s --check-prefix=BAD-OPTIMIZER
// RUN: not cleave-opt %t/model.mlir --cleave-build-train-step=model=nope 2>&1 | FileCheck %s --check-prefix=NO-MODEL

// BAD-OPTIMIZER: for the --optimizer option: Cannot find option named 'lion'!
// NO-MODEL: error: no model function @nope
// BAD-ALPHA: error: alpha=1 is out of range; expected 0 <= value < 1
// BAD-ETA: error: eta=-1 is out of range; expected a finite value >= 0
// BAD-LR-DECAY: error: lr-decay=-0.5 is out of range; expected a finite value >= 0

//--- model.mlir

// The input is what cleave-attach-loss and cleave-autodiff produce: the model,
// @loss and its gradient function (whose body is only cloned, so it is kept
// short here).

// One global per parameter, with its initialiser, and the step counter.
// SGD-NOT: train.global state
// SGD: train.global param @w : tensor<3x4xf32> = #train.init<kaiming_uniform>
// SGD-NEXT: train.global param @b : tensor<3xf32> = #train.init<zeros>
// SGD-NEXT: train.global counter @train.step : tensor<i64>

// The step takes the data inputs, then each hyperparameter with its default.
// SGD-LABEL: func.func @train_step(
// SGD-SAME: %[[X:[^:]+]]: tensor<8x4xf32> {train.input = "x"},
// SGD-SAME: %[[T:[^:]+]]: tensor<8x3xf32> {train.input = "targets"},
// SGD-SAME: %[[WEIGHTS:[^:]+]]: tensor<8xf32> {train.input = "weights", train.sample_weights},
// SGD-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// SGD-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 0.000000e+00 : f64, train.hyper = "weight_decay"})
// SGD-SAME: -> (tensor<f32> {train.output = "loss"}) attributes {train.entry = "step"}

// Forward and backward on the loaded parameters.
// SGD: %[[W:.+]] = train.load @w : tensor<3x4xf32>
// SGD: %[[B:.+]] = train.load @b : tensor<3xf32>
// SGD: %[[Y:.+]] = nn.linear %[[X]], %[[W]], %[[B]]
// SGD: %[[LOSS:.+]] = nn.mse_loss %[[Y]], %[[T]]
// SGD: %[[DW:.+]] = nn.neg %[[W]]
// SGD: %[[DB:.+]] = nn.neg %[[B]]

// The gradients of the summed loss and the sample count cross the window cut,
// then the sums are divided by the count.
// SGD: %[[COUNT:.+]] = nn.reduce_sum %[[WEIGHTS]] [] : tensor<8xf32> -> tensor<f32>
// SGD: %[[SUMS:.+]]:3 = train.window_sum %[[DW]], %[[DB]], %[[COUNT]] {targets = [@w, @b, "samples"]} : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
// SGD: %[[GW:.+]] = nn.div %[[SUMS]]#0, %[[SUMS]]#2
// SGD: %[[GB:.+]] = nn.div %[[SUMS]]#1, %[[SUMS]]#2
// SGD-NOT: train.clip_by_global_norm

// The optimizer step counter advances once per step.
// SGD: %[[STEP:.+]] = train.load @train.step : tensor<i64>
// SGD: %[[ONE:.+]] = arith.constant dense<1> : tensor<i64>
// SGD: %[[NEXT:.+]] = arith.addi %[[STEP]], %[[ONE]]
// SGD: train.store %[[NEXT]], @train.step

// With check-finite the loss is summed over the window too, and the window
// sums are checked by train.check_finite: train.nonfinite gets 1 + the
// position of the first sum that is not finite, or 0; only a window whose
// sums are all finite advances train.step and stores new parameters and
// optimizer state.
// FINITE: train.global counter @train.step : tensor<i64>
// FINITE-NEXT: train.global counter @train.nonfinite : tensor<i64>
// FINITE-NEXT: train.global counter @train.skipped_steps : tensor<i64>
// FINITE-LABEL: func.func @train_step(
// FINITE: %[[SUMS:.+]]:4 = train.window_sum %{{.+}}, %{{.+}}, %[[LOSS:.+]], %{{.+}} {targets = [@w, @b, "loss", "samples"]}
// FINITE: %[[STEP:.+]] = train.load @train.step
// FINITE: %[[FIRST:.+]] = train.check_finite %[[SUMS]]#0, %[[SUMS]]#1, %[[SUMS]]#2, %[[SUMS]]#3 : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>
// FINITE: train.store %[[FIRST]], @train.nonfinite
// FINITE: %[[FIRSTF:.+]] = arith.sitofp %[[FIRST]] : tensor<i64> to tensor<f32>
// FINITE: %[[OK:.+]] = nn.compare <eq>, %[[FIRSTF]], %{{.+}} {dtype = f32}
// FINITE: %[[ADVANCE:.+]] = arith.fptosi %[[OK]] : tensor<f32> to tensor<i64>
// FINITE: %[[SKIPPED:.+]] = train.load @train.skipped_steps
// FINITE: %[[NOTOK:.+]] = arith.subi %{{.+}}, %[[ADVANCE]]
// FINITE: %[[SKIPPED2:.+]] = arith.addi %[[SKIPPED]], %[[NOTOK]]
// FINITE: train.store %[[SKIPPED2]], @train.skipped_steps
// FINITE: %[[NEXT:.+]] = arith.addi %[[STEP]], %[[ADVANCE]]
// FINITE: train.store %[[NEXT]], @train.step
// FINITE: %[[W:.+]] = train.load @w
// FINITE: %[[BUF:.+]] = train.load @w.momentum_buffer
// FINITE: %[[NEWW:.+]], %[[NEWBUF:.+]] = train.momentum %[[W]]
// FINITE: %[[KEEPW:.+]] = nn.where %[[OK]], %[[NEWW]], %[[W]]
// FINITE: train.store %[[KEEPW]], @w
// FINITE: %[[KEEPBUF:.+]] = nn.where %[[OK]], %[[NEWBUF]], %[[BUF]]
// FINITE: train.store %[[KEEPBUF]], @w.momentum_buffer
// FINITE: return %[[LOSS]]

// SGD: %[[W2:.+]] = train.load @w
// SGD: %[[NEWW:.+]] = train.sgd %[[W2]], %[[GW]] lr %[[LR]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// SGD: train.store %[[NEWW]], @w
// SGD: %[[B2:.+]] = train.load @b
// SGD: %[[NEWB:.+]] = train.sgd %[[B2]], %[[GB]] lr %[[LR]] weight_decay %[[WD]] : tensor<3xf32>, tensor<f32>
// SGD: train.store %[[NEWB]], @b
// SGD: return %[[LOSS]] : tensor<f32>

// Evaluation: the model on the loaded parameters, data inputs only.
// SGD-LABEL: func.func @eval_step(
// SGD-SAME: %[[EX:[^:]+]]: tensor<8x4xf32> {train.input = "x"})
// SGD-SAME: -> (tensor<8x3xf32> {train.output = "prediction"}) attributes {train.entry = "eval_step"}
// SGD: %[[EW:.+]] = train.load @w
// SGD: %[[EB:.+]] = train.load @b
// SGD: %[[EY:.+]] = nn.linear %[[EX]], %[[EW]], %[[EB]]
// SGD: return %[[EY]]

// The source functions are gone.
// SGD-NOT: func.func

// MOM: train.global param @w
// MOM-NEXT: train.global state @w.momentum_buffer of @w : tensor<3x4xf32>
// MOM-NEXT: train.global param @b
// MOM-NEXT: train.global state @b.momentum_buffer of @b : tensor<3xf32>
// MOM-NEXT: train.global counter @train.step
// MOM-LABEL: func.func @train_step(
// MOM-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// MOM-PLAIN-SAME: %[[M:[^:]+]]: tensor<f32> {train.default = 9.000000e-01 : f64, train.hyper = "momentum"},
// MOM-NESTEROV-SAME: %[[M:[^:]+]]: tensor<f32> {train.default = 5.000000e-01 : f64, train.hyper = "momentum"},
// MOM-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 0.000000e+00 : f64, train.hyper = "weight_decay"})
// MOM: train.window_sum
// MOM: %[[W:.+]] = train.load @w :
// MOM: %[[BUF:.+]] = train.load @w.momentum_buffer
// MOM-PLAIN: %[[NEWW:.+]], %[[NEWBUF:.+]] = train.momentum %[[W]], %{{.+}}, %[[BUF]] lr %[[LR]] momentum %[[M]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// MOM-NESTEROV: %[[NEWW:.+]], %[[NEWBUF:.+]] = train.momentum %[[W]], %{{.+}}, %[[BUF]] lr %[[LR]] momentum %[[M]] weight_decay %[[WD]] {nesterov} : tensor<3x4xf32>, tensor<f32>
// MOM: train.store %[[NEWW]], @w :
// MOM: train.store %[[NEWBUF]], @w.momentum_buffer
// MOM: train.load @b.momentum_buffer
// MOM-PLAIN-NOT: nesterov

// ADAM: train.global param @w
// ADAM-NEXT: train.global state @w.exp_avg of @w : tensor<3x4xf32>
// ADAM-NEXT: train.global state @w.exp_avg_sq of @w : tensor<3x4xf32>
// ADAM-NEXT: train.global param @b
// ADAM-NEXT: train.global state @b.exp_avg of @b : tensor<3xf32>
// ADAM-NEXT: train.global state @b.exp_avg_sq of @b : tensor<3xf32>
// ADAM-NEXT: train.global counter @train.step
// ADAM-LABEL: func.func @train_step(
// ADAM-PLAIN-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// ADAM-PLAIN-SAME: %[[B1:[^:]+]]: tensor<f32> {train.default = 9.000000e-01 : f64, train.hyper = "beta1"},
// ADAM-PLAIN-SAME: %[[B2:[^:]+]]: tensor<f32> {train.default = 0.99899999999999999 : f64, train.hyper = "beta2"},
// ADAM-PLAIN-SAME: %[[EPS:[^:]+]]: tensor<f32> {train.default = 1.000000e-08 : f64, train.hyper = "eps"},
// ADAM-PLAIN-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 0.000000e+00 : f64, train.hyper = "weight_decay"})
// ADAMW-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 5.000000e-01 : f64, train.hyper = "lr"},
// ADAMW-SAME: %[[B1:[^:]+]]: tensor<f32> {train.default = 7.500000e-01 : f64, train.hyper = "beta1"},
// ADAMW-SAME: %[[B2:[^:]+]]: tensor<f32> {train.default = 8.750000e-01 : f64, train.hyper = "beta2"},
// ADAMW-SAME: %[[EPS:[^:]+]]: tensor<f32> {train.default = 2.500000e-01 : f64, train.hyper = "eps"},
// ADAMW-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 1.250000e-01 : f64, train.hyper = "weight_decay"})
// Bias correction uses the advanced step counter.
// ADAM: %[[STEP:.+]] = train.load @train.step
// ADAM: %[[T:.+]] = arith.addi %[[STEP]]
// ADAM: %[[W:.+]] = train.load @w :
// ADAM: %[[M:.+]] = train.load @w.exp_avg :
// ADAM: %[[V:.+]] = train.load @w.exp_avg_sq :
// ADAM-PLAIN: %[[NEWW:.+]], %[[NEWM:.+]], %[[NEWV:.+]] = train.adam %[[W]], %{{.+}}, %[[M]], %[[V]] step %[[T]] lr %[[LR]] betas %[[B1]], %[[B2]] eps %[[EPS]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// ADAMW: %[[NEWW:.+]], %[[NEWM:.+]], %[[NEWV:.+]] = train.adam %[[W]], %{{.+}}, %[[M]], %[[V]] step %[[T]] lr %[[LR]] betas %[[B1]], %[[B2]] eps %[[EPS]] weight_decay %[[WD]] {decoupled} : tensor<3x4xf32>, tensor<f32>
// ADAM: train.store %[[NEWW]], @w :
// ADAM: train.store %[[NEWM]], @w.exp_avg :
// ADAM: train.store %[[NEWV]], @w.exp_avg_sq :
// ADAM: train.adam
// ADAM-PLAIN-NOT: decoupled

// RMSPROP: train.global param @w
// RMSPROP-NEXT: train.global state @w.square_avg of @w : tensor<3x4xf32>
// RMSPROP-NEXT: train.global param @b
// RMSPROP-NEXT: train.global state @b.square_avg of @b : tensor<3xf32>
// RMSPROP-LABEL: func.func @train_step(
// RMSPROP-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// RMSPROP-SAME: %[[A:[^:]+]]: tensor<f32> {train.default = 5.000000e-01 : f64, train.hyper = "alpha"},
// RMSPROP-SAME: %[[EPS:[^:]+]]: tensor<f32> {train.default = 2.500000e-01 : f64, train.hyper = "eps"},
// RMSPROP-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 0.000000e+00 : f64, train.hyper = "weight_decay"})
// RMSPROP: train.store %{{.+}}, @train.step
// RMSPROP: %[[W:.+]] = train.load @w :
// RMSPROP: %[[SQ:.+]] = train.load @w.square_avg
// RMSPROP: %[[NEWW:.+]], %[[NEWSQ:.+]] = train.rmsprop %[[W]], %{{.+}}, %[[SQ]] lr %[[LR]] alpha %[[A]] eps %[[EPS]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// RMSPROP: train.store %[[NEWW]], @w :
// RMSPROP: train.store %[[NEWSQ]], @w.square_avg

// Adagrad's learning-rate decay counts optimizer steps.
// ADAGRAD: train.global state @w.sum of @w : tensor<3x4xf32>
// ADAGRAD-LABEL: func.func @train_step(
// ADAGRAD-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// ADAGRAD-SAME: %[[D:[^:]+]]: tensor<f32> {train.default = 1.250000e-01 : f64, train.hyper = "lr_decay"},
// ADAGRAD-SAME: %[[EPS:[^:]+]]: tensor<f32> {train.default = 1.000000e-08 : f64, train.hyper = "eps"},
// ADAGRAD-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 0.000000e+00 : f64, train.hyper = "weight_decay"})
// ADAGRAD: %[[STEP:.+]] = train.load @train.step
// ADAGRAD: %[[T:.+]] = arith.addi %[[STEP]]
// ADAGRAD: %[[W:.+]] = train.load @w :
// ADAGRAD: %[[S:.+]] = train.load @w.sum
// ADAGRAD: %[[NEWW:.+]], %[[NEWS:.+]] = train.adagrad %[[W]], %{{.+}}, %[[S]] step %[[T]] lr %[[LR]] lr_decay %[[D]] eps %[[EPS]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// ADAGRAD: train.store %[[NEWW]], @w :
// ADAGRAD: train.store %[[NEWS]], @w.sum

// The layer-wise optimizers exempt tensors of rank <= 1 (the bias) from weight
// decay and the trust ratio: no_adapt.
// LAMB: train.global state @w.exp_avg of @w
// LAMB: train.global state @w.exp_avg_sq of @w
// LAMB-LABEL: func.func @train_step(
// LAMB-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// LAMB-SAME: %[[B1:[^:]+]]: tensor<f32> {train.default = 9.000000e-01 : f64, train.hyper = "beta1"},
// LAMB-SAME: %[[B2:[^:]+]]: tensor<f32> {train.default = 0.99899999999999999 : f64, train.hyper = "beta2"},
// LAMB-SAME: %[[EPS:[^:]+]]: tensor<f32> {train.default = 1.000000e-08 : f64, train.hyper = "eps"},
// LAMB-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 1.250000e-01 : f64, train.hyper = "weight_decay"})
// LAMB: %[[T:.+]] = arith.addi
// LAMB: %[[W:.+]] = train.load @w :
// LAMB: %[[M:.+]] = train.load @w.exp_avg :
// LAMB: %[[V:.+]] = train.load @w.exp_avg_sq :
// LAMB: %[[NEWW:.+]], %[[NEWM:.+]], %[[NEWV:.+]] = train.lamb %[[W]], %{{.+}}, %[[M]], %[[V]] step %[[T]] lr %[[LR]] betas %[[B1]], %[[B2]] eps %[[EPS]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// LAMB: train.store %[[NEWW]], @w :
// LAMB: train.store %[[NEWM]], @w.exp_avg :
// LAMB: train.store %[[NEWV]], @w.exp_avg_sq :
// LAMB: train.lamb %{{.+}} weight_decay %[[WD]] {no_adapt} : tensor<3xf32>, tensor<f32>

// LARS: train.global state @w.momentum_buffer of @w
// LARS-LABEL: func.func @train_step(
// LARS-SAME: %[[LR:[^:]+]]: tensor<f32> {train.default = 1.000000e-02 : f64, train.hyper = "lr"},
// LARS-SAME: %[[M:[^:]+]]: tensor<f32> {train.default = 9.000000e-01 : f64, train.hyper = "momentum"},
// LARS-SAME: %[[ETA:[^:]+]]: tensor<f32> {train.default = 2.000000e-02 : f64, train.hyper = "eta"},
// LARS-SAME: %[[WD:[^:]+]]: tensor<f32> {train.default = 0.000000e+00 : f64, train.hyper = "weight_decay"})
// LARS: train.store %{{.+}}, @train.step
// LARS: %[[W:.+]] = train.load @w :
// LARS: %[[BUF:.+]] = train.load @w.momentum_buffer
// LARS: %[[NEWW:.+]], %[[NEWBUF:.+]] = train.lars %[[W]], %{{.+}}, %[[BUF]] lr %[[LR]] momentum %[[M]] eta %[[ETA]] weight_decay %[[WD]] : tensor<3x4xf32>, tensor<f32>
// LARS: train.store %[[NEWW]], @w :
// LARS: train.store %[[NEWBUF]], @w.momentum_buffer
// LARS: train.lars %{{.+}} {no_adapt} : tensor<3xf32>, tensor<f32>

// With clip-norm, the normalised gradients are clipped with a max norm
// hyperparameter before the optimizer uses them.
// CLIP-LABEL: func.func @train_step(
// CLIP-SAME: %[[MAX:[^:]+]]: tensor<f32> {train.default = 2.000000e+00 : f64, train.hyper = "clip_norm"})
// CLIP: %[[SUMS:.+]]:3 = train.window_sum
// CLIP: %[[GW:.+]] = nn.div %[[SUMS]]#0, %[[SUMS]]#2
// CLIP: %[[GB:.+]] = nn.div %[[SUMS]]#1, %[[SUMS]]#2
// CLIP: %[[CLIPPED:.+]]:2, %{{.+}} = train.clip_by_global_norm %[[GW]], %[[GB]] max_norm %[[MAX]] : tensor<3x4xf32>, tensor<3xf32>, tensor<f32>
// CLIP: train.sgd %{{.+}}, %[[CLIPPED]]#0
// CLIP: train.sgd %{{.+}}, %[[CLIPPED]]#1

func.func @forward(%x: tensor<8x4xf32> {train.input = "x"},
                   %w: tensor<3x4xf32> {train.param = "w", train.init = #train.init<kaiming_uniform>},
                   %b: tensor<3xf32> {train.param = "b", train.init = #train.init<zeros>})
    -> tensor<8x3xf32> {
  %0 = nn.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}
func.func @loss(%x: tensor<8x4xf32> {train.input = "x"},
                %w: tensor<3x4xf32> {train.param = "w", train.init = #train.init<kaiming_uniform>},
                %b: tensor<3xf32> {train.param = "b", train.init = #train.init<zeros>},
                %t: tensor<8x3xf32> {train.input = "targets"},
                %weights: tensor<8xf32> {train.input = "weights"})
    -> (tensor<f32> {train.output = "loss"}) {
  %0 = nn.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %1 = nn.mse_loss %0, %t : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"},
                     %w: tensor<3x4xf32> {train.param = "w", train.init = #train.init<kaiming_uniform>},
                     %b: tensor<3xf32> {train.param = "b", train.init = #train.init<zeros>},
                     %t: tensor<8x3xf32> {train.input = "targets"},
                     %weights: tensor<8xf32> {train.input = "weights"})
    -> (tensor<f32> {train.output = "loss"}, tensor<3x4xf32> {train.grad_of = "w"},
        tensor<3xf32> {train.grad_of = "b"})
    attributes {train.gradient_of = @loss} {
  %0 = nn.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %1 = nn.mse_loss %0, %t : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  %dw = nn.neg %w : tensor<3x4xf32>
  %db = nn.neg %b : tensor<3xf32>
  return %1, %dw, %db : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>
}

//--- state.mlir

// Buffers become globals with their initialiser and are stored from the
// buffer results before the cut; the dropout seed becomes a counter that
// each step reads and advances. Evaluation uses batch normalisation in
// inference mode, drops dropout and does not touch the seed.

// STATE: train.global param @g : tensor<2xf32> = #train.init<ones>
// STATE-NEXT: train.global buffer @bn.mean : tensor<2xf32> = #train.init<zeros>
// STATE-NEXT: train.global counter @train.rng : tensor<i64>
// STATE-NEXT: train.global counter @train.step : tensor<i64>

// STATE-LABEL: func.func @train_step(
// STATE-SAME: %[[X:[^:]+]]: tensor<4x2xf32> {train.input = "x"}
// STATE: %[[G:.+]] = train.load @g
// STATE: %[[MEAN:.+]] = train.load @bn.mean
// STATE: %[[SEED:.+]] = train.load @train.rng : tensor<i64>
// STATE: %[[ONE:.+]] = arith.constant dense<1> : tensor<i64>
// STATE: %[[NEXTSEED:.+]] = arith.addi %[[SEED]], %[[ONE]]
// STATE: train.store %[[NEXTSEED]], @train.rng
// STATE: %[[DROP:.+]] = nn.dropout %[[X]], %[[SEED]]
// STATE: %[[Y:.+]], %[[NEWMEAN:.+]], %{{.+}} = nn.batch_norm %[[DROP]], %[[G]], %[[G]], %[[MEAN]], %[[G]] {training}
// STATE: train.store %[[NEWMEAN]], @bn.mean
// STATE: train.window_sum

// STATE-LABEL: func.func @eval_step(
// STATE-SAME: %[[EX:[^:]+]]: tensor<4x2xf32> {train.input = "x"})
// STATE-NOT: train.rng
// STATE-NOT: nn.dropout
// STATE: %[[EG:.+]] = train.load @g
// STATE: %[[EMEAN:.+]] = train.load @bn.mean
// STATE: %[[EY:.+]], %{{.+}}, %{{.+}} = nn.batch_norm %[[EX]], %[[EG]], %[[EG]], %[[EMEAN]], %[[EG]] :
// STATE: return %[[EY]]

func.func @forward(%x: tensor<4x2xf32> {train.input = "x"},
                   %g: tensor<2xf32> {train.param = "g", train.init = #train.init<ones>},
                   %m: tensor<2xf32> {train.buffer = "bn.mean", train.init = #train.init<zeros>},
                   %seed: tensor<i64> {train.rng})
    -> (tensor<2xf32> {train.buffer = "bn.mean"}, tensor<4x2xf32>) {
  %d = nn.dropout %x, %seed {ratio = 0.5} : tensor<4x2xf32>, tensor<i64> -> tensor<4x2xf32>
  %y, %mean, %var = nn.batch_norm %d, %g, %g, %m, %g {training} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
  return %mean, %y : tensor<2xf32>, tensor<4x2xf32>
}
func.func @loss_grad(%x: tensor<4x2xf32> {train.input = "x"},
                     %g: tensor<2xf32> {train.param = "g", train.init = #train.init<ones>},
                     %m: tensor<2xf32> {train.buffer = "bn.mean", train.init = #train.init<zeros>},
                     %seed: tensor<i64> {train.rng},
                     %weights: tensor<4xf32> {train.input = "weights"})
    -> (tensor<f32> {train.output = "loss"}, tensor<2xf32> {train.buffer = "bn.mean"},
        tensor<2xf32> {train.grad_of = "g"})
    attributes {train.gradient_of = @loss} {
  %d = nn.dropout %x, %seed {ratio = 0.5} : tensor<4x2xf32>, tensor<i64> -> tensor<4x2xf32>
  %y, %mean, %var = nn.batch_norm %d, %g, %g, %m, %g {training} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
  %l = nn.reduce_sum %y [] : tensor<4x2xf32> -> tensor<f32>
  return %l, %mean, %g : tensor<f32>, tensor<2xf32>, tensor<2xf32>
}

//--- inference.mlir

// Forward only: the globals of the parameters and buffers (no optimizer
// state, seed or step counter), and @eval_step returning every output that
// is not a buffer, in order, named by its train.output or by position. No
// gradient function is needed. Dropout is dropped, nn.attention's too.

// INFER: module attributes {train.manifest = {kind = "inference"}}
// INFER-NEXT: train.global param @g : tensor<2xf32> = #train.init<ones>
// INFER-NEXT: train.global buffer @bn.mean : tensor<2xf32> = #train.init<zeros>
// INFER-NOT: train.global
// INFER-LABEL: func.func @eval_step(
// INFER-SAME: %[[X:[^:]+]]: tensor<4x2xf32> {train.input = "x"})
// INFER-SAME: -> (tensor<4x2xf32> {train.output = "prediction"}, tensor<4x2xf32> {train.output = "scores"}, tensor<4x2xf32> {train.output = "output2"})
// INFER-NOT: nn.dropout
// INFER: %[[G:.+]] = train.load @g
// INFER: %[[MEAN:.+]] = train.load @bn.mean
// INFER: %[[A:.+]] = nn.attention %[[X]], %[[X]], %[[X]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
// INFER: %[[Y:.+]], %{{.+}}, %{{.+}} = nn.batch_norm %[[A]], %[[G]], %[[G]], %[[MEAN]], %[[G]] :
// INFER: %[[RELU:.+]] = nn.relu %[[Y]]
// INFER: return %[[Y]], %[[RELU]], %[[X]]
// INFER-NOT: func.func

func.func @forward(%x: tensor<4x2xf32> {train.input = "x"},
                   %g: tensor<2xf32> {train.param = "g", train.init = #train.init<ones>},
                   %m: tensor<2xf32> {train.buffer = "bn.mean", train.init = #train.init<zeros>},
                   %seed: tensor<i64> {train.rng})
    -> (tensor<4x2xf32>, tensor<2xf32> {train.buffer = "bn.mean"},
        tensor<4x2xf32> {train.output = "scores"}, tensor<4x2xf32>) {
  %d = nn.dropout %x, %seed {ratio = 0.5} : tensor<4x2xf32>, tensor<i64> -> tensor<4x2xf32>
  %a = nn.attention %d, %d, %d dropout(%seed : tensor<i64>) {dropout_ratio = 0.5 : f64} : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %y, %mean, %var = nn.batch_norm %a, %g, %g, %m, %g {training} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
  %n = nn.relu %y : tensor<4x2xf32>
  return %y, %mean, %n, %x : tensor<4x2xf32>, tensor<2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

//--- invalid.mlir

// expected-error @+1 {{no gradient of @loss; run cleave-attach-loss and cleave-autodiff first}}
module {
  func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}

// -----

func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<4xf32> {train.param = "w"}) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}
// expected-error @+1 {{parameter 'w' has no initializer (train.init)}}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<4xf32> {train.param = "w"}, %weights: tensor<8xf32> {train.input = "weights"}) -> (tensor<f32>, tensor<4xf32> {train.grad_of = "w"}) attributes {train.gradient_of = @loss} {
  %0 = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// A parameter named like the step counter.
func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}
// expected-error @+1 {{two pieces of state are named 'train.step'}}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<f32> {train.param = "train.step", train.init = #train.init<zeros>}, %weights: tensor<8xf32> {train.input = "weights"}) -> (tensor<f32>, tensor<f32> {train.grad_of = "train.step"}) attributes {train.gradient_of = @loss} {
  %0 = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<f32>
}

// -----

func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}
// expected-error @+1 {{@loss has no 'weights' input; run cleave-attach-loss}}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<4xf32> {train.param = "w", train.init = #train.init<zeros>}) -> (tensor<f32>, tensor<4xf32> {train.grad_of = "w"}) attributes {train.gradient_of = @loss} {
  %0 = nn.reduce_sum %w [] : tensor<4xf32> -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}
// expected-error @+1 {{@loss has no parameter}}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %weights: tensor<8xf32> {train.input = "weights"}) -> tensor<f32> attributes {train.gradient_of = @loss} {
  %0 = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}
// expected-error @+1 {{@loss_grad has control flow; cleave-build-train-step needs a single block}}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<4xf32> {train.param = "w", train.init = #train.init<zeros>}, %weights: tensor<8xf32> {train.input = "weights"}) -> (tensor<f32>, tensor<4xf32> {train.grad_of = "w"}) attributes {train.gradient_of = @loss} {
  cf.br ^bb1
^bb1:
  %0 = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{@forward returns no prediction}}
func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}, %m: tensor<4xf32> {train.buffer = "m"}) -> (tensor<4xf32> {train.buffer = "m"}) {
  return %m : tensor<4xf32>
}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<4xf32> {train.param = "w", train.init = #train.init<zeros>}, %weights: tensor<8xf32> {train.input = "weights"}) -> (tensor<f32>, tensor<4xf32> {train.grad_of = "w"}) attributes {train.gradient_of = @loss} {
  %0 = nn.reduce_sum %weights [] : tensor<8xf32> -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// An f64 prediction (and so f64 sample weights) beside f32 parameters: the
// window's normalisation would divide an f32 gradient by an f64 count.
func.func @forward(%x: tensor<8x4xf64> {train.input = "x"}) -> tensor<8x4xf64> {
  return %x : tensor<8x4xf64>
}
// expected-error @+1 {{input 'x' is 'f64' but the parameters are 'f32'; a training step has one float type (the prediction, the float inputs and the parameters must agree)}}
func.func @loss_grad(%x: tensor<8x4xf64> {train.input = "x"}, %w: tensor<1xf32> {train.param = "w", train.init = #train.init<ones>}, %weights: tensor<8xf64> {train.input = "weights"}) -> (tensor<f64>, tensor<1xf32> {train.grad_of = "w"}) attributes {train.gradient_of = @loss} {
  %0 = nn.reduce_sum %weights [] : tensor<8xf64> -> tensor<f64>
  return %0, %w : tensor<f64>, tensor<1xf32>
}

// -----

// The loss in another type than the parameters.
func.func @forward(%x: tensor<8x4xf32> {train.input = "x"}) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}
// expected-error @+1 {{the loss is 'f64' but the parameters are 'f32'; a training step has one float type}}
func.func @loss_grad(%x: tensor<8x4xf32> {train.input = "x"}, %w: tensor<1xf32> {train.param = "w", train.init = #train.init<ones>}, %weights: tensor<8xf32> {train.input = "weights"}) -> (tensor<f64>, tensor<1xf32> {train.grad_of = "w"}) attributes {train.gradient_of = @loss} {
  %l = arith.constant dense<0.0> : tensor<f64>
  return %l, %w : tensor<f64>, tensor<1xf32>
}

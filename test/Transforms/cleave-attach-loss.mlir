// RUN: split-file --leading-lines %s %t
// RUN: cleave-opt %t/cross-entropy.mlir --split-input-file --verify-diagnostics --cleave-attach-loss=micro-batch=8 | FileCheck %s --check-prefix=CE
// RUN: cleave-opt %t/mse.mlir --cleave-attach-loss=loss=mse | FileCheck %s --check-prefix=MSE
// RUN: cleave-opt %t/none.mlir --split-input-file --verify-diagnostics --cleave-attach-loss="loss=none function=model" | FileCheck %s --check-prefix=NONE
// RUN: cleave-opt %t/batch-norm.mlir --cleave-attach-loss=micro-batch=4 | FileCheck %s --check-prefix=BN
// RUN: cleave-opt %t/tokens.mlir --split-input-file --verify-diagnostics --cleave-attach-loss="micro-batch=4 ignore-index=-1" | FileCheck %s --check-prefix=TOK
// RUN: not cleave-opt %t/mse.mlir --cleave-attach-loss=loss=hinge 2>&1 | FileCheck %s --check-prefix=BAD-LOSS
// RUN: not cleave-opt %t/mse.mlir --cleave-attach-loss=micro-batch=-2 2>&1 | FileCheck %s --check-prefix=BAD-BATCH
// RUN: not cleave-opt %t/mse.mlir --cleave-attach-loss=function=nope 2>&1 | FileCheck %s --check-prefix=NO-FUNCTION

// BAD-LOSS: for the --loss option: Cannot find option named 'hinge'!
// BAD-BATCH: error: micro-batch must be >= 0 (0 keeps the model's batch), got -2
// NO-FUNCTION: error: no model function @nope

//--- cross-entropy.mlir

// The batch of every data input is specialised to 8 and every result type is
// inferred again. Unnamed data inputs are named after their position among
// the data inputs; parameters, buffers and the dropout seed are not data.
// @loss appends integer labels and per-sample weights, weights the
// per-sample cross-entropy and sums it; buffer updates follow the loss.

// CE-LABEL: func.func @forward(
// CE-SAME: %{{[^:]+}}: tensor<8x1x2x2xf32> {train.input = "image"}
// CE-SAME: %{{[^:]+}}: tensor<i64> {train.rng}
// CE-SAME: %{{[^:]+}}: tensor<8x3xf32> {train.input = "x1"}
// CE-SAME: -> (tensor<3xf32> {train.buffer = "m"}, tensor<8x3xf32>)
// CE: nn.flatten %{{.+}} : tensor<8x1x2x2xf32> -> tensor<8x4xf32>
// CE: nn.dropout {{.+}} -> tensor<8x4xf32>
// CE: nn.linear {{.+}} -> tensor<8x3xf32>

// CE-LABEL: func.func @loss(
// CE-SAME: %[[IMG:[^:]+]]: tensor<8x1x2x2xf32> {train.input = "image"},
// CE-SAME: %[[W:[^:]+]]: tensor<3x4xf32> {train.init = #train.init<zeros>, train.param = "w"},
// CE-SAME: %[[SEED:[^:]+]]: tensor<i64> {train.rng},
// CE-SAME: %[[EXTRA:[^:]+]]: tensor<8x3xf32> {train.input = "x1"},
// CE-SAME: %[[M:[^:]+]]: tensor<3xf32> {train.buffer = "m"},
// CE-SAME: %[[LABELS:[^:]+]]: tensor<8xi64> {train.input = "labels"},
// CE-SAME: %[[WEIGHTS:[^:]+]]: tensor<8xf32> {train.input = "weights", train.sample_weights})
// CE-SAME: -> (tensor<f32> {train.output = "loss"}, tensor<3xf32> {train.buffer = "m"})
// CE: %[[FLAT:.+]] = nn.flatten %[[IMG]]
// CE: %[[DROP:.+]] = nn.dropout %[[FLAT]], %[[SEED]]
// CE: %[[LIN:.+]] = nn.linear %[[DROP]], %[[W]]
// CE: %[[PRED:.+]] = nn.add %[[LIN]], %[[EXTRA]]
// CE: %[[CE:.+]] = nn.cross_entropy %[[PRED]], %[[LABELS]] {reduction = {{.+}}none{{.*}}} : tensor<8x3xf32>, tensor<8xi64> -> tensor<8xf32>
// CE: %[[WEIGHTED:.+]] = nn.mul %[[CE]], %[[WEIGHTS]] : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
// CE: %[[SUM:.+]] = nn.reduce_sum %[[WEIGHTED]] [] : tensor<8xf32> -> tensor<f32>
// CE: return %[[SUM]], %[[M]] : tensor<f32>, tensor<3xf32>
func.func @forward(%img: tensor<?x1x2x2xf32> {train.input = "image"},
                   %w: tensor<3x4xf32> {train.param = "w", train.init = #train.init<zeros>},
                   %seed: tensor<i64> {train.rng},
                   %extra: tensor<?x3xf32>,
                   %m: tensor<3xf32> {train.buffer = "m"})
    -> (tensor<3xf32> {train.buffer = "m"}, tensor<?x3xf32>) {
  %0 = nn.flatten %img : tensor<?x1x2x2xf32> -> tensor<?x4xf32>
  %1 = nn.dropout %0, %seed {ratio = 0.5} : tensor<?x4xf32>, tensor<i64> -> tensor<?x4xf32>
  %2 = nn.linear %1, %w : tensor<?x4xf32>, tensor<3x4xf32> -> tensor<?x3xf32>
  %3 = nn.add %2, %extra : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  return %m, %3 : tensor<3xf32>, tensor<?x3xf32>
}

// -----

// With one data input it is called "x". The weights take the prediction's
// element type.
// CE-LABEL: func.func @loss(
// CE-SAME: tensor<8x4xf64> {train.input = "x"}
// CE-SAME: tensor<8xi64> {train.input = "labels"}, %{{[^:]+}}: tensor<8xf64> {train.input = "weights", train.sample_weights})
// CE-SAME: -> (tensor<f64> {train.output = "loss"})
func.func @forward(%x: tensor<?x4xf64>, %w: tensor<3x4xf64> {train.param = "w"}) -> tensor<?x3xf64> {
  %0 = nn.linear %x, %w : tensor<?x4xf64>, tensor<3x4xf64> -> tensor<?x3xf64>
  return %0 : tensor<?x3xf64>
}

// -----

// expected-error @+1 {{no model function @forward}}
module {
  func.func @model(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

// expected-error @+1 {{@forward has control flow; cleave-attach-loss needs a single block}}
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<?x4xf32>
}

// -----

func.func @forward(%x: tensor<?x4xf32>, %c: i1) -> tensor<?x4xf32> {
  // expected-error @+1 {{'scf.if' op has regions; cleave-attach-loss needs straight-line code}}
  %0 = scf.if %c -> tensor<?x4xf32> {
    scf.yield %x : tensor<?x4xf32>
  } else {
    scf.yield %x : tensor<?x4xf32>
  }
  return %0 : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{@forward has no data input (a model without one can be compiled forward only, with --inference)}}
func.func @forward(%w: tensor<3x4xf32> {train.param = "w"}) -> tensor<3x4xf32> {
  return %w : tensor<3x4xf32>
}

// -----

// expected-error @+1 {{data input #0 must be a tensor with a batch dimension, got 'tensor<f32>'}}
func.func @forward(%x: tensor<f32>, %w: tensor<3x4xf32> {train.param = "w"}) -> tensor<3x4xf32> {
  return %w : tensor<3x4xf32>
}

// -----

// A model whose batch size is pinned by an op cannot be specialised.
func.func @forward(%x: tensor<?x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{cannot reshape [8, 4] (32 elements) into [2, 8] (16 elements)}}
  // expected-error @+1 {{'nn.reshape' op cannot be specialised to the new input shapes}}
  %0 = nn.reshape %x [2, 8] : tensor<?x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{the module already has a @loss function}}
module {
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
  func.func @loss() {
    return
  }
}

// -----

// expected-error @+1 {{@forward returns no prediction}}
func.func @forward(%x: tensor<?x4xf32>, %m: tensor<3xf32> {train.buffer = "m"}) -> (tensor<3xf32> {train.buffer = "m"}) {
  return %m : tensor<3xf32>
}

// -----

// The batch (dynamic in an export) is not the prediction's first dimension.
// expected-error @+1 {{the prediction 'tensor<3x?xf32>' does not start with the batch dimension (its dynamic dimension is elsewhere); the loss is per sample along the prediction's first dimension (put the batch first, for example by transposing the model's output)}}
func.func @forward(%x: tensor<?x3xf32>) -> tensor<3x?xf32> {
  %0 = nn.transpose %x [1, 0] : tensor<?x3xf32> -> tensor<3x?xf32>
  return %0 : tensor<3x?xf32>
}

// -----

// A static model whose prediction's first dimension is not the batch's size.
// expected-error @+1 {{the prediction 'tensor<3x8xf32>' does not start with the batch dimension of input 'x' 'tensor<8x3xf32>'; the loss is per sample along the prediction's first dimension}}
func.func @forward(%x: tensor<8x3xf32>) -> tensor<3x8xf32> {
  %0 = nn.transpose %x [1, 0] : tensor<8x3xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// expected-error @+1 {{the prediction must be a float tensor with a batch dimension, got 'tensor<8xi64>'}}
func.func @forward(%x: tensor<?x4xf32>, %l: tensor<8xi64>) -> tensor<8xi64> {
  return %l : tensor<8xi64>
}

// -----

// expected-error @+1 {{the prediction is 'tensor<8x3xf16>'; a loss is computed on f32 or f64 predictions (export the model with a float32 output)}}
func.func @forward(%x: tensor<?x4xf32>, %h: tensor<8x3xf16>) -> tensor<8x3xf16> {
  return %h : tensor<8x3xf16>
}

// -----

// expected-error @+1 {{cross-entropy needs [batch, classes] logits (or [batch, tokens, classes] for a loss per token), the prediction is 'tensor<8xf32>'}}
func.func @forward(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

//--- tokens.mlir

// Logits [B, T, V]: a loss per token. Labels and weights are [B, T]; the
// labels carry the ignore index; tokens are folded into rows for the
// cross-entropy and back.
// TOK-LABEL: func.func @loss(
// TOK-SAME: %[[IDS:[^:]+]]: tensor<4x6xi64> {train.input = "ids"}
// TOK-SAME: %[[LABELS:[^:]+]]: tensor<4x6xi64> {train.ignore_index = -1 : i64, train.input = "labels"}
// TOK-SAME: %[[WEIGHTS:[^:]+]]: tensor<4x6xf32> {train.input = "weights", train.sample_weights})
// TOK: %[[LOGITS:.+]] = nn.linear
// TOK: %[[ROWS:.+]] = nn.reshape %[[LOGITS]] [24, 5] : tensor<4x6x5xf32> -> tensor<24x5xf32>
// TOK: %[[FLAT:.+]] = nn.reshape %[[LABELS]] [24] : tensor<4x6xi64> -> tensor<24xi64>
// TOK: %[[TOKLOSS:.+]] = nn.cross_entropy %[[ROWS]], %[[FLAT]] {{.+}} : tensor<24x5xf32>, tensor<24xi64> -> tensor<24xf32>
// TOK: %[[PER:.+]] = nn.reshape %[[TOKLOSS]] [4, 6] : tensor<24xf32> -> tensor<4x6xf32>
// TOK: %[[W:.+]] = nn.mul %[[PER]], %[[WEIGHTS]] : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
// TOK: nn.reduce_sum %[[W]] [] : tensor<4x6xf32> -> tensor<f32>
func.func @forward(%ids: tensor<?x6xi64> {train.input = "ids"},
                   %e: tensor<5x3xf32> {train.param = "embed"},
                   %w: tensor<5x3xf32> {train.param = "head"}) -> tensor<?x6x5xf32> {
  %0 = nn.embedding %ids, %e : tensor<?x6xi64>, tensor<5x3xf32> -> tensor<?x6x3xf32>
  %1 = nn.linear %0, %w : tensor<?x6x3xf32>, tensor<5x3xf32> -> tensor<?x6x5xf32>
  return %1 : tensor<?x6x5xf32>
}

// -----

// Batch statistics weigh samples, a loss per token weighs tokens.
func.func @forward(%x: tensor<?x2x6xf32>, %g: tensor<2xf32> {train.param = "g"},
                   %b: tensor<2xf32> {train.param = "b"},
                   %m: tensor<2xf32> {train.buffer = "m"},
                   %v: tensor<2xf32> {train.buffer = "v"}) -> tensor<?x2x6xf32> {
  // expected-error @+1 {{batch normalisation needs one weight per sample, but a loss per token weighs tokens}}
  %y, %nm, %nv = nn.batch_norm %x, %g, %b, %m, %v {training} : tensor<?x2x6xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<?x2x6xf32>, tensor<2xf32>, tensor<2xf32>
  return %y : tensor<?x2x6xf32>
}

//--- batch-norm.mlir

// Training-mode batch norm in @loss sees the sample weights, so padding rows
// of a short micro-batch do not enter its statistics; @forward (the eval
// graph's source) and inference-mode batch norm are left alone.
// BN-LABEL: func.func @forward(
// BN: nn.batch_norm %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {training}
// BN-LABEL: func.func @loss(
// BN-SAME: %[[W:[^:]+]]: tensor<4xf32> {train.input = "weights", train.sample_weights}
// BN: nn.batch_norm %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} sample_weights %[[W]] {training}
// BN: nn.batch_norm %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} :
func.func @forward(%x: tensor<?x3xf32> {train.input = "x"},
                   %g: tensor<3xf32> {train.param = "g"},
                   %m: tensor<3xf32> {train.buffer = "m"}) -> (tensor<?x3xf32>, tensor<3xf32> {train.buffer = "m"}) {
  %y, %m2, %v2 = nn.batch_norm %x, %g, %g, %m, %m {training} : tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>
  %z, %m3, %v3 = nn.batch_norm %y, %g, %g, %m, %m : tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>
  return %z, %m2 : tensor<?x3xf32>, tensor<3xf32>
}

//--- mse.mlir

// Without micro-batch the model keeps its batch dimension; the targets have
// the prediction's type.
// MSE-LABEL: func.func @forward(%{{[^:]+}}: tensor<?x4xf32> {train.input = "x"}
// MSE-LABEL: func.func @loss(
// MSE-SAME: %[[X:[^:]+]]: tensor<?x4xf32> {train.input = "x"}, %[[W:[^:]+]]: tensor<3x4xf32> {train.param = "w"},
// MSE-SAME: %[[T:[^:]+]]: tensor<?x3xf32> {train.input = "targets"}, %[[WEIGHTS:[^:]+]]: tensor<?xf32> {train.input = "weights", train.sample_weights})
// MSE-SAME: -> (tensor<f32> {train.output = "loss"})
// MSE: %[[Y:.+]] = nn.linear %[[X]], %[[W]]
// MSE: %[[L:.+]] = nn.mse_loss %[[Y]], %[[T]] {reduction = {{.+}}none{{.*}}} : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?xf32>
// MSE: %[[WL:.+]] = nn.mul %[[L]], %[[WEIGHTS]] : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
// MSE: %[[S:.+]] = nn.reduce_sum %[[WL]] [] : tensor<?xf32> -> tensor<f32>
// MSE: return %[[S]] : tensor<f32>
func.func @forward(%x: tensor<?x4xf32>, %w: tensor<3x4xf32> {train.param = "w"}) -> tensor<?x3xf32> {
  %0 = nn.linear %x, %w : tensor<?x4xf32>, tensor<3x4xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

//--- none.mlir

// With loss=none the prediction already is the per-sample loss: no labels or
// targets, only the weights.
// NONE-LABEL: func.func @loss(
// NONE-SAME: %[[X:[^:]+]]: tensor<?x4xf32> {train.input = "x"}, %[[WEIGHTS:[^:]+]]: tensor<?xf32> {train.input = "weights", train.sample_weights})
// NONE-NOT: nn.cross_entropy
// NONE-NOT: nn.mse_loss
// NONE: %[[L:.+]] = nn.reduce_mean %[[X]] [1]
// NONE: %[[WL:.+]] = nn.mul %[[L]], %[[WEIGHTS]]
// NONE: %[[S:.+]] = nn.reduce_sum %[[WL]] []
// NONE: return %[[S]]
func.func @model(%x: tensor<?x4xf32>) -> tensor<?xf32> {
  %0 = nn.reduce_mean %x [1] : tensor<?x4xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error @+1 {{with loss=none the prediction must be the per-sample loss [batch], got 'tensor<?x4xf32>'}}
func.func @model(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}

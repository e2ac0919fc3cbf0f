// `cleave-opt --import-onnx` feeds the imported module to the usual pass
// machinery: pass flags work, and what the importer marks (parameters with
// their exported values, buffers and their updates, the dropout seed) is what
// the training pipeline builds state from.
//
// RUN: %python %S/Inputs/make_model.py batchnorm_train %t.bn.onnx
// RUN: cleave-opt --import-onnx %t.bn.onnx \
// RUN:   --cleave-train-pipeline="micro-batch=2 loss=mse accumulate=3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BN
// RUN: %python %S/Inputs/make_model.py mlp_dropout %t.dropout.onnx
// RUN: cleave-opt --import-onnx=%t.dropout.onnx \
// RUN:   --cleave-train-pipeline="micro-batch=2 accumulate=3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DROPOUT
// RUN: not cleave-opt --import-onnx %t.bn.onnx %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BOTH
// RUN: cleave-opt --import-onnx - < %t.bn.onnx | FileCheck %s --check-prefix=STDIN

// The split pass reports batch statistics, naming the ONNX node.
// BN:         warning: batch normalisation in training mode uses the statistics of each micro-batch
// BN:         module attributes {train.manifest = {accumulate = 3 : i64, reduce = "none", warnings = [{loc = "loc(\22y\22(
// BN:         train.global param @bn.weight : tensor<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
// BN:         train.global param @bn.bias : tensor<3xf32> = dense<[0.000000e+00, 5.000000e-01, 1.000000e+00]>
// BN:         train.global buffer @bn.running_mean : tensor<3xf32> = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01]>
// BN:         train.global buffer @bn.running_var : tensor<3xf32> = dense<[1.000000e+00, 1.500000e+00, 2.000000e+00]>
// BN-LABEL:   func.func @micro_step(
// BN-SAME:      tensor<2x3x4x4xf32> {train.input = "x"}
// BN:           %{{.+}}, %[[MEAN:.+]], %[[VAR:.+]] = nn.batch_norm {{.+}} {training}
// BN-DAG:       train.store %[[MEAN]], @bn.running_mean
// BN-DAG:       train.store %[[VAR]], @bn.running_var
// BN-LABEL:   func.func @apply_step(
// BN-LABEL:   func.func @eval_step(
// BN-NOT:       {training}
// BN:           nn.batch_norm
// BN-NOT:       {training}

// The dropout seed is a counter the training step advances; evaluation has
// no dropout.
// DROPOUT:         warning: dropout draws a new mask for each micro-batch
// DROPOUT:         train.global counter @train.rng : tensor<i64>
// DROPOUT-LABEL:   func.func @micro_step(
// DROPOUT:           %[[SEED:.+]] = train.load @train.rng : tensor<i64>
// DROPOUT:           nn.dropout %{{.+}}, %[[SEED]] {ratio = 5.000000e-01 : f64}
// DROPOUT-LABEL:   func.func @apply_step(
// DROPOUT-LABEL:   func.func @eval_step(
// DROPOUT-NOT:       nn.dropout
// DROPOUT:           return

// BOTH: error: --import-onnx and the input file '{{.*}}pipeline.mlir' are exclusive

// `-` reads the model from standard input.
// STDIN: func.func @forward(%{{[a-z0-9_]+}}: tensor<?x3x4x4xf32> {train.input = "x"}

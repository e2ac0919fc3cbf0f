// BatchNormalization, LayerNormalization and the opset-13 layer-norm chain,
// InstanceNormalization, ReduceMean, Dropout.
//
// RUN: %python %S/Inputs/make_model.py batchnorm_eval %t.bn_eval.onnx
// RUN: cleave-opt --import-onnx %t.bn_eval.onnx | FileCheck %s --check-prefix=BN-EVAL
// RUN: %python %S/Inputs/make_model.py batchnorm_train %t.bn_train.onnx
// RUN: cleave-opt --import-onnx %t.bn_train.onnx | FileCheck %s --check-prefix=BN-TRAIN
// RUN: %python %S/Inputs/make_model.py layernorm %t.ln.onnx
// RUN: cleave-opt --import-onnx %t.ln.onnx | FileCheck %s --check-prefix=LN
// RUN: %python %S/Inputs/make_model.py layernorm_chain %t.chain.onnx
// RUN: cleave-opt --import-onnx %t.chain.onnx | FileCheck %s --check-prefix=CHAIN
// RUN: %python %S/Inputs/make_model.py layernorm_chain_mismatch %t.mismatch.onnx
// RUN: cleave-opt --import-onnx %t.mismatch.onnx | FileCheck %s --check-prefix=MISMATCH
// RUN: %python %S/Inputs/make_model.py reduce_mean %t.mean.onnx
// RUN: cleave-opt --import-onnx %t.mean.onnx | FileCheck %s --check-prefix=REDUCE
// RUN: %python %S/Inputs/make_model.py reductions %t.reductions.onnx
// RUN: cleave-opt --import-onnx %t.reductions.onnx | FileCheck %s --check-prefix=REDUCTIONS
// RUN: %python %S/Inputs/make_model.py dropout %t.dropout.onnx
// RUN: cleave-opt --import-onnx %t.dropout.onnx | FileCheck %s --check-prefix=DROPOUT
// RUN: %python %S/Inputs/make_model.py dropout_mask %t.mask.onnx
// RUN: cleave-opt --import-onnx %t.mask.onnx | FileCheck %s --check-prefix=MASK
// RUN: %python %S/Inputs/make_model.py instance_norm %t.instance.onnx
// RUN: cleave-opt --import-onnx %t.instance.onnx | FileCheck %s --check-prefix=INSTANCE

// Inference mode: the running statistics are buffers that normalise and
// never change, so they are not results.
// BN-EVAL-LABEL: func.func @forward(
// BN-EVAL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4x4xf32> {train.input = "x"},
// BN-EVAL-SAME:    %[[G:[a-z0-9_]+]]: tensor<3xf32> {train.init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>, train.param = "bn.weight"},
// BN-EVAL-SAME:    %[[B:[a-z0-9_]+]]: tensor<3xf32> {train.init = dense<[0.000000e+00, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>, train.param = "bn.bias"},
// BN-EVAL-SAME:    %[[M:[a-z0-9_]+]]: tensor<3xf32> {train.buffer = "bn.running_mean", train.init = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01]> : tensor<3xf32>},
// BN-EVAL-SAME:    %[[V:[a-z0-9_]+]]: tensor<3xf32> {train.buffer = "bn.running_var", train.init = dense<[1.000000e+00, 1.500000e+00, 2.000000e+00]> : tensor<3xf32>})
// BN-EVAL-SAME:    -> tensor<?x3x4x4xf32> {
// BN-EVAL-NEXT:    %[[Y:.+]], %{{.+}}, %{{.+}} = nn.batch_norm %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] {epsilon = 1.000000e-03 : f64} :
// BN-EVAL-NEXT:    return %[[Y]] : tensor<?x3x4x4xf32>

// Training mode (opset 15): batch statistics, and the new running
// statistics are results marked with their buffer's name. ONNX's momentum
// 0.9 is nn's (PyTorch's) 0.1, the default.
// BN-TRAIN-LABEL: func.func @forward(
// BN-TRAIN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4x4xf32> {train.input = "x"},
// BN-TRAIN-SAME:    %[[G:[a-z0-9_]+]]: tensor<3xf32> {{.+}}train.param = "bn.weight"},
// BN-TRAIN-SAME:    %[[B:[a-z0-9_]+]]: tensor<3xf32> {{.+}}train.param = "bn.bias"},
// BN-TRAIN-SAME:    %[[M:[a-z0-9_]+]]: tensor<3xf32> {train.buffer = "bn.running_mean", train.init = {{[^}]+}}},
// BN-TRAIN-SAME:    %[[V:[a-z0-9_]+]]: tensor<3xf32> {train.buffer = "bn.running_var", train.init = {{[^}]+}}})
// BN-TRAIN-SAME:    -> (tensor<?x3x4x4xf32>, tensor<3xf32> {train.buffer = "bn.running_mean"}, tensor<3xf32> {train.buffer = "bn.running_var"})
// BN-TRAIN-NEXT:    %[[Y:.+]], %[[NM:.+]], %[[NV:.+]] = nn.batch_norm %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] {training} :
// BN-TRAIN-NEXT:    return %[[Y]], %[[NM]], %[[NV]]

// LN-LABEL: func.func @forward(
// LN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// LN-SAME:    %[[G:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "ln.weight"},
// LN-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "ln.bias"})
// LN-NEXT:    nn.layer_norm %[[X]], %[[G]] bias %[[B]] : tensor<?x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x3x4xf32>

// The chain torch.onnx emits below opset 17 is the same single op.
// CHAIN-LABEL: func.func @forward(
// CHAIN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// CHAIN-SAME:    %[[G:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "ln.weight"},
// CHAIN-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "ln.bias"})
// CHAIN-NEXT:    %[[Y:.+]] = nn.layer_norm %[[X]], %[[G]] bias %[[B]] : tensor<?x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x3x4xf32>
// CHAIN-NEXT:    return %[[Y]]

// Cubing instead of squaring: no layer norm, each node imported on its own.
// MISMATCH-LABEL: func.func @forward(
// MISMATCH-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// MISMATCH-SAME:    %[[G:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "ln.weight"},
// MISMATCH-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "ln.bias"})
// MISMATCH-NOT:     nn.layer_norm
// MISMATCH:         %[[EPS:.+]] = arith.constant dense<9.99999974E-6> : tensor<f32>
// MISMATCH:         %[[MEAN:.+]] = nn.reduce_mean %[[X]] [-1] {keepdims} : tensor<?x3x4xf32> -> tensor<?x3x1xf32>
// MISMATCH:         %[[C:.+]] = nn.sub %[[X]], %[[MEAN]]
// MISMATCH:         %[[CUBE:.+]] = nn.pow %[[C]], 3.000000e+00
// MISMATCH:         %[[VAR:.+]] = nn.reduce_mean %[[CUBE]] [-1] {keepdims}
// MISMATCH:         %[[SHIFT:.+]] = nn.add %[[VAR]], %[[EPS]]
// MISMATCH:         %[[STD:.+]] = nn.sqrt %[[SHIFT]]
// MISMATCH:         %[[N:.+]] = nn.div %[[C]], %[[STD]]
// MISMATCH:         %[[S:.+]] = nn.mul %[[N]], %[[G]]
// MISMATCH:         %[[Y:.+]] = nn.add %[[S]], %[[B]]
// MISMATCH:         return %[[Y]]

// REDUCE-LABEL: func.func @forward(
// REDUCE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"})
// REDUCE-NEXT:    nn.reduce_mean %[[X]] [1] : tensor<?x3x4xf32> -> tensor<?x4xf32>

// Two Dropout nodes, in training and in inference form: both are dropout
// (the compiler removes them from the evaluation graph), seeded by one
// train.rng argument, on distinct streams.
// DROPOUT-LABEL: func.func @forward(
// DROPOUT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"},
// DROPOUT-SAME:    %[[SEED:[a-z0-9_]+]]: tensor<i64> {train.rng})
// DROPOUT-NEXT:    %[[D:.+]] = nn.dropout %[[X]], %[[SEED]] {ratio = 2.500000e-01 : f64} : tensor<?x4xf32>, tensor<i64> -> tensor<?x4xf32>
// DROPOUT-NEXT:    %[[Y:.+]] = nn.dropout %[[D]], %[[SEED]] {ratio = 5.000000e-01 : f64, stream = 1 : i64} : tensor<?x4xf32>, tensor<i64> -> tensor<?x4xf32>
// DROPOUT-NEXT:    return %[[Y]]

// Dropout's mask: the same stream's dropout of ones, nonzero where the
// element is kept (all ones in evaluation, where dropout is the identity).
// MASK-LABEL: func.func @forward(
// MASK-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"},
// MASK-SAME:    %[[SEED:[a-z0-9_]+]]: tensor<i64> {train.rng})
// MASK-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// MASK-DAG:     %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// MASK:         %[[Y:.+]] = nn.dropout %[[X]], %[[SEED]] {ratio = 5.000000e-01 : f64}
// MASK-NEXT:    %[[ONES:.+]] = nn.broadcast_to %[[ONE]] [-1, 4] batch_of %[[X]]
// MASK-NEXT:    %[[KEPT:.+]] = nn.dropout %[[ONES]], %[[SEED]] {ratio = 5.000000e-01 : f64}
// MASK-NEXT:    %[[MASK:.+]] = nn.compare <ne>, %[[KEPT]], %[[ZERO]] {dtype = f32}
// MASK-NEXT:    return %[[Y]], %[[MASK]]

// REDUCTIONS-LABEL: func.func @forward(
// REDUCTIONS-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"})
// REDUCTIONS-NEXT:    %[[S:.+]] = nn.reduce_sum %[[X]] [1] {keepdims} : tensor<?x3x4xf32> -> tensor<?x1x4xf32>
// REDUCTIONS-NEXT:    %[[M:.+]] = nn.reduce_max %[[S]] [-1] : tensor<?x1x4xf32> -> tensor<?x1xf32>
// REDUCTIONS-NEXT:    return %[[M]]

// InstanceNormalization: layer norm over the spatial dimensions (from 2 on),
// then the per-channel scale and bias.
// INSTANCE-LABEL: func.func @forward(
// INSTANCE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4x5xf32> {train.input = "x"},
// INSTANCE-SAME:    %[[G:[a-z0-9_]+]]: tensor<3xf32> {{.+}}train.param = "scale"},
// INSTANCE-SAME:    %[[B:[a-z0-9_]+]]: tensor<3xf32> {{.+}}train.param = "bias"})
// INSTANCE-NEXT:    %[[N:.+]] = nn.layer_norm %[[X]] {axis = 2 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x3x4x5xf32> -> tensor<?x3x4x5xf32>
// INSTANCE-NEXT:    %[[GC:.+]] = nn.reshape %[[G]] [3, 1, 1] : tensor<3xf32> -> tensor<3x1x1xf32>
// INSTANCE-NEXT:    %[[S:.+]] = nn.mul %[[N]], %[[GC]] : tensor<?x3x4x5xf32>, tensor<3x1x1xf32> -> tensor<?x3x4x5xf32>
// INSTANCE-NEXT:    %[[BC:.+]] = nn.reshape %[[B]] [3, 1, 1] : tensor<3xf32> -> tensor<3x1x1xf32>
// INSTANCE-NEXT:    %[[Y:.+]] = nn.add %[[S]], %[[BC]] : tensor<?x3x4x5xf32>, tensor<3x1x1xf32> -> tensor<?x3x4x5xf32>
// INSTANCE-NEXT:    return %[[Y]]

// A CNN with BatchNorm2d, exported by torch.onnx in both modes.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_cnn_bn_train %t.train.onnx
// RUN: cleave-opt --import-onnx %t.train.onnx | FileCheck %s --check-prefix=TRAIN
// RUN: %python %S/Inputs/make_model.py torch_cnn_bn_eval %t.eval.onnx
// RUN: cleave-opt --import-onnx %t.eval.onnx | FileCheck %s --check-prefix=EVAL

// training=TrainingMode.TRAINING: BatchNormalization with the statistics
// outputs (opset 13). Scale and bias are parameters; the running statistics
// are buffers whose new values are results marked with their names.
// TRAIN-LABEL: func.func @forward(
// TRAIN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x28x28xf32> {train.input = "image"},
// TRAIN-SAME:    %[[W1:[a-z0-9_]+]]: tensor<6x1x5x5xf32> {{[^}]+}}train.param = "conv1.weight"},
// TRAIN-SAME:    %[[B1:[a-z0-9_]+]]: tensor<6xf32> {{[^}]+}}train.param = "conv1.bias"},
// TRAIN-SAME:    %[[G:[a-z0-9_]+]]: tensor<6xf32> {{[^}]+}}train.param = "bn.weight"},
// TRAIN-SAME:    %[[B:[a-z0-9_]+]]: tensor<6xf32> {{[^}]+}}train.param = "bn.bias"},
// TRAIN-SAME:    %[[M:[a-z0-9_]+]]: tensor<6xf32> {train.buffer = "bn.running_mean", train.init = dense<{{[^}]+}}> : tensor<6xf32>},
// TRAIN-SAME:    %[[V:[a-z0-9_]+]]: tensor<6xf32> {train.buffer = "bn.running_var", train.init = dense<{{[^}]+}}> : tensor<6xf32>},
// TRAIN-SAME:    -> (tensor<?x10xf32>, tensor<6xf32> {train.buffer = "bn.running_mean"}, tensor<6xf32> {train.buffer = "bn.running_var"})
// TRAIN:         %[[C1:.+]] = nn.conv2d %[[X]], %[[W1]], %[[B1]]
// TRAIN-NEXT:    %[[Y:.+]], %[[NM:.+]], %[[NV:.+]] = nn.batch_norm %[[C1]], %[[G]], %[[B]], %[[M]], %[[V]] {training} : tensor<?x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<?x6x28x28xf32>, tensor<6xf32>, tensor<6xf32>
// TRAIN-NEXT:    nn.relu %[[Y]]
// TRAIN:         %[[OUT:.+]] = nn.linear
// TRAIN-NEXT:    return %[[OUT]], %[[NM]], %[[NV]]

// The inference export folds BatchNorm into the convolution before the
// importer sees it: the folded weights are the parameters.
// EVAL-LABEL: func.func @forward(
// EVAL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x28x28xf32> {train.input = "image"},
// EVAL-SAME:    %[[W1:[a-z0-9_]+]]: tensor<6x1x5x5xf32> {{[^}]+}}train.param = "onnx::Conv_{{[0-9]+}}"},
// EVAL-SAME:    %[[B1:[a-z0-9_]+]]: tensor<6xf32> {{[^}]+}}train.param = "onnx::Conv_{{[0-9]+}}"},
// EVAL-SAME:    -> tensor<?x10xf32>
// EVAL-NOT:     nn.batch_norm
// EVAL:         nn.conv2d %[[X]], %[[W1]], %[[B1]] {padding = array<i64: 2, 2, 2, 2>}
// EVAL-NOT:     nn.batch_norm

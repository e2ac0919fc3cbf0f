// torchvision classifiers (issue 10), exported by torch.onnx for training at
// opset 14 with a dynamic batch, compile to the split step. mobilenet_v3_small
// also goes through the CPU back end to an artifact (which fails on any op it
// cannot lower): its ops are a superset of mobilenet_v2's, and a full compile
// takes minutes, so the others stop at the split.
//
// REQUIRES: torchvision
// RUN: %python %S/Inputs/make_model.py torchvision_mobilenet_v2 %t.mv2.onnx
// RUN: cleave-compile %t.mv2.onnx --micro-batch=4 --compile-to=split | FileCheck %s --check-prefix=MV2
// RUN: %python %S/Inputs/make_model.py torchvision_mobilenet_v3_small %t.mv3.onnx
// RUN: cleave-compile %t.mv3.onnx --micro-batch=4 --compile-to=split | FileCheck %s --check-prefix=MV3
// RUN: cleave-compile %t.mv3.onnx --micro-batch=4 -o %t.mv3.cleave
// RUN: %python %S/Inputs/make_model.py torchvision_squeezenet1_1 %t.sq.onnx
// RUN: cleave-compile %t.sq.onnx --micro-batch=4 --compile-to=split | FileCheck %s --check-prefix=SQ
// shufflenet_v2's channel split slices a batched activation, which nn.slice
// (static sizes) cannot express yet.
// RUN: %python %S/Inputs/make_model.py torchvision_shufflenet_v2 %t.shuffle.onnx
// RUN: not cleave-compile %t.shuffle.onnx --micro-batch=4 --compile-to=split 2>&1 | FileCheck %s --check-prefix=SHUFFLE

// ReLU6 is Clip(0, 6): one nn.clamp forward, one nn.clamp_grad backward.
// MV2-LABEL: func.func @micro_step(
// MV2-SAME:    tensor<4x3x32x32xf32> {train.input = "image"}
// MV2:         nn.clamp %{{.+}}, 0.000000e+00, 6.000000e+00 : tensor<4x32x16x16xf32>
// MV2:         nn.clamp_grad %{{.+}}, %{{.+}}, 0.000000e+00, 6.000000e+00 : tensor<4x32x16x16xf32>
// MV2-LABEL: func.func @apply_step(
// MV2-LABEL: func.func @eval_step(
// MV2:         nn.clamp

// HardSwish and HardSigmoid (the squeeze-excitation gates) are clamps to
// [0, 1] of an affine function.
// MV3-LABEL: func.func @micro_step(
// MV3:         nn.clamp %{{.+}}, 0.000000e+00, 1.000000e+00 : tensor<4x16x16x16xf32>
// MV3:         nn.clamp_grad %{{.+}}, %{{.+}}, 0.000000e+00, 1.000000e+00
// MV3-LABEL: func.func @apply_step(

// Fire modules concatenate their expand branches; pooling uses ceil_mode.
// SQ-LABEL: func.func @micro_step(
// SQ:         nn.max_pool2d {{.*}}ceil_mode
// SQ:         nn.concat
// SQ-LABEL: func.func @apply_step(

// SHUFFLE: error: Slice of 'tensor<?x{{[0-9]+}}x{{[0-9]+}}x{{[0-9]+}}xf32>' is not supported: nn.slice needs static sizes for every dimension, and this tensor's size depends on the batch

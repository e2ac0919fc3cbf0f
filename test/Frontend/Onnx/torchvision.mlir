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
// shufflenet_v2 splits channels of batched activations with Slice and
// shuffles them with reshapes computed from the batch size; the small
// VisionTransformer expands its class token over the batch.
// RUN: %python %S/Inputs/make_model.py torchvision_shufflenet_v2 %t.shuffle.onnx
// RUN: cleave-compile %t.shuffle.onnx --micro-batch=4 --compile-to=split | FileCheck %s --check-prefix=SHUFFLE
// RUN: %python %S/Inputs/make_model.py torchvision_vit %t.vit.onnx
// RUN: cleave-compile %t.vit.onnx --micro-batch=4 --compile-to=split | FileCheck %s --check-prefix=VIT

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

// The channel shuffle ([B, 2, C/2, H, W], transposed, flattened back, the
// batch entry of the reshapes computed from Shape), then the channel split:
// two halves of the channels, the batch whole.
// SHUFFLE-LABEL: func.func @micro_step(
// SHUFFLE:         nn.reshape %{{.+}} [-1, 2, 24, 4, 4] : tensor<4x48x4x4xf32> -> tensor<4x2x24x4x4xf32>
// SHUFFLE-NEXT:    nn.transpose %{{.+}} [0, 2, 1, 3, 4] : tensor<4x2x24x4x4xf32> -> tensor<4x24x2x4x4xf32>
// SHUFFLE-NEXT:    nn.reshape %{{.+}} [-1, 48, 4, 4] : tensor<4x24x2x4x4xf32> -> tensor<4x48x4x4xf32>
// SHUFFLE-NEXT:    nn.slice %{{.+}} starts [0, 0, 0, 0] sizes [4, 24, 4, 4] strides [1, 1, 1, 1] : tensor<4x48x4x4xf32> -> tensor<4x24x4x4xf32>
// SHUFFLE-NEXT:    nn.slice %{{.+}} starts [0, 24, 0, 0] sizes [4, 24, 4, 4] strides [1, 1, 1, 1] : tensor<4x48x4x4xf32> -> tensor<4x24x4x4xf32>
// SHUFFLE-LABEL: func.func @apply_step(

// The class token broadcast to the micro-batch, in front of the patches;
// its gradient sums over the batch.
// VIT-LABEL: func.func @micro_step(
// VIT:         nn.broadcast_to %{{.+}} [4, 1, 16] : tensor<1x1x16xf32> -> tensor<4x1x16xf32>
// VIT-NEXT:    nn.concat %{{.+}}, %{{.+}} {axis = 1 : i64} : tensor<4x1x16xf32>, tensor<4x16x16xf32> -> tensor<4x17x16xf32>
// VIT:         nn.reduce_sum %{{.+}} [0] {keepdims} : tensor<4x1x16xf32> -> tensor<1x1x16xf32>
// VIT-LABEL: func.func @apply_step(

// One SGD step of small torch models through torch.onnx, cleave-compile and
// cleave-run, against PyTorch's own step (Inputs/torch_step.py): the loss
// and the update of every parameter agree to 1e-4 of the largest update.
// The upsampler covers ConvTranspose and Resize (nearest; bilinear with and
// without align_corners), the norms model GroupNorm (InstanceNormalization
// of a reshaped tensor), InstanceNorm2d and a global max pool, forward and
// backward. The volumes model covers the 3-D convolution, pools (max with
// dilation and ceil_mode, average with and without the padding counted) and
// transposed convolution, each composed of 2-D ops. The GroupNormalization cases (a node torch 1.13 cannot export,
// written by hand) check the opset-18 form (scale and bias per group) and
// the opset-21 form (per channel) against F.group_norm.
//
// REQUIRES: torch, cleave-runtime
// RUN: %python %S/Inputs/torch_step.py upsampler %t.upsampler | FileCheck %s --check-prefix=UP
// RUN: %python %S/Inputs/torch_step.py norms %t.norms | FileCheck %s --check-prefix=NORMS
// RUN: %python %S/Inputs/torch_step.py volumes %t.volumes | FileCheck %s --check-prefix=VOL
// The GroupNormalization node (opsets 18 and 21), written by hand.
// RUN: %python %S/Inputs/torch_step.py groupnorm18 %t.gn18 | FileCheck %s --check-prefix=GN
// RUN: %python %S/Inputs/torch_step.py groupnorm21 %t.gn21 | FileCheck %s --check-prefix=GN

// UP:      PASS loss
// UP-NEXT: PASS up.weight
// UP-NEXT: PASS up.bias
// UP-NEXT: PASS fc.weight
// UP-NEXT: PASS fc.bias
// UP-NOT:  FAIL

// NORMS:      PASS loss
// NORMS-NEXT: PASS conv.weight
// NORMS-NEXT: PASS conv.bias
// NORMS-NEXT: PASS gn.weight
// NORMS-NEXT: PASS gn.bias
// NORMS-NEXT: PASS inorm.weight
// NORMS-NEXT: PASS inorm.bias
// NORMS-NEXT: PASS fc.weight
// NORMS-NEXT: PASS fc.bias
// NORMS-NOT:  FAIL

// GN:      PASS loss
// GN-NEXT: PASS gn_weight
// GN-NEXT: PASS gn_bias
// GN-NEXT: PASS conv.weight
// GN-NEXT: PASS conv.bias
// GN-NEXT: PASS fc.weight
// GN-NEXT: PASS fc.bias
// GN-NOT:  FAIL

// VOL:      PASS loss
// VOL-NEXT: PASS conv.weight
// VOL-NEXT: PASS conv.bias
// VOL-NEXT: PASS up.weight
// VOL-NEXT: PASS up.bias
// VOL-NEXT: PASS fc.weight
// VOL-NEXT: PASS fc.bias
// VOL-NOT:  FAIL

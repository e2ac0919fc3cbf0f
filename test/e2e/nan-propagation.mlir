// A NaN in the input reaches the prediction as in PyTorch: ReLU, max
// pooling (whose oneDNN kernel skips NaN; Cleave marks the windows that
// hold one), clamp, maximum, and a linear layer with its ReLU (not fused
// into the kernel's ReLU post-op, which maps NaN to 0). A NaN in the last
// element of the first 2x2 window, which oneDNN's max visits last.
//
// REQUIRES: cleave-runtime
// RUN: cleave-compile %S/Inputs/nan-propagation.mlir --loss=mse --micro-batch=2 -o %t.cleave
// RUN: cleave-run %t.cleave --input x=1,2,3,4,5,nan,7,8,9,10,11,12,13,14,15,16,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 | FileCheck %s
// RUN: cleave-run %t.cleave --input x=1,2,3,4,5,nan,7,8,9,10,11,12,13,14,15,16,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 --entry=micro_step --input targets=0 --accumulate=2 --print=loss --print=global:w.grad | FileCheck %s --check-prefix=STEP

// The first sample's windows are {1 2 5 nan}, {3 4 7 8}, ...: its pooled
// values hold a NaN, and every output of the linear layer reads them. The
// second sample pools to 6 8 14 16 (sum 44).
// CHECK:      eval_step.prediction: f32 [2, 4]
// CHECK-NEXT:   [0] nan nan nan nan
// CHECK-NEXT:   [1] 44 44 44 44

// The loss and the gradients are NaN too: the NaN is not lost on the way.
// STEP: loss = nan
// STEP: w.grad: f32 [4, 4]
// STEP-NEXT: nan

// RUN: cleave-opt %s --cleave-reinitialize-params=normal-std=0.02 | FileCheck %s
// RUN: cleave-opt %s --cleave-reinitialize-params | FileCheck %s --check-prefix=KEEP
// RUN: not cleave-opt %s --cleave-reinitialize-params=normal-std=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not cleave-opt %s --cleave-reinitialize-params="normal-std=0.02 function=nope" 2>&1 | FileCheck %s --check-prefix=NO-FUNCTION

// Parameters that carry values (as an ONNX export's initializers do) are
// drawn from N(0, 0.02^2) by the runtime instead, but for those whose values
// are all equal, which keep them as a constant initialiser: a layer norm's
// ones, a zero bias, a constant fill. A parameter with an initialiser kind,
// a buffer (running statistics), a constant NaN (no initialiser spells it),
// an empty tensor and the other functions keep theirs.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: train.init = #train.init<normal, 0.000000e+00, 2.000000e-02>, train.param = "w"
// CHECK-SAME: train.init = #train.init<ones>, train.param = "ln.weight"
// CHECK-SAME: train.init = #train.init<zeros>, train.param = "ln.bias"
// CHECK-SAME: train.init = #train.init<constant, 5.000000e-01>, train.param = "fill"
// CHECK-SAME: train.init = #train.init<kaiming_uniform>, train.param = "v"
// CHECK-SAME: train.buffer = "stat", train.init = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-SAME: train.init = dense<0x7FC00000> : tensor<2xf32>, train.param = "nan"
// CHECK-SAME: train.init = dense<> : tensor<0xf32>, train.param = "empty"
// CHECK-LABEL: func.func @other(
// CHECK-SAME: train.init = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, train.param = "u"

// KEEP-LABEL: func.func @forward(
// KEEP-SAME: train.init = dense<{{\[\[}}1.000000e+00, -2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>, train.param = "w"
// KEEP-SAME: train.init = dense<1.000000e+00> : tensor<2xf32>, train.param = "ln.weight"

// NEGATIVE: error: normal-std must be positive (0 keeps the parameters' values), got -1
// NO-FUNCTION: error: no model function @nope

func.func @forward(%x: tensor<4x2xf32>,
                   %w: tensor<2x2xf32> {train.param = "w", train.init = dense<[[1.0, -2.0], [3.0, 4.0]]> : tensor<2x2xf32>},
                   %g: tensor<2xf32> {train.param = "ln.weight", train.init = dense<1.0> : tensor<2xf32>},
                   %b: tensor<2xf32> {train.param = "ln.bias", train.init = dense<[0.0, 0.0]> : tensor<2xf32>},
                   %c: tensor<2xf32> {train.param = "fill", train.init = dense<[0.5, 0.5]> : tensor<2xf32>},
                   %v: tensor<2x2xf32> {train.param = "v", train.init = #train.init<kaiming_uniform>},
                   %s: tensor<2xf32> {train.buffer = "stat", train.init = dense<[1.0, 2.0]> : tensor<2xf32>},
                   %n: tensor<2xf32> {train.param = "nan", train.init = dense<0x7FC00000> : tensor<2xf32>},
                   %e: tensor<0xf32> {train.param = "empty", train.init = dense<> : tensor<0xf32>})
    -> tensor<4x2xf32> {
  %y = nn.linear %x, %w, %b : tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

func.func @other(%u: tensor<2xf32> {train.param = "u", train.init = dense<[1.0, 2.0]> : tensor<2xf32>}) -> tensor<2xf32> {
  return %u : tensor<2xf32>
}

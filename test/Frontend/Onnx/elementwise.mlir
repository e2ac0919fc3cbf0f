// Elementwise ONNX ops: arithmetic with broadcasting, activations, softmax.
//
// RUN: %python %S/Inputs/make_model.py binary %t.binary.onnx
// RUN: cleave-opt --import-onnx %t.binary.onnx | FileCheck %s --check-prefix=BINARY
// Every opset from 13 to 17 imports (13, 15 and 17 are used throughout;
// 18 to 21 in newer-opsets.mlir).
// RUN: %python %S/Inputs/make_model.py opset14 %t.opset14.onnx
// RUN: cleave-opt --import-onnx %t.opset14.onnx | FileCheck %s --check-prefix=OPSET
// RUN: %python %S/Inputs/make_model.py opset16 %t.opset16.onnx
// RUN: cleave-opt --import-onnx %t.opset16.onnx | FileCheck %s --check-prefix=OPSET
// RUN: %python %S/Inputs/make_model.py pow %t.pow.onnx
// RUN: cleave-opt --import-onnx %t.pow.onnx | FileCheck %s --check-prefix=POW
// RUN: %python %S/Inputs/make_model.py scalar_folding %t.fold.onnx
// RUN: cleave-opt --import-onnx %t.fold.onnx | FileCheck %s --check-prefix=FOLD
// RUN: %python %S/Inputs/make_model.py unary %t.unary.onnx
// RUN: cleave-opt --import-onnx %t.unary.onnx | FileCheck %s --check-prefix=UNARY
// RUN: %python %S/Inputs/make_model.py clip %t.clip.onnx
// RUN: cleave-opt --import-onnx %t.clip.onnx | FileCheck %s --check-prefix=CLIP
// RUN: %python %S/Inputs/make_model.py hard_activations %t.hard.onnx
// RUN: cleave-opt --import-onnx %t.hard.onnx | FileCheck %s --check-prefix=HARD
// RUN: %python %S/Inputs/make_model.py abs_softplus_reciprocal %t.abs.onnx
// RUN: cleave-opt --import-onnx %t.abs.onnx | FileCheck %s --check-prefix=ABS
// RUN: %python %S/Inputs/make_model.py masked_fill %t.masked.onnx
// RUN: cleave-opt --import-onnx %t.masked.onnx | FileCheck %s --check-prefix=MASKED
// RUN: %python %S/Inputs/make_model.py softmax %t.softmax.onnx
// RUN: cleave-opt --import-onnx %t.softmax.onnx | FileCheck %s --check-prefix=SOFTMAX
// RUN: %python %S/Inputs/make_model.py gelu %t.gelu.onnx
// RUN: cleave-opt --import-onnx %t.gelu.onnx | FileCheck %s --check-prefix=GELU
// RUN: %python %S/Inputs/make_model.py gelu_mismatch %t.gelu2.onnx
// RUN: cleave-opt --import-onnx %t.gelu2.onnx | FileCheck %s --check-prefix=PLAIN
// RUN: %python %S/Inputs/make_model.py max_min %t.max-min.onnx
// RUN: cleave-opt --import-onnx %t.max-min.onnx | FileCheck %s --check-prefix=MAX-MIN
// RUN: %python %S/Inputs/make_model.py max_min_batch %t.max-batch.onnx
// RUN: cleave-opt --import-onnx %t.max-batch.onnx | FileCheck %s --check-prefix=MAX-BATCH
// RUN: %python %S/Inputs/make_model.py padding_mask %t.padding.onnx
// RUN: cleave-opt --import-onnx %t.padding.onnx | FileCheck %s --check-prefix=PADDING

// Add/Sub/Mul/Div of two inputs, a rank-1 initializer (a parameter), a
// rank-0 initializer and a Constant node (both constants).
// BINARY-LABEL: func.func @forward(
// BINARY-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// BINARY-SAME:    %[[Y:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "y"},
// BINARY-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {train.init = dense<[5.000000e-01, -1.000000e+00, 2.500000e-01, 2.000000e+00]> : tensor<4xf32>, train.param = "bias"})
// BINARY-SAME:    -> tensor<?x3x4xf32>
// BINARY-DAG:   %[[THIRDS:.+]] = arith.constant dense<3.000000e+00> : tensor<1x3x1xf32>
// BINARY-DAG:   %[[TWO:.+]] = arith.constant dense<2.000000e+00> : tensor<f32>
// BINARY:       %[[SUM:.+]] = nn.add %[[X]], %[[Y]] : tensor<?x3x4xf32>, tensor<?x3x4xf32> -> tensor<?x3x4xf32>
// BINARY:       %[[DIFF:.+]] = nn.sub %[[SUM]], %[[B]] : tensor<?x3x4xf32>, tensor<4xf32> -> tensor<?x3x4xf32>
// BINARY:       %[[PROD:.+]] = nn.mul %[[DIFF]], %[[TWO]] : tensor<?x3x4xf32>, tensor<f32> -> tensor<?x3x4xf32>
// BINARY:       %[[QUOT:.+]] = nn.div %[[PROD]], %[[THIRDS]] : tensor<?x3x4xf32>, tensor<1x3x1xf32> -> tensor<?x3x4xf32>
// BINARY:       return %[[QUOT]]

// POW-LABEL: func.func @forward(%{{[a-z0-9_]+}}: tensor<?x4xf32> {train.input = "x"})
// POW-NOT:     arith.constant
// POW:         nn.pow %{{.+}}, 3.000000e+00 : tensor<?x4xf32>

// Shape, Gather, Cast and Pow on compile-time values fold to one constant.
// FOLD-LABEL: func.func @forward(
// FOLD-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32>
// FOLD-NEXT:    %[[C:.+]] = arith.constant dense<2.000000e+00> : tensor<f32>
// FOLD-NEXT:    %[[Y:.+]] = nn.div %[[X]], %[[C]]
// FOLD-NEXT:    return %[[Y]]

// UNARY-LABEL: func.func @forward(
// UNARY-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x4xf32>
// UNARY:         %[[A:.+]] = nn.relu %[[X]] : tensor<?x4xf32>
// UNARY:         %[[B:.+]] = nn.sigmoid %[[A]] : tensor<?x4xf32>
// UNARY:         %[[C:.+]] = nn.tanh %[[B]] : tensor<?x4xf32>
// UNARY:         %[[D:.+]] = nn.erf %[[C]] : tensor<?x4xf32>
// UNARY:         %[[E:.+]] = nn.sqrt %[[D]] : tensor<?x4xf32>
// UNARY:         %[[F:.+]] = nn.exp %[[E]] : tensor<?x4xf32>
// UNARY:         %[[G:.+]] = nn.log %[[F]] : tensor<?x4xf32>
// UNARY:         %[[H:.+]] = nn.neg %[[G]] : tensor<?x4xf32>
// UNARY:         %[[I:.+]] = nn.leaky_relu %[[H]] {alpha = 2.000000e-01 : f64} : tensor<?x4xf32>
// UNARY:         return %[[I]]

// Clip's bounds are constants (Constant nodes or initializers, never
// parameters); an absent bound is infinite.
// CLIP-LABEL: func.func @forward(
// CLIP-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"}) -> tensor<?x4xf32>
// CLIP-NEXT:    %[[A:.+]] = nn.clamp %[[X]], 0.000000e+00, 6.000000e+00 : tensor<?x4xf32>
// CLIP-NEXT:    %[[B:.+]] = nn.clamp %[[A]], 0xFFF0000000000000, 2.500000e+00 : tensor<?x4xf32>
// CLIP-NEXT:    %[[C:.+]] = nn.clamp %[[B]], -1.000000e+00, 0x7FF0000000000000 : tensor<?x4xf32>
// CLIP-NEXT:    %[[D:.+]] = nn.clamp %[[C]], 0xFFF0000000000000, 0x7FF0000000000000 : tensor<?x4xf32>
// CLIP-NEXT:    return %[[D]]

// HardSigmoid is clamp(alpha * x + beta, 0, 1) (alpha 0.2, beta 0.5 by
// default); HardSwish is x * HardSigmoid(x) with alpha 1/6.
// HARD-LABEL: func.func @forward(
// HARD-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x4xf32>
// HARD-DAG:     %[[A1:.+]] = arith.constant dense<2.000000e-01> : tensor<f32>
// HARD-DAG:     %[[B1:.+]] = arith.constant dense<5.000000e-01> : tensor<f32>
// HARD-DAG:     %[[A2:.+]] = arith.constant dense<2.500000e-01> : tensor<f32>
// HARD-DAG:     %[[B2:.+]] = arith.constant dense<3.750000e-01> : tensor<f32>
// HARD-DAG:     %[[SIXTH:.+]] = arith.constant dense<0.166666672> : tensor<f32>
// HARD:         %[[M1:.+]] = nn.mul %[[X]], %[[A1]]
// HARD:         %[[S1:.+]] = nn.add %[[M1]], %[[B1]]
// HARD:         %[[G1:.+]] = nn.clamp %[[S1]], 0.000000e+00, 1.000000e+00 : tensor<?x4xf32>
// HARD:         %[[M2:.+]] = nn.mul %[[G1]], %[[A2]]
// HARD:         %[[S2:.+]] = nn.add %[[M2]], %[[B2]]
// HARD:         %[[G2:.+]] = nn.clamp %[[S2]], 0.000000e+00, 1.000000e+00 : tensor<?x4xf32>
// HARD:         %[[M3:.+]] = nn.mul %[[G2]], %[[SIXTH]]
// HARD:         %[[S3:.+]] = nn.add %[[M3]], %[[B1]]
// HARD:         %[[G3:.+]] = nn.clamp %[[S3]], 0.000000e+00, 1.000000e+00 : tensor<?x4xf32>
// HARD:         %[[Y:.+]] = nn.mul %[[G2]], %[[G3]] : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
// HARD:         return %[[Y]]

// Opset 13 softmax normalises along one axis (LogSoftmax's default -1).
// SOFTMAX-LABEL: func.func @forward(
// SOFTMAX-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x4x5xf32>
// SOFTMAX:         %[[P:.+]] = nn.softmax %[[X]] {axis = 1 : i64} : tensor<?x4x5xf32>
// SOFTMAX:         nn.log_softmax %[[P]] {axis = 2 : i64} : tensor<?x4x5xf32>

// The erf form of GELU torch.onnx emits becomes one nn.gelu.
// GELU-LABEL: func.func @forward(
// GELU-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x4xf32>
// GELU-NEXT:    %[[Y:.+]] = nn.gelu %[[X]] : tensor<?x4xf32>
// GELU-NEXT:    return %[[Y]]

// With 0.25 instead of 0.5 the chain is no GELU, and every node stays.
// PLAIN-LABEL: func.func @forward(
// PLAIN-SAME:  %[[X:[a-z0-9_]+]]: tensor<?x4xf32>
// PLAIN-NOT:     nn.gelu
// PLAIN-DAG:     %[[QUARTER:.+]] = arith.constant dense<2.500000e-01> : tensor<f32>
// PLAIN-DAG:     %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// PLAIN-DAG:     %[[SQRT2:.+]] = arith.constant dense<1.41421354> : tensor<f32>
// PLAIN:         %[[S:.+]] = nn.div %[[X]], %[[SQRT2]]
// PLAIN:         %[[E:.+]] = nn.erf %[[S]]
// PLAIN:         %[[A:.+]] = nn.add %[[E]], %[[ONE]]
// PLAIN:         %[[M:.+]] = nn.mul %[[X]], %[[A]]
// PLAIN:         %[[Y:.+]] = nn.mul %[[M]], %[[QUARTER]]
// PLAIN:         return %[[Y]]

// OPSET: func.func @forward(%[[X:.+]]: tensor<?x4xf32> {train.input = "x"}) -> tensor<?x4xf32>
// OPSET-NEXT: nn.relu %[[X]] : tensor<?x4xf32>

// Abs is nn.leaky_relu with slope -1; Softplus is relu(x) + log(1 + exp(-|x|))
// (no overflow); Reciprocal is a division of 1.
// ABS-LABEL: func.func @forward(
// ABS-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"})
// ABS-DAG:       %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// ABS-DAG:       %[[A:.+]] = nn.leaky_relu %[[X]] {alpha = -1.000000e+00 : f64} : tensor<?x4xf32>
// ABS:           %[[M:.+]] = nn.leaky_relu %[[A]] {alpha = -1.000000e+00 : f64} : tensor<?x4xf32>
// ABS-NEXT:      %[[N:.+]] = nn.neg %[[M]] : tensor<?x4xf32>
// ABS-NEXT:      %[[E:.+]] = nn.exp %[[N]] : tensor<?x4xf32>
// ABS-NEXT:      %[[P:.+]] = nn.add %[[ONE]], %[[E]] : tensor<f32>, tensor<?x4xf32> -> tensor<?x4xf32>
// ABS-NEXT:      %[[L:.+]] = nn.log %[[P]] : tensor<?x4xf32>
// ABS-NEXT:      %[[R:.+]] = nn.relu %[[A]] : tensor<?x4xf32>
// ABS-NEXT:      %[[S:.+]] = nn.add %[[R]], %[[L]] : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
// ABS-NEXT:      %[[Y:.+]] = nn.div %[[ONE]], %[[S]] : tensor<f32>, tensor<?x4xf32> -> tensor<?x4xf32>
// ABS-NEXT:      return %[[Y]]

// masked_fill(tril == 0, -inf): Equal folds on the constant triangle to a
// mask of numbers, and Where is an nn.where at run time.
// MASKED-LABEL: func.func @forward(
// MASKED-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x3xf32> {train.input = "x"})
// MASKED-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// MASKED-DAG:     %[[MASK:.+]] = arith.constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// MASKED:         %[[W:.+]] = nn.where %[[MASK]], %[[INF]], %[[X]] : tensor<3x3xf32>, tensor<f32>, tensor<?x3x3xf32> -> tensor<?x3x3xf32>
// MASKED-NEXT:    nn.softmax %[[W]] {axis = 2 : i64} : tensor<?x3x3xf32>

// Max folds left over its inputs; a one-input Min is its input.
// MAX-MIN-LABEL: func.func @forward(
// MAX-MIN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"},
// MAX-MIN-SAME:    %[[Y:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "y"},
// MAX-MIN-SAME:    %[[F:[a-z0-9_]+]]: tensor<3xf32> {train.init = {{.+}}, train.param = "floor"})
// MAX-MIN:         %[[CAP:.+]] = arith.constant dense<2.000000e+00> : tensor<f32>
// MAX-MIN:         %[[A:.+]] = nn.maximum %[[X]], %[[Y]] : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
// MAX-MIN-NEXT:    %[[B:.+]] = nn.maximum %[[A]], %[[F]] : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
// MAX-MIN-NEXT:    %[[C:.+]] = nn.minimum %[[B]], %[[CAP]] : tensor<?x3xf32>, tensor<f32> -> tensor<?x3xf32>
// MAX-MIN-NEXT:    return %[[C]]

// The batch of a Max result is known, so a reshape target computed from its
// Shape folds.
// MAX-BATCH-LABEL: func.func @forward(
// MAX-BATCH:         %[[M:.+]] = nn.maximum
// MAX-BATCH-NEXT:    %[[R:.+]] = nn.reshape %[[M]] [-1, 6] : tensor<?x2x3xf32> -> tensor<?x6xf32>
// MAX-BATCH-NEXT:    return %[[R]]

// A padding mask computed at run time (ids == 0) fills attention scores;
// comparisons are nn.compare masks of 0 and 1 (a Cast of one to bool is
// itself, of a float `x != 0`), Not compares a mask with 0, And and Or (with
// a constant boolean) are nn.mul and nn.maximum, and Where takes the mask as
// its condition.
// PADDING-LABEL: func.func @forward(
// PADDING-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x4xi64> {train.input = "ids"},
// PADDING-SAME:    %[[S:[a-z0-9_]+]]: tensor<?x2x4xf32> {train.input = "scores"},
// PADDING-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32> {train.input = "x"})
// PADDING-DAG:     %[[FIRST:.+]] = arith.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<4xf32>
// PADDING-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// PADDING-DAG:     %[[HALF:.+]] = arith.constant dense<5.000000e-01> : tensor<f32>
// PADDING-DAG:     %[[TWO:.+]] = arith.constant dense<2> : tensor<i64>
// PADDING-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// PADDING-DAG:     %[[PADID:.+]] = arith.constant dense<0> : tensor<i64>
// PADDING:         %[[PAD:.+]] = nn.compare <eq>, %[[IDS]], %[[PADID]] {dtype = f32} : tensor<?x4xi64>, tensor<i64> -> tensor<?x4xf32>
// PADDING:         %[[PAD1:.+]] = nn.reshape %[[PAD]] [-1, 1, 4]
// PADDING-NOT:     nn.compare
// PADDING:         %[[FILLED:.+]] = nn.where %[[PAD1]], %[[INF]], %[[S]] : tensor<?x1x4xf32>, tensor<f32>, tensor<?x2x4xf32> -> tensor<?x2x4xf32>
// PADDING:         %[[SMALL:.+]] = nn.compare <lt>, %[[IDS]], %[[TWO]] {dtype = f32}
// PADDING:         %[[BIG:.+]] = nn.compare <ge>, %[[X]], %[[HALF]] {dtype = f32} : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xf32>
// PADDING:         %[[LARGE:.+]] = nn.compare <eq>, %[[SMALL]], %[[ZERO]] {dtype = f32}
// PADDING:         %[[BOTH:.+]] = nn.mul %[[LARGE]], %[[BIG]]
// PADDING:         %[[EITHER:.+]] = nn.maximum %[[BOTH]], %[[FIRST]] : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x4xf32>
// PADDING:         %[[NONZERO:.+]] = nn.compare <ne>, %[[X]], %[[ZERO]] {dtype = f32} : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xf32>
// PADDING:         %[[CHOSEN:.+]] = nn.mul %[[EITHER]], %[[NONZERO]]
// PADDING:         %[[PICKED:.+]] = nn.where %[[CHOSEN]], %[[X]], %[[HALF]]
// PADDING:         return %[[FILLED]], %[[PICKED]]

// Gemm and MatMul.
//
// RUN: %python %S/Inputs/make_model.py gemm %t.gemm.onnx
// RUN: cleave-opt --import-onnx %t.gemm.onnx | FileCheck %s --check-prefix=GEMM
// RUN: %python %S/Inputs/make_model.py gemm_nobias %t.nobias.onnx
// RUN: cleave-opt --import-onnx %t.nobias.onnx | FileCheck %s --check-prefix=NOBIAS
// RUN: %python %S/Inputs/make_model.py gemm_tied %t.tied.onnx
// RUN: cleave-opt --import-onnx %t.tied.onnx | FileCheck %s --check-prefix=TIED
// RUN: %python %S/Inputs/make_model.py gemm_general %t.general.onnx
// RUN: cleave-opt --import-onnx %t.general.onnx | FileCheck %s --check-prefix=GENERAL
// RUN: %python %S/Inputs/make_model.py matmul %t.matmul.onnx
// RUN: cleave-opt --import-onnx %t.matmul.onnx | FileCheck %s --check-prefix=MATMUL
// RUN: %python %S/Inputs/make_model.py matmul_vector %t.vector.onnx
// RUN: cleave-opt --import-onnx %t.vector.onnx | FileCheck %s --check-prefix=VECTOR
// RUN: %python %S/Inputs/make_model.py matmul_batched %t.batched.onnx
// RUN: cleave-opt --import-onnx %t.batched.onnx | FileCheck %s --check-prefix=BATCHED
// RUN: %python %S/Inputs/make_model.py matmul_broadcast %t.broadcast.onnx
// RUN: cleave-opt --import-onnx %t.broadcast.onnx | FileCheck %s --check-prefix=BROADCAST
// RUN: cleave-opt --import-onnx %t.broadcast.onnx --cleave-train-pipeline="micro-batch=2 loss=mse" | FileCheck %s --check-prefix=BROADCAST-GRAD
// RUN: %python %S/Inputs/make_model.py matmul_batch_mismatch %t.mismatch.onnx
// RUN: not cleave-opt --import-onnx %t.mismatch.onnx 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: %python %S/Inputs/make_model.py einsum_attention %t.einsum.onnx
// RUN: cleave-opt --import-onnx %t.einsum.onnx | FileCheck %s --check-prefix=EINSUM
// RUN: %python %S/Inputs/make_model.py einsum_forms %t.einsum-forms.onnx
// RUN: cleave-opt --import-onnx %t.einsum-forms.onnx | FileCheck %s --check-prefix=EINSUM-FORMS
// RUN: %python %S/Inputs/make_model.py einsum_general %t.einsum-general.onnx
// RUN: cleave-opt --import-onnx %t.einsum-general.onnx | FileCheck %s --check-prefix=EINSUM-GENERAL

// nn.Linear as torch.onnx exports it. The parameters hold the exact exported
// values (0.1 is printed as the float closest to it, as PyTorch stores it).
// GEMM-LABEL: func.func @forward(
// GEMM-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"},
// GEMM-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x3xf32> {train.init = dense<{{\[\[}}1.000000e-01, 2.000000e-01, 3.000000e-01], [-5.000000e-01, 1.500000e+00, 2.250000e+00]]> : tensor<2x3xf32>, train.param = "fc.weight"},
// GEMM-SAME:    %[[B:[a-z0-9_]+]]: tensor<2xf32> {train.init = dense<[1.250000e-01, -3.000000e+00]> : tensor<2xf32>, train.param = "fc.bias"})
// GEMM-SAME:    -> tensor<?x2xf32>
// GEMM-NEXT:    %[[Y:.+]] = nn.linear %[[X]], %[[W]], %[[B]] : tensor<?x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<?x2xf32>
// GEMM-NEXT:    return %[[Y]] : tensor<?x2xf32>

// NOBIAS-LABEL: func.func @forward(
// NOBIAS-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"},
// NOBIAS-SAME:    %[[W:[a-z0-9_]+]]: tensor<2x3xf32> {train.init = dense<{{.+}}> : tensor<2x3xf32>, train.param = "w"})
// NOBIAS-NEXT:    nn.linear %[[X]], %[[W]] : tensor<?x3xf32>, tensor<2x3xf32> -> tensor<?x2xf32>

// An initializer renamed by Identity is still one parameter.
// TIED-LABEL: func.func @forward(
// TIED-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"},
// TIED-SAME:    %[[W:[a-z0-9_]+]]: tensor<3x3xf32> {train.init = dense<{{.+}}> : tensor<3x3xf32>, train.param = "w"})
// TIED-SAME:    -> tensor<?x3xf32>
// TIED-NEXT:    %[[H:.+]] = nn.linear %[[X]], %[[W]] : tensor<?x3xf32>, tensor<3x3xf32> -> tensor<?x3xf32>
// TIED-NEXT:    %[[Y:.+]] = nn.linear %[[H]], %[[W]] : tensor<?x3xf32>, tensor<3x3xf32> -> tensor<?x3xf32>
// TIED-NEXT:    return %[[Y]]

// alpha * A^T B + beta * C: a matmul with a transpose flag, scaled, plus
// the scaled C.
// GENERAL-LABEL: func.func @forward(
// GENERAL-SAME:    %[[A:[a-z0-9_]+]]: tensor<3x4xf32> {train.input = "a"},
// GENERAL-SAME:    %[[B:[a-z0-9_]+]]: tensor<3x5xf32> {{.+}}train.param = "b"},
// GENERAL-SAME:    %[[C:[a-z0-9_]+]]: tensor<4x5xf32> {{.+}}train.param = "c"})
// GENERAL-DAG:     %[[BETA:.+]] = arith.constant dense<2.000000e+00> : tensor<f32>
// GENERAL-DAG:     %[[ALPHA:.+]] = arith.constant dense<5.000000e-01> : tensor<f32>
// GENERAL:         %[[AB:.+]] = nn.matmul %[[A]], %[[B]] {transpose_a} : tensor<3x4xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
// GENERAL:         %[[SCALED:.+]] = nn.mul %[[AB]], %[[ALPHA]]
// GENERAL:         %[[CSCALED:.+]] = nn.mul %[[C]], %[[BETA]]
// GENERAL:         %[[Y:.+]] = nn.add %[[SCALED]], %[[CSCALED]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
// GENERAL:         return %[[Y]]

// MATMUL-LABEL: func.func @forward(
// MATMUL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4x3xf32> {train.input = "x"},
// MATMUL-SAME:    %[[W:[a-z0-9_]+]]: tensor<3x5xf32> {{.+}}train.param = "w"})
// MATMUL-NEXT:    nn.matmul %[[X]], %[[W]] : tensor<?x4x3xf32>, tensor<3x5xf32> -> tensor<?x4x5xf32>

// A vector operand becomes a column and loses that dimension again.
// VECTOR-LABEL: func.func @forward(
// VECTOR-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"},
// VECTOR-SAME:    %[[V:[a-z0-9_]+]]: tensor<3xf32> {train.init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>, train.param = "v"})
// VECTOR-SAME:    -> tensor<?xf32>
// VECTOR-NEXT:    %[[COL:.+]] = nn.reshape %[[V]] [3, 1] : tensor<3xf32> -> tensor<3x1xf32>
// VECTOR-NEXT:    %[[P:.+]] = nn.matmul %[[X]], %[[COL]] : tensor<?x3xf32>, tensor<3x1xf32> -> tensor<?x1xf32>
// VECTOR-NEXT:    %[[Y:.+]] = nn.reshape %[[P]] [-1] : tensor<?x1xf32> -> tensor<?xf32>
// VECTOR-NEXT:    return %[[Y]]

// BATCHED-LABEL: func.func @forward(
// BATCHED-SAME:    %[[A:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "a"},
// BATCHED-SAME:    %[[B:[a-z0-9_]+]]: tensor<?x2x4x5xf32> {train.input = "b"})
// BATCHED-NEXT:    nn.matmul %[[A]], %[[B]] : tensor<?x2x3x4xf32>, tensor<?x2x4x5xf32> -> tensor<?x2x3x5xf32>

// numpy batch broadcasting: per-head matrices and a shared left-hand matrix
// are broadcast over the batch (taken from a data input); a right-hand side
// whose batch dimensions are all 1 is one shared matrix.
// BROADCAST-LABEL: func.func @forward(
// BROADCAST-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"},
// BROADCAST-SAME:    %[[Y:[a-z0-9_]+]]: tensor<?x4x5xf32> {train.input = "y"},
// BROADCAST-SAME:    %[[H:[a-z0-9_]+]]: tensor<2x4x5xf32> {{.+}}train.param = "heads"},
// BROADCAST-SAME:    %[[L:[a-z0-9_]+]]: tensor<3x4xf32> {{.+}}train.param = "left"},
// BROADCAST-SAME:    %[[U:[a-z0-9_]+]]: tensor<1x5x2xf32> {{.+}}train.param = "unit"})
// BROADCAST-NEXT:    %[[HB:.+]] = nn.broadcast_to %[[H]] [-1, 2, 4, 5] batch_of %[[X]] : tensor<2x4x5xf32>, tensor<?x2x3x4xf32> -> tensor<?x2x4x5xf32>
// BROADCAST-NEXT:    nn.matmul %[[X]], %[[HB]] : tensor<?x2x3x4xf32>, tensor<?x2x4x5xf32> -> tensor<?x2x3x5xf32>
// BROADCAST-NEXT:    %[[LB:.+]] = nn.broadcast_to %[[L]] [-1, 3, 4] batch_of %[[X]] : tensor<3x4xf32>, tensor<?x2x3x4xf32> -> tensor<?x3x4xf32>
// BROADCAST-NEXT:    nn.matmul %[[LB]], %[[Y]] : tensor<?x3x4xf32>, tensor<?x4x5xf32> -> tensor<?x3x5xf32>
// BROADCAST-NEXT:    %[[UR:.+]] = nn.reshape %[[U]] [5, 2] : tensor<1x5x2xf32> -> tensor<5x2xf32>
// BROADCAST-NEXT:    nn.matmul %[[Y]], %[[UR]] : tensor<?x4x5xf32>, tensor<5x2xf32> -> tensor<?x4x2xf32>

// The gradient of a broadcast parameter sums over the micro-batch.
// BROADCAST-GRAD-LABEL: func.func @micro_step(
// BROADCAST-GRAD:         nn.broadcast_to %{{.+}} [2, 2, 4, 5] : tensor<2x4x5xf32> -> tensor<2x2x4x5xf32>
// BROADCAST-GRAD:         nn.reduce_sum %{{.+}} [0] {keepdims} : tensor<2x2x4x5xf32> -> tensor<1x2x4x5xf32>

// MISMATCH: error: MatMul batch dimensions [B, 2] and [3] do not broadcast (B is the batch size)
// MISMATCH-NEXT: note: while importing ONNX node 'y' (MatMul, opset 13)

// Attention's einsums: q k^T with transpose_b, then probs v.
// EINSUM-LABEL: func.func @forward(
// EINSUM-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "q"},
// EINSUM-SAME:    %[[K:[a-z0-9_]+]]: tensor<?x2x5x4xf32> {train.input = "k"},
// EINSUM-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x2x5x4xf32> {train.input = "v"})
// EINSUM-NEXT:    %[[S:.+]] = nn.matmul %[[Q]], %[[K]] {transpose_b} : tensor<?x2x3x4xf32>, tensor<?x2x5x4xf32> -> tensor<?x2x3x5xf32>
// EINSUM-NEXT:    %[[P:.+]] = nn.softmax %[[S]] {axis = 3 : i64}
// EINSUM-NEXT:    %[[Y:.+]] = nn.matmul %[[P]], %[[V]] : tensor<?x2x3x5xf32>, tensor<?x2x5x4xf32> -> tensor<?x2x3x4xf32>
// EINSUM-NEXT:    return %[[Y]]

// A shared right-hand matrix; the contraction first on the left
// (transpose_a); the output in another order (a transpose).
// EINSUM-FORMS-LABEL: func.func @forward(
// EINSUM-FORMS-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// EINSUM-FORMS-SAME:    %[[U:[a-z0-9_]+]]: tensor<?x3x2xf32> {train.input = "u"},
// EINSUM-FORMS-SAME:    %[[W:[a-z0-9_]+]]: tensor<4x5xf32> {{.+}}train.param = "w"})
// EINSUM-FORMS-NEXT:    %[[H:.+]] = nn.matmul %[[X]], %[[W]] : tensor<?x3x4xf32>, tensor<4x5xf32> -> tensor<?x3x5xf32>
// EINSUM-FORMS-NEXT:    %[[G:.+]] = nn.matmul %[[H]], %[[U]] {transpose_a} : tensor<?x3x5xf32>, tensor<?x3x2xf32> -> tensor<?x5x2xf32>
// EINSUM-FORMS-NEXT:    %[[T:.+]] = nn.transpose %[[G]] [0, 2, 1] : tensor<?x5x2xf32> -> tensor<?x2x5xf32>
// EINSUM-FORMS-NEXT:    return %[[T]]

// Einsum beyond matrix products: the diagonal "...ii->...i" is a product
// with an identity mask summed over the second axis; the implicit output of
// "...i,...i" keeps the broadcast dimensions and sums the rest.
// EINSUM-GENERAL-LABEL: func.func @forward(
// EINSUM-GENERAL-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x3xf32> {train.input = "x"})
// EINSUM-GENERAL:         %[[EYE:.+]] = arith.constant dense<{{\[\[\[}}1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00]]]> : tensor<1x3x3xf32>
// EINSUM-GENERAL-NEXT:    %[[M:.+]] = nn.mul %[[X]], %[[EYE]]
// EINSUM-GENERAL-NEXT:    %[[D:.+]] = nn.reduce_sum %[[M]] [2] : tensor<?x3x3xf32> -> tensor<?x3xf32>
// EINSUM-GENERAL-NEXT:    %[[P:.+]] = nn.mul %[[D]], %[[D]]
// EINSUM-GENERAL-NEXT:    %[[Y:.+]] = nn.reduce_sum %[[P]] [1] : tensor<?x3xf32> -> tensor<?xf32>
// EINSUM-GENERAL-NEXT:    return %[[Y]]

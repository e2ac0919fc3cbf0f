// A sequence classifier reading the hidden state at the last non-padding
// position, exported by torch.onnx for training at opset 14 with a dynamic
// batch. `(ids != 0).sum(1) - 1` is float arithmetic on the padding mask
// (nn has no integer tensors at run time; the counts are exact);
// `torch.arange(B)` is nn.iota over the ids' batch, and the row index
// `arange(B) * T + lengths - 1` reads the flattened [B * T, D] states with
// nn.gather. torch.gather is nn.gather_elements at the same index expanded
// over the features.
//
// REQUIRES: torch
// RUN: %python %S/Inputs/make_model.py torch_last_token_index %t.index.onnx
// RUN: cleave-opt --import-onnx %t.index.onnx | FileCheck %s
// RUN: %python %S/Inputs/make_model.py torch_last_token_gather %t.gather.onnx
// RUN: cleave-opt --import-onnx %t.gather.onnx | FileCheck %s --check-prefix=ELEMENTS
// Both train: the gathers lower on the CPU path and on the GPU path.
// RUN: cleave-compile %t.index.onnx --loss=cross-entropy --micro-batch=4 --compile-to=linalg | FileCheck %s --check-prefix=LOWERED
// RUN: cleave-compile %t.gather.onnx --loss=cross-entropy --micro-batch=4 --compile-to=linalg | FileCheck %s --check-prefix=LOWERED
// RUN: cleave-compile %t.index.onnx --target=cuda --loss=cross-entropy --micro-batch=4 -o %t.index.cleave
// RUN: cleave-compile %t.gather.onnx --target=cuda --loss=cross-entropy --micro-batch=4 -o %t.gather.cleave

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x6xi64> {train.input = "ids"},
// CHECK-DAG:     %[[SIX:.+]] = arith.constant dense<6.000000e+00> : tensor<1xf32>
// CHECK-DAG:     %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[H:.+]] = nn.tanh
// CHECK:         %[[PAD:.+]] = nn.compare <eq>, %[[IDS]]
// CHECK:         %[[REAL:.+]] = nn.compare <eq>, %[[PAD]]
// CHECK:         %[[LEN:.+]] = nn.reduce_sum %[[REAL]] [1] : tensor<?x6xf32> -> tensor<?xf32>
// CHECK:         %[[B:.+]] = nn.iota %[[IDS]] {axis = 0 : i64, dtype = f32} : tensor<?x6xi64> -> tensor<?xf32>
// CHECK:         %[[LAST:.+]] = nn.sub %[[LEN]], %[[ONE]]
// CHECK:         %[[FLAT:.+]] = nn.flatten %[[H]] {axis = 2 : i64} : tensor<?x6x8xf32> -> tensor<?x8xf32>
// CHECK:         %[[ROW0:.+]] = nn.mul %[[B]], %[[SIX]]
// CHECK:         %[[ROW:.+]] = nn.add %[[LAST]], %[[ROW0]]
// CHECK:         nn.gather %[[FLAT]], %[[ROW]] {axis = 0 : i64} : tensor<?x8xf32>, tensor<?xf32> -> tensor<?x8xf32>

// ELEMENTS-LABEL: func.func @forward(
// ELEMENTS:         %[[H:.+]] = nn.tanh
// ELEMENTS:         %[[LAST:.+]] = nn.sub
// ELEMENTS:         %[[COL:.+]] = nn.reshape %[[LAST]] [-1, 1, 1] : tensor<?xf32> -> tensor<?x1x1xf32>
// ELEMENTS:         %[[INDEX:.+]] = nn.broadcast_to %[[COL]] [-1, 1, 8]
// ELEMENTS:         nn.gather_elements %[[H]], %[[INDEX]] {axis = 1 : i64} : tensor<?x6x8xf32>, tensor<?x1x8xf32> -> tensor<?x1x8xf32>

// The gathers read with tensor.extract inside a linalg.generic; their
// gradients are scf.for loops of scatter-adds.
// LOWERED-LABEL: func.func @micro_step(
// LOWERED:         linalg.generic
// LOWERED:           tensor.extract
// LOWERED:         scf.for
// LOWERED:           scf.for
// LOWERED:             tensor.insert

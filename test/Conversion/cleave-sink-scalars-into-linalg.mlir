// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-sink-scalars-into-linalg),canonicalize)' | FileCheck %s
// Scalars computed between loop nests move into the nests that use them:
// the tensors they are extracted from become inputs (broadcast by a
// constant indexing map) and the scalar arithmetic runs in the body.

// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$SCALAR:.+]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[$AT2:.+]] = affine_map<(d0) -> (2)>

// CHECK-LABEL: func.func @adam_like(
// CHECK-SAME: %[[LR:[^:]+]]: tensor<f32>, %[[STEP:[^:]+]]: tensor<i64>, %[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32>)
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$SCALAR]], #[[$SCALAR]], #[[$ID]]], iterator_types = ["parallel"]} ins(%[[G]], %[[LR]], %[[STEP]] : tensor<8xf32>, tensor<f32>, tensor<i64>) outs(%[[P]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %[[L:.+]]: f32, %[[T:.+]]: i64, %[[OUT:.+]]: f32):
// CHECK-NEXT: %[[TF:.+]] = arith.sitofp %[[T]] : i64 to f32
// CHECK-NEXT: %[[SCALE:.+]] = arith.divf %[[L]], %[[TF]] : f32
// CHECK-NEXT: arith.mulf %[[IN]], %[[SCALE]] : f32
#id = affine_map<(d0) -> (d0)>
func.func @adam_like(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %l = tensor.extract %lr[] : tensor<f32>
  %t = tensor.extract %step[] : tensor<i64>
  %tf = arith.sitofp %t : i64 to f32
  %scale = arith.divf %l, %tf : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : tensor<8xf32>) outs(%p : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %s = arith.subf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// A fill of a host scalar becomes a generic that computes it.
// CHECK-LABEL: func.func @fill(
// CHECK-SAME: %[[NORMS:[^:]+]]: tensor<4xf32>
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic {indexing_maps = [#[[$AT2]], #[[$ID]]], iterator_types = ["parallel"]} ins(%[[NORMS]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[N:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[S:.+]] = math.sqrt %[[N]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
func.func @fill(%norms: tensor<4xf32>, %out: tensor<8xf32>) -> tensor<8xf32> {
  %c2 = arith.constant 2 : index
  %n = tensor.extract %norms[%c2] : tensor<4xf32>
  %s = math.sqrt %n : f32
  %r = linalg.fill ins(%s : f32) outs(%out : tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// A scalar that does not come from a tensor (a function argument) cannot
// move; cleave-verify-device-only reports what it leaves on the host.
// CHECK-LABEL: func.func @left_alone(
// CHECK: linalg.fill
func.func @left_alone(%x: f32, %out: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.fill ins(%x : f32) outs(%out : tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-outline-kernels | FileCheck %s

// Each loop nest moves to a function of its own, so that no function LLVM
// optimises grows with the model: the entry point keeps only calls, in the
// original order, and each kernel holds exactly one linalg op. Constants
// are cloned into the kernel that reads them; memrefs and scalars are
// passed, operands first, then values the body captures.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<4x8xf32>, %[[Y:[a-z0-9]+]]: memref<4x8xf32>, %[[S:[a-z0-9]+]]: f32)
// CHECK-NOT: linalg.
// CHECK: call @step_kernel0(%[[X]])
// CHECK-NOT: linalg.
// CHECK: call @step_kernel1(%[[X]], %[[Y]], %[[S]])
// CHECK-NOT: linalg.
// CHECK-NOT: arith.constant
// CHECK: return
// CHECK: func.func private @step_kernel0(%[[A:.+]]: memref<4x8xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.0
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[A]] : memref<4x8xf32>)
// CHECK-NEXT: return
// CHECK: func.func private @step_kernel1(%[[IN:[a-z0-9]+]]: memref<4x8xf32>, %[[OUT:[a-z0-9]+]]: memref<4x8xf32>, %[[SCALE:[a-z0-9]+]]: f32) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[IN]] : memref<4x8xf32>) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: arith.mulf %{{.+}}, %[[SCALE]]
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @step(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %s: f32) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%x : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A view whose type cannot cross a bare-pointer call (dynamic offset) is
// rebuilt inside the kernel from its source and offset.
// CHECK-LABEL: func.func @dynamic_view
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<16xf32>, %[[I:[a-z0-9]+]]: index)
// CHECK-NOT: memref.subview
// CHECK: call @dynamic_view_kernel0(%[[X]], %[[I]])
// CHECK: call @dynamic_view_kernel1(%[[X]])
// CHECK: func.func private @dynamic_view_kernel0(%[[SRC:[a-z0-9]+]]: memref<16xf32>, %[[OFF:[a-z0-9]+]]: index)
// CHECK: %[[V:.+]] = memref.subview %[[SRC]][%[[OFF]]] [4] [1]
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[V]] :
func.func @dynamic_view(%x: memref<16xf32>, %i: index) {
  %one = arith.constant 1.0 : f32
  %v = memref.subview %x[%i] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: ?>>
  linalg.fill ins(%one : f32) outs(%v : memref<4xf32, strided<[1], offset: ?>>)
  linalg.fill ins(%one : f32) outs(%x : memref<16xf32>)
  return
}

// -----

// A function with a single nest is already as small as it gets.
// CHECK-LABEL: func.func @single
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill
// CHECK-NOT: func.func private
func.func @single(%x: memref<4xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%x : memref<4xf32>)
  return
}

// -----

// Tensor semantics means the pass ran before bufferization.
func.func @tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  // expected-error @below {{expected a bufferized linalg op (no results)}}
  %a = linalg.fill ins(%one : f32) outs(%x : tensor<4xf32>) -> tensor<4xf32>
  %b = linalg.fill ins(%one : f32) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Nests that are the same code on other buffers share one kernel, even
// across entry points; a different constant or a different shape makes a
// kernel of its own.
// CHECK-LABEL: func.func @twins
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<4xf32>, %[[B:[a-z0-9]+]]: memref<4xf32>, %[[C:[a-z0-9]+]]: memref<8xf32>)
// CHECK-NEXT: call @twins_kernel0(%[[A]])
// CHECK-NEXT: call @twins_kernel0(%[[B]])
// CHECK-NEXT: call @twins_kernel1(%[[A]])
// CHECK-NEXT: call @twins_kernel2(%[[C]])
// CHECK-NEXT: return
// CHECK: func.func private @twins_kernel0
// CHECK: arith.constant 1.0
// CHECK: func.func private @twins_kernel1
// CHECK: arith.constant 2.0
// CHECK: func.func private @twins_kernel2
// CHECK-SAME: memref<8xf32>
// CHECK-LABEL: func.func @other_entry
// CHECK-NEXT: call @twins_kernel0(%{{.+}})
// CHECK-NEXT: call @twins_kernel1(%{{.+}})
// CHECK-NEXT: return
// CHECK-NOT: func.func private
func.func @twins(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<8xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%b : memref<4xf32>)
  linalg.fill ins(%two : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%c : memref<8xf32>)
  return
}
func.func @other_entry(%x: memref<4xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%one : f32) outs(%x : memref<4xf32>)
  linalg.fill ins(%two : f32) outs(%x : memref<4xf32>)
  return
}

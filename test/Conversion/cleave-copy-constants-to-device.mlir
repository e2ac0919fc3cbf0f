// RUN: cleave-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cleave-copy-constants-to-device))' | FileCheck %s
// A constant that a library call reads is copied to a temporary (device)
// buffer first; one that only loop nests read stays as it is, for the
// kernels to read from their own modules.

memref.global "private" constant @w : memref<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]>
func.func private @cleave_kernel_matmul(index)

// The copy goes just before the first user, not where the get_global is.
// CHECK-LABEL: func.func @library_call
// CHECK:         %[[G:.+]] = memref.get_global @w : memref<2x2xf32>
// CHECK:         memref.store
// CHECK-NEXT:    %[[COPY:.+]] = memref.alloc() : memref<2x2xf32>
// CHECK-NEXT:    memref.copy %[[G]], %[[COPY]]
// CHECK-NEXT:    %[[V:.+]] = memref.collapse_shape %[[COPY]]
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index %[[V]]
// CHECK:         linalg.copy ins(%[[COPY]] : memref<2x2xf32>)
func.func @library_call(%out: memref<2x2xf32>, %other: memref<f32>) {
  %g = memref.get_global @w : memref<2x2xf32>
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %other[] : memref<f32>
  %v = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %p = memref.extract_aligned_pointer_as_index %v : memref<4xf32> -> index
  call @cleave_kernel_matmul(%p) : (index) -> ()
  linalg.copy ins(%g : memref<2x2xf32>) outs(%out : memref<2x2xf32>)
  return
}

// -----

memref.global "private" constant @w : memref<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]>

// CHECK-LABEL: func.func @loop_nests_only
// CHECK-NEXT:    %[[G:.+]] = memref.get_global @w : memref<2x2xf32>
// CHECK-NEXT:    linalg.copy ins(%[[G]] : memref<2x2xf32>)
// CHECK-NEXT:    %[[V:.+]] = memref.collapse_shape %[[G]]
// CHECK-NEXT:    memref.copy %[[V]]
// CHECK-NEXT:    return
func.func @loop_nests_only(%out: memref<2x2xf32>, %flat: memref<4xf32>) {
  %g = memref.get_global @w : memref<2x2xf32>
  linalg.copy ins(%g : memref<2x2xf32>) outs(%out : memref<2x2xf32>)
  %v = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  memref.copy %v, %flat : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A global that is not constant is not the pass's: a copy would hide the
// writes (the verifier refuses its host use instead).
memref.global "private" @state : memref<2xf32> = dense<0.0>

// CHECK-LABEL: func.func @mutable_global
// CHECK-NEXT:    %[[G:.+]] = memref.get_global @state : memref<2xf32>
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index %[[G]]
func.func @mutable_global() -> index {
  %g = memref.get_global @state : memref<2xf32>
  %p = memref.extract_aligned_pointer_as_index %g : memref<2xf32> -> index
  return %p : index
}

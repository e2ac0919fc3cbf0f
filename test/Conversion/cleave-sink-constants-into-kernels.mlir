// RUN: cleave-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cleave-sink-constants-into-kernels))' | FileCheck %s --check-prefix=SINK
// RUN: cleave-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cleave-sink-constants-into-kernels),gpu-kernel-outlining,symbol-dce)' | FileCheck %s
// A constant global a launch reads (directly or through a view) moves into
// the kernel's module, which the driver loads into device memory: the host
// passes no address of its own memory, and keeps no copy of the global.

// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @masked
// CHECK-NOT:     memref.get_global
// CHECK-NOT:     memref.collapse_shape
// CHECK:         gpu.launch_func @masked_kernel::@masked_kernel {{.*}} args(%arg0 : memref<6xf32>)
// CHECK-NOT:     memref.get_global
// CHECK:         return
// CHECK:       gpu.module @masked_kernel {
// CHECK:         gpu.func @masked_kernel(%[[ARG:.+]]: memref<6xf32>) kernel
// CHECK:           %[[G:.+]] = memref.get_global @mask : memref<2x3xf32>
// CHECK:           %[[V:.+]] = memref.collapse_shape %[[G]]
// CHECK:           memref.load %[[V]]
// CHECK:       memref.global "private" constant @mask : memref<2x3xf32> = dense<{{\[\[}}0.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00]]>

// The pass itself: the read and its view move into the launch, and the
// host's are gone.
// SINK-LABEL: func.func @masked
// SINK-NOT:     memref.get_global
// SINK:         gpu.launch
// SINK-NEXT:      %[[G:.+]] = memref.get_global @mask : memref<2x3xf32>
// SINK-NEXT:      %[[V:.+]] = memref.collapse_shape %[[G]]
// SINK:           memref.load %[[V]]

module attributes {gpu.container_module} {
  memref.global "private" constant @mask : memref<2x3xf32> = dense<[[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]>
  func.func @masked(%m: memref<6xf32>) {
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %g = memref.get_global @mask : memref<2x3xf32>
    %v = memref.collapse_shape %g [[0, 1]] : memref<2x3xf32> into memref<6xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
      %x = memref.load %v[%tx] : memref<6xf32>
      %y = memref.load %m[%tx] : memref<6xf32>
      %z = arith.mulf %x, %y : f32
      memref.store %z, %m[%tx] : memref<6xf32>
      gpu.terminator
    }
    return
  }
}

// -----

// A global that is not constant stays where it is: each kernel module would
// hold a copy of its own, and writes would be lost.
// SINK-LABEL: func.func @mutable
// SINK-NEXT:    memref.get_global @state
// SINK:         gpu.launch
// SINK-NOT:       memref.get_global
// SINK:           gpu.terminator
module attributes {gpu.container_module} {
  memref.global "private" @state : memref<4xf32> = dense<0.0>
  func.func @mutable() {
    %g = memref.get_global @state : memref<4xf32>
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      %x = memref.load %g[%tx] : memref<4xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %g[%tx] : memref<4xf32>
      gpu.terminator
    }
    return
  }
}

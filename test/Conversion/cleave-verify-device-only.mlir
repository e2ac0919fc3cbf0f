// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-verify-device-only | FileCheck %s
// Host code of a cuda artifact may take views and pointers of buffers,
// launch kernels and call the runtime, but never access a buffer itself.

// CHECK-LABEL: func.func @launches_only
module attributes {gpu.container_module} {
  func.func @launches_only(%ctx: !llvm.ptr, %arena: memref<256xi8>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = memref.view %arena[%c0][] : memref<256xi8> to memref<8x8xf32>
    %p = memref.extract_aligned_pointer_as_index %v : memref<8x8xf32> -> index
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%v : memref<8x8xf32>)
    return
  }
  gpu.module @k {
    // Kernels access memory: that is their job.
    gpu.func @k(%m: memref<8x8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0, %c0] : memref<8x8xf32>
      memref.store %x, %m[%c0, %c0] : memref<8x8xf32>
      gpu.return
    }
  }
}

// -----

func.func @host_load(%m: memref<f32>, %n: memref<f32>) {
  // expected-error @+1 {{'memref.load' would access device memory from the host: every access in a cuda artifact must run in a GPU kernel}}
  %x = memref.load %m[] : memref<f32>
  // expected-error @+1 {{'memref.copy' would access device memory from the host}}
  memref.copy %m, %n : memref<f32> to memref<f32>
  return
}

// -----

func.func @host_loop(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // Reported once, at the loop.
  // expected-error @+1 {{'scf.for' would access device memory from the host}}
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %m[%i] : memref<4xf32>
  }
  return
}

// -----

func.func @host_alloc() {
  // expected-error @+1 {{'memref.alloc' would access device memory from the host}}
  %m = memref.alloc() : memref<4xf32>
  return
}

// -----

func.func @missed_linalg(%m: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'linalg.fill' would access device memory from the host}}
  linalg.fill ins(%zero : f32) outs(%m : memref<4xf32>)
  return
}

// -----

// The collectives' arrays of pointers and sizes are host stack memory.
// CHECK-LABEL: func.func @collective_arrays
func.func @collective_arrays(%n: i64) {
  %c0 = arith.constant 0 : index
  %sizes = memref.alloca() : memref<2xi64>
  memref.store %n, %sizes[%c0] : memref<2xi64>
  return
}

// -----

module attributes {gpu.container_module} {
  func.func @stack_to_kernel() {
    %c1 = arith.constant 1 : index
    %a = memref.alloca() : memref<2xi64>
    // expected-error @+1 {{passes host stack memory to a kernel}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<2xi64>)
    return
  }
  gpu.module @k {
    gpu.func @k(%m: memref<2xi64>) kernel {
      gpu.return
    }
  }
}

// -----

// A constant global read from host code is an address in the artifact's
// host memory: passed to a kernel, the GPU would fault on it.
module attributes {gpu.container_module} {
  memref.global "private" constant @mask : memref<4xf32> = dense<[0.0, 1.0, 1.0, 1.0]>
  func.func @host_global_to_kernel(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{reads global @mask from host code, where it is an address in the artifact's host memory, and passes it to 'gpu.launch_func': kernels and library calls read device memory}}
    %g = memref.get_global @mask : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%g : memref<4xf32>, %m : memref<4xf32>)
    return
  }
  gpu.module @k {
    gpu.func @k(%g: memref<4xf32>, %m: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// Named by its consumer past the views: a library call's pointer.
memref.global "private" constant @weights : memref<2x2xf32> = dense<1.0>
func.func @host_global_to_library_call() -> index {
  // expected-error @+1 {{reads global @weights from host code, where it is an address in the artifact's host memory, and passes it to 'memref.extract_aligned_pointer_as_index'}}
  %g = memref.get_global @weights : memref<2x2xf32>
  %v = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %p = memref.extract_aligned_pointer_as_index %v : memref<4xf32> -> index
  return %p : index
}

// RUN: cleave-opt %s --cleave-deduplicate-kernels | FileCheck %s
// Launches of the same code share the first module's kernel, whatever the
// modules and kernels are called; kernels that differ in an op, an
// attribute, the order of their operands or how their module is built stay
// apart.

// CHECK-LABEL: func.func @micro_step
// CHECK: gpu.launch_func @micro_step_kernel::@micro_step_kernel {{.*}} args(%arg0 : memref<8xf32>)
// CHECK: gpu.launch_func @micro_step_kernel::@micro_step_kernel {{.*}} args(%arg1 : memref<8xf32>)
// CHECK: gpu.launch_func @micro_step_kernel_1::@micro_step_kernel {{.*}} args(%arg0 : memref<8xf32>)
// CHECK: gpu.launch_func @micro_step_kernel_2::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_3::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_4::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_5::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_6::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_7::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_7::@micro_step_kernel
// CHECK: gpu.launch_func @micro_step_kernel_9::@micro_step_kernel
// CHECK-LABEL: func.func @eval_step
// CHECK: gpu.launch_func @micro_step_kernel::@micro_step_kernel {{.*}} args(%arg0 : memref<8xf32>)

// The twins' modules are gone; every other module stays.
// CHECK: gpu.module @micro_step_kernel {
// CHECK-NOT: gpu.module @micro_step_kernel_0
// CHECK: gpu.module @micro_step_kernel_1 {
// CHECK: gpu.module @micro_step_kernel_2 {
// CHECK: gpu.module @micro_step_kernel_3 {
// CHECK: gpu.module @micro_step_kernel_6 {
// CHECK: gpu.module @micro_step_kernel_4 [#nvvm.target<chip = "sm_90">] {
// CHECK: gpu.module @micro_step_kernel_5 {
// CHECK: gpu.module @micro_step_kernel_7 {
// CHECK-NOT: gpu.module @micro_step_kernel_8
// CHECK: gpu.module @micro_step_kernel_9 {
// CHECK-NOT: gpu.module @eval_step_kernel

module attributes {gpu.container_module} {
  func.func @micro_step(%a: memref<8xf32>, %b: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @micro_step_kernel::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_0::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%b : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_1::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_2::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_3::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>, %b : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_4::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_5::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_6::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>, %b : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_7::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_8::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%b : memref<8xf32>)
    gpu.launch_func @micro_step_kernel_9::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    return
  }
  func.func @eval_step(%a: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @eval_step_kernel::@eval_step_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    return
  }

  // x * 2, the first of its code.
  gpu.module @micro_step_kernel {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %t = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %x = memref.load %m[%t] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  // The same code, other value names and locations.
  gpu.module @micro_step_kernel_0 {
    gpu.func @micro_step_kernel(%buffer: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %tid = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      %v = memref.load %buffer[%tid] : memref<8xf32> loc("elsewhere.mlir":3:4)
      %w = arith.mulf %v, %c : f32
      memref.store %w, %buffer[%tid] : memref<8xf32>
      gpu.return
    }
  }
  // Another constant.
  gpu.module @micro_step_kernel_1 {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %t = gpu.thread_id x
      %two = arith.constant 3.0 : f32
      %x = memref.load %m[%t] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  // Another block size.
  gpu.module @micro_step_kernel_2 {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %t = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %x = memref.load %m[%t] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  // A copy from the first buffer to the second...
  gpu.module @micro_step_kernel_3 {
    gpu.func @micro_step_kernel(%x: memref<8xf32>, %y: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<8xf32>
      memref.store %v, %y[%t] : memref<8xf32>
      gpu.return
    }
  }
  // ... and from the second to the first: the same ops (and hash), other
  // wiring.
  gpu.module @micro_step_kernel_6 {
    gpu.func @micro_step_kernel(%x: memref<8xf32>, %y: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %y[%t] : memref<8xf32>
      memref.store %v, %x[%t] : memref<8xf32>
      gpu.return
    }
  }
  // Built for a target: not the same build as the others.
  gpu.module @micro_step_kernel_4 [#nvvm.target<chip = "sm_90">] {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %t = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %x = memref.load %m[%t] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  // Holds a helper besides its kernel: left as it is.
  gpu.module @micro_step_kernel_5 {
    func.func private @helper()
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %t = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %x = memref.load %m[%t] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  // A kernel with the constant it reads, as outlining clones it...
  gpu.module @micro_step_kernel_7 {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %g = memref.get_global @mask : memref<8xf32>
      %x = memref.load %g[%t] : memref<8xf32>
      memref.store %x, %m[%t] : memref<8xf32>
      gpu.return
    }
    memref.global "private" constant @mask : memref<8xf32> = dense<1.0>
  }
  // ... its twin...
  gpu.module @micro_step_kernel_8 {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %g = memref.get_global @mask : memref<8xf32>
      %x = memref.load %g[%t] : memref<8xf32>
      memref.store %x, %m[%t] : memref<8xf32>
      gpu.return
    }
    memref.global "private" constant @mask : memref<8xf32> = dense<1.0>
  }
  // ... and a kernel that reads another constant.
  gpu.module @micro_step_kernel_9 {
    gpu.func @micro_step_kernel(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %g = memref.get_global @mask_0 : memref<8xf32>
      %x = memref.load %g[%t] : memref<8xf32>
      memref.store %x, %m[%t] : memref<8xf32>
      gpu.return
    }
    memref.global "private" constant @mask_0 : memref<8xf32> = dense<2.0>
  }
  // The evaluation's copy: the same code under another kernel name.
  gpu.module @eval_step_kernel {
    gpu.func @eval_step_kernel(%m: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %t = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %x = memref.load %m[%t] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
}

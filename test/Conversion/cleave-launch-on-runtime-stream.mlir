// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-launch-on-runtime-stream | FileCheck %s
// Every launch of an entry runs on the stream cleave_gpu_stream(ctx) returns,
// fetched once per entry: no stream of MLIR's own (mgpuStreamCreate).

// CHECK-LABEL: llvm.func @micro_step(
// CHECK-SAME: %[[CTX:[^:]+]]: !llvm.ptr, %[[BUF:[^:]+]]: !llvm.ptr)
// CHECK-NEXT: %[[STREAM:.+]] = llvm.call @cleave_gpu_stream(%[[CTX]]) : (!llvm.ptr) -> !llvm.ptr
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @k::@k
// CHECK: llvm.call @cleave_kernel_matmul
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @k::@k
// CHECK-LABEL: llvm.func @no_launches(
// CHECK-NOT: cleave_gpu_stream
// CHECK: llvm.return
// CHECK: llvm.func @cleave_gpu_stream(!llvm.ptr) -> !llvm.ptr
// CHECK-NOT: llvm.func @cleave_gpu_stream
module attributes {gpu.container_module} {
  llvm.func @cleave_kernel_matmul(!llvm.ptr, i64)
  llvm.func @micro_step(%ctx: !llvm.ptr, %buf: !llvm.ptr) {
    %one = llvm.mlir.constant(1 : index) : i64
    %id = llvm.mlir.constant(0 : i64) : i64
    gpu.launch_func @k::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) : i64 args(%buf : !llvm.ptr)
    llvm.call @cleave_kernel_matmul(%ctx, %id) : (!llvm.ptr, i64) -> ()
    gpu.launch_func @k::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) : i64 args(%buf : !llvm.ptr)
    llvm.return
  }
  llvm.func @no_launches(%ctx: !llvm.ptr) {
    llvm.return
  }
  gpu.module @k {
    llvm.func @k(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{launches kernels but has no kernel context (a pointer first argument) to get the stream from}}
  llvm.func @no_context(%n: i64) {
    %one = llvm.mlir.constant(1 : index) : i64
    gpu.launch_func @k::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) : i64
    llvm.return
  }
  gpu.module @k {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

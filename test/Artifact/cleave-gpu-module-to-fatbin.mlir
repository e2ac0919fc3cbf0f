// REQUIRES: cuda-toolkit
// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-gpu-module-to-fatbin | FileCheck %s
// Each NVVM kernel module becomes one gpu.binary holding one fatbin (cubins
// for every target, PTX of the lowest), selected by #gpu.select_object<0>;
// the object is labelled with the lowest target, whatever the order.

// CHECK: gpu.binary @k <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, "P\EDU\BA
// CHECK-NOT: #gpu.object
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<O = 3, chip = "sm_90">, #nvvm.target<O = 3, chip = "sm_80">] {
    llvm.func @k(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %x = nvvm.read.ptx.sreg.tid.x : i32
      %g = llvm.getelementptr %p[%x] : (!llvm.ptr, i32) -> !llvm.ptr, i32
      llvm.store %x, %g : i32, !llvm.ptr
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{expected #nvvm.target attributes only (run nvvm-attach-target)}}
  gpu.module @untargeted {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// Modules compile on several threads; their binaries stay in module order,
// each where its module was.
// CHECK: gpu.binary @a <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">
// CHECK: func.func private @between()
// CHECK: gpu.binary @b <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">
// CHECK: gpu.binary @c <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  gpu.module @a [#nvvm.target<O = 3, chip = "sm_90">] {
    llvm.func @a() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func private @between()
  gpu.module @b [#nvvm.target<O = 3, chip = "sm_90">] {
    llvm.func @b(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %x = nvvm.read.ptx.sreg.tid.x : i32
      %g = llvm.getelementptr %p[%x] : (!llvm.ptr, i32) -> !llvm.ptr, i32
      llvm.store %x, %g : i32, !llvm.ptr
      llvm.return
    }
  }
  gpu.module @c [#nvvm.target<O = 3, chip = "sm_90">] {
    llvm.func @c() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

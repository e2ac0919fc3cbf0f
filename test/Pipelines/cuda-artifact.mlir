// The cuda artifact of the MLP (cuda-artifact-models.mlir checks the other
// models and options): every kernel module is a fatbin with a cubin for
// each --gpu-arch (assembled by ptxas, checked in the cubins' own ELF
// headers) plus the lowest arch's PTX; the host code gets its stream from
// the runtime and launches on it; the linked artifact needs only the
// runtime's symbols, the contract's mgpu* functions and libc.
// REQUIRES: cuda-toolkit

// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda --gpu-arch=sm_90,sm_80 --compile-to=llvm | FileCheck %s --check-prefix=LLVM

// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda --compile-to=gpu -o %t.mlp.mlir
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda -o %t.mlp.cleave
// RUN: %python %S/Inputs/fatbins.py %t.mlp.cleave %t.mlp.mlir | FileCheck %s --check-prefix=FATBIN
// RUN: llvm-nm -D --undefined-only %t.mlp.cleave | FileCheck %s --check-prefix=UNDEF-MLP --implicit-check-not="U mgpu" --implicit-check-not="U cleave_"

// The registered pipeline is the same back end.
// RUN: cleave-opt %cleave_src/examples/regression.mlir --cleave-cuda-pipeline="loss=mse micro-batch=4 gpu-arch=sm_90" | FileCheck %s --check-prefix=OPT
// OPT: llvm.call @cleave_gpu_stream
// OPT: gpu.binary @micro_step_kernel <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">

// The same for the other models and options (LeNet, the math, cast and
// norm ops, LAMB, ZeRO-1, one arch): cuda-artifact-models.mlir, left out of
// the sanitizer build, where each full compile costs ten times as much and
// runs the same Cleave code as the ones above.

// LLVM-LABEL: llvm.func internal @micro_step(
// LLVM-SAME: %[[CTX:[^:]+]]: !llvm.ptr
// LLVM-NEXT: %[[STREAM:.+]] = llvm.call @cleave_gpu_stream(%[[CTX]]) : (!llvm.ptr) -> !llvm.ptr
// LLVM-NOT: {{llvm.load|llvm.store|mgpu}}
// LLVM: llvm.call @cleave_kernel_matmul(%[[CTX]],
// LLVM-NOT: {{llvm.load|llvm.store|mgpu}}
// LLVM: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @micro_step_kernel::@micro_step_kernel
// LLVM-NOT: {{llvm.load|llvm.store|mgpu}}
// LLVM: llvm.return
// LLVM: gpu.binary @micro_step_kernel <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, "P\EDU\BA
// LLVM-LABEL: llvm.func internal @apply_step(
// LLVM-SAME: %[[CTX:[^:]+]]: !llvm.ptr
// LLVM-NEXT: llvm.call @cleave_gpu_stream(%[[CTX]])
// The manifest: the arches in command-line order, PTX of the lowest.
// LLVM: llvm.mlir.global internal constant @__cleave_manifest
// LLVM-SAME: \22device\22:\22cuda\22
// LLVM-SAME: \22gpu_arches\22:[\22sm_90\22,\22sm_80\22]
// LLVM-SAME: \22ptx_arch\22:\22sm_80\22

// FATBIN: one fatbin per gpu.module
// FATBIN-NEXT: fatbins: [[N:[0-9]+]]
// FATBIN-NEXT: [[N]] x [elf sm_80, elf sm_90, ptx sm_80]
// FATBIN-NOT: x [


// UNDEF-MLP-DAG: U cleave_gpu_stream
// UNDEF-MLP-DAG: U cleave_kernel_matmul
// UNDEF-MLP-DAG: U mgpuLaunchKernel
// UNDEF-MLP-DAG: U mgpuModuleGetFunction
// UNDEF-MLP-DAG: U mgpuModuleLoad
// UNDEF-MLP-DAG: U mgpuModuleUnload


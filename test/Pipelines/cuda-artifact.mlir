// cuda artifacts of the MLP, LeNet and the norms model: every kernel module
// is a fatbin with a cubin for each --gpu-arch (assembled by ptxas, checked
// in the cubins' own ELF headers) plus the lowest arch's PTX; the host code
// gets its stream from the runtime and launches on it; the linked artifact
// needs only the runtime's symbols, the contract's mgpu* functions and libc.
// REQUIRES: cuda-toolkit

// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda --gpu-arch=sm_90,sm_80 --compile-to=llvm | FileCheck %s --check-prefix=LLVM

// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda --compile-to=gpu -o %t.mlp.mlir
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda -o %t.mlp.cleave
// RUN: %python %S/Inputs/fatbins.py %t.mlp.cleave %t.mlp.mlir | FileCheck %s --check-prefix=FATBIN
// RUN: llvm-nm -D --undefined-only %t.mlp.cleave | FileCheck %s --check-prefix=UNDEF-MLP --implicit-check-not="U mgpu" --implicit-check-not="U cleave_"

// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=16 --accumulate=4 --optimizer=momentum --target=cuda --compile-to=gpu -o %t.lenet.mlir
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=16 --accumulate=4 --optimizer=momentum --target=cuda -o %t.lenet.cleave
// RUN: %python %S/Inputs/fatbins.py %t.lenet.cleave %t.lenet.mlir | FileCheck %s --check-prefix=FATBIN
// RUN: llvm-nm -D --undefined-only %t.lenet.cleave | FileCheck %s --check-prefix=UNDEF-LENET --implicit-check-not="U mgpu" --implicit-check-not="U cleave_"

// The elementwise math ops (libdevice sin, cos, floor, ceil, rint, pow) to
// cubins: assembled and linked.
// RUN: cleave-compile %S/Inputs/math_ops.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda -o %t.math.cleave

// nn.cast (f32, f64, i32 and i64 conversions) to cubins.
// RUN: cleave-compile %S/Inputs/cast_ops.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda -o %t.cast.cleave

// RUN: cleave-compile %S/Inputs/norms.mlir --micro-batch=8 --accumulate=2 --optimizer=lamb --clip-norm=1 --target=cuda --compile-to=gpu -o %t.norms.mlir 2>/dev/null
// RUN: cleave-compile %S/Inputs/norms.mlir --micro-batch=8 --accumulate=2 --optimizer=lamb --clip-norm=1 --target=cuda -o %t.norms.cleave 2>/dev/null
// RUN: %python %S/Inputs/fatbins.py %t.norms.cleave %t.norms.mlir | FileCheck %s --check-prefix=FATBIN
// LAMB's and clipping's norms over whole weight matrices are block
// reductions (gpu.all_reduce: shuffles and shared memory).
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=lamb --clip-norm=1 --target=cuda --compile-to=gpu -o %t.lamb.mlir
// RUN: FileCheck %s --check-prefix=LAMB < %t.lamb.mlir
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=lamb --clip-norm=1 --target=cuda -o %t.lamb.cleave
// RUN: %python %S/Inputs/fatbins.py %t.lamb.cleave %t.lamb.mlir | FileCheck %s --check-prefix=FATBIN
// LAMB-LABEL: func.func @apply_step(
// LAMB: gpu.launch_func @[[NORM:apply_step_kernel[_0-9]*]]::@apply_step_kernel blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%{{.+}} : memref<512x784xf32>, %{{.+}} : memref<f64>)
// LAMB: gpu.module @[[NORM]]
// LAMB: gpu.all_reduce add %{{.+}} uniform

// Data-parallel with ZeRO-1: the collectives' host arrays stay on the host.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=4 --reduce=mean --ranks=2 --shard-optimizer-state --optimizer=adam --target=cuda -o %t.zero.cleave
// RUN: llvm-nm -D --undefined-only %t.zero.cleave | FileCheck %s --check-prefix=UNDEF-ZERO --implicit-check-not="U mgpu"
// UNDEF-ZERO-DAG: U cleave_reduce_scatter
// UNDEF-ZERO-DAG: U cleave_all_gather

// One arch only: one cubin and its PTX.
// RUN: cleave-compile %cleave_src/examples/regression.mlir --loss=mse --micro-batch=4 --target=cuda --gpu-arch=sm_90 -o %t.sm90.cleave
// RUN: %python %S/Inputs/fatbins.py %t.sm90.cleave | FileCheck %s --check-prefix=SM90

// The registered pipeline is the same back end.
// RUN: cleave-opt %cleave_src/examples/regression.mlir --cleave-cuda-pipeline="loss=mse micro-batch=4 gpu-arch=sm_90" | FileCheck %s --check-prefix=OPT
// OPT: llvm.call @cleave_gpu_stream
// OPT: gpu.binary @micro_step_kernel <#gpu.select_object<0 : i64>> [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">

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

// SM90: fatbins:
// SM90-NEXT: x [elf sm_90, ptx sm_90]
// SM90-NOT: x [

// UNDEF-MLP-DAG: U cleave_gpu_stream
// UNDEF-MLP-DAG: U cleave_kernel_matmul
// UNDEF-MLP-DAG: U mgpuLaunchKernel
// UNDEF-MLP-DAG: U mgpuModuleGetFunction
// UNDEF-MLP-DAG: U mgpuModuleLoad
// UNDEF-MLP-DAG: U mgpuModuleUnload

// UNDEF-LENET-DAG: U cleave_gpu_stream
// UNDEF-LENET-DAG: U cleave_kernel_conv2d_bwd_data
// UNDEF-LENET-DAG: U cleave_kernel_conv2d_bwd_weights
// UNDEF-LENET-DAG: U cleave_kernel_conv2d_fwd
// UNDEF-LENET-DAG: U cleave_kernel_matmul
// UNDEF-LENET-DAG: U cleave_kernel_pool_bwd
// UNDEF-LENET-DAG: U cleave_kernel_pool_fwd
// UNDEF-LENET-DAG: U mgpuLaunchKernel
// UNDEF-LENET-DAG: U mgpuModuleGetFunction
// UNDEF-LENET-DAG: U mgpuModuleLoad
// UNDEF-LENET-DAG: U mgpuModuleUnload

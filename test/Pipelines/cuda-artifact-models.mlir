// cuda artifacts of LeNet, the math, cast and norm ops, constants, LAMB,
// ZeRO-1 and one arch, as cuda-artifact.mlir checks the MLP's: every kernel
// module is a fatbin with a cubin for each --gpu-arch plus the lowest
// arch's PTX, and the linked artifact needs only the runtime's symbols and
// the contract's mgpu* functions. Not in the sanitizer build: each full
// compile (ptxas and fatbinary for every kernel) costs ten times as much
// there and runs the Cleave code cuda-artifact.mlir already runs.
// REQUIRES: cuda-toolkit
// UNSUPPORTED: sanitized

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

// Constant tensors in the kernel modules (memref.global in a gpu.module,
// the cubin's .nv.global.init) through NVVM, ptxas and fatbinary.
// RUN: cleave-compile %S/Inputs/constants.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda --compile-to=gpu -o %t.constants.mlir
// RUN: cleave-compile %S/Inputs/constants.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda -o %t.constants.cleave
// RUN: %python %S/Inputs/fatbins.py %t.constants.cleave %t.constants.mlir | FileCheck %s --check-prefix=FATBIN

// bf16 (mixed-precision.md, "bf16 storage"): the generated kernels narrow
// the weights and the activations the matmuls read (an f32 load, a bf16
// store), and the ReLU's backward mask reads the bf16 copy (a bf16 load);
// NVVM, ptxas (cvt.rn.bf16.f32 on sm_80) and fatbinary take them.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --precision=bf16 --target=cuda --compile-to=gpu -o %t.bf16.mlir
// RUN: FileCheck %s --check-prefix=BF16 < %t.bf16.mlir
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --precision=bf16 --target=cuda -o %t.bf16.cleave
// RUN: %python %S/Inputs/fatbins.py %t.bf16.cleave %t.bf16.mlir | FileCheck %s --check-prefix=FATBIN
// BF16-LABEL: func.func @micro_step(
// BF16: gpu.launch_func @{{.*}} args(%{{.+}} : memref<512x784xf32>, %{{.+}} : memref<512x784xbf16>)
// BF16: call @cleave_kernel_matmul
// BF16: gpu.module
// BF16: arith.truncf %{{.+}} : f32 to bf16
// BF16: memref.store %{{.+}} : memref<512x784xbf16>
// BF16: arith.extf %{{.+}} : bf16 to f32

// bf16 LeNet (mixed-precision.md, "On cuda"): the second convolution calls
// cuDNN on bf16 tensors, its result included, and a generated kernel widens
// that result (a bf16 load) and adds the f32 bias; NVVM, ptxas and
// fatbinary take it. The first (single-channel) convolution stays f32.
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=16 --accumulate=4 --optimizer=adam --precision=bf16 --target=cuda --compile-to=gpu -o %t.lenet-bf16.mlir
// RUN: FileCheck %s --check-prefix=CONV-BF16 < %t.lenet-bf16.mlir
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=16 --accumulate=4 --optimizer=adam --precision=bf16 --target=cuda -o %t.lenet-bf16.cleave
// RUN: %python %S/Inputs/fatbins.py %t.lenet-bf16.cleave %t.lenet-bf16.mlir | FileCheck %s --check-prefix=FATBIN
// CONV-BF16-LABEL: func.func @micro_step(
// CONV-BF16: call @cleave_kernel_conv2d_fwd(%arg0, %c0_i64,
// CONV-BF16: call @cleave_kernel_conv2d_fwd(%arg0, %c3_i64,
// CONV-BF16: gpu.launch_func @[[WIDEN:[a-z_0-9]+]]::@micro_step_kernel {{.*}} args(%{{.+}} : memref<16x16x10x10xbf16>, %{{.+}} : memref<16xf32>, %{{.+}} : memref<16x16x10x10xf32>)
// CONV-BF16: gpu.module @[[WIDEN]]
// CONV-BF16: memref.load %{{.+}} : memref<16x16x10x10xbf16>
// CONV-BF16: arith.extf %{{.+}} : bf16 to f32
// CONV-BF16-NEXT: arith.addf

// Data-parallel with ZeRO-1: the collectives' host arrays stay on the host.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=4 --reduce=mean --ranks=2 --shard-optimizer-state --optimizer=adam --target=cuda -o %t.zero.cleave
// RUN: llvm-nm -D --undefined-only %t.zero.cleave | FileCheck %s --check-prefix=UNDEF-ZERO --implicit-check-not="U mgpu"
// UNDEF-ZERO-DAG: U cleave_reduce_scatter
// UNDEF-ZERO-DAG: U cleave_all_gather

// One arch only: one cubin and its PTX.
// RUN: cleave-compile %cleave_src/examples/regression.mlir --loss=mse --micro-batch=4 --target=cuda --gpu-arch=sm_90 -o %t.sm90.cleave
// RUN: %python %S/Inputs/fatbins.py %t.sm90.cleave | FileCheck %s --check-prefix=SM90

// An arch-specific arch: its cubin, and PTX only for a plain one (the
// runtime refuses ptx_arch sm_90a, so these compiled only with the fix).
// RUN: cleave-compile %cleave_src/examples/regression.mlir --loss=mse --micro-batch=4 --target=cuda --gpu-arch=sm_90a -o %t.sm90a.cleave
// RUN: %python %S/Inputs/fatbins.py %t.sm90a.cleave | FileCheck %s --check-prefix=SM90A
// RUN: cleave-compile %cleave_src/examples/regression.mlir --loss=mse --micro-batch=4 --target=cuda --gpu-arch=sm_90a,sm_100 -o %t.mixed.cleave
// RUN: %python %S/Inputs/fatbins.py %t.mixed.cleave | FileCheck %s --check-prefix=MIXED

// FATBIN: one fatbin per gpu.module
// FATBIN-NEXT: fatbins: [[N:[0-9]+]]
// FATBIN-NEXT: [[N]] x [elf sm_80, elf sm_90, ptx sm_80]
// FATBIN-NOT: x [

// SM90: fatbins:
// SM90-NEXT: x [elf sm_90, ptx sm_90]
// SM90-NOT: x [
// SM90A: fatbins:
// SM90A-NEXT: x [elf sm_90]
// SM90A-NOT: x [
// MIXED: fatbins:
// MIXED-NEXT: x [elf sm_100, elf sm_90, ptx sm_100]
// MIXED-NOT: x [
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

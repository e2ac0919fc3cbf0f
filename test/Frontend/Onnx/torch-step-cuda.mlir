// The models of torch-step.mlir through the CUDA back end: ConvTranspose
// runs on the backward-data convolution entry and its weight gradient on
// the backward-weights one (cuDNN), Resize on matmul entries (cuBLAS); the
// normalisations, the global max pool and everything else are generated
// kernels that ptxas assembles for sm_80 and sm_90, and the artifact links
// against the runtime's symbols and the contract's mgpu* functions only.
//
// REQUIRES: torch, cuda-toolkit
// RUN: %python %S/Inputs/torch_step.py --export upsampler %t.up.onnx 2>/dev/null
// RUN: cleave-compile %t.up.onnx --loss=cross-entropy --micro-batch=3 --target=cuda --compile-to=gpu -o %t.up.gpu.mlir
// RUN: FileCheck %s --check-prefix=UP < %t.up.gpu.mlir
// RUN: cleave-compile %t.up.onnx --loss=cross-entropy --micro-batch=3 --target=cuda -o %t.up.cleave
// RUN: %python %cleave_src/test/Pipelines/Inputs/fatbins.py %t.up.cleave %t.up.gpu.mlir | FileCheck %s --check-prefix=FATBIN
// RUN: llvm-nm -D --undefined-only %t.up.cleave | FileCheck %s --check-prefix=UNDEF --implicit-check-not="U mgpu" --implicit-check-not="U cleave_"
// RUN: %python %S/Inputs/torch_step.py --export norms %t.norms.onnx 2>/dev/null
// RUN: cleave-compile %t.norms.onnx --loss=cross-entropy --micro-batch=3 --target=cuda --compile-to=gpu -o %t.norms.gpu.mlir
// RUN: FileCheck %s --check-prefix=NORMS < %t.norms.gpu.mlir
// RUN: cleave-compile %t.norms.onnx --loss=cross-entropy --micro-batch=3 --target=cuda -o %t.norms.cleave
// RUN: %python %cleave_src/test/Pipelines/Inputs/fatbins.py %t.norms.cleave %t.norms.gpu.mlir | FileCheck %s --check-prefix=FATBIN

// The transposed convolution forward, then its weight gradient (the image
// is an input: no forward convolution of the cotangent is needed).
// UP-LABEL: func.func @micro_step(
// UP:       call @cleave_kernel_conv2d_bwd_data
// UP:       call @cleave_kernel_matmul
// UP:       call @cleave_kernel_conv2d_bwd_weights
// UP:       return
// UP-LABEL: func.func @eval_step(
// UP:       call @cleave_kernel_conv2d_bwd_data

// NORMS-LABEL: func.func @micro_step(
// NORMS:       call @cleave_kernel_conv2d_fwd
// NORMS:       call @cleave_kernel_pool_fwd
// NORMS:       call @cleave_kernel_pool_bwd
// NORMS:       call @cleave_kernel_conv2d_bwd_weights
// NORMS:       return

// FATBIN: one fatbin per gpu.module
// FATBIN-NEXT: fatbins: [[N:[0-9]+]]
// FATBIN-NEXT: [[N]] x [elf sm_80, elf sm_90, ptx sm_80]
// FATBIN-NOT: x [

// UNDEF-DAG: U cleave_gpu_stream
// UNDEF-DAG: U cleave_kernel_conv2d_bwd_data
// UNDEF-DAG: U cleave_kernel_conv2d_bwd_weights
// UNDEF-DAG: U cleave_kernel_matmul
// UNDEF-DAG: U mgpuLaunchKernel
// UNDEF-DAG: U mgpuModuleGetFunction
// UNDEF-DAG: U mgpuModuleLoad
// UNDEF-DAG: U mgpuModuleUnload

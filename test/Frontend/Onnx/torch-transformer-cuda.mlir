// The transformer block exported by torch.onnx (opset 17) through the CUDA
// back end: every generated kernel (layer norms, attention softmax, erf
// GELU, dropout, the embedding's gradient scatter, Adam) assembled by ptxas
// for sm_80 and sm_90, with sm_80 PTX, and an artifact that links against
// the runtime's symbols and the contract's mgpu* functions only.
// REQUIRES: torch, cuda-toolkit
// RUN: %python %S/Inputs/make_model.py torch_block17 %t.onnx
// RUN: cleave-compile %t.onnx --micro-batch=4 --accumulate=2 --optimizer=adam --target=cuda --compile-to=gpu -o %t.gpu.mlir 2>/dev/null
// RUN: FileCheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: cleave-compile %t.onnx --micro-batch=4 --accumulate=2 --optimizer=adam --target=cuda -o %t.cleave 2>/dev/null
// RUN: %python %cleave_src/test/Pipelines/Inputs/fatbins.py %t.cleave %t.gpu.mlir | FileCheck %s --check-prefix=FATBIN
// RUN: llvm-nm -D --undefined-only %t.cleave | FileCheck %s --check-prefix=UNDEF --implicit-check-not="U mgpu" --implicit-check-not="U cleave_"

// GPU-LABEL: func.func @micro_step(
// GPU-NOT: {{memref\.(load|store|copy|alloc)|linalg\.|scf\.}}
// GPU: call @cleave_kernel_matmul
// GPU-NOT: {{memref\.(load|store|copy|alloc)|linalg\.|scf\.}}
// GPU: return
// GPU: gpu.module
// GPU: math.exp
// GPU: math.erf
// The embedding gradient scatters rows in order: one thread.
// GPU: known_block_size = array<i32: 1, 1, 1>
// GPU: scf.for
// GPU: scf.for
// GPU: memref.store %{{.+}} : memref<50x16xf32>

// FATBIN: one fatbin per gpu.module
// FATBIN-NEXT: fatbins: [[N:[0-9]+]]
// FATBIN-NEXT: [[N]] x [elf sm_80, elf sm_90, ptx sm_80]
// FATBIN-NOT: x [

// UNDEF-DAG: U cleave_gpu_stream
// UNDEF-DAG: U cleave_kernel_matmul
// UNDEF-DAG: U mgpuLaunchKernel
// UNDEF-DAG: U mgpuModuleGetFunction
// UNDEF-DAG: U mgpuModuleLoad
// UNDEF-DAG: U mgpuModuleUnload

// cleave-compile --target=cuda: its options and its errors, before any work.
// RUN: cleave-compile --help | FileCheck %s --check-prefix=HELP
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=sm_80,sm_13 -o %t.a.cleave 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=gfx90a -o %t.b.cleave 2>&1 | FileCheck %s --check-prefix=ARCH2
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=sm_90,sm_90 -o %t.c.cleave 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch= -o %t.d.cleave 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=tpu -o %t.e.cleave 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=gpu 2>&1 | FileCheck %s --check-prefix=CPU-PHASE
// A toolkit named by CUDA_HOME but without ptxas: one line, before any work,
// also when CUDA_ROOT (read first) is unset.
// RUN: not env -u CUDA_ROOT -u CUDA_PATH CUDA_HOME=%t.no-cuda cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda -o %t.f.cleave 2>&1 | FileCheck %s --check-prefix=NO-PTXAS
// The IR up to the kernels' NVVM form needs no toolkit.
// RUN: env -u CUDA_ROOT -u CUDA_PATH CUDA_HOME=%t.no-cuda cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=NVVM
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=sm_90,sm_80 --compile-to=bufferize | FileCheck %s --check-prefix=MANIFEST
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=bufferize | FileCheck %s --check-prefix=CPU-MANIFEST
// An arch-specific arch embeds no PTX (it would run on that GPU only, which
// its cubin covers): the PTX is the lowest plain arch's, or there is none.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=sm_90a,sm_100 --compile-to=bufferize | FileCheck %s --check-prefix=MANIFEST-A
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=sm_90a --compile-to=bufferize | FileCheck %s --check-prefix=MANIFEST-A-ONLY
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target=cuda --gpu-arch=sm_100f -o %t.g.cleave 2>&1 | FileCheck %s --check-prefix=FAMILY

// HELP: --gpu-arch=<string> - With target=cuda: the SM architectures
// HELP: --target=<value> - The device the step runs on
// HELP-NEXT: =cpu
// HELP-NEXT: =cuda

// ARCH: cleave-compile: error: unknown GPU architecture 'sm_13' in gpu-arch; expected SM architectures that LLVM's NVPTX back end knows, such as sm_80,sm_90
// ARCH2: cleave-compile: error: unknown GPU architecture 'gfx90a' in gpu-arch
// TWICE: cleave-compile: error: gpu-arch lists 'sm_90' twice
// EMPTY: cleave-compile: error: gpu-arch is empty
// TARGET: Cannot find option named 'tpu'
// CPU-PHASE: cleave-compile: error: phase 'gpu' exists only with --target=cuda
// NO-PTXAS: cleave-compile: error: target=cuda needs the CUDA toolkit's ptxas: set CUDA_HOME to the toolkit's directory (the one with bin/ptxas, e.g. /usr/local/cuda) or put ptxas on PATH (CUDA_HOME={{.*}}no-cuda has no bin/ptxas)
// NVVM: gpu.module @micro_step_kernel [#nvvm.target<O = 3, chip = "sm_80">, #nvvm.target<O = 3, chip = "sm_90">]
// NVVM: nvvm.read.ptx.sreg

// MANIFEST: \22device\22:\22cuda\22
// MANIFEST-SAME: \22gpu_arches\22:[\22sm_90\22,\22sm_80\22]
// MANIFEST-SAME: \22ptx_arch\22:\22sm_80\22
// MANIFEST-A: \22gpu_arches\22:[\22sm_90a\22,\22sm_100\22]
// MANIFEST-A-SAME: \22ptx_arch\22:\22sm_100\22
// MANIFEST-A-ONLY: \22gpu_arches\22:[\22sm_90a\22]
// MANIFEST-A-ONLY-NOT: ptx_arch
// FAMILY: cleave-compile: error: GPU architecture 'sm_100f' in gpu-arch is family-specific, which the runtime cannot match to a GPU yet; use sm_100 (any newer GPU) or sm_100a (that GPU only)
// CPU-MANIFEST: rt.manifest_json
// CPU-MANIFEST-NOT: \22device\22
// CPU-MANIFEST-NOT: gpu_arches

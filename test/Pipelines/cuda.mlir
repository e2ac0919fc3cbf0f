// The CUDA back end up to the kernels' NVVM form (no CUDA toolkit needed):
// every loop nest of the MLP (elementwise, row reductions, softmax and
// cross-entropy, the Adam update, the accumulators' zeroing, counters)
// becomes a kernel launch; the host keeps only the library calls, views and
// launches.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda --compile-to=gpu -o %t.mlp.mlir
// RUN: FileCheck %s --check-prefix=GPU < %t.mlp.mlir
// RUN: FileCheck %s --check-prefix=HOST < %t.mlp.mlir
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=4 --optimizer=adam --target=cuda --gpu-arch=sm_90 --compile-to=nvvm | FileCheck %s --check-prefix=NVVM
// RUN: cleave-compile %S/Inputs/norms.mlir --micro-batch=8 --accumulate=2 --optimizer=sgd --clip-norm=1 --target=cuda --compile-to=gpu -o %t.norms.mlir 2>/dev/null
// RUN: FileCheck %s --check-prefix=NORMS < %t.norms.mlir
// RUN: FileCheck %s --check-prefix=HOST < %t.norms.mlir
// Every example and optimizer: the host keeps no buffer access (the
// verifier would fail the compilation) through the kernels' NVVM form.
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --accumulate=2 --optimizer=nesterov --clip-norm=1 --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --accumulate=2 --optimizer=rmsprop --weight-decay=0.1 --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --accumulate=2 --optimizer=adagrad --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --accumulate=2 --optimizer=lamb --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --accumulate=2 --optimizer=lars --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// RUN: cleave-compile %cleave_src/examples/cifar_cnn.mlir --micro-batch=8 --accumulate=2 --optimizer=adamw --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// RUN: cleave-compile %cleave_src/examples/regression.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=momentum --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=HOST
// Constant tensors reach kernels and library calls in device memory.
// RUN: cleave-compile %S/Inputs/constants.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda --compile-to=gpu -o %t.constants.mlir
// RUN: FileCheck %s --check-prefix=CONST < %t.constants.mlir
// RUN: FileCheck %s --check-prefix=HOST < %t.constants.mlir
// Collectives take host stack arrays of device pointers and sizes.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 --reduce=adasum --optimizer=sgd --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=ADASUM
// ADASUM: %[[SIZES:.+]] = memref.alloca() : memref<6xi64>
// ADASUM: call @cleave_cross_rank_reduce(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr) -> ()

// Host code never touches a buffer: no loads, stores, copies, loops or
// linalg ops outside the gpu.modules, in any entry.
// A constant global read on the host would hand a kernel or a library
// call an address in the artifact's host memory.
// HOST-LABEL: func.func @micro_step(
// HOST-NOT: {{memref\.(load|store|copy|alloc|get_global)|linalg\.|scf\.}}
// HOST: return
// HOST-LABEL: func.func @apply_step(
// HOST-NOT: {{memref\.(load|store|copy|alloc|get_global)|linalg\.|scf\.}}
// HOST: return
// HOST-LABEL: func.func @eval_step(
// HOST-NOT: {{memref\.(load|store|copy|alloc|get_global)|linalg\.|scf\.}}
// HOST: return

// The GEMM's constant operand is first copied, by a kernel that reads it
// from its own module's global, into the arena; the mask is read where it
// is used. No global stays in host code.
// CONST-NOT: memref.global
// CONST-LABEL: func.func @micro_step(
// CONST: gpu.launch_func @[[COPY:micro_step_kernel[_0-9]*]]::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c4, %c1) args(%[[ARENA:.+]] : memref<4x4xf32>)
// CONST: memref.extract_aligned_pointer_as_index %[[ARENA]] : memref<4x4xf32>
// CONST: call @cleave_kernel_matmul(
// CONST: gpu.launch_func @[[MASK:micro_step_kernel_[0-9]+]]::@micro_step_kernel
// CONST: gpu.module @[[COPY]]
// CONST: %[[G:.+]] = memref.get_global @__constant_4x4xf32 : memref<4x4xf32>
// CONST: memref.load %[[G]]
// CONST: memref.global "private" constant @__constant_4x4xf32 : memref<4x4xf32> = dense<{{\[\[}}1.000000e+00, 5.000000e-01
// CONST: gpu.module @[[MASK]]
// CONST: memref.get_global @__constant_3xf32 : memref<3xf32>
// CONST: memref.global "private" constant @__constant_3xf32 : memref<3xf32> = dense<[1.000000e+00, 0.000000e+00, 1.000000e+00]>

// The GEMMs stay library calls on the kernel context, in program order
// with the launches.
// GPU-LABEL: func.func @micro_step(
// GPU-SAME: %[[CTX:[^:]+]]: !llvm.ptr,
// GPU: call @cleave_kernel_matmul(%[[CTX]], %c0_i64,
// GPU: call @cleave_kernel_matmul(%[[CTX]], %c2_i64,
// Softmax's row max: one thread per row (32 rows).
// GPU: gpu.launch_func @[[MAX:micro_step_kernel_[0-9]+]]::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%{{.+}} : memref<32x10xf32>, %{{.+}} : memref<32xf32>)
// exp(x - max) over 32x10: the class dimension on x, rows on y, two blocks
// of rows.
// GPU: gpu.launch_func @[[EXP:micro_step_kernel_[0-9]+]]::@micro_step_kernel blocks in (%c2, %c1, %c1) threads in (%c10, %c25, %c1)
// The loss, a full reduction: a kernel of one thread.
// GPU: gpu.launch_func @[[LOSS:micro_step_kernel_[0-9]+]]::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// GPU: call @cleave_kernel_matmul(%[[CTX]], %c3_i64,
// The ReLU mask of the backward pass: 32x512 in blocks of 256 threads.
// GPU: gpu.launch_func @[[MASK:micro_step_kernel_[0-9]+]]::@micro_step_kernel blocks in (%c32, %c2, %c1) threads in (%c256, %c1, %c1)
// GPU: return

// GPU: gpu.module @[[MAX]] [#nvvm.target<O = 3, chip = "sm_80">, #nvvm.target<O = 3, chip = "sm_90">]
// GPU: scf.for
// GPU: memref.load %{{.+}}[%thread_id_x, %{{.+}}] : memref<32x10xf32>
// GPU: arith.maximumf
// GPU: memref.store %{{.+}}, %{{.+}}[%thread_id_x] : memref<32xf32>
// GPU: gpu.module @[[EXP]]
// GPU: scf.if
// GPU: math.exp
// GPU: gpu.module @[[LOSS]]
// GPU: known_block_size = array<i32: 1, 1, 1>
// GPU: scf.for
// GPU: math.log
// GPU: memref.store %{{.+}}, %{{.+}}[] : memref<f32>
// GPU: gpu.module @[[MASK]]
// GPU: known_block_size = array<i32: 256, 1, 1>
// GPU: arith.cmpf ogt
// GPU: arith.select

// The Adam update: the bias corrections (f64, from the step counter and the
// hyperparameters, all read in the kernel) and the update itself, which also
// zeroes the accumulator of fc1.weight for the next window (its last reader:
// cleave-fold-guarded-updates folds the fill into it), so that no kernel of
// its own sweeps the accumulator again.
// GPU-LABEL: func.func @apply_step(
// GPU: gpu.launch_func @[[ADAM:apply_step_kernel_[0-9]+]]::@apply_step_kernel blocks in (%c512, %c4, %c1) threads in (%c256, %c1, %c1) args(%{{.+}} : memref<f32>, {{.*}}, %{{.+}} : memref<512x784xf32>, %{{.+}} : memref<512x784xf32>, %{{.+}} : memref<512x784xf32>, %{{.+}} : memref<512x784xf32>)
// GPU-NOT: args(%{{[^ ]+}} : memref<512x784xf32>)
// GPU: return
// GPU: gpu.module @[[ADAM]]
// GPU: %[[ZEROF:.+]] = arith.constant 0.000000e+00 : f32
// GPU: memref.load %{{.+}}[] : memref<i64>
// GPU: math.powf %{{.+}}, %{{.+}} : f64
// GPU: math.sqrt
// GPU: memref.store
// GPU: memref.store %[[ZEROF]], %{{.+}}[%block_id_x, %{{.+}}] : memref<512x784xf32>

// NVVM: gpu.module @micro_step_kernel [#nvvm.target<O = 3, chip = "sm_90">]
// NVVM: llvm.func @micro_step_kernel({{.*}}) attributes {gpu.kernel, {{.*}}nvvm.kernel
// NVVM: nvvm.read.ptx.sreg.tid.x
// NVVM: llvm.call @__nv_expf
// NVVM: llvm.call @__nv_logf
// NVVM-LABEL: func.func @apply_step(
// NVVM: llvm.call @__nv_pow
// NVVM: llvm.call @__nv_sqrt

// Batch norm's statistics reduce over the batch (the outer dimension): the
// reduction moves inside, one thread per feature, accumulating the weighted
// f32 elements in f64.
// NORMS-LABEL: func.func @micro_step(
// NORMS: gpu.launch_func @[[BNSUM:micro_step_kernel_[0-9]+]]::@micro_step_kernel blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%{{.+}} : memref<8x16xf32>, %{{.+}} : memref<8x1xf32>, %{{.+}} : memref<16xf64>)
// NORMS: return
// NORMS: gpu.module @[[BNSUM]]
// NORMS: scf.for %[[ROW:.+]] = %c0 to %c8 step %c1
// NORMS: memref.load %{{.+}}[%[[ROW]], %thread_id_x] : memref<8x16xf32>
// The norms' reciprocal square roots and GELU's erf run in kernels.
// NORMS: math.rsqrt
// NORMS: math.erf
// Clipping's global norm is recomputed in the kernels of the update.
// NORMS-LABEL: func.func @apply_step(
// NORMS: return
// NORMS: gpu.module
// NORMS: math.sqrt %{{.+}} : f64
// NORMS: arith.minimumf

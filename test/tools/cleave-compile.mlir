// cleave-compile: phases, Graphviz, help and bad command lines.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=loss | FileCheck %s --check-prefix=LOSS
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=grad | FileCheck %s --check-prefix=GRAD
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=step | FileCheck %s --check-prefix=STEP
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=4 --compile-to=split | FileCheck %s --check-prefix=SPLIT
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=linalg | FileCheck %s --check-prefix=LINALG
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=bufferize | FileCheck %s --check-prefix=BUF
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=llvm | FileCheck %s --check-prefix=LLVM
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --emit=dot -o %t.dot && FileCheck %s --check-prefix=DOT < %t.dot
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 -o %t.cleave && llvm-nm -D --defined-only %t.cleave | FileCheck %s --check-prefix=SYMS
// RUN: llvm-nm -D --defined-only %t.cleave | FileCheck %s --check-prefix=EXPORTS
// RUN: llvm-nm --defined-only %t.cleave | FileCheck %s --check-prefix=KERNELS
// RUN: cleave-compile --help | FileCheck %s --check-prefix=HELP
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir -o %t.x 2>&1 | FileCheck %s --check-prefix=NOBATCH
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --compile-to=bogus 2>&1 | FileCheck %s --check-prefix=PHASE
// RUN: not cleave-compile %t.does-not-exist.mlir --micro-batch=8 -o %t.y 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --optimizer=lion --compile-to=split 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --loss=hinge -o %t.hinge.cleave 2>&1 | FileCheck %s --check-prefix=BADLOSS
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 -o %t.nodir/m.cleave 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --lr=-1 -o %t.lr.cleave 2>&1 | FileCheck %s --check-prefix=NEGLR
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --init-normal-std=-0.5 -o %t.init.cleave 2>&1 | FileCheck %s --check-prefix=NEGINIT
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --optimizer=adam --beta2=1 -o %t.beta.cleave 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --optimizer=lamb --reduce=mean --ranks=2 --shard-optimizer-state -o %t.lamb.cleave 2>&1 | FileCheck %s --check-prefix=LAMB-ZERO
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --optimizer=rmsprop --reduce=mean --ranks=2 --shard-optimizer-state --compile-to=split | FileCheck %s --check-prefix=RMSPROP-ZERO
// Mixed precision: the kernels say bf16 (but the first convolution, whose
// single input channel oneDNN has no bf16 JIT kernel for, and the matmuls
// whose reduction is 16 or shorter: fc2's backward-data, K = 10, and the
// weight gradients over the micro-batch of 8; Bf16Rule.h), the manifest
// says so; a target without AVX512-BF16 is refused before anything is
// compiled.
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --precision=bf16 --target-features=+avx512bf16 --compile-to=bufferize | FileCheck %s --check-prefix=BF16
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --compile-to=bufferize | FileCheck %s --check-prefix=F32
// On cuda the matmuls say bf16 and read both operands stored in bf16
// (cuBLASLt's bf16 tensor cores: the weights narrowed once per entry point,
// mixed-precision.md), and the convolutions store every operand in bf16,
// the result included (cuDNN's bf16 tensors), their bias and accumulation
// left to the loops that widen the results; the single-channel one stays
// f32 as on the CPU. No warning.
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --precision=bf16 --target=cuda --compile-to=bufferize 2>%t.bf16-cuda.err | FileCheck %s --check-prefix=BF16-CUDA
// RUN: count 0 < %t.bf16-cuda.err
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --precision=bf16 --target-cpu=x86-64-v3 -o %t.bf16.cleave 2>&1 | FileCheck %s --check-prefix=BF16-TARGET
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --precision=bf16 --target=cuda --gpu-arch=sm_75,sm_90 -o %t.bf16-sm75.cleave 2>&1 | FileCheck %s --check-prefix=BF16-SM75
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --precision=fp8 -o %t.fp8.cleave 2>&1 | FileCheck %s --check-prefix=BF16-BAD
// A CPU model with AMX compiled for without it (AMX hidden by a hypervisor,
// or turned off) is warned about: on a machine without it bf16 runs on
// AVX512-BF16, at half f32's speed (mixed-precision.md, "Which CPUs").
// With AMX, on a CPU that never had it (Zen 4), and in f32, no warning.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --precision=bf16 --target-cpu=sapphirerapids --target-features=-amx-bf16 --compile-to=bufferize -o %t.noamx.mlir 2>&1 | FileCheck %s --check-prefix=BF16-NO-AMX
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --precision=bf16 --target-cpu=sapphirerapids --compile-to=bufferize -o %t.amx.mlir 2>%t.amx.err
// RUN: count 0 < %t.amx.err
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --precision=bf16 --target-cpu=znver4 --compile-to=bufferize -o %t.zen4.mlir 2>%t.zen4.err
// RUN: count 0 < %t.zen4.err
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --target-cpu=sapphirerapids --target-features=-amx-bf16 --compile-to=bufferize -o %t.f32.mlir 2>%t.f32.err
// RUN: count 0 < %t.f32.err
// An input a model names "weights" is the model's data, not the per-sample
// weights the runtime fills (the manifest's role comes from
// cleave-attach-loss's mark, not from the name): a forward-only artifact
// used to be refused ("sample weights must have shape [2]"), or, with a
// [B] input, to have its data replaced by ones.
// RUN: cleave-compile %S/Inputs/input-named-weights.mlir --micro-batch=2 --inference --compile-to=bufferize | FileCheck %s --check-prefix=NAMED-WEIGHTS
// NAMED-WEIGHTS: \22inputs\22:[{\22dtype\22:\22f32\22,\22name\22:\22weights\22,\22shape\22:[2,4]}]
// A diagnostic from the pipeline is one message, not followed by the module.
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --model=nope -o %t.nope.cleave 2>&1 | FileCheck %s --check-prefix=NOMODEL --implicit-check-not="see current operation"
// RUN: not cleave-compile %S/Inputs/tosa-model.mlir --micro-batch=2 -o %t.tosa.cleave 2>&1 | FileCheck %s --check-prefix=UNKNOWN-DIALECT

// LOSS: func.func @loss(
// LOSS: nn.cross_entropy
// GRAD: func.func @loss_grad(
// GRAD-SAME: train.gradient_of = @loss
// STEP: func.func @train_step(
// STEP: train.window_sum
// SPLIT: train.manifest = {accumulate = 4 : i64
// SPLIT: func.func @micro_step(
// SPLIT: func.func @apply_step(
// LINALG: rt.kernel matmul
// LINALG: linalg.generic
// BUF: rt.manifest_json
// BUF: call @cleave_kernel_matmul
// BUF-NOT: tensor<
// LLVM: llvm.func @cleave_entry_micro_step(
// LLVM: llvm.func @cleave_manifest()
// DOT: digraph micro_step {
// DOT: label="nn.linear"
// DOT: label="train.accumulate @fc1.weight.grad"
// DOT: digraph apply_step {
// DOT: label="train.sgd"
// SYMS-DAG: T cleave_abi_version
// SYMS-DAG: T cleave_entry_apply_step
// SYMS-DAG: T cleave_entry_eval_step
// SYMS-DAG: T cleave_entry_micro_step
// SYMS-DAG: T cleave_init_data
// SYMS-DAG: T cleave_manifest
// Loop nests are outlined (cleave-outline-kernels) into local functions
// that the artifact does not export.
// EXPORTS-NOT: _kernel
// KERNELS: t micro_step_kernel0
// HELP: --accumulate=<long>
// HELP: --compile-to=<phase>
// HELP: --emit=<string>
// HELP: --micro-batch=<long>
// HELP: --optimizer=<value>
// HELP-NEXT: =sgd
// HELP: --reduce=<value>
// HELP: --target-cpu=<string>
// HELP: --target-features=<string>
// NOBATCH: cleave-compile: error: --micro-batch=B is required (B >= 1)
// PHASE: cleave-compile: error: unknown phase 'bogus'; expected one of loss, grad, step, split, linalg, bufferize, gpu (cuda), nvvm (cuda), llvm
// MISSING: error: cannot open '{{.+}}does-not-exist.mlir'
// NOOUT: cleave-compile: error: -o <file> is required to write an artifact
// OPT: cleave-compile: for the --optimizer option: Cannot find option named 'lion'!
// BADLOSS: cleave-compile: for the --loss option: Cannot find option named 'hinge'!
// NEGLR: cleave-compile: error: lr=-1 is out of range; expected a finite value >= 0
// NEGINIT: error: init-normal-std must be >= 0 (0 keeps the parameters' values), got -0.500000
// BETA: cleave-compile: error: beta2=1 is out of range; expected 0 <= value < 1
// NODIR: cleave-compile: error: cannot write {{.+}}.nodir/m.cleave: directory {{.+}}.nodir does not exist
// NOMODEL: error: no model function @nope
// LAMB-ZERO: cleave-compile: error: optimizer=lamb cannot run with shard-optimizer-state (ZeRO-1): its layer-wise trust ratio needs the norms of whole parameters, which are sharded across ranks
// RMSPROP-ZERO: train.global state @fc1.weight.square_avg of @fc1.weight shards 2
// RMSPROP-ZERO: train.reduce_scatter
// RMSPROP-ZERO: train.rmsprop {{.+}} : tensor<{{[0-9]+}}xf32>, tensor<f32>
// RMSPROP-ZERO: train.all_gather

// BF16: rt.manifest_json = "{{.*}}\22id\22:0,\22kh\22:5,\22kw\22:5,\22n\22:8,\22o\22:6,\22oh\22:28,\22op\22:\22conv2d_fwd\22
// BF16-SAME: \22kernel\22:[2,2],\22n\22:8,\22oh\22:14,\22op\22:\22max_pool2d_fwd\22
// BF16-SAME: \22math\22:\22bf16\22,\22n\22:8,\22o\22:16,\22oh\22:10,\22op\22:\22conv2d_fwd\22,{{[^}]*}}\22src_type\22:\22bf16\22
// BF16-SAME: \22math\22:\22bf16\22,\22n\22:120,\22op\22:\22matmul\22
// BF16-SAME: \22k\22:10,\22m\22:8,\22n\22:120,\22op\22:\22matmul\22
// BF16-SAME: \22k\22:8,\22m\22:10,\22n\22:120,\22op\22:\22matmul\22
// BF16-SAME: \22math\22:\22bf16\22,\22n\22:8,\22o\22:16,\22oh\22:10,\22op\22:\22conv2d_bwd_data\22
// BF16-SAME: \22math\22:\22bf16\22,\22n\22:8,\22o\22:16,\22oh\22:10,\22op\22:\22conv2d_bwd_weights\22
// BF16-SAME: \22precision\22:\22bf16\22
// BF16-CUDA: rt.manifest_json = "{{.*}}\22id\22:0,\22kh\22:5,\22kw\22:5,\22n\22:8,\22o\22:6,\22oh\22:28,\22op\22:\22conv2d_fwd\22
// BF16-CUDA-SAME: {\22activation\22:\22none\22,\22bias\22:false,\22c\22:6,{{[^}]*}}\22dst_type\22:\22bf16\22,{{[^}]*}}\22math\22:\22bf16\22,{{[^}]*}}\22op\22:\22conv2d_fwd\22,{{[^}]*}}\22src_type\22:\22bf16\22,{{[^}]*}}\22wei_type\22:\22bf16\22}
// BF16-CUDA-SAME: \22a_type\22:\22bf16\22,{{[^}]*}}\22b_type\22:\22bf16\22,{{[^}]*}}\22math\22:\22bf16\22,\22n\22:120,\22op\22:\22matmul\22
// BF16-CUDA-SAME: {\22c\22:6,\22diff_dst_type\22:\22bf16\22,{{[^}]*}}\22dst_type\22:\22bf16\22,{{[^}]*}}\22math\22:\22bf16\22,{{[^}]*}}\22op\22:\22conv2d_bwd_data\22,{{[^}]*}}\22wei_type\22:\22bf16\22}
// BF16-CUDA-SAME: {\22accumulate\22:false,\22c\22:6,\22diff_dst_type\22:\22bf16\22,{{[^}]*}}\22dst_type\22:\22bf16\22,{{[^}]*}}\22math\22:\22bf16\22,{{[^}]*}}\22op\22:\22conv2d_bwd_weights\22,{{[^}]*}}\22src_type\22:\22bf16\22
// The single-channel convolution's weight gradient: f32 (no math after kw).
// BF16-CUDA-SAME: {\22accumulate\22:true,\22c\22:1,{{[^}]*}}\22kw\22:5,\22n\22:8,\22o\22:6,{{[^}]*}}\22op\22:\22conv2d_bwd_weights\22
// BF16-CUDA-SAME: \22precision\22:\22bf16\22
// F32: rt.manifest_json
// F32-NOT: \22math\22
// F32-SAME: \22precision\22:\22f32\22
// BF16-TARGET: error: precision=bf16 needs AVX512-BF16, which the target CPU 'x86-64-v3' does not have
// BF16-NO-AMX: warning: precision=bf16 for 'sapphirerapids' without AMX (as on a VM that hides it): on a machine without AMX the bf16 matmuls and convolutions run on AVX512-BF16, at about half the speed of f32 on these cores, and the model trains faster with precision=f32; bf16 still halves the bytes of the activations it stores (docs/design/mixed-precision.md, "Which CPUs")
// BF16-SM75: error: precision=bf16 on cuda needs sm_80 or newer (cuBLASLt multiplies bf16 operands on Ampere's and later tensor cores); gpu-arch has sm_75
// BF16-BAD: for the --precision option: Cannot find option named 'fp8'!

// Only the dialects Cleave lowers are registered (compiler/InitAll.cpp): a
// model in another one is refused where it is written, by name.
// UNKNOWN-DIALECT: tosa-model.mlir:4:{{[0-9]+}}: error: Dialect `tosa' not found for custom op 'tosa.abs'

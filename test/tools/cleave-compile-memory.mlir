// cleave-compile --report=memory: what a session of the artifact holds, by
// kind, from the manifest's "memory" object (docs/design/memory.md).
//
// The MLP 784-512-512-10 has 669706 parameters: 2678824 bytes (2.55 MiB),
// as many for the accumulators and, with Adam, twice as many for the
// moments. A micro-batch of 32 images is 100352 bytes of pixels, plus the
// labels (256) and the sample weights (128). The micro-step's arena holds
// the activations the backward pass reads.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --optimizer=adam --report=memory -o %t.cleave | FileCheck %s
// CHECK:      memory of one session (host, per rank):
// CHECK-NEXT:   parameters             2.55 MiB
// CHECK-NEXT:   optimizer state        5.11 MiB
// CHECK-NEXT:   accumulators           2.55 MiB
// CHECK-NEXT:   buffers                     0 B
// CHECK-NEXT:   counters                   32 B
// CHECK-NEXT:   inputs                 98.4 KiB  one micro-batch
// CHECK-NEXT:   outputs                {{.+}}
// CHECK-NEXT:   scratch                {{.+}}  the largest entry's arena, shared by the entries
// CHECK-NEXT:     apply_step
// CHECK-NEXT:     eval_step
// CHECK-NEXT:     micro_step           {{.+}}  of which {{.+}} activations held from forward to backward
// CHECK-NEXT:   kernel caches               0 B
// CHECK-NEXT:   kernel arena                0 B
// CHECK-NEXT:   total
// CHECK-NEXT:   not counted: the runtime's fixed overhead, about 16.0 MiB with one thread (code pages, oneDNN's JIT kernels and scratchpads, OpenMP; measured, docs/design/memory.md)

// The activations held grow with the micro-batch; the parameters do not.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=128 --optimizer=adam --report=memory -o %t.128.cleave | FileCheck %s --check-prefix=B128
// B128:      parameters             2.55 MiB
// B128:      inputs                  394 KiB  one micro-batch
// B128:      micro_step           {{[0-9.]+}} MiB  of which {{[0-9.]+}} MiB activations held

// LeNet's convolutions keep blocked copies of their weights and gradients.
// RUN: cleave-compile %cleave_src/examples/lenet.mlir --micro-batch=8 --report=memory -o %t.lenet.cleave | FileCheck %s --check-prefix=LENET
// LENET: kernel caches          {{[0-9.]+}} KiB  copies of convolution weights and gradients in oneDNN's layouts

// bf16 GEMMs read one bf16 copy of each weight matrix, in the weight's own
// layout, whether they read it transposed (forward) or as it is (the
// second layer's backward-data GEMM; the first layer's input has no
// gradient, and the last layer's backward-data matmul, K = 10, stays f32:
// Bf16Rule.h): 784*512 + 512*512 + 512*10 elements, 2 bytes each: 1337344
// bytes.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --precision=bf16 --report=memory -o %t.bf16.cleave | FileCheck %s --check-prefix=BF16
// BF16: micro_step            249 KiB  of which 178 KiB activations held from forward to backward
// BF16: kernel caches          1.28 MiB
// BF16: kernel arena                0 B
// The activations it holds are stored in bf16 (cleave-store-bf16): the
// ReLU outputs and the image's copy, which the weight gradients read, and
// ReLU's masks read the ReLU outputs instead of the f32 pre-activations:
// 178 KiB held against f32's 322 KiB (0.55x); the kernels stage nothing.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --report=memory -o %t.f32.cleave | FileCheck %s --check-prefix=F32
// F32: micro_step            323 KiB  of which 322 KiB activations held from forward to backward

// On cuda the report is of device memory, and says what it leaves out.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --target=cuda --report=memory -o %t.cuda.cleave | FileCheck %s --check-prefix=CUDA
// CUDA:      memory of one session (device, per rank):
// CUDA:      inputs                  197 KiB  two micro-batches (double-buffered)
// CUDA:      kernel caches               0 B
// CUDA:      not counted: the runtime's hyperparameters (a few KiB), the kernel modules (code and constants), the libraries' workspaces

// --remat=auto recomputes the two ReLUs' outputs (32x512 floats each) in the
// backward pass from the pre-activations, which the ReLUs' gradients hold
// anyway: 128 KiB fewer held for two loop nests. A budget recomputes GEMMs
// as well.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --remat=auto --report=memory -o %t.remat.cleave | FileCheck %s --check-prefix=REMAT
// REMAT: micro_step            {{.+}} of which 194 KiB activations held from forward to backward; 3 values recomputed in the backward pass instead (about 128 KiB fewer held, 32.8 kFLOP more per micro-step)
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --remat-budget=64KiB --report=memory -o %t.remat64.cleave | FileCheck %s --check-prefix=REMAT-BUDGET
// REMAT-BUDGET: micro_step            {{.+}} of which {{[0-9.]+}} KiB activations held from forward to backward; {{[0-9]+}} values recomputed in the backward pass instead (about {{.+}} fewer held, {{[0-9.]+}} MFLOP more per micro-step)
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --remat-budget=lots -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=BAD-BUDGET
// BAD-BUDGET: cleave-compile: error: remat-budget: 'lots' is not a size (bytes, or with KiB, MiB, GiB) or a percentage from 0% to 100%
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --inference --remat=auto -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=BAD-INFERENCE
// BAD-INFERENCE: cleave-compile: error: inference (a forward-only artifact) holds no activations for a backward pass: drop remat and remat-budget

// The planner: --global-batch=512 in 24 MiB. Its micro-batches are
// ceil(512 / N) for every N (every divisor of 512 and those whose last
// micro-batch per window is short). Micro-batch 512 does not fit without
// recomputation (its peak is the report plus the fixed overhead); 1 does,
// and bisection finds the largest that does: 171, N = 3 (171 + 171 + 170),
// which models faster than 128 x 4 although it computes one padded sample
// per window. Recomputation only pays above 171: with none of the GEMMs
// recomputed (auto) 256 does not fit; recomputing every one (max) costs
// 26% more work, so at best 0.79x, and that level stops after one compile.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --memory-budget=24MiB --report=memory -o %t.plan.cleave | FileCheck %s --check-prefix=PLAN
// PLAN:      plan for a global batch of 512 in 24.0 MiB of host memory (peak: the memory report plus the runtime's fixed overhead; rate: modelled samples/s against micro-batch 512 without recomputation, docs/design/memory.md):
// PLAN-NEXT:   micro-batch      N  remat       held       peak  recomputed   rate
// PLAN-NEXT:           512      1  none    5.03 MiB   27.7 MiB           -   does not fit
// PLAN-NEXT:             1    512  none    10.2 KiB   21.1 MiB           -   0.11x
// PLAN-NEXT:            23     23  none     231 KiB   21.4 MiB           -   0.73x
// PLAN-NEXT:            43     12  none     432 KiB   21.7 MiB           -   0.85x
// PLAN-NEXT:            74      7  none     743 KiB   22.1 MiB           -   0.91x
// PLAN-NEXT:           128      4  none    1.26 MiB   22.8 MiB           -   0.96x
// PLAN-NEXT:           171      3  none    1.68 MiB   23.3 MiB           -   0.97x
// PLAN-NEXT:           256      2  none    2.51 MiB   24.4 MiB           -   does not fit
// PLAN-NEXT:           512      1  auto    3.03 MiB   27.7 MiB          0%   does not fit
// PLAN-NEXT:           256      2  auto    1.51 MiB   24.4 MiB          0%   does not fit
// PLAN-NEXT:           512      1  max     2.03 MiB   26.7 MiB         26%   does not fit
// PLAN-NEXT: chosen: micro-batch 171, N = 3 (the last of each window 170), remat none: peak 23.3 MiB of 24.0 MiB, modelled rate 0.97x
// The artifact is the chosen plan's.
// PLAN:      inputs                  526 KiB  one micro-batch

// Nothing fits when what does not shrink with the micro-batch does not: the
// search stops at once and names the need by kind.
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --memory-budget=4MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=NOFIT
// NOFIT: cleave-compile: error: nothing fits in --memory-budget=4.00 MiB: the smallest plan measured (micro-batch 512, N = 1, remat none) needs 27.7 MiB (fixed overhead 16.0 MiB, scratch 5.05 MiB, accumulators 2.55 MiB, parameters 2.55 MiB, inputs 1.54 MiB, outputs 20.0 KiB)
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --micro-batch=8 --memory-budget=4MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-B
// PLAN-B: cleave-compile: error: --micro-batch is what --global-batch and --memory-budget choose; drop it
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-NO-BUDGET
// PLAN-NO-BUDGET: cleave-compile: error: --global-batch=G needs --micro-batch=B (N = ceil(G / B) micro-steps per window) or --memory-budget=SIZE (then cleave-compile chooses B, N and the recomputation)
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --memory-budget=1GiB --micro-batch=8 -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-NO-G
// PLAN-NO-G: cleave-compile: error: --memory-budget=SIZE plans for a global batch: give --global-batch=G too (G >= 1)

// A global batch with the user's micro-batch: N = ceil(100 / 32) = 4, the
// last micro-batch of each window 4 samples, recorded in the manifest as
// window_samples (the runtime's cleave_artifact_window_samples).
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --global-batch=100 --micro-batch=32 -o %t.g100.cleave
// RUN: %python %S/Inputs/manifest-fields.py %t.g100.cleave micro_batch accumulate window_samples | FileCheck %s --check-prefix=G100
// G100: micro_batch 32
// G100-NEXT: accumulate 4
// G100-NEXT: window_samples 100
// A micro-batch that divides the window records nothing.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --global-batch=96 --micro-batch=32 -o %t.g96.cleave
// RUN: %python %S/Inputs/manifest-fields.py %t.g96.cleave accumulate window_samples | FileCheck %s --check-prefix=G96
// G96: accumulate 3
// G96-NEXT: window_samples -
// Per rank with --reduce: each of 4 ranks' windows is 25 samples, 16 + 9.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --global-batch=100 --micro-batch=16 --reduce=mean --ranks=4 -o %t.g100r.cleave
// RUN: %python %S/Inputs/manifest-fields.py %t.g100r.cleave accumulate window_samples | FileCheck %s --check-prefix=G100R
// G100R: accumulate 2
// G100R-NEXT: window_samples 25
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=100 --micro-batch=32 --accumulate=2 -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=G-ACC
// G-ACC: cleave-compile: error: --accumulate is what --global-batch and --micro-batch give; drop it
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=2 --window-samples=100 -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=BAD-WINDOW
// BAD-WINDOW: cleave-compile: error: window-samples=100 needs accumulate=4 micro-batches of 32 (the last one short), got accumulate=2
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --memory-budget=much -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-BAD
// PLAN-BAD: cleave-compile: error: invalid --memory-budget 'much' (expected a size: bytes, or with KiB, MiB, GiB, such as 1GiB)

// ZeRO-1: a rank keeps its shard of the optimizer state, a quarter of
// Adam's 5.11 MiB on 4 ranks; the report is one rank's.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --optimizer=adam --reduce=mean --ranks=4 --shard-optimizer-state --report=memory -o %t.zero.cleave | FileCheck %s --check-prefix=ZERO
// ZERO:      memory of one session (host, per rank):
// ZERO-NEXT:   parameters             2.55 MiB
// ZERO-NEXT:   optimizer state        1.28 MiB

// Data-parallel planning: G is every rank's samples, so each of 4 ranks
// runs a window of 128, and the budget is one rank's, counted with its
// shard of the state. 128 does not fit in any form; 64 does.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --optimizer=adam --reduce=mean --ranks=4 --shard-optimizer-state --global-batch=512 --memory-budget=24MiB -o %t.zplan.cleave | FileCheck %s --check-prefix=ZPLAN
// ZPLAN:      plan for a global batch of 512 (128 per rank on 4 ranks) in 24.0 MiB of host memory per rank
// ZPLAN:              128      1  none    {{.+}}   does not fit
// ZPLAN:               64      2  none    {{.+}}   0.94x
// ZPLAN-NEXT:         128      1  auto    {{.+}}   does not fit
// ZPLAN-NEXT:         128      1  max     {{.+}}   does not fit
// ZPLAN-NEXT: chosen: micro-batch 64, N = 2, remat none: peak 23.9 MiB of 24.0 MiB
// Without ZeRO-1 the full state does not fit even at micro-batch 1.
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --optimizer=adam --reduce=mean --ranks=4 --global-batch=512 --memory-budget=24MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=ZPLAN-FULL
// ZPLAN-FULL: error: nothing fits in --memory-budget=24.0 MiB: {{.+}}optimizer state 5.11 MiB
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --reduce=mean --global-batch=512 --memory-budget=24MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-RANKS
// PLAN-RANKS: cleave-compile: error: --global-batch counts the samples of every data-parallel rank: give --ranks=R with --reduce
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --reduce=mean --ranks=3 --global-batch=512 --memory-budget=24MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-DIVIDE
// PLAN-DIVIDE: cleave-compile: error: --global-batch=512 is not a multiple of --ranks=3: every rank's window must hold as many samples

// On cuda the budget is device memory, the report alone (no fixed overhead
// is added: the report lists what it leaves out).
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --target=cuda --global-batch=512 --memory-budget=6MiB -o %t.cplan.cleave | FileCheck %s --check-prefix=CPLAN
// CPLAN:      plan for a global batch of 512 in 6.00 MiB of device memory (peak: the memory report; rate:
// CPLAN:      chosen: micro-batch 52, N = 10 (the last of each window 44), remat none: peak 5.94 MiB of 6.00 MiB

// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --report=speed -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: cleave-compile: error: unknown --report value 'speed'; expected memory
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --report=memory --compile-to=split 2>&1 | FileCheck %s --check-prefix=PHASE
// PHASE: cleave-compile: error: --report=memory describes an artifact; it does not go with --compile-to or --emit

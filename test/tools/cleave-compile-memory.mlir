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

// bf16 GEMMs read a bf16 copy of each weight matrix in the forward and the
// backward-data layouts: 784*512 + 512*512 + 512*10 elements forward, and
// 10*512 + 512*512 backward (the first layer's input has no gradient), 2
// bytes each: 1871872 bytes.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --precision=bf16 --report=memory -o %t.bf16.cleave | FileCheck %s --check-prefix=BF16
// BF16: kernel caches          1.79 MiB

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

// The planner: --global-batch=512 in 24 MiB. Micro-batch 512 does not fit
// in any form (its peak is the report plus the fixed overhead); at 256 only
// with every GEMM that may be recomputed recomputed (26% more work); 128
// fits without recomputation and models faster, so the search stops there.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --memory-budget=24MiB --report=memory -o %t.plan.cleave | FileCheck %s --check-prefix=PLAN
// PLAN:      plan for a global batch of 512 in 24.0 MiB of host memory (peak: the memory report plus the runtime's fixed overhead; rate: modelled samples/s against micro-batch 512 without recomputation, docs/design/memory.md):
// PLAN-NEXT:   micro-batch      N  remat       held       peak  recomputed   rate
// PLAN-NEXT:           512      1  none    5.03 MiB   27.7 MiB           -   does not fit
// PLAN-NEXT:           512      1  auto    3.03 MiB   27.7 MiB          0%   does not fit
// PLAN-NEXT:           512      1  max     2.03 MiB   26.7 MiB         26%   does not fit
// PLAN-NEXT:           256      2  none    2.51 MiB   24.4 MiB           -   does not fit
// PLAN-NEXT:           256      2  auto    1.51 MiB   24.4 MiB          0%   does not fit
// PLAN-NEXT:           256      2  max     1.01 MiB   23.9 MiB         26%   0.78x
// PLAN-NEXT:           128      4  none    1.26 MiB   22.8 MiB           -   0.96x
// PLAN-NEXT: chosen: micro-batch 128, N = 4, remat none: peak 22.8 MiB of 24.0 MiB, modelled rate 0.96x
// The artifact is the chosen plan's.
// PLAN:      inputs                  394 KiB  one micro-batch
// PLAN:      total                  6.76 MiB

// Nothing fits when what does not shrink with the micro-batch does not: the
// search stops at once and names the need by kind.
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --memory-budget=4MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=NOFIT
// NOFIT: cleave-compile: error: nothing fits in --memory-budget=4.00 MiB: the smallest plan measured (micro-batch 512, N = 1, remat none) needs 27.7 MiB (fixed overhead 16.0 MiB, scratch 5.05 MiB, accumulators 2.55 MiB, parameters 2.55 MiB, inputs 1.54 MiB, outputs 20.0 KiB)
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 --micro-batch=8 --memory-budget=4MiB -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-B
// PLAN-B: cleave-compile: error: --micro-batch is what --global-batch and --memory-budget choose; drop it
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --global-batch=512 -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=PLAN-NO-BUDGET
// PLAN-NO-BUDGET: cleave-compile: error: --global-batch=G and --memory-budget=SIZE go together (G >= 1)
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
// ZPLAN:              128      1  max     {{.+}}   does not fit
// ZPLAN-NEXT:          64      2  none    {{.+}}   0.94x
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
// CPLAN:      chosen: micro-batch 32, N = 16, remat none: peak 5.62 MiB of 6.00 MiB

// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --report=speed -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: cleave-compile: error: unknown --report value 'speed'; expected memory
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --report=memory --compile-to=split 2>&1 | FileCheck %s --check-prefix=PHASE
// PHASE: cleave-compile: error: --report=memory describes an artifact; it does not go with --compile-to or --emit

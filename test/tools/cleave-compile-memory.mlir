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

// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --report=speed -o %t.x.cleave 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: cleave-compile: error: unknown --report value 'speed'; expected memory
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=8 --report=memory --compile-to=split 2>&1 | FileCheck %s --check-prefix=PHASE
// PHASE: cleave-compile: error: --report=memory describes an artifact; it does not go with --compile-to or --emit

// cleave-train's output, metrics and checkpoints on a small slice of
// Fashion-MNIST: 200 samples in micro-batches of 32 (6 full and one of 8) with
// N = 3 make windows of 3, 3 and a flushed 1 per epoch.
//
// REQUIRES: cleave-runtime, fashion-mnist
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=3 -o %t.cleave
// RUN: rm -rf %t.ckpt
// RUN: cleave-train %t.cleave --epochs=2 --limit-train=200 --limit-test=64 \
// RUN:   --threads=1 --progress=lines --metrics=%t.jsonl \
// RUN:   --checkpoint-dir=%t.ckpt > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=OUT < %t.out
// RUN: FileCheck %s --check-prefix=PROGRESS < %t.err
// RUN: FileCheck %s --check-prefix=METRICS < %t.jsonl
// RUN: ls %t.ckpt | FileCheck %s --check-prefix=CKPT

// OUT:      model {{.*}}.cleave: micro-batch 32, accumulate 3 (96 samples per optimizer step)
// OUT-NEXT: hyperparameters: lr=0.01 weight_decay=0
// OUT-NEXT: data /usr/share/datasets/fashion-mnist (idx): 200 training and 64 test samples of uint8 [28, 28], labels 0..9
// OUT-NEXT: epoch 1/2: loss {{[0-9]+\.[0-9]+}}, test accuracy {{[0-9]+\.[0-9]+}}%, {{[0-9]+}} samples/s, {{[0-9.]+}} s
// OUT-NEXT: epoch 2/2: loss {{[0-9]+\.[0-9]+}}, test accuracy {{[0-9]+\.[0-9]+}}%, {{[0-9]+}} samples/s, {{[0-9.]+}} s
// OUT-NEXT: trained 2 epochs in {{[0-9.]+}} s (6 optimizer steps); test accuracy {{[0-9.]+}}%

// PROGRESS:      epoch 1/2: 10% (32/200), loss {{[0-9.]+}}, {{[0-9]+}} samples/s, ETA {{[0-9]+:[0-9][0-9]}}
// PROGRESS:      epoch 1/2: 90% (192/200)
// PROGRESS-NEXT: epoch 2/2: 10% (32/200)

// METRICS:      "event":"start"
// METRICS-SAME: "micro_batch":32
// METRICS-NEXT: "epoch":1,"event":"step"
// METRICS-SAME: "micro_steps":3,{{.*}}"step":1,"window":3,"window_samples":96}
// METRICS-NEXT: "micro_steps":6,{{.*}}"step":2,"window":3,"window_samples":96}
// METRICS-NEXT: "micro_steps":7,{{.*}}"step":3,"window":1,"window_samples":8}
// METRICS-NEXT: "epoch":1,{{.*}}"event":"epoch"
// METRICS-SAME: "test_samples":64,
// METRICS-SAME: "train_samples":200}
// METRICS:      "epoch":2,{{.*}}"event":"epoch"

// CKPT:      checkpoint-0000000007.ckpt
// CKPT-NEXT: checkpoint-0000000014.ckpt

// Resuming a finished run trains nothing; asking for a third epoch trains it.
// RUN: cleave-train %t.cleave --epochs=2 --limit-train=200 --limit-test=64 \
// RUN:   --threads=1 --checkpoint-dir=%t.ckpt --resume | FileCheck %s --check-prefix=DONE
// DONE: nothing to train: {{.*}}checkpoint-0000000014.ckpt is at the end of epoch 2 (--epochs=2)
// RUN: cleave-train %t.cleave --epochs=3 --limit-train=200 --limit-test=64 \
// RUN:   --threads=1 --checkpoint-dir=%t.ckpt --resume --progress=none | FileCheck %s --check-prefix=MORE
// MORE:      resumed from {{.*}}checkpoint-0000000014.ckpt: epoch 3, sample 0 of 200, optimizer step 6
// MORE-NEXT: epoch 3/3: loss

// --memory-budget: an artifact whose session would hold more (its memory
// report, about 5.5 MiB for this MLP, plus the runtime's fixed overhead) is
// refused before anything is loaded, naming both numbers; one that fits
// trains.
// RUN: not cleave-train %t.cleave --memory-budget=8MiB --limit-train=64 \
// RUN:   --limit-test=32 --threads=1 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: cleave-train: error: {{.*}}.cleave needs {{2[0-9]\.[0-9]}} MiB of host memory (its memory report, {{[0-9.]+}} MiB, plus the runtime's fixed overhead of about 16.0 MiB), more than --memory-budget=8.0 MiB; compile it with a smaller --micro-batch
// RUN: cleave-train %t.cleave --memory-budget=64MiB --epochs=1 --limit-train=64 \
// RUN:   --limit-test=32 --threads=1 --progress=none | FileCheck %s --check-prefix=FITS
// FITS: trained 1 epoch
// RUN: not cleave-train %t.cleave --memory-budget=lots 2>&1 | FileCheck %s --check-prefix=BAD-BUDGET
// BAD-BUDGET: cleave-train: error: invalid value 'lots' for --memory-budget (expected a size: bytes, or with KiB, MiB, GiB, such as 1GiB)

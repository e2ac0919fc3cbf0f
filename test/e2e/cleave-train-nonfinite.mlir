// A run that diverges (SGD with lr = 1e30 overflows the activations after
// its first step, so every later loss is NaN). By default cleave-train stops
// at the first loss that is not finite, naming the micro-step, the window
// and the optimizer step it would have been, and applies nothing of it: the
// checkpoint written after window 1 is the last one, and a run resumed from
// it with --on-nonfinite=skip goes on, skipping every window that is not
// finite and saying so per epoch and in the metrics.
//
// REQUIRES: cleave-runtime, fashion-mnist
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=32 --accumulate=2 -o %t.cleave
// RUN: rm -rf %t.ckpt
// RUN: not cleave-train %t.cleave --epochs=1 --limit-train=200 --limit-test=64 \
// RUN:   --threads=1 --progress=none --lr=1e30 --checkpoint-dir=%t.ckpt \
// RUN:   --checkpoint-every=2 > %t.stop.out 2> %t.stop.err
// RUN: FileCheck %s --check-prefix=STOP < %t.stop.err
// RUN: ls %t.ckpt | FileCheck %s --check-prefix=CKPT
// RUN: cleave-train %t.cleave --epochs=1 --limit-train=200 --limit-test=64 \
// RUN:   --threads=1 --progress=none --lr=1e30 --checkpoint-dir=%t.ckpt \
// RUN:   --resume --on-nonfinite=skip --metrics=%t.jsonl > %t.skip.out
// RUN: FileCheck %s --check-prefix=SKIP < %t.skip.out
// RUN: FileCheck %s --check-prefix=METRICS < %t.jsonl
// RUN: not cleave-train %t.cleave --on-nonfinite=maybe 2>&1 | FileCheck %s --check-prefix=BAD

// STOP: cleave-train: error: the loss of micro-step 3 (epoch 1, window 2, which would be optimizer step 2) is nan: training diverged (try a smaller --lr) or the data holds a NaN or infinity; the window is not applied, checkpoints written so far hold the parameters before it (--on-nonfinite=skip would go on)

// CKPT: checkpoint-0000000002.ckpt
// CKPT-NOT: checkpoint

// 200 samples make windows of 2, 2 and a flushed 1 micro-steps after the
// resumed one: all three are skipped, the run ends at optimizer step 1.
// SKIP: epoch 1/1: skipped 3 windows whose gradients or loss were not finite (their losses are left out of the epoch's)
// SKIP: trained 1 epoch in {{.*}} (1 optimizer steps)

// METRICS: "event":"step"
// METRICS-SAME: "loss":null,
// METRICS-SAME: "skipped":true,"step":1,"window":2,"window_samples":0}
// METRICS-NEXT: "skipped":true,"step":1,"window":2,
// METRICS-NEXT: "skipped":true,"step":1,"window":1,

// BAD: error: invalid value 'maybe' for --on-nonfinite (expected stop or skip)

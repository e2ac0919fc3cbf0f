// cleave-train on a byte-level token dataset: scripts/make-text-corpus.py
// cuts the start of examples/data/genesis-kjv.txt into sequences of 8 bytes
// (the last one of each split padded with the ignore index), and
// examples/tiny_lm.mlir, a bigram model, learns from them. The output and
// the metrics carry the loss per token and the test perplexity.
//
// REQUIRES: cleave-runtime, numpy
// RUN: rm -rf %t.corpus
// RUN: /usr/bin/python3 %cleave_src/scripts/make-text-corpus.py -o %t.corpus \
// RUN:   --seq-len=8 --max-bytes=2048 | FileCheck %s --check-prefix=CORPUS
// RUN: cleave-compile %cleave_src/examples/tiny_lm.mlir --optimizer=adam \
// RUN:   --lr=0.01 --micro-batch=16 --accumulate=2 -o %t.cleave
// RUN: cleave-train %t.cleave --data=%t.corpus --epochs=2 --threads=1 \
// RUN:   --progress=none --metrics=%t.jsonl > %t.out
// RUN: FileCheck %s --check-prefix=OUT < %t.out
// RUN: FileCheck %s --check-prefix=METRICS < %t.jsonl
// RUN: not cleave-train %t.cleave --data=%t.corpus --normalize=standard 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NORMALIZE

// CORPUS: train.npz: 231 sequences of 8 tokens (1842 next-byte targets)
// CORPUS: test.npz: 26 sequences of 8 tokens (204 next-byte targets)

// OUT:      model {{.*}}.cleave: micro-batch 16, accumulate 2 (32 samples per optimizer step)
// OUT-NEXT: hyperparameters: lr=0.01 {{.*}}
// OUT-NEXT: data {{.*}}.corpus (npz): 231 training and 26 test sequences of 8 int64 token ids, labels 0..255 (ignore index -100)
// OUT-NEXT: epoch 1/2: loss [[LOSS1:[0-9]+\.[0-9]+]], test loss {{[0-9]+\.[0-9]+}}, test perplexity {{[0-9]+\.[0-9]+}}, test accuracy {{[0-9]+\.[0-9]+}}% (per token), {{[0-9]+}} samples/s, {{[0-9.]+}} s
// OUT-NEXT: epoch 2/2: loss {{[0-9]+\.[0-9]+}}, test loss {{[0-9]+\.[0-9]+}}, test perplexity {{[0-9]+\.[0-9]+}}, test accuracy {{[0-9]+\.[0-9]+}}% (per token), {{[0-9]+}} samples/s, {{[0-9.]+}} s
// OUT-NEXT: trained 2 epochs in {{[0-9.]+}} s (16 optimizer steps); test loss {{[0-9]+\.[0-9]+}}, test perplexity {{[0-9]+\.[0-9]+}}

// 231 sequences are 15 micro-batches (the last of 7): windows of 2, 2, ...
// and a flushed 1, each counting its real tokens (those of its sequences
// but the padded tail of the training split's last one).
// METRICS:      "event":"start"
// METRICS-NEXT: "epoch":1,"event":"step"
// METRICS-SAME: "window":2,"window_tokens":{{[0-9]+}}}
// METRICS:      "micro_steps":15,{{.*}}"step":8,"window":1,"window_tokens":
// METRICS-NEXT: "epoch":1,{{.*}}"event":"epoch"
// METRICS-SAME: "test_perplexity":
// METRICS-SAME: "test_tokens":204,
// METRICS-SAME: "train_perplexity":
// METRICS-SAME: "train_tokens":1842}

// NORMALIZE: cleave-train: error: --normalize=standard: {{.*}}.cleave is a language model, whose token ids are not normalised (they index an embedding); leave --normalize out or give --normalize=none

// A language model's checkpoints resume like any other: killed at
// micro-step 7 of 2 epochs, resumed from the checkpoint of micro-step 5
// (mid-epoch, mid-window), it ends with the parameters of a run never
// stopped, byte for byte (the trainer's position holds token sums).
// RUN: rm -rf %t.ckpt
// RUN: cleave-train %t.cleave --data=%t.corpus --epochs=2 --threads=1 \
// RUN:   --progress=none --quiet --save-params=%t.straight
// RUN: env CLEAVE_TRAIN_TEST_KILL_AT_MICRO_STEP=7 not --crash cleave-train \
// RUN:   %t.cleave --data=%t.corpus --epochs=2 --threads=1 --progress=none \
// RUN:   --quiet --checkpoint-dir=%t.ckpt --checkpoint-every=5
// RUN: cleave-train %t.cleave --data=%t.corpus --epochs=2 --threads=1 \
// RUN:   --progress=none --resume --checkpoint-dir=%t.ckpt \
// RUN:   --save-params=%t.resumed | FileCheck %s --check-prefix=RESUMED
// RUN: cmp %t.straight %t.resumed
// RESUMED: resumed from {{.*}}checkpoint-0000000005.ckpt: epoch 1, sample 80 of 231
// RESUMED: epoch 2/2: loss {{[0-9.]+}}, test loss {{[0-9.]+}}, test perplexity

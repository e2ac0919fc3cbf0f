#!/usr/bin/python3
# ===- seqcls_train.py - cleave-train on a sequence classifier vs PyTorch ---===#
#
# A classifier of token sequences (integer ids [N, T] in, one class label per
# sequence), end to end, against PyTorch's own gradient-accumulation loop on
# the same data in the same order:
#
#   1. a seeded synthetic dataset: ids in [0, 16) of 12 tokens, the label of
#      a sequence 0, 1 or 2 as it has at most 2, 3 or more ids below 4;
#   2. a pre-norm TransformerEncoderLayer over token and position embeddings,
#      mean-pooled into a linear head (dropout off), exported to ONNX and
#      compiled by cleave-compile (Adam, micro-batch B, accumulate N);
#   3. cleave-train trains it for a few epochs (--metrics);
#   4. the same module, from the same initial parameters, is trained in
#      PyTorch in cleave-train's shuffled order (train_reference.py): the
#      summed cross-entropy of N micro-batches divided by their samples, one
#      Adam step; the epoch's partial last window a step of its own.
#
# Checked: cleave-train reads the dataset as token ids with one label per
# sequence and prints a test accuracy; the first window's loss agrees to
# float32 rounding; every window's and epoch's loss and the test loss and
# accuracy agree within the tolerances below; the loss falls below a
# uniform guess (ln 3).
#
# Usage: seqcls_train.py CLEAVE_COMPILE CLEAVE_TRAIN WORK_DIR
# Exit status 77 (skipped) without torch/onnx, unless CLEAVE_REQUIRE_TORCH=1.
#
# ===------------------------------------------------------------------------===#

import json
import math
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_reference import (compare_windows, epoch_order,  # noqa: E402
                             finish, require_torch, run)

np, torch = require_torch()

COMPILE, TRAIN, WORK = sys.argv[1:4]
VOCAB, TOKENS, DIM, CLASSES = 16, 12, 16, 3
TRAIN_N, TEST_N = 500, 100
MICRO_BATCH, ACCUMULATE, EPOCHS, LR, SEED = 16, 2, 4, 1e-2, 0
# Tolerances, as in gpt_train.py: the first window from identical
# parameters and data differs by float32 reassociation only; later windows
# by rounding that Adam's steps carry forward. Measured: the largest window
# difference is 2.3e-6 over the 64 steps; the bounds leave 40x that.
FIRST_WINDOW_RTOL = 1e-5
WINDOW_ATOL = 1e-4
EPOCH_ATOL = 5e-5


class SequenceClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.pos = torch.nn.Parameter(0.1 * torch.randn(1, TOKENS, DIM))
        self.layer = torch.nn.TransformerEncoderLayer(
            DIM, nhead=2, dim_feedforward=2 * DIM, dropout=0.0,
            activation="gelu", batch_first=True, norm_first=True)
        self.head = torch.nn.Linear(DIM, CLASSES)

    def forward(self, ids):
        h = self.layer(self.embed(ids) + self.pos)
        return self.head(h.mean(dim=1))


def dataset(n, rng):
    x = rng.integers(0, VOCAB, (n, TOKENS)).astype(np.int64)
    # 0: at most 2 ids below 4, 1: three, 2: more (about a third each).
    y = np.clip((x < 4).sum(axis=1) - 2, 0, 2).astype(np.int64)
    return x, y


def summed_loss(model, x, y):
    logits = model(torch.from_numpy(x))
    labels = torch.from_numpy(y)
    loss = torch.nn.functional.cross_entropy(logits, labels, reduction="sum")
    correct = int((logits.argmax(dim=1) == labels).sum())
    return loss, correct


def train_pytorch(model, train, test):
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    x, y = train
    n = len(x)
    windows, epochs, tests = [], [], []
    for epoch in range(EPOCHS):
        order = np.array(epoch_order(SEED, epoch, n))
        batches = [order[i:i + MICRO_BATCH] for i in range(0, n, MICRO_BATCH)]
        epoch_sum = 0.0
        for w in range(0, len(batches), ACCUMULATE):
            opt.zero_grad()
            window_sum, window_count = 0.0, 0
            for rows in batches[w:w + ACCUMULATE]:
                loss, _ = summed_loss(model, x[rows], y[rows])
                loss.backward()
                window_sum += loss.item()
                window_count += len(rows)
            for p in model.parameters():
                p.grad /= window_count
            opt.step()
            windows.append(window_sum / window_count)
            epoch_sum += window_sum
        epochs.append(epoch_sum / n)
        with torch.no_grad():
            loss, correct = summed_loss(model, *test)
        tests.append((loss.item() / len(test[0]), correct / len(test[0])))
    return windows, epochs, tests


def main():
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    os.makedirs(WORK, exist_ok=True)
    train, test = dataset(TRAIN_N, rng), dataset(TEST_N, rng)
    data = os.path.join(WORK, "sequences.npz")
    np.savez(data, x_train=train[0], y_train=train[1], x_test=test[0],
             y_test=test[1])

    model = SequenceClassifier()
    model.train()
    onnx_path = os.path.join(WORK, "classifier.onnx")
    artifact = os.path.join(WORK, "classifier.cleave")
    metrics = os.path.join(WORK, "classifier.jsonl")
    torch.onnx.export(model, torch.from_numpy(train[0][:MICRO_BATCH]),
                      onnx_path, input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch"},
                                    "logits": {0: "batch"}},
                      opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    run(COMPILE, onnx_path, "--loss=cross-entropy", "--optimizer=adam",
        f"--lr={LR}", f"--micro-batch={MICRO_BATCH}",
        f"--accumulate={ACCUMULATE}", "-o", artifact)
    if os.path.exists(metrics):
        os.remove(metrics)
    out = run(TRAIN, artifact, f"--data={data}", f"--epochs={EPOCHS}",
              f"--seed={SEED}", f"--metrics={metrics}", "--progress=none")
    print(out)
    for part in (f"epoch 1/{EPOCHS}: loss ", ", test accuracy ",
                 f"test sequences of {TOKENS} int64 token ids, one label 0..2 "
                 "per sequence"):
        assert part in out, f"cleave-train's output lacks '{part}'"

    records = [json.loads(line) for line in open(metrics)]
    cleave_windows = [r["loss"] for r in records if r["event"] == "step"]
    cleave_epochs = [r for r in records if r["event"] == "epoch"]
    windows, epochs, tests = train_pytorch(model, train, test)

    print("epoch  train (cleave, pytorch)  test loss (cleave, pytorch)  "
          "test accuracy (cleave, pytorch)")
    for e, r in enumerate(cleave_epochs):
        print(f"{e + 1:5d}  {r['train_loss']:.5f} {epochs[e]:.5f}  "
              f"{r['test_loss']:.5f} {tests[e][0]:.5f}  "
              f"{r['test_accuracy']:.3f} {tests[e][1]:.3f}")

    failures = compare_windows(cleave_windows, windows, FIRST_WINDOW_RTOL,
                               WINDOW_ATOL)
    for e, r in enumerate(cleave_epochs):
        for key, theirs in (("train_loss", epochs[e]),
                            ("test_loss", tests[e][0])):
            if abs(r[key] - theirs) > EPOCH_ATOL:
                failures.append(f"epoch {e + 1} {key}: {r[key]} against "
                                f"PyTorch's {theirs}")
        # A prediction flips only when two logits tie to rounding.
        if abs(r["test_accuracy"] - tests[e][1]) > 1.5 / TEST_N:
            failures.append(f"epoch {e + 1} test accuracy: "
                            f"{r['test_accuracy']} against PyTorch's "
                            f"{tests[e][1]}")
    if not cleave_epochs[-1]["test_loss"] < 0.9 * math.log(CLASSES):
        failures.append(f"the test loss after {EPOCHS} epochs is "
                        f"{cleave_epochs[-1]['test_loss']}, not below "
                        f"0.9 ln {CLASSES}")
    finish(failures)


if __name__ == "__main__":
    main()

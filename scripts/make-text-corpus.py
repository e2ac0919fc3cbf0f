#!/usr/bin/python3
# ===- make-text-corpus.py - Byte-level token datasets from text -----------===#
#
# Cuts a text into byte-level training sequences for cleave-train: every byte
# is a token (vocabulary 256), x holds sequences of T bytes and y the byte
# that follows each position (next-token targets). Writes DIR/train.npz and
# DIR/test.npz, each with x and y int64 [N, T] (np.savez: uncompressed, so
# that cleave-train memory-maps them). The first part of the text is the
# training split, the rest (--test-fraction) the test split: the test text
# is text the model never trained on.
#
# Sequences do not overlap. The tail of each split that does not fill a whole
# sequence becomes one last, padded sequence: its missing positions hold id
# 0 and target -100, the ignore index (PyTorch's default, cleave-compile's),
# which the loss skips.
#
#   /usr/bin/python3 scripts/make-text-corpus.py -o corpus --seq-len=32
#
# The default text is examples/data/genesis-kjv.txt (public domain; see
# examples/data/README.md).
#
# ===------------------------------------------------------------------------===#

import argparse
import os
import sys

import numpy as np

IGNORE_INDEX = -100
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sequences(data, length, dtype):
    """x, y of the byte string `data`: non-overlapping sequences of `length`
    tokens and their next tokens, the last one padded."""
    tokens = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    count = (len(tokens) - 1 + length - 1) // length
    x = np.zeros((count, length), dtype=np.int64)
    y = np.full((count, length), IGNORE_INDEX, dtype=np.int64)
    for i in range(count):
        chunk = tokens[i * length:(i + 1) * length + 1]
        x[i, :len(chunk) - 1] = chunk[:-1]
        y[i, :len(chunk) - 1] = chunk[1:]
    return x.astype(dtype), y


def main():
    parser = argparse.ArgumentParser(
        description="Byte-level train/test .npz token datasets from text.")
    parser.add_argument("-o", "--output", required=True,
                        help="directory to write train.npz and test.npz to")
    parser.add_argument("--text", action="append",
                        help="a UTF-8 or ASCII text file (repeatable; "
                             "default examples/data/genesis-kjv.txt)")
    parser.add_argument("--seq-len", type=int, default=32,
                        help="tokens per sequence, T (default 32)")
    parser.add_argument("--test-fraction", type=float, default=0.1,
                        help="the end of the text kept for testing "
                             "(default 0.1)")
    parser.add_argument("--max-bytes", type=int, default=0,
                        help="use only the first K bytes of the text (0: all)")
    parser.add_argument("--x-dtype", default="int64",
                        choices=["int64", "int32", "uint16", "uint8"],
                        help="dtype of the ids (default int64)")
    args = parser.parse_args()
    if args.seq_len < 1:
        parser.error("--seq-len must be at least 1")
    if not 0 < args.test_fraction < 1:
        parser.error("--test-fraction must lie between 0 and 1")

    paths = args.text or [os.path.join(ROOT, "examples", "data",
                                       "genesis-kjv.txt")]
    data = b"".join(open(p, "rb").read() for p in paths)
    if args.max_bytes > 0:
        data = data[:args.max_bytes]
    split = int(len(data) * (1 - args.test_fraction))
    if split < 2 or len(data) - split < 2:
        sys.exit(f"error: {len(data)} bytes of text are too few for a train "
                 f"and a test split")
    os.makedirs(args.output, exist_ok=True)
    for name, part in (("train", data[:split]), ("test", data[split:])):
        x, y = sequences(part, args.seq_len, np.dtype(args.x_dtype))
        path = os.path.join(args.output, name + ".npz")
        np.savez(path, x=x, y=y)
        real = int((y != IGNORE_INDEX).sum())
        print(f"{path}: {len(x)} sequences of {args.seq_len} tokens "
              f"({real} next-byte targets)")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# ===- train_reference.py - cleave-train's order, for PyTorch references ---===#
#
# What the end-to-end tests that train a model with cleave-train and again
# with PyTorch's own loop (gpt_train.py, seqcls_train.py) need in order to
# feed PyTorch the same micro-batches: cleave-train's shuffled order of an
# epoch (runtime/src/data/Shuffle.cpp, reimplemented bit for bit), a
# subprocess runner, the comparison of the two runs' window losses, and
# the import of PyTorch that skips (or, with CLEAVE_REQUIRE_TORCH=1, fails)
# where it is missing.
#
# ===------------------------------------------------------------------------===#

import os
import subprocess
import sys


def require_torch():
    """numpy and torch (onnx checked too: torch.onnx.export needs it). Where
    one is missing: exit 77, ctest's skip, or 1 with CLEAVE_REQUIRE_TORCH=1."""
    try:
        import numpy
        import onnx  # noqa: F401
        import torch
    except ImportError as e:
        if os.environ.get("CLEAVE_REQUIRE_TORCH") == "1":
            print(f"error: torch, onnx and numpy are required "
                  f"(CLEAVE_REQUIRE_TORCH=1) but cannot be imported: {e}",
                  file=sys.stderr)
            sys.exit(1)
        print(f"skipped: {e}")
        sys.exit(77)
    return numpy, torch


def mt19937_64(seed):
    """std::mt19937_64 seeded with `seed`: a generator of its outputs."""
    n, m = 312, 156
    mask = (1 << 64) - 1
    upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF
    mt = [seed & mask]
    for i in range(1, n):
        mt.append((6364136223846793005 * (mt[-1] ^ (mt[-1] >> 62)) + i) & mask)
    index = n
    while True:
        if index >= n:
            for i in range(n):
                x = (mt[i] & upper) | (mt[(i + 1) % n] & lower)
                xa = x >> 1
                if x & 1:
                    xa ^= 0xB5026F5AA96619E9
                mt[i] = mt[(i + m) % n] ^ xa
            index = 0
        y = mt[index]
        index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        yield y & mask


def splitmix64(z):
    mask = (1 << 64) - 1
    z = (z + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def epoch_order(seed, epoch, n):
    """runtime/src/data/Shuffle.cpp's epochOrder."""
    order = list(range(n))
    engine = mt19937_64(splitmix64(splitmix64(seed) ^ epoch))
    for i in range(n - 1, 0, -1):
        bound = i + 1
        threshold = ((1 << 64) - bound) % bound
        r = next(engine)
        while r < threshold:
            r = next(engine)
        j = r % bound
        order[i], order[j] = order[j], order[i]
    return order


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(args)} failed ({result.returncode}):\n"
                 f"{result.stdout}{result.stderr}")
    return result.stdout


def finish(failures):
    """Exits 1 with the failures listed, or prints "passed"."""
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)
    print("passed")


def compare_windows(cleave, pytorch, first_rtol, atol):
    """The failures of cleave-train's window losses against PyTorch's: the
    same number of windows, the first (identical parameters and data) within
    `first_rtol` relative, every one within `atol`."""
    failures = []
    if len(cleave) != len(pytorch):
        failures.append(f"{len(cleave)} windows, PyTorch {len(pytorch)}")
    if abs(cleave[0] - pytorch[0]) > first_rtol * pytorch[0]:
        failures.append(f"first window: {cleave[0]} against PyTorch's "
                        f"{pytorch[0]}")
    worst = max(abs(a - b) for a, b in zip(cleave, pytorch))
    print(f"largest window difference {worst:.2e} (bound {atol})")
    if worst > atol:
        failures.append(f"window losses differ by up to {worst}")
    return failures

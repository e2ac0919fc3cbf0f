#!/usr/bin/env python3
"""Rematerialisation computes the same bits (issue 21, item 2).

    remat_bit_identical.py CLEAVE_CHECK WORKDIR

Exports resnet18 (torchvision, 3x32x32, batch norm in training mode) and
the GPT-style decoder of bench/real_models.py to ONNX, and runs cleave-check
in its rematerialisation mode on each: the model compiled with
--remat-budget=0 (every held activation the cost model allows recomputed:
loop nests, normalisation statistics, pooling, convolutions and GEMMs)
against the same micro-batch and N holding everything, trained alike on the
same random windows. cleave-check requires bit-identical losses, parameters
and buffers after every window (its exit status is 0 only then); this
script also requires that the rematerialised micro-step holds fewer bytes
from forward to backward. The example MLP and LeNet are checked the same way
in test/e2e/cleave-check-remat.mlir.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def held_kib(line):
    m = re.search(r"of which ([0-9.]+) KiB held", line)
    return float(m.group(1)) if m else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    check, workdir = sys.argv[1:3]
    os.makedirs(workdir, exist_ok=True)
    cases = [
        ("resnet18", ["--micro-batch=16", "--accumulate=2",
                      "--optimizer=momentum"]),
        ("gpt", ["--micro-batch=4", "--accumulate=2", "--optimizer=adam"]),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    failed = False
    for name, options in cases:
        onnx = os.path.join(workdir, name + ".onnx")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(ROOT, "bench", "real_models.py"),
                        "--export", name, onnx], check=True,
                       stderr=subprocess.DEVNULL)
        run = subprocess.run([check, onnx, "--loss=cross-entropy", *options,
                              "--remat-budget=0", "--windows=2"], env=env,
                             capture_output=True, text=True)
        lines = run.stdout.splitlines()
        print(f"== {name}\n" + run.stdout, end="")
        held = [held_kib(l) for l in lines if "held from forward" in l]
        if run.returncode != 0:
            print(f"FAIL {name}: cleave-check exited {run.returncode}\n"
                  + run.stderr)
            failed = True
        elif len(held) != 2 or None in held or not held[0] < held[1]:
            print(f"FAIL {name}: the rematerialised micro-step does not hold "
                  f"less ({held})")
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

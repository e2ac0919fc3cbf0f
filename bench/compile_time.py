#!/usr/bin/python3
"""Times cleave-compile on torchvision models, one thread, phase by phase.

    bench/compile_time.py [--build=build] [--models=mlp,resnet18,efficientnet_b0]
                          [--image=32] [--workdir=/tmp/cleave-compile-time]
                          [--target=cpu|cuda]

Exports each torchvision model the way docs/user/onnx.md says (training
mode, opset 14, dynamic batch, no constant folding), then runs

    cleave-compile MODEL --micro-batch=32 --accumulate=4 -v -o MODEL.cleave

with OMP_NUM_THREADS=1 and folds the CPU seconds of its `-v` report (each
pass, the import, machine code) into the phases of the CPU pipeline; the
total is wall time and CPU time (user + system, the linker included) of the
whole process. CPU time, because on a shared machine wall time measures the
neighbours too. The MLP is examples/mlp.mlir. Needs python3-torchvision
(scripts/setup.sh).

With --target=cuda (the default architectures, sm_80 and sm_90) the phases
after bufferization are the cuda pipeline's: `gpu` (loop nests to kernels,
outlining), `nvvm`, `llvm` (host code), `kernels` (NVPTX code generation,
ptxas and fatbinary, on all of the context's threads: its CPU seconds are
the pass's own thread, ptxas is in the process total) and `machine code`
(the host code).
"""

import argparse
import copy
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The first pass of each phase of the CPU pipeline (compiler/Pipelines), as
# `cleave-compile -v` names it; every later pass belongs to the same phase
# until the next of these.
FIRST_PASS = {
    "CleaveAttachLoss": "loss",
    "CleaveAutodiff": "grad",
    "CleaveBuildTrainStep": "step",
    "CleaveSplitStep": "split",
    "CleaveConvertNNToLinalg": "linalg",
    "OneShotBufferizePass": "bufferize",
    "CleaveOutlineKernels": "llvm",
    "ConvertLinalgToLoopsPass": "llvm",
}
PHASES = ["import", "loss", "grad", "step", "split", "linalg", "bufferize",
          "llvm", "machine code"]

# The same for the cuda pipeline. Its gpu phase starts with a nested
# pipeline, which `-v` names by its adaptor: the pass after the last one of
# bufferization ("after:" marks a phase that starts after the named pass).
CUDA_FIRST_PASS = {
    **{k: v for k, v in FIRST_PASS.items() if v != "llvm"},
    "after:CleaveWriteManifest": "gpu",
    "SCFToControlFlowPass": "nvvm",
    "FinalizeMemRefToLLVMConversionPass": "llvm",
    "CleaveGpuModuleToFatbin": "kernels",
    "CleaveEmitArtifactAbi": "llvm",
}
CUDA_PHASES = ["import", "loss", "grad", "step", "split", "linalg",
               "bufferize", "gpu", "nvvm", "llvm", "kernels", "machine code"]


def export(name, path, image):
    import torch
    import torchvision

    torch.manual_seed(0)
    kwargs = {"num_classes": 10}
    if name.startswith("efficientnet"):
        # torch 1.13 cannot export the Bernoulli of stochastic depth in
        # training mode; with p = 0 the block is the identity.
        kwargs["stochastic_depth_prob"] = 0.0
    model = getattr(torchvision.models, name)(**kwargs)
    model.train()
    x = torch.randn(2, 3, image, image)
    torch.onnx.export(copy.deepcopy(model), x, path, input_names=["image"],
                      output_names=["logits"], opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"image": {0: "batch"},
                                    "logits": {0: "batch"}})


def parse(stderr, phases, first_pass):
    """Phase -> CPU seconds, from the `cleave-compile: cpu PASS T s` lines
    and the import and machine-code lines of `-v`."""
    times = {p: 0.0 for p in phases}
    phase = "loss"
    for line in stderr.splitlines():
        m = re.match(r"cleave-compile: (import|machine code) in \S+ s "
                     r"\(cpu ([0-9.e+-]+) s", line)
        if m:
            times[m.group(1)] = float(m.group(2))
            continue
        m = re.match(r"cleave-compile: cpu (\S+) ([0-9.e+-]+) s", line)
        if m:
            phase = first_pass.get(m.group(1), phase)
            times[phase] += float(m.group(2))
            phase = first_pass.get("after:" + m.group(1), phase)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="mlp,resnet18,efficientnet_b0")
    ap.add_argument("--image", type=int, default=32,
                    help="input height and width of the exported CNNs")
    ap.add_argument("--workdir", default="/tmp/cleave-compile-time")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    phases, first_pass = ((CUDA_PHASES, CUDA_FIRST_PASS)
                          if args.target == "cuda" else (PHASES, FIRST_PASS))
    os.makedirs(args.workdir, exist_ok=True)
    compiler = os.path.join(args.build, "bin", "cleave-compile")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")

    rows = []
    for name in args.models.split(","):
        if name == "mlp":
            model = os.path.join(ROOT, "examples", "mlp.mlir")
        else:
            model = os.path.join(args.workdir, f"{name}_{args.image}.onnx")
            if not os.path.exists(model):
                export(name, model, args.image)
        cmd = [compiler, model, "--micro-batch=32", "--accumulate=4", "-v",
               f"--target={args.target}",
               "-o", os.path.join(args.workdir, name + ".cleave")]
        start = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            run = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                 timeout=args.timeout)
        except subprocess.TimeoutExpired:
            rows.append((name, None, args.timeout))
            print(f"{name}: did not finish in {args.timeout:.0f} s", flush=True)
            continue
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if run.returncode != 0:
            sys.exit(f"{name}: cleave-compile failed:\n{run.stderr}")
        times = parse(run.stderr, phases, first_pass)
        rows.append((name, times, (cpu, wall)))
        print(f"{name}: cpu {cpu:.2f} s, wall {wall:.2f} s  " +
              "  ".join(f"{p} {times[p]:.2f}" for p in phases), flush=True)

    print("\nCPU seconds per phase; total CPU and wall of the process")
    print("\n| model | " + " | ".join(phases) + " | total cpu | wall |")
    print("|---" * (len(phases) + 3) + "|")
    for name, times, total in rows:
        if times is None:
            print(f"| {name} | " + " | ".join("" for _ in phases) +
                  f" | | > {total:.0f} |")
        else:
            cpu, wall = total
            print(f"| {name} | " + " | ".join(f"{times[p]:.2f}" for p in phases)
                  + f" | {cpu:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    main()

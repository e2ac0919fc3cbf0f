#!/usr/bin/python3
"""Cleave against PyTorch on real models, in one run, on one thread.

    bench/real_models.py [--build=build] [--models=resnet18,encoder,gpt]
                         [--seconds=6] [--workdir=/tmp/cleave-real-models]

For each model: export it to ONNX the way docs/user/onnx.md says (training
mode, opset 14, dynamic batch, no constant folding), compile it with

    cleave-compile MODEL.onnx --micro-batch=32 --accumulate=4 --optimizer=sgd

time the artifact with cleave-bench (random data of the right shapes), and
time PyTorch's own accumulation loop on the same module in a process of its
own (so that each peak RSS is one framework's), with the same micro-batch,
window, optimizer and thread count. Both print one JSON object; the table
gives samples/s, the ratio, and peak RSS.

The models:
* resnet18: torchvision's, 10 classes, 3x32x32 inputs (batch norm in
  training mode on both sides);
* encoder: a torch.nn.TransformerEncoder classifier (pre-norm, GELU,
  batch_first; 2 layers, width 128, 4 heads, feed-forward 512) over 32
  feature vectors of 32, mean-pooled, 10 classes;
* gpt: a GPT-style causal decoder (token and position embeddings, one
  pre-norm block of causal attention and a GELU MLP, width 128, feed-forward
  512, untied head) over 64 byte tokens, a cross-entropy per token.
The encoder and the decoder are test/oracle/oracle.py's classes at these
sizes. Needs python3-torchvision (scripts/setup.sh).
"""

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MICRO_BATCH = 32
ACCUMULATE = 4


def build_model(name):
    """(module, per-sample input shape, input dtype, label kind, classes)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "oracle"))
    import oracle  # noqa: E402  (the oracle's model classes)
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        return (torchvision.models.resnet18(num_classes=10), (3, 32, 32),
                torch.float32, "class", 10)
    if name == "encoder":
        return (oracle.Encoder(features=32, dim=128, heads=4, hidden=512,
                               layers=2, classes=10),
                (32, 32), torch.float32, "class", 10)
    if name == "gpt":
        return (oracle.Gpt(vocab=256, dim=128, hidden=512, tokens=64), (64,),
                torch.int64, "token", 256)
    raise SystemExit(f"unknown model {name}")


def example_input(shape, dtype, classes, batch):
    import torch
    if dtype == torch.int64:
        return torch.randint(0, classes, (batch,) + shape)
    return torch.randn((batch,) + shape)


def export(name, path):
    import torch
    module, shape, dtype, _, classes = build_model(name)
    module.train()
    x = example_input(shape, dtype, classes, 2)
    output_axes = {0: "batch"}
    torch.onnx.export(copy.deepcopy(module), x, path, input_names=["x"],
                      output_names=["logits"], opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"x": {0: "batch"}, "logits": output_axes})


def torch_loop(name, seconds, autocast=False):
    """PyTorch's accumulation loop, timed like cleave-bench; one JSON line.
    `autocast`: forward and loss under torch.autocast("cpu", bfloat16),
    PyTorch's own mixed precision (bench/bf16.py)."""
    import contextlib
    import torch
    torch.set_num_threads(1)
    module, shape, dtype, labels, classes = build_model(name)
    module.train()
    b, n = MICRO_BATCH, ACCUMULATE
    x = example_input(shape, dtype, classes, b)
    if labels == "token":
        y = torch.randint(0, classes, (b,) + shape)
        per_window = float(b * shape[0] * n)
    else:
        y = torch.arange(b) % classes
        per_window = float(b * n)
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")

    def micro():
        with (torch.autocast("cpu", dtype=torch.bfloat16) if autocast
              else contextlib.nullcontext()):
            logits = module(x)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]).float(),
                           y.reshape(-1))
        (loss / per_window).backward()

    def apply():
        opt.step()
        opt.zero_grad()

    for _ in range(2 * n):
        micro()
    apply()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps % n:
        micro()
        steps += 1
        if steps % n == 0:
            apply()
    sps = steps * b / (time.perf_counter() - start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"samples_per_second": round(sps, 1),
                      "peak_rss_mib": round(rss, 1)}))


def run_json(cmd, env):
    print(f"  [load {os.getloadavg()[0]:.1f}] {' '.join(cmd)}",
          file=sys.stderr, flush=True)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="resnet18,encoder,gpt")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--workdir", default="/tmp/cleave-real-models")
    ap.add_argument("--torch", metavar="MODEL",
                    help="(internal) run PyTorch's loop for MODEL and exit")
    ap.add_argument("--autocast", action="store_true",
                    help="(internal) with --torch: under bf16 autocast")
    ap.add_argument("--export", nargs=2, metavar=("MODEL", "PATH"),
                    help="(internal) export MODEL to PATH and exit")
    args = ap.parse_args()
    if args.torch:
        torch_loop(args.torch, args.seconds, args.autocast)
        return
    if args.export:
        export(*args.export)
        return

    os.makedirs(args.workdir, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    bin_dir = os.path.join(args.build, "bin")
    rows = []
    for name in args.models.split(","):
        onnx_path = os.path.join(args.workdir, name + ".onnx")
        artifact = os.path.join(args.workdir, name + ".cleave")
        # In a process of its own: a child inherits its parent's peak RSS
        # (getrusage), so this process must not grow by importing torch.
        subprocess.run([sys.executable, os.path.abspath(__file__), "--export",
                        name, onnx_path], env=env, check=True)
        subprocess.run([os.path.join(bin_dir, "cleave-compile"), onnx_path,
                        f"--micro-batch={MICRO_BATCH}",
                        f"--accumulate={ACCUMULATE}", "--optimizer=sgd",
                        "-o", artifact], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        cleave = run_json([os.path.join(bin_dir, "cleave-bench"), artifact,
                           f"--accumulate={ACCUMULATE}",
                           f"--seconds={args.seconds}"], env)
        reference = run_json([sys.executable, os.path.abspath(__file__),
                              "--torch", name,
                              f"--seconds={args.seconds / 3}"], env)
        rows.append((name, cleave, reference))
        print(f"{name}: cleave {cleave['samples_per_second']} samples/s, "
              f"pytorch {reference['samples_per_second']}", file=sys.stderr,
              flush=True)

    print(f"\nmicro-batch {MICRO_BATCH}, N = {ACCUMULATE}, SGD, one thread\n")
    print("| model | Cleave samples/s | PyTorch samples/s | ratio | "
          "Cleave peak RSS MiB | PyTorch peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for name, c, r in rows:
        print(f"| {name} | {c['samples_per_second']:.0f} | "
              f"{r['samples_per_second']:.0f} | "
              f"{c['samples_per_second'] / r['samples_per_second']:.2f} | "
              f"{c['peak_rss_mib']:.0f} | {r['peak_rss_mib']:.0f} |")


if __name__ == "__main__":
    main()

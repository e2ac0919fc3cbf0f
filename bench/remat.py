#!/usr/bin/python3
"""Rematerialisation against holding, and against torch.utils.checkpoint.

    bench/remat.py [--build=build] [--models=resnet18,gpt] [--seconds=3]
                   [--workdir=/tmp/cleave-remat] [--plot=remat.png]
    bench/remat.py --replot=WORKDIR/remat.json --plot=remat.png

Issue 21, item 5. For each model and micro-batch B (N = 4, SGD, one thread):

* Cleave without recomputation, with --remat=auto and with
  --remat-budget=0 (everything the cost model may recompute): the memory
  report's total, the session's measured memory (cleave-bench: peak
  resident set less the resident set before the session) and samples/s;
* PyTorch's own accumulation loop on the same module, plain and with
  torch.utils.checkpoint on every block (resnet18's four stages, the
  decoder's blocks): the memory the training loop adds (peak resident set
  less the resident set once the model and data exist) and samples/s.

Then, at a budget equal to the report of the smallest micro-batch without
recomputation, the largest micro-batch each remat level fits, its time per
sample against the same micro-batch without recomputation, and its
samples/s against the best unconstrained rate.

The measurements are written to WORKDIR/remat.json; --plot draws the
measured memory against the micro-batch from them (matplotlib:
python3-matplotlib), and --replot redraws from a saved remat.json without
measuring again.

The models: torchvision's resnet18 (10 classes, 3x32x32 inputs) and a
GPT-style decoder (examples/gpt/export.py: 256 positions, 4 blocks, width
128, feed-forward 512, byte vocabulary). Needs python3-torchvision.
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ACCUMULATE = 4
sys.path.insert(0, HERE)
# real_models.py's child-process runner and random inputs.
from real_models import example_input as example, run_json  # noqa: E402

MICRO_BATCHES = {"resnet18": [8, 16, 32, 64, 128], "gpt": [2, 4, 8, 16]}
LEVELS = [("none", []), ("auto", ["--remat=auto"]),
          ("max", ["--remat-budget=0"])]


def build_model(name):
    """(module, per-sample input shape, input dtype, classes, blocks)."""
    import torch
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        m = torchvision.models.resnet18(num_classes=10)
        return m, (3, 32, 32), torch.float32, 10, [
            "layer1", "layer2", "layer3", "layer4"]
    if name == "gpt":
        sys.path.insert(0, os.path.join(ROOT, "examples", "gpt"))
        import export as gpt  # noqa: E402
        m = gpt.Gpt(vocab=256, tokens=256, dim=128, hidden=512, layers=4)
        return m, (256,), torch.int64, 256, None
    raise SystemExit(f"unknown model {name}")


def export(name, path):
    import torch
    module, shape, dtype, classes, _ = build_model(name)
    module.train()
    x = example(shape, dtype, classes, 2)
    torch.onnx.export(copy.deepcopy(module), x, path, input_names=["x"],
                      output_names=["logits"], opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"x": {0: "batch"},
                                    "logits": {0: "batch"}})


def vm_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def torch_loop(name, batch, checkpointed, seconds):
    """PyTorch's accumulation loop; one JSON line."""
    import torch
    from torch.utils.checkpoint import checkpoint
    torch.set_num_threads(1)
    module, shape, dtype, classes, stages = build_model(name)
    module.train()
    x = example(shape, dtype, classes, batch)
    tokens = dtype == torch.int64
    y = (torch.randint(0, classes, (batch,) + shape) if tokens
         else torch.arange(batch) % classes)
    per_window = float(batch * ACCUMULATE * (shape[0] if tokens else 1))
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")

    def forward(inp):
        if not checkpointed:
            return module(inp)
        if name == "resnet18":
            m = module
            h = m.maxpool(m.relu(m.bn1(m.conv1(inp))))
            for stage in stages:
                h = checkpoint(getattr(m, stage), h)
            return m.fc(torch.flatten(m.avgpool(h), 1))
        h = module.embed(inp) + module.pos
        for block in module.blocks:
            h = checkpoint(block, h)
        return module.head(module.lnf(h))

    def micro():
        logits = forward(x)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        (loss / per_window).backward()

    def apply():
        opt.step()
        opt.zero_grad()

    # The memory the loop adds: the peak resident set from here on (reset
    # through clear_refs, as cleave-bench does) less the resident set now.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = vm_kib("VmRSS")
    for _ in range(ACCUMULATE):
        micro()
    apply()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps % ACCUMULATE:
        micro()
        steps += 1
        if steps % ACCUMULATE == 0:
            apply()
    sps = steps * batch / (time.perf_counter() - start)
    print(json.dumps({"samples_per_second": round(sps, 1),
                      "session_mib": round((vm_kib("VmHWM") - before) / 1024,
                                           1)}))


def plot(results, path):
    """Measured memory against micro-batch, one panel per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2),
                             squeeze=False)
    series = [("none", "Cleave", "C0", "-"),
              ("auto", "Cleave --remat=auto", "C0", "--"),
              ("max", "Cleave --remat-budget=0", "C0", ":"),
              ("torch0", "PyTorch", "C3", "-"),
              ("torch1", "PyTorch + checkpoint", "C3", "--")]
    for ax, name in zip(axes[0], names):
        rows = results[name]["rows"]
        bs = sorted({int(k.split("/")[0]) for k in rows})
        for key, label, color, style in series:
            ys = [rows[f"{b}/{key}"]["measured_mib"] for b in bs]
            ax.plot(bs, ys, color=color, linestyle=style, marker="o",
                    label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(bs)
        ax.set_xticklabels([str(b) for b in bs])
        ax.set_xlabel("micro-batch")
        ax.set_ylabel("session memory, MiB (measured peak RSS)")
        ax.set_title(results[name]["title"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(results[names[0]]["cpu"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="resnet18,gpt")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--workdir", default="/tmp/cleave-remat")
    ap.add_argument("--plot", help="draw memory against micro-batch (PNG)")
    ap.add_argument("--replot", metavar="JSON",
                    help="draw --plot from a saved remat.json and exit")
    ap.add_argument("--torch", nargs=3, metavar=("MODEL", "B", "CKPT"),
                    help="(internal) run PyTorch's loop and exit")
    ap.add_argument("--export", nargs=2, metavar=("MODEL", "PATH"),
                    help="(internal) export MODEL to PATH and exit")
    args = ap.parse_args()
    if args.torch:
        name, b, ckpt = args.torch
        torch_loop(name, int(b), ckpt == "1", args.seconds)
        return
    if args.export:
        export(*args.export)
        return
    if args.replot:
        if not args.plot:
            raise SystemExit("--replot needs --plot=PATH")
        with open(args.replot) as f:
            plot(json.load(f), args.plot)
        return

    os.makedirs(args.workdir, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    bin_dir = os.path.join(args.build, "bin")
    me = os.path.abspath(__file__)
    results = {}
    for name in args.models.split(","):
        onnx = os.path.join(args.workdir, name + ".onnx")
        subprocess.run([sys.executable, me, "--export", name, onnx], env=env,
                       check=True, stderr=subprocess.DEVNULL)
        rows = {}
        for b in MICRO_BATCHES[name]:
            for level, flags in LEVELS:
                artifact = os.path.join(args.workdir,
                                        f"{name}-b{b}-{level}.cleave")
                subprocess.run([os.path.join(bin_dir, "cleave-compile"), onnx,
                                "--loss=cross-entropy", "--optimizer=sgd",
                                f"--micro-batch={b}",
                                f"--accumulate={ACCUMULATE}", *flags,
                                "-o", artifact], env=env, check=True,
                               stderr=subprocess.DEVNULL)
                r = run_json([os.path.join(bin_dir, "cleave-bench"), artifact,
                              f"--accumulate={ACCUMULATE}",
                              f"--seconds={args.seconds}"], env)
                rows[(b, level)] = (r["memory_report_mib"],
                                    r["peak_rss_mib"] -
                                    r["rss_before_session_mib"],
                                    r["samples_per_second"])
            for ckpt in ("0", "1"):
                t = run_json([sys.executable, me, "--torch", name, str(b),
                              ckpt, f"--seconds={args.seconds}"], env)
                rows[(b, "torch" + ckpt)] = (None, t["session_mib"],
                                             t["samples_per_second"])
        results[name] = {
            "title": f"{name}, N = {ACCUMULATE}, SGD, one thread",
            "cpu": cpu_name(),
            "rows": {f"{b}/{k}": {"report_mib": v[0], "measured_mib": v[1],
                                  "samples_per_second": v[2]}
                     for (b, k), v in rows.items()}}
        with open(os.path.join(args.workdir, "remat.json"), "w") as f:
            json.dump(results, f, indent=1)

        print(f"\n{name}, N = {ACCUMULATE}, SGD, one thread: memory in MiB "
              "(report / measured), samples/s\n")
        print("| micro-batch | Cleave | Cleave auto | Cleave max | "
              "PyTorch | PyTorch checkpoint |")
        print("|---|---|---|---|---|---|")
        for b in MICRO_BATCHES[name]:
            cells = []
            for level, _ in LEVELS:
                rep, meas, sps = rows[(b, level)]
                cells.append(f"{rep:.0f} / {meas:.0f}, {sps:.0f}")
            for ckpt in ("0", "1"):
                _, meas, sps = rows[(b, "torch" + ckpt)]
                cells.append(f"{meas:.0f}, {sps:.0f}")
            print(f"| {b} | " + " | ".join(cells) + " |")

        small = MICRO_BATCHES[name][0]
        budget = rows[(small, "none")][0]
        best = max(rows[(b, "none")][2] for b in MICRO_BATCHES[name])
        print(f"\nat a budget of {budget:.0f} MiB (the report at micro-batch "
              f"{small} without recomputation); unconstrained best "
              f"{best:.0f} samples/s:\n")
        print("| remat | largest micro-batch | × the no-remat one | "
              "time per sample vs. no remat at that micro-batch | "
              "samples/s vs. unconstrained |")
        print("|---|---|---|---|---|")
        for level, _ in LEVELS:
            fits = [b for b in MICRO_BATCHES[name]
                    if rows[(b, level)][0] <= budget]
            if not fits:
                print(f"| {level} | none fits | | | |")
                continue
            b = max(fits)
            sps = rows[(b, level)][2]
            held = rows[(b, "none")][2]
            print(f"| {level} | {b} | {b / small:.1f} | "
                  f"{held / sps - 1:+.0%} | {sps / best:.0%} |")
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()

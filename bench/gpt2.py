#!/usr/bin/python3
"""GPT-2-small trained with gradient accumulation: Cleave against PyTorch.

The model is GPT-2's shape (issue 18 item 5): token and learned position
embeddings, pre-norm blocks of multi-head causal self-attention and a GELU
MLP of 4x the width, a final layer norm and a head tied to the token
embedding, no dropout by default (--dropout=P: GPT-2's attention dropout on
the probabilities, which the cuda bf16 pipeline fuses into cuDNN's kernel
with nn.dropout's own mask). Exported to ONNX as examples/gpt does (the causal
mask a graph constant), compiled by cleave-compile with cross-entropy per
token and AdamW, the parameters drawn by the runtime (--init-normal-std=0.02:
the artifact does not embed GPT-2 small's 500 MB of initial values), and
timed by cleave-bench; PyTorch runs its own
accumulation loop on the same module (AdamW, the loss summed over tokens and
divided by the window's tokens), eager and, with --compile, through
torch.compile, both under torch.autocast(bfloat16) when --precision=bf16.

Configurations (--config):
  small  12 layers, width 768, 12 heads, 1024 positions (GPT-2 small); the
         vocabulary is 50257 tokens, or bytes (256) with --vocab=256
  tiny   2 layers, width 128, 4 heads, 64 positions, bytes: the same code
         path on a CPU in seconds (the CPU check of the bench, and what
         `ctest -R bench.gpt2_tiny` runs)

Reported per run: tokens/s, model FLOP utilisation (6 N + 12 L T d FLOPs a
token, N the parameters without the position table; against --peak-tflops,
by default 989 on an H100 or H200, dense bf16; none on a CPU unless given),
and peak memory (device memory on a GPU: cleave-bench's device_used_mib,
PyTorch's max_memory_allocated; peak RSS on a CPU). Targets on an H100 at
micro-batch 8-16, N = 8 (issue 18): Cleave bf16 >= 1.3x PyTorch eager,
>= 1.0x torch.compile, >= 35% MFU, device memory flat in N.

    /usr/bin/python3 bench/gpt2.py --config=tiny --precision=f32        # CPU
    /usr/bin/python3 bench/gpt2.py --config=small --device=cuda \\
        --micro-batch=8 --accumulate=8 --compile                       # GPU

A machine without the compiler (the lent GPU machines) runs an artifact
compiled elsewhere: `--prepare=DIR` only compiles (gpt2-<config>-b<B>-n<N>-
<precision>-<device>.cleave in DIR; scripts/gpu-check-prepare.sh does this),
and `--artifact=PATH` times that file instead of compiling.

One JSON object per run goes to stdout (and to --json); a table to stderr.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CONFIGS = {
    "small": dict(layers=12, dim=768, heads=12, tokens=1024, vocab=50257),
    "tiny": dict(layers=2, dim=128, heads=4, tokens=64, vocab=256),
}


def build(config, vocab, dropout=0.0):
    import torch
    from torch import nn

    c = dict(CONFIGS[config])
    if vocab:
        c["vocab"] = vocab

    class Block(nn.Module):
        def __init__(self, dim, heads, tokens):
            super().__init__()
            self.heads = heads
            # GPT-2's attn_pdrop: dropout on the attention probabilities.
            self.attn_drop = nn.Dropout(dropout)
            self.ln1 = nn.LayerNorm(dim)
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)
            self.v = nn.Linear(dim, dim)
            self.proj = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.fc1 = nn.Linear(dim, 4 * dim)
            self.fc2 = nn.Linear(4 * dim, dim)
            # A plain tensor, neither parameter nor buffer: a graph constant
            # (-1e4 above the diagonal, as examples/gpt's).
            self.causal = torch.triu(torch.full((tokens, tokens), -1e4), 1)

        def forward(self, x):
            b, t, d = x.shape
            h = self.ln1(x)

            def split(y):
                return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

            q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
            scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
            scores = scores + self.causal.to(scores.device)
            probs = torch.softmax(scores, dim=-1)
            if dropout:
                probs = self.attn_drop(probs)
            attn = probs @ v
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    class Gpt2(nn.Module):
        def __init__(self, layers, dim, heads, tokens, vocab):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            nn.init.normal_(self.embed.weight, std=0.02)
            self.pos = nn.Parameter(0.01 * torch.randn(tokens, dim))
            self.blocks = nn.ModuleList(
                Block(dim, heads, tokens) for _ in range(layers))
            self.lnf = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = self.embed.weight  # tied, as GPT-2's

        def forward(self, ids):
            x = self.embed(ids) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.lnf(x))

    torch.manual_seed(0)
    return Gpt2(**c), c


def flops_per_token(model, c):
    """6 N + 12 L T d: N the parameters but the position table (the tied
    head's matmul counted once, through the embedding's parameters)."""
    n = sum(p.numel() for name, p in model.named_parameters() if name != "pos")
    return 6 * n + 12 * c["layers"] * c["tokens"] * c["dim"]


def export(config, vocab, path, dropout=0.0):
    import torch
    model, c = build(config, vocab, dropout)
    ids = torch.zeros(2, c["tokens"], dtype=torch.int64)
    # The TorchScript exporter, which keeps the causal mask a graph
    # constant; torch 2.9 and later default to the dynamo one.
    extra = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 \
        else {}
    torch.onnx.export(model, (ids,), path, input_names=["ids"],
                      output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch"},
                                    "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, **extra)


def torch_loop(a):
    """PyTorch's accumulation loop; one JSON object on stdout."""
    import torch
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    model, c = build(a.config, a.vocab, a.dropout)
    model = model.to(dev)
    for block in model.blocks:  # the mask's copy once, not every step
        block.causal = block.causal.to(dev)
    net = torch.compile(model) if a.compile else model
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    b, n, t, v = a.micro_batch, a.accumulate, c["tokens"], c["vocab"]
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, v, (b, t), generator=gen).to(dev)
    labels = torch.randint(0, v, (b, t), generator=gen).to(dev)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    window = float(b * t * n)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def micro():
        with torch.autocast(dev.type, dtype=torch.bfloat16,
                            enabled=a.precision == "bf16"):
            logits = net(ids)
            loss = loss_fn(logits.reshape(-1, v).float(),
                           labels.reshape(-1)) / window
        loss.backward()

    def apply():
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(2 * n):  # warm-up (and torch.compile's compilation)
        micro()
    apply()
    sync()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < a.seconds or steps % n or steps < n:
        micro()
        steps += 1
        if steps % n == 0:
            apply()
    sync()
    seconds = time.perf_counter() - t0
    out = {"tokens_per_second": round(steps * b * t / seconds, 1),
           "micro_steps": steps}
    if dev.type == "cuda":
        out["peak_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    else:
        import resource
        out["peak_mib"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
    print(json.dumps(out))


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in:\n" + text)


def run(cmd, env=None, what=""):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"gpt2.py: {what or cmd[0]} failed ({p.returncode}):\n"
                 f"{p.stdout[-2000:]}{p.stderr[-4000:]}")
    return p.stdout


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    p.add_argument("--vocab", type=int, default=0,
                   help="vocabulary size (default: the config's)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--precision", choices=["f32", "bf16"], default="bf16")
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--accumulate", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--gpu-arch", default="sm_90")
    p.add_argument("--compile", action="store_true",
                   help="also time PyTorch through torch.compile")
    p.add_argument("--no-torch", action="store_true",
                   help="time Cleave only")
    p.add_argument("--peak-tflops", type=float, default=0.0,
                   help="the device's dense peak for MFU (default: 989 on "
                   "cuda, none on a CPU)")
    p.add_argument("--json", help="also write the result here")
    p.add_argument("--prepare", metavar="DIR",
                   help="only compile the artifact, into DIR")
    p.add_argument("--artifact", metavar="PATH",
                   help="time this artifact (compiled with --prepare and the "
                   "same options) instead of compiling")
    p.add_argument("--torch-loop", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--export", metavar="PATH", help="only export the model")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="dropout on the attention probabilities (GPT-2's "
                   "attn_pdrop, 0.1 in training); 0: none")
    a = p.parse_args()
    if not 0 <= a.dropout < 1:
        p.error(f"--dropout must be in [0, 1), got {a.dropout}")

    if a.torch_loop:
        return torch_loop(a)
    if a.export:
        return export(a.config, a.vocab, a.export, a.dropout)

    model, c = build(a.config, a.vocab, a.dropout)
    fpt = flops_per_token(model, c)
    peak = a.peak_tflops or (989.0 if a.device == "cuda" else 0.0)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    bin_dir = os.path.join(a.build, "bin")
    result = {"config": a.config, **c, "dropout": a.dropout,
              "device": a.device,
              "precision": a.precision, "micro_batch": a.micro_batch,
              "accumulate": a.accumulate, "flops_per_token": fpt,
              "peak_tflops": peak or None, "rows": {}}

    def row(name, tokens_per_second, peak_mib):
        mfu = tokens_per_second * fpt / (peak * 1e12) if peak else None
        result["rows"][name] = {"tokens_per_second": tokens_per_second,
                                "mfu": round(mfu, 4) if mfu else None,
                                "peak_mib": peak_mib}
        print(f"  {name:28s} {tokens_per_second:12,.0f} tokens/s"
              f"{f'  MFU {100 * mfu:5.1f}%' if mfu else ''}"
              f"  peak {peak_mib} MiB", file=sys.stderr)

    def compile_into(directory, scratch):
        # The ONNX file (500 MB for GPT-2 small) in scratch space, never in
        # the folder an artifact is prepared in.
        onnx_path = os.path.join(scratch, "gpt2.onnx")
        run([sys.executable, os.path.abspath(__file__), "--export",
             onnx_path, f"--config={a.config}", f"--vocab={c['vocab']}",
             f"--dropout={a.dropout}"],
            env, "exporting the model")
        artifact = os.path.join(
            directory, f"gpt2-{a.config}-b{a.micro_batch}-n{a.accumulate}-"
            f"{a.precision}-{a.device}"
            f"{f'-dropout{a.dropout:g}' if a.dropout else ''}.cleave")
        cmd = [os.path.join(bin_dir, "cleave-compile"), onnx_path,
               "--loss=cross-entropy", "--optimizer=adamw", "--lr=6e-4",
               "--init-normal-std=0.02", f"--micro-batch={a.micro_batch}",
               f"--accumulate={a.accumulate}", f"--precision={a.precision}",
               "-o", artifact]
        if a.device == "cuda":
            # Portable host code: the artifact may run on another machine.
            cmd += ["--target=cuda", f"--gpu-arch={a.gpu_arch}",
                    "--target-cpu=x86-64-v3"]
        t0 = time.perf_counter()
        run(cmd, env, "cleave-compile")
        os.remove(onnx_path)
        result["compile_seconds"] = round(time.perf_counter() - t0, 1)
        return artifact

    if a.prepare:
        os.makedirs(a.prepare, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            print(compile_into(a.prepare, tmp))
        return

    with tempfile.TemporaryDirectory() as tmp:
        artifact = a.artifact or compile_into(tmp, tmp)
        print(f"gpt2.py: {a.config} ({c}), B={a.micro_batch} "
              f"N={a.accumulate}, {a.precision} on {a.device}; "
              f"{fpt / 1e6:,.1f} MFLOP a token; "
              + (f"compiled in {result['compile_seconds']} s"
                 if "compile_seconds" in result else artifact),
              file=sys.stderr)
        bench = json.loads(run(
            [os.path.join(bin_dir, "cleave-bench"), artifact,
             f"--accumulate={a.accumulate}", f"--seconds={a.seconds}",
             f"--device={a.device}"], env, "cleave-bench").strip()
            .splitlines()[-1])
        if bench.get("micro_batch") != a.micro_batch:
            sys.exit(f"gpt2.py: {artifact} has micro-batch "
                     f"{bench.get('micro_batch')}, not {a.micro_batch}")
        peak_mib = bench.get("device_used_mib", bench.get("peak_rss_mib"))
        row(f"Cleave {a.precision}",
            round(bench["samples_per_second"] * c["tokens"], 1), peak_mib)
        if not a.no_torch:
            modes = [("eager", [])] + ([("torch.compile", ["--compile"])]
                                       if a.compile else [])
            for name, flags in modes:
                out = last_json(run(
                    [sys.executable, os.path.abspath(__file__),
                     "--torch-loop", f"--config={a.config}",
                     f"--vocab={c['vocab']}", f"--device={a.device}",
                     f"--precision={a.precision}", f"--dropout={a.dropout}",
                     f"--micro-batch={a.micro_batch}",
                     f"--accumulate={a.accumulate}",
                     f"--seconds={a.seconds}", f"--threads={a.threads}"]
                    + flags, env, f"PyTorch {name}"))
                row(f"PyTorch {name}"
                    + (" (autocast bf16)" if a.precision == "bf16" else ""),
                    out["tokens_per_second"], out["peak_mib"])
    rows = result["rows"]
    cleave = rows[f"Cleave {a.precision}"]["tokens_per_second"]
    for name, r in rows.items():
        if name.startswith("PyTorch"):
            r["cleave_over_this"] = round(cleave / r["tokens_per_second"], 3)
            print(f"  Cleave / {name}: {r['cleave_over_this']:.2f}x",
                  file=sys.stderr)
    text = json.dumps(result)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

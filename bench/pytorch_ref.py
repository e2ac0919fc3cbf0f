#!/usr/bin/python3
"""PyTorch's own loop with gradient accumulation, timed like cleave-bench.

Same models as examples/mlp.mlir, examples/lenet.mlir and the ONNX
transformer test model (`transformer`: the Block of
test/Frontend/Onnx/Inputs/make_model.py's torch_block17, built here again so
that a machine without the repository's tests or compiler can run it), random
data of the same shapes, micro-batch B, window N, T threads. nn.Linear's GEMMs go to
OpenBLAS (Debian's libblas.so.3 alternative, which scripts/setup.sh installs;
torch calls sgemm_ from it) and nn.Conv2d to oneDNN (torch's mkldnn backend).
Prints one JSON object like cleave-bench's.

    /usr/bin/python3 bench/pytorch_ref.py mlp --micro-batch=32 --accumulate=4 --threads=1

With --device=cuda the model and data live on the GPU, every timed phase
ends with torch.cuda.synchronize(), and the JSON also has the peak of
torch.cuda.max_memory_allocated (PyTorch's tensors, not its cache or the
CUDA context). --compile runs the model through torch.compile first
(scripts/gpu-check.sh reports it where it works). --autocast runs the
forward pass and the loss under torch.autocast(dtype=torch.bfloat16), the
reference for Cleave's --precision=bf16 (bench/bf16.py).

--inputs says where the micro-batch comes from on a GPU: `device` (the
default) makes it there once, so no step copies anything; `pageable` and
`pinned` keep it in host memory (pinned: page-locked, as a DataLoader with
pin_memory=True hands it over) and copy it to the GPU at every micro-step,
as Cleave does (its sessions take host pointers: cleave-bench's samples/s
include that copy).
"""
import argparse
import json
import resource
import time

import torch


class Block(torch.nn.Module):
    """The transformer test model, make_model.py's torch_block17: a pre-norm
    transformer block over 8 token embeddings (vocabulary 50, d 16, 2 heads,
    dropout 0.1), mean-pooled into 5 classes. Its parameters, their names and
    shapes must stay those of make_model.py's Block: gpu-check-prepare.sh
    compares them with the exported ONNX model's initializers."""

    def __init__(self, vocab=50, dim=16, heads=2, classes=5):
        super().__init__()
        nn = torch.nn
        self.embed = nn.Embedding(vocab, dim)
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(dim, classes)
        self.heads = heads

    def forward(self, ids):
        x = self.embed(ids)
        b, t, d = x.shape
        h = self.ln1(x)

        def split_heads(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split_heads(self.q(h)), split_heads(self.k(h)), split_heads(self.v(h))
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
        attn = self.drop(torch.softmax(scores, dim=-1)) @ v
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        x = x + self.fc2(self.drop(torch.nn.functional.gelu(self.fc1(self.ln2(x)))))
        return self.head(x.mean(dim=1))


# The transformer's input: sequences of 8 token ids below 50, 5 classes.
TOKENS, VOCAB, CLASSES = 8, 50, 5


def model(name):
    if name == "transformer":
        return Block(VOCAB, 16, 2, CLASSES)
    if name == "mlp":
        return torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    if name == "lenet":
        return torch.nn.Sequential(
            torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(400, 120),
            torch.nn.ReLU(), torch.nn.Linear(120, 10))
    raise SystemExit(f"unknown model {name}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--accumulate", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--compile", action="store_true")
    p.add_argument("--autocast", action="store_true",
                   help="forward and loss under torch.autocast(device, "
                   "dtype=torch.bfloat16): PyTorch's own mixed precision")
    p.add_argument("--inputs", default="device",
                   choices=["device", "pageable", "pinned"],
                   help="on a GPU: the batch made there once (device), or "
                   "copied from host memory at every micro-step")
    a = p.parse_args()
    if a.inputs != "device" and a.device != "cuda":
        p.error("--inputs=pageable or pinned is for --device=cuda")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    net = model(a.model).to(dev)
    if a.compile:
        net = torch.compile(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    b, n = a.micro_batch, a.accumulate
    if a.model == "transformer":
        x = torch.arange(b * TOKENS, device=dev).view(b, TOKENS) % VOCAB
        y = torch.arange(b, device=dev) % CLASSES
    else:
        x = torch.randn(b, 1, 28, 28, device=dev)
        y = torch.arange(b, device=dev) % 10

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    window = float(b * n)

    host = None
    if a.inputs != "device":
        host = (x.cpu(), y.cpu())
        if a.inputs == "pinned":
            host = tuple(t.pin_memory() for t in host)

    def micro():
        inputs, labels = x, y
        if host is not None:
            inputs = host[0].to(dev, non_blocking=a.inputs == "pinned")
            labels = host[1].to(dev, non_blocking=a.inputs == "pinned")
        with torch.autocast(dev.type, dtype=torch.bfloat16,
                            enabled=a.autocast):
            loss = loss_fn(net(inputs), labels) / window
        loss.backward()

    def apply():
        opt.step()
        opt.zero_grad()

    for _ in range(20):
        micro()
    apply()
    sync()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    budget = a.seconds / 3
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget:
        micro()
        count += 1
    sync()
    micro_ms = (time.perf_counter() - t0) / count * 1e3
    apply_s, applies, t1 = 0.0, 0, time.perf_counter()
    while time.perf_counter() - t1 < budget or applies < 10:
        micro()
        sync()
        s = time.perf_counter()
        apply()
        sync()
        apply_s += time.perf_counter() - s
        applies += 1
    apply_ms = apply_s / applies * 1e3
    steps, t2 = 0, time.perf_counter()
    while time.perf_counter() - t2 < budget or steps % n:
        micro()
        steps += 1
        if steps % n == 0:
            apply()
    sync()
    sps = steps * b / (time.perf_counter() - t2)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out = {"micro_batch": b, "accumulate": n,
           "ms_per_micro_step": round(micro_ms, 4),
           "ms_per_apply_step": round(apply_ms, 4),
           "samples_per_second": round(sps, 1),
           "peak_rss_mib": round(rss, 1)}
    if dev.type == "cuda":
        out["device_peak_mib"] = round(
            torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

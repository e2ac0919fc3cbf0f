#!/usr/bin/python3
# ===- export.py - A small GPT-style decoder, exported to ONNX --------------===#
#
# Builds a GPT-style causal language model (token and position embeddings,
# pre-norm blocks of causal self-attention and a GELU MLP, a final layer norm
# and a head over the vocabulary, untied or --tied to the embedding; no
# dropout) and exports it to ONNX the way
# docs/user/onnx.md prescribes, for cleave-compile and cleave-train:
#
#   /usr/bin/python3 examples/gpt/export.py -o gpt.onnx
#   cleave-compile gpt.onnx --loss=cross-entropy --optimizer=adam --lr=3e-3 \
#       --micro-batch=16 --accumulate=2 -o gpt.cleave
#   cleave-train gpt.cleave --data=corpus --epochs=3
#
# The model takes ids [B, T] (int64 byte values) and predicts next-token
# logits [B, T, vocab]; cross-entropy is then a loss per token
# (docs/design/split.md). Its attention is a single head per block and the
# causal mask a graph constant (-1e4 above the diagonal: exp() of it is 0 in
# float32, as -inf would be, without inf arithmetic). The tests import `Gpt`
# from this file: test/oracle/oracle.py's gpt cases check one block of it
# step for step against PyTorch, test/e2e/gpt_train.py trains it with
# cleave-train (with `export`).
#
# ===------------------------------------------------------------------------===#

import argparse
import copy
import sys

import torch
from torch import nn


class Block(nn.Module):
    """A pre-norm decoder block: x + attention(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, dim, hidden, tokens):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        # A plain tensor, neither parameter nor buffer: a graph constant.
        self.causal = torch.triu(torch.full((tokens, tokens), -1e4), 1)

    def forward(self, x):
        h = self.ln1(x)
        scores = self.q(h) @ self.k(h).transpose(1, 2) / h.shape[-1] ** 0.5
        scores = scores + self.causal
        x = x + self.proj(torch.softmax(scores, dim=-1) @ self.v(h))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    """Next-token logits [B, T, vocab] of ids [B, T]."""

    def __init__(self, vocab=256, tokens=32, dim=32, hidden=64, layers=1,
                 tied=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(0.1 * torch.randn(tokens, dim))
        self.blocks = nn.ModuleList(
            Block(dim, hidden, tokens) for _ in range(layers))
        self.lnf = nn.LayerNorm(dim)
        # Tied (GPT-2's choice): the head's weight is the embedding table,
        # one initializer in the ONNX file and one parameter in Cleave.
        self.head = nn.Linear(dim, vocab, bias=not tied)
        if tied:
            # N(0, 0.02), GPT-2's: N(0, 1) rows would start the head with
            # logits of the embedding's norm, far from a uniform guess.
            nn.init.normal_(self.embed.weight, std=0.02)
            self.head.weight = self.embed.weight

    def forward(self, ids):
        x = self.embed(ids) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.lnf(x))


def export(model, path, tokens, opset=14):
    """The export of docs/user/onnx.md: training mode, no constant folding
    (every initializer keeps its state_dict name), the batch dimension
    dynamic. A copy is traced, so that `model` itself is left as it was."""
    example = torch.zeros(2, tokens, dtype=torch.int64)
    torch.onnx.export(copy.deepcopy(model), example, path,
                      input_names=["ids"], output_names=["logits"],
                      opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"ids": {0: "batch"},
                                    "logits": {0: "batch"}})


def main():
    parser = argparse.ArgumentParser(
        description="Exports a small GPT-style decoder to ONNX.")
    parser.add_argument("-o", "--output", default="gpt.onnx")
    parser.add_argument("--vocab", type=int, default=256,
                        help="vocabulary (256: byte-level tokens)")
    parser.add_argument("--tokens", type=int, default=32,
                        help="sequence length T (the corpus's)")
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--tied", action="store_true",
                        help="the head's weight is the embedding table")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds the initial parameters")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = Gpt(args.vocab, args.tokens, args.dim, args.hidden, args.layers,
                args.tied)
    export(model, args.output, args.tokens)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.output}: {args.layers}-block decoder, T={args.tokens},"
          f" vocab {args.vocab}, {params} parameters", file=sys.stderr)


if __name__ == "__main__":
    main()

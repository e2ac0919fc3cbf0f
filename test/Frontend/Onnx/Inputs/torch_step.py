#!/usr/bin/python3
"""One SGD step of a small torch model, in PyTorch and in Cleave.

    torch_step.py CASE WORKDIR
    torch_step.py --export CASE OUT.onnx

Exports the case's model with torch.onnx (training mode, dynamic batch),
compiles it with cleave-compile (cross-entropy, SGD), runs one micro-step
and the optimizer with cleave-run, and compares the loss and every
parameter after the step with PyTorch's step from the same initial values.
With --export it only writes the ONNX model (for the CUDA back end's
tests, which cannot run it). Prints one `PASS name error` or `FAIL name error` line per compared tensor;
exits 1 on any failure. cleave-compile and cleave-run are taken from PATH.

The cases exercise the importer's transposed convolution, resizing and
normalisation ops forward and backward: a wrong gradient moves the
parameters before it away from PyTorch's.
"""

import io
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from torch import nn
from torch.nn import functional as F

torch.set_num_threads(1)
BATCH = 3
LR = 0.5


class Upsampler(nn.Module):
    """ConvTranspose2d, then Resize in each mode torch.onnx writes:
    nearest (asymmetric, floor), bilinear (half_pixel) and bilinear with
    align_corners, to a size rather than a scale."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1,
                                     output_padding=1)
        self.fc = nn.Linear(2 * 5 * 7, 4)

    def forward(self, x):
        y = self.up(x)
        y = (F.interpolate(y, scale_factor=2, mode="nearest") +
             F.interpolate(y, scale_factor=2, mode="bilinear",
                           align_corners=False))
        y = F.interpolate(y, size=(5, 7), mode="bilinear", align_corners=True)
        return self.fc(torch.tanh(y).flatten(1))


class Norms(nn.Module):
    """GroupNorm (exported as InstanceNormalization of a reshaped tensor),
    InstanceNorm2d and a global max pool."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.inorm(torch.relu(self.gn(self.conv(x))))
        return self.fc(F.adaptive_max_pool2d(y, 1).flatten(1))


class GroupNormNode(nn.Module):
    """A convolution, GroupNorm, ReLU, global average pool and a linear
    head, written by hand as an ONNX GroupNormalization node (torch 1.13
    cannot export one; see `hand_export`). At opset 18 the node's scale and
    bias are per group: `gn_weight`/`gn_bias` here hold one value per group,
    repeated over its channels."""

    def __init__(self, opset):
        super().__init__()
        self.opset = opset
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        affine = 6 if opset >= 21 else 3
        self.gn_weight = nn.Parameter(torch.ones(affine))
        self.gn_bias = nn.Parameter(torch.zeros(affine))
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        y = self.conv(x)
        weight, bias = self.gn_weight, self.gn_bias
        if self.opset < 21:
            weight = weight.repeat_interleave(2)
            bias = bias.repeat_interleave(2)
        y = F.group_norm(y, 3, weight, bias, eps=1e-5)
        return self.fc(torch.relu(y).mean(dim=(2, 3)))

    def hand_export(self):
        from onnx import TensorProto, helper, numpy_helper
        inits = [numpy_helper.from_array(p.detach().numpy(), n)
                 for n, p in self.named_parameters()]
        nodes = [
            helper.make_node("Conv", ["image", "conv.weight", "conv.bias"],
                             ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("GroupNormalization",
                             ["c", "gn_weight", "gn_bias"], ["g"],
                             num_groups=3, epsilon=1e-5),
            helper.make_node("Relu", ["g"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["p"]),
            helper.make_node("Flatten", ["p"], ["f"]),
            helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"],
                             ["logits"], transB=1),
        ]
        graph = helper.make_graph(
            nodes, "groupnorm",
            [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                           ["batch", 3, 4, 4])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                           ["batch", 4])],
            initializer=inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model


class Volumes(nn.Module):
    """3-D convolution, pooling and transposed convolution, each with the
    attributes that change its arithmetic: Conv3d strided, padded, dilated
    and grouped; MaxPool3d padded, strided, dilated, with ceil_mode;
    AvgPool3d with and without the padding counted; a global max pool;
    ConvTranspose3d strided, padded, grouped, with output padding."""

    input_shape = (2, 5, 6, 7)

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, (3, 3, 2), stride=(2, 1, 1),
                              padding=(1, 1, 0), dilation=(1, 2, 1), groups=2)
        self.up = nn.ConvTranspose3d(4, 2, (2, 3, 3), stride=(2, 1, 2),
                                     padding=(0, 1, 1),
                                     output_padding=(1, 0, 1), groups=2)
        with torch.no_grad():
            features = self.features(torch.zeros(1, *self.input_shape))
        self.fc = nn.Linear(features.shape[1], 4)

    def features(self, x):
        y = torch.tanh(self.conv(x))
        parts = [
            F.max_pool3d(y, (2, 3, 3), stride=(1, 2, 1), padding=(1, 1, 1),
                         dilation=(1, 1, 2), ceil_mode=True),
            F.avg_pool3d(y, 3, stride=2, padding=1, count_include_pad=False),
            F.avg_pool3d(y, 2, stride=1, padding=1, count_include_pad=True),
            F.adaptive_max_pool3d(y, 1),
            self.up(y),
        ]
        return torch.cat([p.flatten(1) for p in parts], 1)

    def forward(self, x):
        return self.fc(self.features(x))


CASES = {"upsampler": Upsampler, "norms": Norms, "volumes": Volumes,
         "groupnorm18": lambda: GroupNormNode(18),
         "groupnorm21": lambda: GroupNormNode(21)}


def build(case):
    """The case's model with its initial parameters, an input batch, its
    labels and its ONNX export."""
    torch.manual_seed(0)
    model = CASES[case]()
    # Non-trivial affine parameters, so their gradients reach the input.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 1:
                p.copy_(1 + 0.5 * torch.randn_like(p))
            elif name.endswith("bias") and p.dim() == 1:
                p.copy_(0.3 * torch.randn_like(p))
    x = torch.randn(BATCH, *getattr(model, "input_shape", (3, 4, 4)))
    labels = torch.tensor([1, 3, 0])

    if hasattr(model, "hand_export"):
        return model, x, labels, model.hand_export()
    buffer = io.BytesIO()
    torch.onnx.export(model, x, buffer, input_names=["image"],
                      output_names=["logits"], opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"image": {0: "batch"},
                                    "logits": {0: "batch"}})
    return model, x, labels, onnx.load_from_string(buffer.getvalue())


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--export":
        onnx.save(build(sys.argv[2])[3], sys.argv[3])
        return
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit(__doc__)
    case, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model, x, labels, onnx_model = build(case)
    onnx.save(onnx_model, os.path.join(work, "model.onnx"))
    trained = [i.name for i in onnx_model.graph.initializer
               if i.name in dict(model.named_parameters())]

    initial = {n: p.detach().numpy().copy()
               for n, p in model.named_parameters()}
    loss = F.cross_entropy(model(x), labels)
    loss.backward()
    expected = {n: (p - LR * p.grad).detach().numpy()
                for n, p in model.named_parameters()}

    artifact = os.path.join(work, "model.cleave")
    subprocess.run(["cleave-compile", os.path.join(work, "model.onnx"),
                    "--loss=cross-entropy", "--optimizer=sgd",
                    f"--micro-batch={BATCH}", "-o", artifact], check=True)
    image = os.path.join(work, "image.bin")
    x.numpy().astype("<f4").tofile(image)
    label_file = os.path.join(work, "labels.bin")
    labels.numpy().astype("<i8").tofile(label_file)
    command = ["cleave-run", artifact, "--entry=micro_step",
               "--input", f"image={image}", "--input", f"labels={label_file}",
               "--hyper", f"lr={LR}", "--flush", "--precision=9",
               "--print=loss"]
    command += [f"--print=global:{n}" for n in trained]
    out = subprocess.run(command, check=True, capture_output=True,
                         text=True).stdout

    got, name, rows = {}, None, []
    for line in out.splitlines():
        if line.startswith("loss = "):
            got["loss"] = np.array([float(line.split()[2])])
        elif line.startswith("  ") and name:
            values = line.split()
            if values[0].startswith("["):
                values = values[1:]
            rows.extend(float(v) for v in values)
        elif ": f32 [" in line:
            if name:
                got[name] = np.array(rows)
            name, rows = line.split(":")[0], []
        else:
            if name:
                got[name] = np.array(rows)
            name = None
    if name:
        got[name] = np.array(rows)

    failed = False
    expected["loss"] = np.array([loss.item()])
    initial["loss"] = np.zeros(1)
    for n in ["loss"] + trained:
        start = initial[n].reshape(-1).astype(np.float64)
        want = expected[n].reshape(-1).astype(np.float64) - start
        have = got.get(n)
        if have is None or have.shape != want.shape:
            print(f"FAIL {n} missing or misshapen in cleave-run's output")
            failed = True
            continue
        # The parameters' updates (the gradients), relative to the largest.
        error = float(np.max(np.abs(have - start - want)) /
                      max(np.max(np.abs(want)), 1e-6))
        ok = error <= 1e-4
        failed |= not ok
        print(f"{'PASS' if ok else 'FAIL'} {n} {error:.2e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""bf16 micro-steps of resnet18 and the transformer test model convert
nothing (issue 23 item 3; docs/design/mixed-precision.md, "bf16 storage").

With precision="bf16" the loops that compute an activation also store its
bf16 copy and the kernels read it; the weights are converted once per
parameter generation. So a micro-step that follows another in the same
window runs no f32-to-bf16 conversion: oneDNN's verbose log lists no
reorder from an f32 memory to a bf16 one. The first micro-step of a window
lists the weight copies, which shows the log is read. The MLP and LeNet
have the same check in C++ (test/e2e/Bf16StorageTest.cpp); this one takes
the models from PyTorch: torchvision's resnet18 and the pre-norm
transformer block of the ONNX importer's tests (make_model.py's
torch_block17), as bench/bf16.py times them.

Skipped, with the reason, on a CPU without AVX512-BF16, where a bf16
artifact cannot run."""

import ctypes
import os
import sys

# oneDNN reads ONEDNN_VERBOSE once, when it makes its first primitive: no
# session exists before the tests below (conftest.py imports cleave but
# makes none). PyTorch's own oneDNN prints as well while the models are
# exported, which is outside what the tests count.
os.environ["ONEDNN_VERBOSE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

import cleave  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "test", "Frontend", "Onnx", "Inputs"))
import make_model  # noqa: E402

MICRO_BATCH = 32
ACCUMULATE = 4


def host_has_bf16():
    with open("/proc/cpuinfo") as cpuinfo:
        return any(line.startswith("flags") and " avx512_bf16" in line
                   for line in cpuinfo)


pytestmark = pytest.mark.skipif(
    not host_has_bf16(), reason="this CPU has no AVX512-BF16 (avx512_bf16 in "
    "/proc/cpuinfo): bf16 artifacts cannot run here")


def resnet18():
    torch.manual_seed(0)
    module = torchvision.models.resnet18(num_classes=10)
    return module, torch.randn(2, 3, 32, 32), 13


def block():
    _, _, _, Block = make_model.torch_modules()
    return Block(), torch.randint(0, 50, (2, 8)), 17


def batch(model):
    generator = torch.Generator().manual_seed(3)
    if model == "resnet18":
        x = torch.randn((MICRO_BATCH, 3, 32, 32), generator=generator)
        return x, torch.randint(0, 10, (MICRO_BATCH,), generator=generator)
    ids = torch.randint(0, 50, (MICRO_BATCH, 8), generator=generator)
    return ids, torch.randint(0, 5, (MICRO_BATCH,), generator=generator)


@pytest.fixture(scope="module")
def artifacts():
    built = {}
    for name, make in (("resnet18", resnet18), ("block", block)):
        module, example, opset = make()
        built[name] = cleave.compile(
            module, example, micro_batch=MICRO_BATCH, accumulate=ACCUMULATE,
            optimizer="sgd", precision="bf16", opset=opset)
    return built


def conversions_to_bf16(log):
    """The reorders oneDNN executed in `log` from an f32 memory to bf16:
    their verbose lines."""
    return [line for line in log.splitlines()
            if "exec,cpu,reorder" in line and "src_f32" in line
            and "dst_bf16" in line]


def executions(log):
    return sum(1 for line in log.splitlines()
               if "onednn_verbose,exec," in line)


def captured(capfd, steps):
    """What oneDNN printed while `steps` ran: its verbose lines go through
    C's stdout, flushed here so that the capture has them."""
    ctypes.CDLL(None).fflush(None)
    capfd.readouterr()
    steps()
    ctypes.CDLL(None).fflush(None)
    return capfd.readouterr().out


@pytest.mark.parametrize("model", ["resnet18", "block"])
def test_micro_steps_convert_nothing_but_the_weights_once_per_window(
        artifacts, capfd, model):
    artifact = artifacts[model]
    assert artifact.precision == "bf16"
    session = cleave.Session(artifact, seed=5)
    x, y = batch(model)
    # A window and the first micro-step of the next: the primitives exist,
    # the weights of this generation are copied.
    for _ in range(ACCUMULATE + 1):
        session.micro_step(x, y)

    def two_steps():
        session.micro_step(x, y)
        session.micro_step(x, y)

    mid_window = captured(capfd, two_steps)
    assert executions(mid_window) > 0, "no oneDNN verbose output"
    assert conversions_to_bf16(mid_window) == []

    # The window's last micro-step with its apply step, then the next
    # window's first: the weights of the new generation, each converted
    # once per layout a kernel reads it in.
    new_window = captured(capfd, two_steps)
    assert session.step == 2
    copies = len(conversions_to_bf16(new_window))
    if model == "resnet18":
        # 20 convolutions (3 of them the 1x1 shortcuts), read by their
        # forward and, but for the first, backward-data directions, each
        # in oneDNN's blocked layout for it (two layouts or one), and the
        # classifier's matmul: 21 to 40 (40 on AMD Zen 5).
        assert 21 <= copies <= 40, new_window
    else:
        # fc1's weights (its backward data reduces over fc1's 64 outputs)
        # and fc2's (its forward reduces over 64 inputs); every other
        # matmul reduces over 16 features or fewer and stays f32
        # (compiler/Conversion/Precision/Bf16Rule.h). A matmul's copy keeps
        # the weight's own layout, whatever the CPU.
        assert copies == 2, new_window

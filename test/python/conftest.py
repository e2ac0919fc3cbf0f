"""Shared models, data and the PyTorch reference loop of the Python tests.

These tests run against the installed package (the ctest fixture
python.install puts it in a virtual environment; docs/user/python.md)."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

import cleave

# The oracle tests' bound on float32 reassociation (test/oracle): the
# relative error in the max norm of every parameter and buffer.
TOLERANCE = 1e-4


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class BnCnn(nn.Module):
    """Convolution, batch norm (running statistics are buffers), pooling.
    The convolution has no bias: batch norm subtracts it again, so its true
    gradient is zero and both frameworks would train rounding noise
    (docs/user/onnx.md)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, image):
        y = torch.relu(self.bn(self.conv(image)))
        y = nn.functional.max_pool2d(y, 2)
        return self.fc(y.flatten(1))


def relative_error(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-6)


def torch_accumulation(module, micro_batches, accumulate, make_optimizer):
    """PyTorch's own accumulation loop, the contract's reference
    (docs/design/split.md): each micro-batch adds the gradient of
    sum_i loss_i / window_samples, one optimizer step per window of
    `accumulate` micro-batches (the last window may be shorter). Returns
    the per-window mean losses."""
    optimizer = make_optimizer(module.parameters())
    windows = [micro_batches[i:i + accumulate]
               for i in range(0, len(micro_batches), accumulate)]
    losses = []
    module.train()
    for window in windows:
        samples = sum(len(y) for _, y in window)
        optimizer.zero_grad()
        total = 0.0
        for x, y in window:
            loss = nn.functional.cross_entropy(module(x), y, reduction="sum")
            (loss / samples).backward()
            total += float(loss)
        optimizer.step()
        losses.append(total / samples)
    return losses


def assert_state_matches(session, module, tolerance=TOLERANCE):
    """Every parameter and buffer of the session against the module's."""
    state = module.state_dict()
    values = dict(session.params())
    values.update(session.buffers())
    assert values, "the session holds no parameters"
    for name, value in values.items():
        assert name in state, f"'{name}' is not in the module's state_dict"
        err = relative_error(value, state[name].detach().numpy())
        assert err <= tolerance, f"'{name}': relative error {err:.3g}"


@pytest.fixture(scope="session")
def mlp_artifact(tmp_path_factory):
    torch.manual_seed(1)
    module = Mlp()
    path = tmp_path_factory.mktemp("mlp") / "mlp.cleave"
    artifact = cleave.compile(module, torch.randn(2, 12), micro_batch=8,
                              accumulate=3, optimizer="sgd", lr=0.1,
                              output=path)
    return module, artifact


def random_batches(shape, classes, sizes, seed):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn((k,) + shape, generator=generator),
             torch.randint(0, classes, (k,), generator=generator))
            for k in sizes]


@pytest.fixture
def fresh(mlp_artifact):
    """A new MLP session and a copy of the module it starts from."""
    module, artifact = mlp_artifact
    return cleave.Session(artifact), copy.deepcopy(module)

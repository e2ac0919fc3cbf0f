"""A module compiled from Python trains K windows and matches PyTorch's own
accumulation loop fed the same micro-batches from the same weights; fit()
over a DataLoader does the same; copy_to() writes the result back."""

import copy

import numpy as np
import pytest
import torch

import cleave
from conftest import (BnCnn, Mlp, TOLERANCE, assert_state_matches,
                      random_batches, relative_error, torch_accumulation)


def test_session_starts_from_the_modules_own_state():
    torch.manual_seed(3)
    module = BnCnn()
    # Running statistics unlike the defaults: the session must take these,
    # not the export's (a training-mode export runs a forward pass).
    module.bn.running_mean.uniform_(-1, 1)
    module.bn.running_var.uniform_(0.5, 2)
    artifact = cleave.compile(module, torch.randn(2, 1, 8, 8), micro_batch=4,
                              accumulate=2, optimizer="sgd")
    session = cleave.Session(artifact)
    assert set(session.buffers()) == {"bn.running_mean", "bn.running_var"}
    for name, value in list(session.params().items()) + list(
            session.buffers().items()):
        np.testing.assert_array_equal(value,
                                      module.state_dict()[name].numpy(),
                                      err_msg=name)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_batch_norm_cnn_matches_pytorch_accumulation(optimizer):
    torch.manual_seed(4)
    module = BnCnn()
    hyper = {"sgd": dict(lr=0.1), "momentum": dict(lr=0.05, momentum=0.9),
             "adam": dict(lr=0.01)}[optimizer]
    artifact = cleave.compile(module, torch.randn(2, 1, 8, 8), micro_batch=4,
                              accumulate=3, optimizer=optimizer, **hyper)
    assert artifact.inputs == [
        {"name": "image", "dtype": "float32", "shape": (4, 1, 8, 8)},
        {"name": "labels", "dtype": "int64", "shape": (4,)}]
    reference = copy.deepcopy(module)
    session = cleave.Session(artifact)
    # Three full windows: batch norm sees the same micro-batches in both.
    batches = random_batches((1, 8, 8), 3, [4] * 9, seed=5)
    losses = []
    for x, y in batches:
        session.micro_step(x, y)
        if session.micro_steps == 0:
            losses.append(session.loss)
    assert session.step == 3

    def make(params):
        if optimizer == "adam":
            return torch.optim.Adam(params, lr=0.01)
        return torch.optim.SGD(params, **hyper)

    torch_accumulation(reference, batches, 3, make)
    assert_state_matches(session, reference)


def test_ragged_windows_and_named_numpy_inputs(fresh):
    session, reference = fresh
    # Windows of 3 micro-batches with short ones, a partial window flushed.
    batches = random_batches((12,), 5, [8, 5, 8, 8, 3, 8, 7], seed=6)
    for x, y in batches:
        session.micro_step(x=x.numpy(), labels=y.numpy())
    assert session.step == 2 and session.micro_steps == 1
    session.flush()
    assert session.step == 3 and session.micro_steps == 0
    torch_accumulation(reference, batches, 3,
                       lambda p: torch.optim.SGD(p, lr=0.1))
    assert_state_matches(session, reference)


def test_train_batch_splits_a_large_batch(fresh, mlp_artifact):
    session, reference = fresh
    x, y = random_batches((12,), 5, [40], seed=7)[0]
    session.train_batch(x, y, micro_size=8)  # 5 micro-steps of 8
    assert (session.step, session.micro_steps) == (1, 2)
    assert session.last_count == 40
    # The CPU has no device choices to report.
    assert session.notes == []
    other = cleave.Session(mlp_artifact[1])
    for i in range(0, 40, 8):
        other.micro_step(x[i:i + 8], y[i:i + 8])
    for name, value in session.params().items():
        np.testing.assert_array_equal(value, other.params()[name])


def test_fit_over_a_dataloader_matches_pytorch(fresh):
    session, reference = fresh
    session.accumulate = 4
    x, y = random_batches((12,), 5, [70], seed=8)[0]
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=False)
    steps = []
    history = cleave.fit(session, loader, epochs=2, eval_loader=loader,
                         on_step=steps.append)
    # 9 micro-batches an epoch: windows of 4, 4 and a flushed 1.
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert len(history) == 2
    first = history[0]
    assert first["epoch"] == 1 and first["samples"] == 70
    assert first["steps"] == 3
    for key in ("loss", "seconds", "samples_per_second", "eval_loss",
                "eval_accuracy"):
        assert key in first, key
    assert 0.0 <= first["eval_accuracy"] <= 1.0

    micro = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 70, 8)]
    windows = [micro[0:4], micro[4:8], micro[8:9]] * 2
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    losses = []
    for window in windows:
        samples = sum(len(t) for _, t in window)
        optimizer.zero_grad()
        total = 0.0
        for xb, yb in window:
            loss = torch.nn.functional.cross_entropy(reference(xb), yb,
                                                     reduction="sum")
            (loss / samples).backward()
            total += float(loss)
        optimizer.step()
        losses.append(total / samples)
    assert_state_matches(session, reference)
    # The epoch's loss is the mean over its samples, as PyTorch computes it.
    epoch1 = sum(l * sum(len(t) for _, t in w)
                 for l, w in zip(losses[:3], windows[:3])) / 70
    assert abs(history[0]["loss"] - epoch1) <= 1e-5 * abs(epoch1)
    # eval_loss is the cross-entropy of the trained model on the data.
    with torch.no_grad():
        expected = float(torch.nn.functional.cross_entropy(reference(x), y))
    assert abs(history[1]["eval_loss"] - expected) <= 1e-4 * expected


def test_fit_cuts_windows_that_end_with_a_short_micro_batch():
    # Windows of 20 samples in micro-batches of 8: 8 + 8 + 4. A loader of
    # 7 gives 70 samples an epoch: windows of 20, 20, 20 and a flushed 10,
    # whatever its batches straddle; each step is one batch of 20.
    torch.manual_seed(9)
    module = Mlp()
    artifact = cleave.compile(module, torch.randn(2, 12), micro_batch=8,
                              accumulate=3, window_samples=20,
                              optimizer="sgd", lr=0.1)
    assert artifact.window_samples == 20 and artifact.accumulate == 3
    reference = copy.deepcopy(module)
    session = cleave.Session(artifact)
    x, y = random_batches((12,), 5, [70], seed=10)[0]
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=7, shuffle=False)
    steps = []
    history = cleave.fit(session, loader, epochs=2, on_step=steps.append)
    assert [s["step"] for s in steps] == list(range(1, 9))
    assert [h["steps"] for h in history] == [4, 8]
    assert history[0]["samples"] == 70

    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(2):
        for start in range(0, 70, 20):
            xb, yb = x[start:start + 20], y[start:start + 20]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(reference(xb), yb).backward()
            optimizer.step()
    assert_state_matches(session, reference)


def test_copy_to_writes_weights_and_running_statistics():
    torch.manual_seed(9)
    module = BnCnn()
    artifact = cleave.compile(module, torch.randn(2, 1, 8, 8), micro_batch=4,
                              accumulate=2, optimizer="sgd", lr=0.1)
    session = cleave.Session(artifact)
    for x, y in random_batches((1, 8, 8), 3, [4] * 4, seed=10):
        session.micro_step(x, y)
    before = copy.deepcopy(module.state_dict())
    written = cleave.copy_to(session, module)
    assert set(written) == {"conv.weight", "bn.weight",
                            "bn.bias", "bn.running_mean", "bn.running_var",
                            "fc.weight", "fc.bias"}
    for name in written:
        assert not torch.equal(before[name], module.state_dict()[name]), name
    for name, value in list(session.params().items()) + list(
            session.buffers().items()):
        np.testing.assert_array_equal(module.state_dict()[name].numpy(),
                                      value)
    # The module predicts what the session predicts.
    x = torch.randn(6, 1, 8, 8)
    module.eval()
    with torch.no_grad():
        expected = module(x).numpy()
    assert relative_error(session.eval(x), expected) <= TOLERANCE


def test_check_agrees_for_a_module():
    torch.manual_seed(11)
    result = cleave.check(Mlp(), torch.randn(2, 12), micro_batch=4,
                          accumulate=3, optimizer="sgd", lr=0.1)
    assert result.agree, result.report
    assert "agree" in result.report

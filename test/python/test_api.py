"""The Session API: inputs checked with clear errors and the session left
usable, checkpoints, hyperparameters, parameters in and out, runtime errors
as Python exceptions, documentation."""

import math
import os
import re
import subprocess

import numpy as np
import pytest
import torch

import cleave
from conftest import random_batches


def snapshot(session):
    return {name: value.copy() for name, value in session.params().items()}


def assert_unchanged(session, before):
    after = session.params()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


def test_artifact_describes_itself(mlp_artifact):
    _, artifact = mlp_artifact
    loaded = cleave.load(artifact.path)
    assert loaded.micro_batch == 8 and loaded.accumulate == 3
    assert loaded.kind == "training" and loaded.target == "cpu"
    assert loaded.precision == "f32"
    assert loaded.hyperparameters["lr"] == pytest.approx(0.1)
    assert [t["name"] for t in loaded.inputs] == ["x", "labels"]
    assert loaded.outputs[0]["shape"] == (8, 5)
    kinds = {g["name"]: g["kind"] for g in loaded.globals}
    assert kinds["fc1.weight"] == "param"
    assert loaded.manifest["micro_batch"] == 8
    assert "micro_batch=8" in repr(loaded)
    # The memory report (docs/design/memory.md): the parameters' bytes are
    # those of the globals, and the parts add up to the total.
    memory = loaded.manifest["memory"]
    params = sum(4 * math.prod(g["shape"]) for g in loaded.globals
                 if g["kind"] == "param")
    assert memory["space"] == "host" and memory["parameters"] == params
    parts = ("parameters", "optimizer_state", "accumulators", "buffers",
             "counters", "inputs", "outputs", "scratch", "kernel_caches",
             "kernel_arena")
    assert memory["total"] == sum(memory[k] for k in parts)
    assert 0 < memory["held_activations"] <= memory["scratch"]


def test_bad_inputs_raise_clear_errors_and_change_nothing(fresh):
    session, _ = fresh
    x, y = random_batches((12,), 5, [8], seed=1)[0]
    before = snapshot(session)
    cases = [
        # (call, exception, message pattern)
        (lambda: session.micro_step(x.double(), y), TypeError,
         r"input 'x' has dtype float64; the artifact expects float32 of "
         r"shape \(k, 12\)"),
        (lambda: session.micro_step(x, y.int()), TypeError,
         r"input 'labels' has dtype int32; the artifact expects int64"),
        (lambda: session.micro_step(x[:, :10], y), ValueError,
         r"input 'x' has shape \(8, 10\); the artifact expects \(k, 12\)"),
        (lambda: session.micro_step(x, y[:5]), ValueError,
         r"input 'labels' has 5 samples but 'x' has 8"),
        (lambda: session.micro_step(torch.cat([x, x]), torch.cat([y, y])),
         ValueError, r"at most the micro-batch \(8\) samples, not 16"),
        (lambda: session.micro_step(x.tolist(), y), TypeError,
         r"input 'x' must be a NumPy array or a CPU torch.Tensor, not list"),
        (lambda: session.micro_step(x.to("meta"), y), TypeError,
         r"input 'x' is a torch tensor on 'meta'"),
        (lambda: session.micro_step(x), TypeError,
         r"missing input 'labels'"),
        (lambda: session.micro_step(x, y, image=x), TypeError,
         r"got input 'image', which the artifact does not have"),
        (lambda: session.train_batch(x, y, micro_size=9), ValueError,
         r"micro_size must be between 1 and the micro-batch \(8\)"),
        # Checked by the runtime: a label beyond the class count.
        (lambda: session.micro_step(x, torch.full((8,), 7)),
         cleave.InvalidArgumentError, r"labels"),
    ]
    for call, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            call()
    assert (session.step, session.micro_steps) == (0, 0)
    assert_unchanged(session, before)
    # Still usable.
    session.micro_step(x, y)
    assert session.micro_steps == 1 and np.isfinite(session.loss)


def test_runtime_errors_are_both_cleave_and_builtin_errors():
    assert issubclass(cleave.InvalidArgumentError, cleave.Error)
    assert issubclass(cleave.InvalidArgumentError, ValueError)
    assert issubclass(cleave.NotFoundError, KeyError)
    assert issubclass(cleave.NonFiniteError, FloatingPointError)
    with pytest.raises(cleave.IOError, match="no-such.cleave"):
        cleave.load("/nonexistent/no-such.cleave")
    with pytest.raises(cleave.Error) as info:
        cleave.load("/nonexistent/no-such.cleave")
    assert info.value.status == "I/O error"


def test_non_contiguous_inputs_are_read_correctly(fresh, mlp_artifact):
    session, _ = fresh
    x, y = random_batches((12,), 5, [8], seed=2)[0]
    wide = torch.zeros(8, 24)
    wide[:, ::2] = x
    session.micro_step(wide[:, ::2], y)  # a strided view
    other = cleave.Session(mlp_artifact[1])
    other.micro_step(x, y)
    assert session.loss == other.loss


def test_non_finite_window_raises_and_is_skipped(fresh):
    session, _ = fresh
    before = snapshot(session)
    batches = random_batches((12,), 5, [8, 8, 8], seed=3)
    batches[1][0][2, 3] = float("nan")
    session.micro_step(*batches[0])
    session.micro_step(*batches[1])
    with pytest.raises(cleave.NonFiniteError, match="not finite"):
        session.micro_step(*batches[2])
    assert session.step == 0
    assert_unchanged(session, before)
    session.train_batch(*batches[0])  # usable
    assert session.micro_steps == 1


def test_hyperparameters_accumulate_and_eval(fresh):
    session, _ = fresh
    assert dict(session.hyper) == {"lr": pytest.approx(0.1),
                                   "weight_decay": 0.0}
    session.hyper["lr"] = 0.5
    assert session.hyper["lr"] == 0.5
    with pytest.raises(KeyError, match="momentum"):
        session.hyper["momentum"] = 0.9
    with pytest.raises(ValueError, match="finite"):
        session.hyper["lr"] = float("inf")
    session.accumulate = 2
    assert session.accumulate == 2
    with pytest.raises(ValueError, match="accumulate must be >= 1"):
        session.accumulate = 0
    x, y = random_batches((12,), 5, [20], seed=4)[0]
    logits = session.eval(x)  # 20 samples: three runs of eval_step
    assert logits.shape == (20, 5) and logits.dtype == np.float32
    np.testing.assert_array_equal(logits[8:16], session.eval(x[8:16]))
    np.testing.assert_array_equal(logits, session.eval(x, y))


def test_params_round_trip_and_refusals(fresh):
    session, module = fresh
    params = session.params()
    assert set(params) == {"fc1.weight", "fc1.bias", "fc2.weight",
                           "fc2.bias"}
    np.testing.assert_array_equal(params["fc1.weight"],
                                  module.fc1.weight.detach().numpy())
    new = {name: np.full_like(value, 0.25) for name, value in params.items()}
    session.set_params(new)
    assert all((v == 0.25).all() for v in session.params().values())
    session.set_params(module.state_dict())  # torch tensors
    np.testing.assert_array_equal(session.params()["fc2.bias"],
                                  module.fc2.bias.detach().numpy())
    before = snapshot(session)
    with pytest.raises(KeyError, match="'fc3.weight' is not a parameter"):
        session.set_params({"fc1.bias": new["fc1.bias"],
                            "fc3.weight": new["fc1.bias"]})
    with pytest.raises(ValueError, match=r"'fc1.bias' has shape \(3,\); "
                       r"the session holds \(16,\)"):
        session.set_params({"fc1.bias": np.zeros(3, np.float32)})
    with pytest.raises(TypeError, match="'fc1.bias' has dtype float64"):
        session.set_params({"fc1.bias": np.zeros(16)})
    assert_unchanged(session, before)  # nothing written by a refused call
    with pytest.raises(KeyError):
        session.read("no.such.global")


def test_checkpoint_round_trip_and_resume(fresh, mlp_artifact, tmp_path):
    session, _ = fresh
    batches = random_batches((12,), 5, [8] * 7, seed=5)
    straight = cleave.Session(mlp_artifact[1])
    for x, y in batches:
        straight.micro_step(x, y)
    for x, y in batches[:4]:  # stops mid-window
        session.micro_step(x, y)
    session.hyper["lr"] = 0.1
    path = tmp_path / "run.ckpt"
    session.save(path)
    resumed = cleave.Session.resume(path)  # finds the artifact itself
    assert (resumed.step, resumed.micro_steps) == (1, 1)
    for x, y in batches[4:]:
        resumed.micro_step(x, y)
    for name, value in straight.params().items():
        np.testing.assert_array_equal(resumed.params()[name], value)

    corrupt = tmp_path / "corrupt.ckpt"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    corrupt.write_bytes(bytes(data))
    before = snapshot(resumed)
    with pytest.raises(cleave.InvalidCheckpointError):
        resumed.load(corrupt)
    assert_unchanged(resumed, before)
    with pytest.raises(cleave.InvalidCheckpointError):
        cleave.Session.resume(corrupt)


def test_compile_errors_carry_the_compilers_message():
    with pytest.raises(cleave.CompileError, match="no-such-option"):
        cleave.compile(torch.nn.Linear(3, 2), torch.randn(1, 3),
                       micro_batch=2, accumulate=2, no_such_option=1)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        cleave.compile(lambda x: x, torch.randn(1, 3), micro_batch=2,
                       accumulate=2)


def test_compile_warnings_are_python_warnings(tmp_path):
    # Batch normalisation in training mode: cleave-split-step warns that its
    # statistics are the micro-batch's, not the window's.
    model = torch.nn.Sequential(torch.nn.Linear(3, 4),
                                torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                torch.nn.Linear(4, 2))
    with pytest.warns(cleave.CompileWarning,
                      match="^cleave-compile: <module>:0:0: warning: batch "
                            "normalisation in training mode uses the "
                            "statistics of each micro-batch"):
        cleave.compile(model, torch.randn(2, 3), micro_batch=2, accumulate=2,
                       output=tmp_path / "bn.cleave")


def test_compile_documents_every_option_of_cleave_compile():
    tool = os.path.join(os.path.dirname(cleave.__file__), "bin",
                        "cleave-compile")
    text = subprocess.run([tool, "--help"], stdout=subprocess.PIPE,
                          text=True, check=True).stdout
    flags = set(re.findall(r"^\s+--([a-z][a-z0-9-]*)", text, re.MULTILINE))
    assert {"micro-batch", "optimizer", "lr"} <= flags
    doc = cleave.compile.__doc__
    undocumented = sorted(f for f in flags
                          if f.replace("-", "_") not in doc
                          and f not in ("help", "help-list", "version"))
    assert not undocumented, f"compile's docstring lacks {undocumented}"


def test_learning_rate_schedule(fresh, tmp_path):
    import math
    session, _ = fresh
    session.accumulate = 1
    assert session.lr_schedule is None
    session.set_lr_schedule("cosine", lr=0.2, min_lr=0.02, warmup_steps=2,
                            total_steps=6)
    assert session.lr_schedule["kind"] == "cosine"
    assert session.lr_schedule["lr"] == 0.2
    expected = [0.0, 0.1] + [0.02 + 0.18 * (1 + math.cos(math.pi * t / 4)) / 2
                             for t in range(4)] + [0.02]
    x, y = random_batches((12,), 5, [8], seed=6)[0]
    seen = []
    for _ in expected:
        seen.append(session.hyper["lr"])  # the lr of the next step
        session.micro_step(x, y)
    assert seen == pytest.approx(expected)
    with pytest.raises(cleave.FailedPreconditionError, match="schedule"):
        session.hyper["lr"] = 0.5
    path = tmp_path / "scheduled.ckpt"
    session.save(path)
    assert cleave.Session.resume(path).lr_schedule == session.lr_schedule
    with pytest.raises(ValueError, match="'linear' is not one of"):
        session.set_lr_schedule("linear")
    with pytest.raises(cleave.InvalidArgumentError):
        session.set_lr_schedule("cosine", warmup_steps=5, total_steps=2)
    session.set_lr_schedule(None)
    assert session.lr_schedule is None
    session.hyper["lr"] = 0.5


def test_steps_release_the_gil_and_a_busy_session_refuses_a_second_caller(
        fresh, mlp_artifact):
    import threading
    session, _ = fresh
    # 9000 micro-steps: about 0.1 s, long enough to overlap on a busy machine.
    x, y = random_batches((12,), 5, [8 * 9000], seed=7)[0]
    x, y = x.numpy(), y.numpy()
    worker = threading.Thread(target=session.train_batch, args=(x, y))
    refused = []
    worker.start()
    # This thread runs Python while the worker's step runs (the GIL is
    # released), and the session refuses it rather than racing.
    while worker.is_alive():
        try:
            session.step
        except cleave.FailedPreconditionError as e:
            refused.append(str(e))
    worker.join()
    assert refused, "no call overlapped the step: was the GIL held?"
    assert "in use by another thread" in refused[0]
    assert session.step == 3000 and session.micro_steps == 0
    # The same batch on another session: the refused calls changed nothing.
    other = cleave.Session(mlp_artifact[1])
    other.train_batch(x, y)
    for name, value in other.params().items():
        np.testing.assert_array_equal(session.params()[name], value)


class PixelMlp(torch.nn.Module):
    """Takes uint8 pixels, as images are stored."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(12, 5)

    def forward(self, x):
        return self.fc(x.float() / 255)


def test_uint8_inputs_are_taken_as_they_are(tmp_path):
    torch.manual_seed(0)
    module = PixelMlp()
    example = torch.randint(0, 256, (2, 12), dtype=torch.uint8)
    artifact = cleave.compile(module, example, micro_batch=4, accumulate=1,
                              optimizer="sgd", lr=0.1,
                              output=tmp_path / "pixels.cleave")
    assert artifact.inputs[0]["dtype"] == "uint8"
    session = cleave.Session(artifact)
    x = torch.randint(0, 256, (4, 12), dtype=torch.uint8)
    y = torch.randint(0, 5, (4,))
    session.micro_step(x, y)
    with torch.no_grad():
        want = torch.nn.functional.cross_entropy(module(x), y).item()
    assert session.loss == pytest.approx(want, rel=1e-5)
    with pytest.raises(TypeError, match=r"input 'x' has dtype float32; the "
                       r"artifact expects uint8"):
        session.micro_step(x.float(), y)

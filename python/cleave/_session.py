"""Artifact and Session: the runtime's C API with Python's conveniences."""

import collections.abc
import json
import os

from . import _cleave

# The checkpoint's user-state key that names the artifact (Session.resume).
_ARTIFACT_KEY = "cleave.python.artifact"


class Artifact(_cleave.Artifact):
    """A compiled model loaded from its file (`cleave.load(path)`, or what
    `cleave.compile` returns): its manifest, inputs, outputs, globals and
    hyperparameters. Immutable; any number of sessions may share it.

    Attributes (besides those of the native class):
      manifest   the manifest as a dict (docs/design/runtime-abi.md)
      kind       "training" or "inference"
      target     "cpu" or "cuda": what runs the entry points
      target_cpu the CPU its host code was compiled for
      precision  "f32" or "bf16"
    """

    @property
    def manifest(self):
        """The manifest, parsed: a dict."""
        return json.loads(self.manifest_json)

    @property
    def kind(self):
        return self.manifest.get("kind", "training")

    @property
    def target(self):
        return self.manifest.get("device", "cpu")

    @property
    def target_cpu(self):
        """The CPU the host code was compiled for (e.g. "znver4")."""
        return self.manifest.get("target", {}).get("cpu")

    @property
    def precision(self):
        return self.manifest.get("precision", "f32")

    def __repr__(self):
        inputs = ", ".join(f"{t['name']}: {t['dtype']}{list(t['shape'])}"
                           for t in self.inputs)
        return (f"<cleave.Artifact {self.path!r} {self.kind} "
                f"micro_batch={self.micro_batch} accumulate={self.accumulate} "
                f"inputs=({inputs})>")


def load(path):
    """Loads the artifact at `path` (written by cleave-compile or
    cleave.compile), checking its ABI version and manifest."""
    return Artifact(os.fspath(path))


class Hyperparameters(collections.abc.MutableMapping):
    """The session's hyperparameters by name (`session.hyper["lr"] = 0.1`).
    Values are read and written through the runtime: a new value takes
    effect at the next apply step. Names are fixed by the artifact."""

    def __init__(self, session):
        self._session = session

    def __getitem__(self, name):
        return self._session._hyper(name)

    def __setitem__(self, name, value):
        self._session._set_hyper(name, float(value))

    def __delitem__(self, name):
        raise TypeError("hyperparameters cannot be removed")

    def __iter__(self):
        return iter(self._session._hyper_names())

    def __len__(self):
        return len(self._session._hyper_names())

    def __repr__(self):
        return repr(dict(self))


class Session(_cleave.Session):
    """A training session on an artifact: the parameters, accumulators,
    optimizer state and counters, fed micro-batches by `micro_step` /
    `train_batch`, applied every `accumulate` micro-steps.

    Session(artifact, device="cpu", threads=None, seed=0, accumulate=None,
            on_nonfinite="stop")

      artifact      an Artifact or the path of one
      device        "cpu", "cuda" or "cuda:K": what the artifact was
                    compiled for (cleave.compile's `target`)
      threads       OpenMP threads for the entry points (None: OpenMP's
                    default, OMP_NUM_THREADS)
      seed          seed of the random initial values of parameters that
                    have no initial value in the artifact
      accumulate    the accumulation count N (None: the artifact's)
      on_nonfinite  "stop": a window whose gradients or loss are not
                    finite raises NonFiniteError (its step is skipped, the
                    session stays usable); "skip": it is skipped silently
                    (global "train.skipped_steps" counts them)

    An artifact made by `cleave.compile` starts from the module's own
    weights and buffers. Inputs are NumPy arrays or CPU torch tensors of
    the input's dtype, in artifact.inputs order or by name; C-contiguous
    ones are read without a copy, and the GIL is released while a step
    runs. One call at a time per session.
    """

    def __init__(self, artifact, device="cpu", threads=None, seed=0,
                 accumulate=None, on_nonfinite="stop"):
        if isinstance(artifact, (str, os.PathLike)):
            artifact = load(artifact)
        if not isinstance(artifact, _cleave.Artifact):
            raise TypeError("artifact must be a cleave.Artifact or a path, "
                            f"not {type(artifact).__name__}")
        super().__init__(artifact, device, threads or 0, seed,
                         accumulate or 0, on_nonfinite)
        # A compiled artifact's temporary directory lives as long as the
        # Python object: keep it alive with the session.
        self._artifact_object = artifact
        state = getattr(artifact, "_initial_state", None)
        if state:
            self.set_params(state)

    @property
    def hyper(self):
        """The hyperparameters, a mutable mapping: `session.hyper["lr"]`."""
        return Hyperparameters(self)

    def save(self, path):
        """Writes a checkpoint atomically (every global, N, hyperparameters,
        the seed), naming the artifact so that `Session.resume(path)` finds
        it."""
        path = os.fspath(path)
        self._set_user_state(_ARTIFACT_KEY,
                             os.fsencode(os.path.abspath(self.artifact.path)))
        self._save(path)

    def load(self, path):
        """Restores a checkpoint of the same model into this session (the
        file is verified completely first: on failure nothing changes)."""
        super().load(os.fspath(path))

    @classmethod
    def resume(cls, path, artifact=None, **options):
        """A new session restored from the checkpoint at `path`, on
        `artifact` (default: the artifact the checkpoint was saved from).
        `options` are those of Session(); N, hyperparameters and the seed
        come from the checkpoint."""
        path = os.fspath(path)
        if artifact is None:
            try:
                artifact = os.fsdecode(
                    _cleave.checkpoint_user_state(path, _ARTIFACT_KEY))
            except _cleave.NotFoundError:
                raise _cleave.NotFoundError(
                    f"{path}: the checkpoint does not name its artifact (it "
                    "was not written by Session.save); pass artifact=")
            if not os.path.exists(artifact):
                raise FileNotFoundError(
                    f"{path}: its artifact {artifact} no longer exists; "
                    "pass artifact= (compile with output= to keep one)")
        session = cls(artifact, **options)
        session.load(path)
        return session

    def __repr__(self):
        return (f"<cleave.Session {self.artifact.path!r} on {self.device}: "
                f"step {self.step}, {self.micro_steps}/{self.accumulate} "
                "micro-steps in the window>")

"""Cleave from Python: compile a torch.nn.Module into a training artifact whose
micro-step accumulates gradients and whose apply step updates once per window
of N micro-steps, then train it from NumPy arrays, CPU tensors or a
DataLoader.

    import cleave
    artifact = cleave.compile(model, example, micro_batch=32, accumulate=8,
                              optimizer="sgd", lr=0.01)
    session = cleave.Session(artifact)        # starts from model's weights
    cleave.fit(session, loader, epochs=2)     # any iterable of (x, y)
    cleave.copy_to(session, model)            # trained weights back

The accumulated run is the big-batch run: N micro-batches of B samples give
the update of one batch of N*B (docs/design/split.md), to float32 rounding.

    compile(module, example_input, ...)  -> Artifact   (cleave-compile)
    load(path)                           -> Artifact
    Session(artifact, device="cpu", ...)               a training session
    fit(session, loader, epochs=1, ...)  -> list of per-epoch metrics
    copy_to(session, module)                           weights and buffers back
    check(module, example_input, ...)    -> CheckResult (cleave-check)

Runtime failures raise subclasses of cleave.Error (InvalidArgumentError is
also a ValueError, NotFoundError a KeyError, NonFiniteError a
FloatingPointError, ...), with the runtime's message.
"""

from ._cleave import (  # noqa: F401  (re-exported)
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    InvalidArtifactError,
    InvalidCheckpointError,
    IOError,
    NonFiniteError,
    NotFoundError,
    OutOfMemoryError,
    abi_version,
)
from ._session import Artifact, Session, load  # noqa: F401
from ._compile import (  # noqa: F401
    CompileError, CompileWarning, CheckResult, check, compile)
from ._train import copy_to, fit  # noqa: F401

__all__ = [
    "Artifact", "Session", "load", "compile", "check", "fit", "copy_to",
    "CheckResult", "CompileError", "CompileWarning",
    "Error", "FailedPreconditionError",
    "InternalError", "InvalidArgumentError", "InvalidArtifactError",
    "InvalidCheckpointError", "IOError", "NonFiniteError", "NotFoundError",
    "OutOfMemoryError", "abi_version",
]

"""compile() and check(): export a torch.nn.Module to ONNX the way
docs/user/onnx.md prescribes, then run the cleave-compile or cleave-check
binary shipped in the package."""

import copy
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

from ._session import Artifact

_HERE = os.path.dirname(os.path.abspath(__file__))


class CompileError(RuntimeError):
    """cleave-compile (or cleave-check) refused the model or its options.
    The message is the tool's diagnostics; `command` is what ran."""

    def __init__(self, message, command=None):
        super().__init__(message)
        self.command = command


class CompileWarning(UserWarning):
    """A warning of cleave-compile's: the model compiled, but something in
    it or in its options behaves otherwise than one might expect (batch
    normalisation's statistics per micro-batch, bf16 on a CPU where it is
    slower than f32, ...). The message is the compiler's."""


def _warn(stderr, tool, path):
    """Re-raises each `warning:` line of the tool's stderr (its diagnostics,
    `file:line:col: warning: ...` or `warning: ...`, and a linker's `ld:
    warning: ...`) as a CompileWarning, the line as it is, with the
    temporary ONNX file's `path` as `<module>` (with `verbose` the lines
    were printed already)."""
    for line in stderr.splitlines():
        if line.startswith("warning: ") or ": warning: " in line:
            warnings.warn(f"{tool}: {line.replace(path, '<module>')}",
                          CompileWarning, stacklevel=3)


def _tool(name):
    """The path of a shipped tool: CLEAVE_<NAME> overrides it, then the
    package's bin/, then PATH."""
    override = os.environ.get("CLEAVE_" + name.upper().replace("-", "_"))
    if override:
        return override
    shipped = os.path.join(_HERE, "bin", name)
    if os.access(shipped, os.X_OK):
        return shipped
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(
        f"{name} is not in the cleave package ({shipped}) nor on PATH; "
        "reinstall the package (pip install .) or set "
        f"CLEAVE_{name.upper().replace('-', '_')}")


def _flags(options):
    """Keyword options as command-line flags: weight_decay=0.01 is
    --weight-decay=0.01, verbose flags True/False, lists comma-joined."""
    flags = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append(flag + "=false")
        elif isinstance(value, (list, tuple)):
            flags.append(flag + "=" + ",".join(str(v) for v in value))
        else:
            flags.append(f"{flag}={value}")
    return flags


def _examples(example_input):
    import torch
    if isinstance(example_input, torch.Tensor):
        return (example_input,)
    if isinstance(example_input, (tuple, list)) and example_input and all(
            isinstance(t, torch.Tensor) for t in example_input):
        return tuple(example_input)
    raise TypeError("example_input must be a torch.Tensor or a tuple of "
                    f"them, not {type(example_input).__name__}")


def _input_names(module, count, input_names):
    if input_names is not None:
        names = list(input_names)
        if len(names) != count:
            raise ValueError(f"input_names has {len(names)} names for "
                             f"{count} example inputs")
        return names
    try:
        params = [p for p in inspect.signature(module.forward).parameters
                  .values() if p.kind in (p.POSITIONAL_ONLY,
                                          p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params[:count]]
    except (TypeError, ValueError):
        names = []
    if len(names) != count or len(set(names)) != count:
        names = [f"input{i}" for i in range(count)]
    return names


def export_onnx(module, example_input, path, input_names=None, opset=13):
    """Exports `module` to ONNX at `path` as docs/user/onnx.md prescribes:
    training mode (batch norm keeps its statistics, dropout stays as the
    module has it), no constant folding (initializers keep their state_dict
    names), dimension 0 of every input and output dynamic. A copy is
    traced, so the module itself is untouched. Returns the input names."""
    import torch
    examples = _examples(example_input)
    names = _input_names(module, len(examples), input_names)
    copied = copy.deepcopy(module)
    with torch.no_grad():
        result = copy.deepcopy(module)(*examples)
    count = len(result) if isinstance(result, (tuple, list)) else 1
    outputs = ["prediction"] if count == 1 else [
        f"output{i}" for i in range(count)]
    axes = {name: {0: "batch"} for name in names + outputs}
    with warnings.catch_warnings():
        # torch 1.13 warns once per in-place op of a torchvision model.
        warnings.simplefilter("ignore")
        torch.onnx.export(copied, examples, path, input_names=names,
                          output_names=outputs, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, dynamic_axes=axes)
    return names


def _state_of(module):
    """The module's parameters and floating-point buffers, as NumPy copies
    by state_dict name."""
    return {name: tensor.detach().cpu().numpy().copy()
            for name, tensor in module.state_dict().items()
            if tensor.is_floating_point()}


def _run(command, verbose):
    if verbose:
        print("cleave:", " ".join(command), file=sys.stderr)
    proc = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if verbose and proc.stderr:
        sys.stderr.write(proc.stderr)
    return proc


def compile(module, example_input, *, micro_batch, accumulate,
            loss="cross-entropy", optimizer="adam", target="cpu", output=None,
            input_names=None, opset=13, verbose=False, **options):
    """Compiles a torch.nn.Module into a training artifact.

    The module is exported to ONNX (docs/user/onnx.md: training mode,
    dynamic batch, dropout as the module says, no constant folding) and
    compiled by cleave-compile. A Session of the returned artifact starts
    from the module's own weights and buffers, as they are when compile()
    is called; cleave.copy_to(session, module) writes them back.

    Arguments:
      module         the torch.nn.Module to train
      example_input  a tensor (or tuple of tensors, one per forward
                     argument) of any batch size: it fixes every dimension
                     but the first (batch norm in training mode needs at
                     least 2 samples)
      micro_batch    B, the samples of one micro-step (--micro-batch)
      accumulate     N, the default micro-steps per optimizer step
                     (--accumulate; a session can change it, unless the
                     artifact has window_samples)
      loss           cross-entropy (per sample, or per token for
                     [batch, tokens, classes] logits), mse, or none (with a
                     model without parameters: a forward-only artifact)
                     (--loss)
      optimizer      sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad,
                     lamb or lars (--optimizer)
      target         cpu or cuda (--target; a cuda artifact runs in a
                     Session(device="cuda"))
      output         where to write the artifact; None: a temporary file
                     that lives as long as the returned Artifact (and the
                     sessions made from it)
      input_names    the artifact's input names (default: the names of
                     forward's parameters); the labels input comes after
      opset          the ONNX opset of the export (13 to 17 with torch 1.13)
      verbose        print the commands and the compiler's phase timings
                     (-v)
      **options      every other cleave-compile option, by its flag name
                     with '-' written '_' (True is a bare flag, a list is
                     comma-separated):
        lr, momentum, beta1, beta2, eps, weight_decay, alpha, lr_decay,
                     eta     the hyperparameters' defaults (a session can
                             change them: session.hyper["lr"] = ...)
        clip_norm            clipping by global norm, with this default
        precision            "f32" or "bf16" (bf16 matmul and convolution
                             inputs, f32 accumulation; AVX512-BF16 CPUs;
                             on cuda sm_80 and newer)
        fused_attention      False: on cuda in bf16, spell attention out
                             as matmuls and a softmax instead of cuDNN's
                             fused kernels (docs/user/cuda.md)
        ignore_index         the label of tokens that are not predicted
                             (per-token cross-entropy)
        inference            True: a forward-only artifact
        init_normal_std      a Session draws the parameters from
                             N(0, std^2) instead of starting from the
                             module's weights (constant ones, such as
                             layer-norm scales, stay), and the artifact
                             does not embed them: for large untrained
                             models (docs/user/onnx.md)
        remat                "none" or "auto": recompute activations in the
                             backward pass instead of holding them
                             (docs/user/memory.md)
        remat_budget         held activations to aim for ("8MiB", "25%";
                             implies remat="auto")
        target_cpu           the CPU to generate code for (an LLVM name,
                             default host)
        target_features      features on top of it (+avx512f,-avx512fp16)
        gpu_arch             with target="cuda": SM architectures, e.g.
                             "sm_90"
        window_samples       W, the samples of one (rank's) window when
                             micro_batch does not divide it: accumulate
                             must be ceil(W / micro_batch), and every
                             window ends with a short micro-batch
                             (fit() cuts the windows there); the update
                             is that of one batch of W
        reduce, ranks, shard_optimizer_state, reduce_every_micro_step
                             data parallelism over MPI (docs/user/
                             distributed.md)
        model                the model function (MLIR input only)
      Not accepted: compile_to and emit (they print IR, not an artifact:
      run the cleave-compile binary in cleave/bin for them), report (the
      memory report is the artifact's manifest["memory"]), and global_batch
      and memory_budget (they choose micro_batch and accumulate, which
      compile() takes: run cleave-compile --global-batch=G
      --memory-budget=SIZE to plan, docs/user/memory.md).

    Returns an Artifact. Raises CompileError with the compiler's
    diagnostics if the model or an option is refused; each warning of the
    compiler's is raised as a CompileWarning (printed instead with
    verbose=True).
    """
    import torch
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, not "
                        f"{type(module).__name__}")
    for name in ("compile_to", "emit", "o"):
        if name in options:
            raise TypeError(f"compile() does not take {name}= (it writes an "
                            "artifact; run cleave-compile for IR)")
    if "report" in options:
        raise TypeError("compile() does not take report= (the memory "
                        "report is the artifact's manifest['memory'])")
    for name in ("global_batch", "memory_budget"):
        if name in options:
            raise TypeError(f"compile() does not take {name}= (it takes "
                            "micro_batch and accumulate; cleave-compile "
                            "--global-batch=G --memory-budget=SIZE chooses "
                            "them)")
    tmp = tempfile.TemporaryDirectory(prefix="cleave-")
    onnx_path = os.path.join(tmp.name, "model.onnx")
    export_onnx(module, example_input, onnx_path, input_names, opset)
    out = os.fspath(output) if output is not None else os.path.join(
        tmp.name, "model.cleave")
    command = [_tool("cleave-compile"), onnx_path,
               f"--micro-batch={micro_batch}", f"--accumulate={accumulate}",
               f"--loss={loss}", f"--optimizer={optimizer}",
               f"--target={target}", "-o", out] + _flags(options)
    if verbose:
        command.append("-v")
    proc = _run(command, verbose)
    if proc.returncode != 0:
        raise CompileError(
            (proc.stderr.strip() or f"cleave-compile exited with status "
             f"{proc.returncode}").replace(onnx_path, "<module>"), command)
    if not verbose:
        _warn(proc.stderr, "cleave-compile", onnx_path)
    artifact = Artifact(out)
    state = _state_of(module)
    names = {g["name"] for g in artifact.globals
             if g["kind"] in ("param", "buffer")}
    unused = [n for n, _ in module.named_parameters() if n not in names]
    if unused:
        warnings.warn("parameters of the module that the artifact does not "
                      "train (unused by forward, or renamed by the ONNX "
                      f"export): {', '.join(unused)}", stacklevel=2)
    artifact._initial_state = {n: v for n, v in state.items() if n in names}
    if output is None:
        artifact._tmpdir = tmp  # removed with the artifact
    else:
        tmp.cleanup()
    return artifact


class CheckResult:
    """What cleave-check found. `agree` is True when every difference is
    within rtol; `status` is its exit status (0 agree, 1 mismatch, 3
    differ as the model's split-observable ops ask); `report` is its
    table."""

    def __init__(self, status, report):
        self.status = status
        self.report = report

    @property
    def agree(self):
        return self.status == 0

    def __bool__(self):
        return self.agree

    def __repr__(self):
        return self.report


def check(module, example_input, *, micro_batch, accumulate, windows=None,
          rtol=None, seed=None, data=None, input_names=None, opset=13,
          verbose=False, **options):
    """Checks that `accumulate` micro-batches of `micro_batch` samples give
    the update of one batch of accumulate * micro_batch for this module
    (cleave-check, docs/user/cleave-check.md): both are compiled from the
    module's export, trained from the same state on the same `windows`
    windows (default 3) of random data (or `data`, a dataset path), and
    every parameter, buffer and window loss compared within `rtol`
    (default 1e-4). `options` are cleave-compile's training options
    (optimizer="adam", lr=0.01, ...), as for compile().

    Returns a CheckResult (truthy when the runs agree; print it for the
    table). Raises CompileError if the check could not run."""
    tmp = tempfile.TemporaryDirectory(prefix="cleave-check-")
    with tmp:
        onnx_path = os.path.join(tmp.name, "model.onnx")
        export_onnx(module, example_input, onnx_path, input_names, opset)
        command = [_tool("cleave-check"), onnx_path,
                   f"--micro-batch={micro_batch}",
                   f"--accumulate={accumulate}"] + _flags(
                       dict(windows=windows, rtol=rtol, seed=seed, data=data,
                            **options))
        if verbose:
            command.append("-v")
        proc = _run(command, verbose)
    if proc.returncode not in (0, 1, 3):
        raise CompileError(
            (proc.stderr.strip() or f"cleave-check exited with status "
             f"{proc.returncode}").replace(onnx_path, "<module>"), command)
    return CheckResult(proc.returncode,
                       proc.stdout.replace(onnx_path, "<module>"))

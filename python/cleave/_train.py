"""fit() and copy_to(): a training loop and the way back into PyTorch, over
nothing but the Session's API."""

import math
import sys
import time

import numpy as np


def _inputs(batch):
    """A loader's item as positional inputs: (x, y), [x, y], a dict of
    named inputs, or one array."""
    if isinstance(batch, dict):
        return (), batch
    if isinstance(batch, (tuple, list)):
        return tuple(batch), {}
    return (batch,), {}


def _rows(value):
    shape = getattr(value, "shape", None)
    return int(shape[0]) if shape else 0


def _concat(parts):
    if len(parts) == 1:
        return parts[0]
    if type(parts[0]).__module__.startswith("torch"):
        import torch
        return torch.cat(parts)
    return np.concatenate(parts)


class _Pending:
    """Rows of a loader's batches not fed yet, taken in order in pieces of
    any size (slices, concatenated across batches where a piece spans
    several)."""

    def __init__(self):
        self.batches = []  # [args, named, first row not taken, rows]
        self.rows = 0

    def add(self, args, named, rows):
        if rows:
            self.batches.append([args, named, 0, rows])
            self.rows += rows

    def take(self, k):
        parts = []
        while k:
            entry = self.batches[0]
            args, named, first, rows = entry
            n = min(k, rows - first)
            cut = slice(first, first + n)
            parts.append(([a[cut] for a in args],
                          {name: v[cut] for name, v in named.items()}))
            entry[2] += n
            if entry[2] == rows:
                self.batches.pop(0)
            self.rows -= n
            k -= n
        args = tuple(_concat([p[0][i] for p in parts])
                     for i in range(len(parts[0][0])))
        named = {name: _concat([p[1][name] for p in parts])
                 for name in parts[0][1]}
        return args, named


class _Progress:
    """One line on stderr, redrawn in place, only where a terminal is
    attached (never in logs or CI)."""

    def __init__(self, enabled, epoch, epochs, total):
        self.enabled = enabled
        self.prefix = f"epoch {epoch}/{epochs}"
        self.total = total
        self.last = 0.0

    def update(self, done, loss, force=False):
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        if self.total:
            width = 24
            filled = int(width * done / self.total)
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
        else:
            bar = f"{done} batches"
        sys.stderr.write(f"\r{self.prefix} {bar} loss {loss:.4f}")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _host_array(y):
    """`y` (labels) as a NumPy array in host memory: a torch tensor from
    any device, a CuPy array (.get()), a Numba device array
    (.copy_to_host()), or anything np.asarray reads."""
    if hasattr(y, "detach") and hasattr(y, "cpu"):
        return y.detach().cpu().numpy()
    if hasattr(y, "__cuda_array_interface__"):
        if hasattr(y, "get"):
            return np.asarray(y.get())
        if hasattr(y, "copy_to_host"):
            return np.asarray(y.copy_to_host())
        raise TypeError("evaluation's labels are GPU memory this function "
                        "cannot copy to the host (no .get() or "
                        ".copy_to_host()); pass them in host memory")
    return np.asarray(y)


def evaluate(session, loader):
    """Mean loss (cross-entropy from the logits) and accuracy of a
    classifier over `loader`'s (x, y) batches, through session.eval. The
    labels are the batch's last element; models whose prediction is not
    [k, classes] logits get only `eval_samples`."""
    samples = 0
    correct = 0
    nll = 0.0
    classifier = True
    for batch in loader:
        args, named = _inputs(batch)
        if named or len(args) < 2:
            raise ValueError("evaluation needs (inputs..., labels) batches")
        *xs, y = args
        prediction = session.eval(*xs)
        if isinstance(prediction, tuple):
            prediction = prediction[0]
        labels = _host_array(y)
        samples += len(labels)
        if (prediction.ndim != 2 or labels.ndim != 1
                or not np.issubdtype(labels.dtype, np.integer)):
            classifier = False
            continue
        logits = prediction.astype(np.float64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1,
                                                          keepdims=True))
        nll -= float(log_probs[np.arange(len(labels)), labels].sum())
        correct += int((prediction.argmax(axis=1) == labels).sum())
    metrics = {"eval_samples": samples}
    if classifier and samples:
        metrics["eval_loss"] = nll / samples
        metrics["eval_accuracy"] = correct / samples
    return metrics


def fit(session, loader, epochs=1, eval_loader=None, on_step=None,
        progress=None):
    """Trains `session` for `epochs` passes over `loader`.

    `loader` is any iterable of batches, re-iterated every epoch: (x, y)
    tuples (a torch.utils.data.DataLoader included), longer tuples for
    models with several inputs (artifact.inputs order, labels last), or
    dicts of named inputs. Each batch goes to session.train_batch: a batch
    of micro_batch samples is one micro-step, a larger one is split into
    micro-batches, and the apply step runs every `session.accumulate`
    micro-steps. An artifact whose windows end with a short micro-batch
    (compiled with window_samples) gets each window cut there, whatever
    the loader's batch size: every optimizer step is the update of one
    batch of window_samples. The partial window left at the end of each
    epoch is flushed (applied), as the exact-accumulation contract counts
    it.

      eval_loader  evaluated after each epoch with session.eval:
                   eval_loss and eval_accuracy for a classifier
      on_step      called after each optimizer step with a dict: epoch,
                   step, loss (mean over the samples of the batches since
                   the previous step), samples (trained so far this epoch)
      progress     a progress line on stderr; None: when stderr is a
                   terminal

    Returns a list with one dict per epoch: epoch, loss (mean per-sample
    or per-token loss), samples, steps (the session's step count),
    seconds, samples_per_second, and the eval metrics.
    """
    if progress is None:
        progress = sys.stderr.isatty()
    artifact = session.artifact
    window = artifact.window_samples
    ragged = (window != artifact.accumulate * artifact.micro_batch
              and session.accumulate == artifact.accumulate)

    def need():
        """The samples of the next micro-step of a ragged window."""
        return min(artifact.micro_batch,
                   window - session.micro_steps * artifact.micro_batch)

    history = []
    for epoch in range(1, epochs + 1):
        total = len(loader) if hasattr(loader, "__len__") else None
        bar = _Progress(progress, epoch, epochs, total)
        start = time.perf_counter()
        samples = 0
        loss_sum = 0.0
        count_sum = 0
        window_sum = 0.0
        window_count = 0

        def stepped(before):
            nonlocal window_sum, window_count
            if on_step is not None and session.step != before:
                on_step({"epoch": epoch, "step": session.step,
                         "loss": window_sum / window_count
                         if window_count else math.nan,
                         "samples": samples})
            if session.step != before:
                window_sum, window_count = 0.0, 0

        def train(args, named, rows):
            nonlocal samples, loss_sum, count_sum, window_sum, window_count
            before = session.step
            session.train_batch(*args, **named)
            count = session.last_count
            loss = session.loss
            samples += rows
            loss_sum += loss * count
            count_sum += count
            window_sum += loss * count
            window_count += count
            stepped(before)

        done = 0
        pending = _Pending()
        for batch in loader:
            args, named = _inputs(batch)
            rows = _rows(args[0] if args else next(iter(named.values())))
            if not ragged:
                train(args, named, rows)
            else:
                # Whole micro-batches, and each window's short last one,
                # gathered across the loader's batches: a window closes
                # after N micro-steps, so none but its last may be short.
                pending.add(args, named, rows)
                while pending.rows >= need():
                    k = need()
                    train(*pending.take(k), k)
            done += 1
            bar.update(done, loss_sum / count_sum if count_sum else math.nan)
        while pending.rows:
            k = min(need(), pending.rows)
            train(*pending.take(k), k)
        before = session.step
        session.flush()
        stepped(before)
        bar.update(done, loss_sum / count_sum if count_sum else math.nan,
                   force=True)
        bar.close()
        seconds = time.perf_counter() - start
        metrics = {"epoch": epoch,
                   "loss": loss_sum / count_sum if count_sum else math.nan,
                   "samples": samples, "steps": session.step,
                   "seconds": seconds,
                   "samples_per_second": samples / seconds if seconds else 0.0}
        if eval_loader is not None:
            metrics.update(evaluate(session, eval_loader))
        history.append(metrics)
    return history


def copy_to(session, module):
    """Writes the session's parameters and buffers (batch-norm running
    statistics included) into the torch.nn.Module they came from, by
    state_dict name, in place. Returns the names written. Entries of the
    module that the session does not hold (num_batches_tracked, parameters
    the export did not keep) are left as they are."""
    import torch
    values = dict(session.params())
    values.update(session.buffers())
    state = module.state_dict()
    written = []
    with torch.no_grad():
        for name, tensor in state.items():
            if name not in values:
                continue
            value = torch.from_numpy(values[name])
            if tuple(value.shape) != tuple(tensor.shape):
                raise ValueError(f"'{name}' has shape {tuple(value.shape)} "
                                 "in the session but "
                                 f"{tuple(tensor.shape)} in the module")
            tensor.copy_(value.to(tensor.dtype))
            written.append(name)
    return written

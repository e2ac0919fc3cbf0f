#!/usr/bin/python3
"""Trains Cleave artifacts for scripts/gpu-check.sh's numerics rows through
libcleave_runtime's C API (cleave/runtime.h), where cleave-train cannot do
what a row needs.

    gpu-check-train.py LIBCLEAVE_RUNTIME ARTIFACT DATA.npz --device=cpu|cuda
                       --windows=K [--seed=S] [--memory=host|pinned|device]
                       (--save-params=OUT [--save-initial=INIT]
                        | --twin=CPU_ARTIFACT [--tolerance=T] [--hyper N=X])

The inputs are a classifier's: images (f32 [B, ...] from DATA's uint8
x_train, pixel / 255 standardised with the split's mean and std, as
cleave-train does) or token ids (i64 [B, T]), with class labels (i64 [B]);
the transformer test model takes ids with one label per sequence, a pairing
cleave-train does not feed. One session from --seed on the device runs K
windows of the artifact's N micro-batches of B rows of x_train/y_train, in
order, with the manifest's hyperparameters.

Free-running (--save-params): writes every parameter and buffer, in
manifest order, as raw f32 (cleave-train --save-params's layout) to OUT,
and the same before the first micro-step to INIT (gpu-check.sh compares
the updates too: with a small learning rate the parameters barely move,
and agreeing to 1e-4 says little about the update alone).

Lockstep (--twin): ARTIFACT runs on --device beside CPU_ARTIFACT (the same
model compiled for the CPU) on the CPU, in one process. Before each window
every global of the CPU session (parameters, optimizer state, accumulators,
counters) is copied into the device session, so both start the window from
the same bits; after it, each parameter's update on the device is compared
with the CPU's. Prints a line per window and, last, the verdict: `1` or `0`
(the worst window's update differs by at most T of the update, relative
L2), the worst window and its max |diff|. Why lockstep: Adam's trajectory
over many windows amplifies rounding. Its update divides by sqrt(v) + eps,
so a parameter whose gradient is near eps moves by nearly lr times its
sign. Two correct CPU runs of the MLP (lr 1e-2) that differ only in
oneDNN's ISA (ONEDNN_MAX_CPU_ISA=SSE41 against AVX-512), with updates
equal to 2e-7 after one window, end 20 windows 6.1e-3 apart in relative
L2. One window from one state is well posed: the same two runs' updates
agree to 2e-5. --hyper sets a hyperparameter of the session under test
only (the check's own test uses it to show that the row fails a wrong
update).

--memory: where the session under test reads its batches
(cleave_session_micro_step_ex): host (pageable, the default), pinned
(page-locked host memory from cuMemHostAlloc) or device (the GPU's memory
from cuMemAlloc), each micro-batch copied there first through the CUDA
driver (ctypes), as a caller that keeps its data in such memory would hold
it. The CPU twin reads host memory. Needs only NumPy: the GPU machine runs
it with its own Python.
"""
import argparse
import ctypes as C
import sys

import numpy as np

OK = 0
DTYPE_F32, DTYPE_I64 = 0, 3
PARAM, BUFFER = 0, 1
DEVICES = {"cpu": 0, "cuda": 1}
MEMORY = {"host": 0, "pinned": 1, "device": 2}  # CLEAVE_MEMORY_*


class TensorInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int32),
                ("shape", C.POINTER(C.c_int64)), ("bytes", C.c_size_t)]


class GlobalInfo(C.Structure):
    _fields_ = [("tensor", TensorInfo), ("kind", C.c_int), ("of", C.c_char_p)]


# cleave_session_options, every field: cleave_session_options_init writes
# them all.
class SessionOptions(C.Structure):
    _fields_ = [("seed", C.c_uint64), ("accumulate", C.c_int64),
                ("num_threads", C.c_int32), ("distributed", C.c_int32),
                ("device", C.c_int32), ("device_ordinal", C.c_int32),
                ("on_nonfinite", C.c_int32)]


class Batch(C.Structure):
    _fields_ = [("samples", C.c_int64), ("num_inputs", C.c_size_t),
                ("data", C.POINTER(C.c_void_p)),
                ("bytes", C.POINTER(C.c_size_t))]


class Runtime:
    """The C API's calls this script makes, each checked."""

    def __init__(self, path):
        # Artifacts resolve the runtime's kernel ABI (cleave_kernel_*) from
        # the global namespace, as they do in an executable linked with it.
        self.lib = C.CDLL(path, mode=C.RTLD_GLOBAL)
        self.lib.cleave_last_error_message.restype = C.c_char_p

    def check(self, status, where, what):
        if status != OK:
            sys.exit(f"gpu-check-train: {where}: {what}: "
                     f"{self.lib.cleave_last_error_message().decode()}")


class Model:
    """An artifact: its micro-batch, N, inputs and globals."""

    def __init__(self, rt, path):
        self.rt, self.path, self.handle = rt, path, C.c_void_p()
        lib, check = rt.lib, lambda s, w: rt.check(s, path, w)
        check(lib.cleave_artifact_load(path.encode(), C.byref(self.handle)),
              "loading")
        b, n, count = C.c_int64(), C.c_int64(), C.c_size_t()
        check(lib.cleave_artifact_micro_batch(self.handle, C.byref(b)),
              "micro-batch")
        check(lib.cleave_artifact_accumulate(self.handle, C.byref(n)),
              "accumulate")
        self.micro_batch, self.accumulate = b.value, n.value
        check(lib.cleave_artifact_num_inputs(self.handle, C.byref(count)),
              "inputs")
        self.inputs = []
        for i in range(count.value):
            info = TensorInfo()
            check(lib.cleave_artifact_input(self.handle, C.c_size_t(i),
                                            C.byref(info)), "input")
            self.inputs.append((info.name.decode(), info.dtype,
                                tuple(info.shape[k] for k in range(info.rank))))
        check(lib.cleave_artifact_num_globals(self.handle, C.byref(count)),
              "globals")
        # (name, kind, dtype, bytes) in manifest order.
        self.globals = []
        for i in range(count.value):
            info = GlobalInfo()
            check(lib.cleave_artifact_global(self.handle, C.c_size_t(i),
                                             C.byref(info)), "global")
            self.globals.append((info.tensor.name, info.kind,
                                 info.tensor.dtype, info.tensor.bytes))
        labels = [x for x in self.inputs if x[1] == DTYPE_I64 and len(x[2]) == 1]
        data = [x for x in self.inputs if x not in labels]
        if (len(self.inputs) != 2 or len(labels) != 1 or len(data) != 1
                or data[0][1] not in (DTYPE_F32, DTYPE_I64)
                or (data[0][1] == DTYPE_I64 and len(data[0][2]) != 2)):
            sys.exit(f"gpu-check-train: {path} takes {self.inputs}; expected "
                     "images f32 [B, ...] or token ids i64 [B, T], and class "
                     "labels i64 [B]")

    def release(self):
        self.rt.lib.cleave_artifact_release(self.handle)


class Session:
    def __init__(self, model, device, seed):
        self.model, self.rt, self.handle = model, model.rt, C.c_void_p()
        options = SessionOptions()
        self.rt.lib.cleave_session_options_init(C.byref(options))
        options.seed = seed
        options.device = DEVICES[device]
        self.where = f"{model.path} on {device}"
        self.rt.check(self.rt.lib.cleave_session_create(
            model.handle, C.byref(options), C.byref(self.handle)),
            self.where, "creating the session")

    def read(self, name, nbytes):
        value = np.empty(nbytes, np.uint8)
        self.rt.check(self.rt.lib.cleave_session_read_global(
            self.handle, name, value.ctypes.data_as(C.c_void_p),
            C.c_size_t(nbytes)), self.where, f"reading {name.decode()}")
        return value

    def write(self, name, value):
        self.rt.check(self.rt.lib.cleave_session_write_global(
            self.handle, name, value.ctypes.data_as(C.c_void_p),
            C.c_size_t(value.nbytes)), self.where, f"writing {name.decode()}")

    def set_hyper(self, name, value):
        self.rt.check(self.rt.lib.cleave_session_set_hyperparameter(
            self.handle, name.encode(), C.c_double(value)), self.where,
            f"setting {name}")

    def micro_step(self, arrays, step, staging=None):
        b = arrays[0].shape[0]
        pointers = (staging.stage(arrays) if staging
                    else [m.ctypes.data for m in arrays])
        batch = Batch(b, len(arrays), (C.c_void_p * len(arrays))(*pointers),
                      (C.c_size_t * len(arrays))(*[m.nbytes for m in arrays]))
        self.rt.check(self.rt.lib.cleave_session_micro_step_ex(
            self.handle, C.byref(batch),
            C.c_int(staging.memory if staging else MEMORY["host"])),
            self.where, f"micro-step {step}")

    def params(self, kinds=(PARAM, BUFFER)):
        """The f32 parameters and buffers, concatenated in manifest order."""
        return np.concatenate([
            self.read(name, nbytes).view(np.float32)
            for name, kind, dtype, nbytes in self.model.globals
            if kind in kinds and dtype == DTYPE_F32])

    def destroy(self):
        self.rt.lib.cleave_session_destroy(self.handle)


class Staging:
    """Buffers in page-locked host memory or in the memory of GPU 0 (the
    session's), through the CUDA driver; stage() copies a micro-batch's
    arrays there and returns their addresses."""

    def __init__(self, memory, arrays):
        self.memory = MEMORY[memory]
        self.cuda = C.CDLL("libcuda.so.1")
        device, context = C.c_int(), C.c_void_p()
        self.check(self.cuda.cuInit(0), "cuInit")
        self.check(self.cuda.cuDeviceGet(C.byref(device), 0), "cuDeviceGet")
        self.check(self.cuda.cuDevicePrimaryCtxRetain(C.byref(context), device),
                   "cuDevicePrimaryCtxRetain")
        self.check(self.cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        self.buffers = []
        for a in arrays:
            if self.memory == MEMORY["pinned"]:
                p = C.c_void_p()
                self.check(self.cuda.cuMemHostAlloc(C.byref(p),
                                                    C.c_size_t(a.nbytes), 0),
                           "cuMemHostAlloc")
                self.buffers.append(p.value)
            else:
                p = C.c_uint64()
                self.check(self.cuda.cuMemAlloc_v2(C.byref(p),
                                                   C.c_size_t(a.nbytes)),
                           "cuMemAlloc")
                self.buffers.append(p.value)

    @staticmethod
    def check(status, call):
        if status != 0:
            sys.exit(f"gpu-check-train: {call} failed (CUresult {status})")

    def stage(self, arrays):
        for buffer, a in zip(self.buffers, arrays):
            if self.memory == MEMORY["pinned"]:
                C.memmove(buffer, a.ctypes.data, a.nbytes)
            else:
                self.check(self.cuda.cuMemcpyHtoD_v2(
                    C.c_uint64(buffer), C.c_void_p(a.ctypes.data),
                    C.c_size_t(a.nbytes)), "cuMemcpyHtoD")
        return self.buffers


def feeder(model, data_path):
    """The micro-batch `step`'s input arrays, in the batch's order."""
    data = np.load(data_path)
    x, y = data["x_train"], data["y_train"].astype(np.int64)
    (_, dtype, shape), = [i for i in model.inputs if len(i[2]) != 1 or i[1] != DTYPE_I64]
    if dtype == DTYPE_F32:
        x = x.astype(np.float32) / 255.0
        x = (x - x.mean()) / max(float(x.std()), 1e-12)
        x = x.reshape((x.shape[0],) + shape[1:]).astype(np.float32)
    else:
        x = x.astype(np.int64)
    if x.shape[1:] != shape[1:] or y.shape != (x.shape[0],):
        sys.exit(f"gpu-check-train: {data_path}: x_train {x.shape}, y_train "
                 f"{y.shape} (expected [N, {', '.join(map(str, shape[1:]))}] "
                 "and [N] labels)")
    b = model.micro_batch

    def arrays(step):
        rows = slice(step * b, (step + 1) * b)
        return [np.ascontiguousarray(x[rows] if len(s) != 1 or d != DTYPE_I64
                                     else y[rows])
                for _, d, s in model.inputs]
    return arrays, x.shape[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runtime")
    p.add_argument("artifact")
    p.add_argument("data")
    p.add_argument("--device", choices=sorted(DEVICES), default="cpu")
    p.add_argument("--windows", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-params")
    p.add_argument("--save-initial")
    p.add_argument("--twin")
    p.add_argument("--tolerance", type=float, default=1e-3)
    p.add_argument("--hyper", action="append", default=[], metavar="NAME=X")
    p.add_argument("--memory", choices=sorted(MEMORY), default="host")
    a = p.parse_args()
    if bool(a.save_params) == bool(a.twin):
        p.error("give one of --save-params and --twin")
    if a.memory != "host" and a.device != "cuda":
        p.error("--memory=pinned or device needs --device=cuda")

    rt = Runtime(a.runtime)
    model = Model(rt, a.artifact)
    arrays, samples = feeder(model, a.data)
    n, b = model.accumulate, model.micro_batch
    if samples < a.windows * n * b:
        sys.exit(f"gpu-check-train: {a.data} has {samples} samples, "
                 f"{a.windows} windows of {n} x {b} need {a.windows * n * b}")
    session = Session(model, a.device, a.seed)
    staging = Staging(a.memory, arrays(0)) if a.memory != "host" else None
    for h in a.hyper:
        name, _, value = h.partition("=")
        session.set_hyper(name, float(value))

    if a.save_params:
        if a.save_initial:
            session.params().tofile(a.save_initial)
        for s in range(a.windows * n):
            session.micro_step(arrays(s), s, staging)
        session.params().tofile(a.save_params)
    else:
        twin_model = Model(rt, a.twin)
        if ([g[1:] for g in twin_model.globals] != [g[1:] for g in model.globals]
                or [g[0] for g in twin_model.globals] != [g[0] for g in model.globals]
                or (twin_model.micro_batch, twin_model.accumulate) != (b, n)):
            sys.exit(f"gpu-check-train: {a.twin} is not {a.artifact}'s twin: "
                     "other globals, micro-batch or N")
        twin = Session(twin_model, "cpu", a.seed)
        worst = (-1.0, 0, 0.0)
        for w in range(a.windows):
            for name, _, _, nbytes in model.globals:
                session.write(name, twin.read(name, nbytes))
            start = twin.params((PARAM,)).astype(np.float64)
            for s in range(w * n, (w + 1) * n):
                session.micro_step(arrays(s), s, staging)
                twin.micro_step(arrays(s), s)
            got = session.params((PARAM,)).astype(np.float64) - start
            want = twin.params((PARAM,)).astype(np.float64) - start
            rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            diff = float(np.max(np.abs(got - want)))
            print(f"window {w + 1}: the update differs by {rel:.2e} of the "
                  f"update, max |diff| {diff:.2e}")
            if rel > worst[0]:
                worst = (rel, w + 1, diff)
        twin.destroy()
        twin_model.release()
        rel, w, diff = worst
        print(f"{int(rel <= a.tolerance)} each window from the CPU's state: "
              f"the update differs by at most {rel:.2e} of the update (window "
              f"{w}, max |diff| {diff:.2e}; tolerance {a.tolerance:g})")
    session.destroy()
    model.release()


if __name__ == "__main__":
    main()

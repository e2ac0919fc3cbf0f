#!/usr/bin/python3
"""Trains a Cleave artifact for scripts/gpu-check.sh's numerics rows where
cleave-train cannot: the transformer test model classifies token sequences
(ids i64 [B, T], labels i64 [B]), a pairing cleave-train does not feed (it
takes f32 inputs with class labels, or token sequences with a label per
token).

    gpu-check-train.py LIBCLEAVE_RUNTIME ARTIFACT DATA.npz --device=cpu|cuda
                       --windows=K --save-params=OUT [--seed=S]
                       [--save-initial=INIT]

Drives libcleave_runtime's C API (cleave/runtime.h) through ctypes: one
session from --seed on the device, then K windows of the artifact's N
micro-batches of B rows of x_train/y_train, in order, with the manifest's
hyperparameters. Writes every parameter and buffer, in manifest order, as
raw f32 (cleave-train --save-params's layout) to OUT, and the same before
the first micro-step to INIT (gpu-check.sh compares the updates too: with
a small learning rate the parameters barely move, and agreeing to 1e-4
says little about the update alone). Needs only NumPy:
the GPU machine runs it with its own Python.
"""
import argparse
import ctypes as C
import sys

import numpy as np

OK, DTYPE_F32, DTYPE_I64 = 0, 0, 3
PARAM, BUFFER = 0, 1
DEVICES = {"cpu": 0, "cuda": 1}


class TensorInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int32),
                ("shape", C.POINTER(C.c_int64)), ("bytes", C.c_size_t)]


class GlobalInfo(C.Structure):
    _fields_ = [("tensor", TensorInfo), ("kind", C.c_int), ("of", C.c_char_p)]


class SessionOptions(C.Structure):
    _fields_ = [("seed", C.c_uint64), ("accumulate", C.c_int64),
                ("num_threads", C.c_int32), ("distributed", C.c_int32),
                ("device", C.c_int32), ("device_ordinal", C.c_int32)]


class Batch(C.Structure):
    _fields_ = [("samples", C.c_int64), ("num_inputs", C.c_size_t),
                ("data", C.POINTER(C.c_void_p)),
                ("bytes", C.POINTER(C.c_size_t))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runtime")
    p.add_argument("artifact")
    p.add_argument("data")
    p.add_argument("--device", choices=sorted(DEVICES), default="cpu")
    p.add_argument("--windows", type=int, required=True)
    p.add_argument("--save-params", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-initial")
    a = p.parse_args()

    # Artifacts resolve the runtime's kernel ABI (cleave_kernel_*) from the
    # global namespace, as they do in an executable linked against it.
    lib = C.CDLL(a.runtime, mode=C.RTLD_GLOBAL)
    lib.cleave_last_error_message.restype = C.c_char_p

    def check(status, what):
        if status != OK:
            sys.exit(f"gpu-check-train: {a.artifact}: {what}: "
                     f"{lib.cleave_last_error_message().decode()}")

    artifact, session = C.c_void_p(), C.c_void_p()
    check(lib.cleave_artifact_load(a.artifact.encode(), C.byref(artifact)),
          "loading")
    b, n, count = C.c_int64(), C.c_int64(), C.c_size_t()
    check(lib.cleave_artifact_micro_batch(artifact, C.byref(b)), "micro-batch")
    check(lib.cleave_artifact_accumulate(artifact, C.byref(n)), "accumulate")
    b, n = b.value, n.value

    # The inputs, in the order the batch must list them: the ids [B, T] and
    # the class labels [B], both i64.
    check(lib.cleave_artifact_num_inputs(artifact, C.byref(count)), "inputs")
    inputs = []
    for i in range(count.value):
        info = TensorInfo()
        check(lib.cleave_artifact_input(artifact, C.c_size_t(i), C.byref(info)),
              "input")
        inputs.append((info.name.decode(), info.dtype,
                       tuple(info.shape[k] for k in range(info.rank))))
    ranks = sorted(len(shape) for _, _, shape in inputs)
    if (len(inputs) != 2 or any(d != DTYPE_I64 for _, d, _ in inputs)
            or ranks != [1, 2]):
        sys.exit(f"gpu-check-train: {a.artifact} takes {inputs}; expected token "
                 "ids i64 [B, T] and class labels i64 [B]")

    data = np.load(a.data)
    x, y = data["x_train"].astype(np.int64), data["y_train"].astype(np.int64)
    t = next(shape[1] for _, _, shape in inputs if len(shape) == 2)
    if x.ndim != 2 or x.shape[1] != t or y.shape != (x.shape[0],):
        sys.exit(f"gpu-check-train: {a.data}: x_train {x.shape}, y_train "
                 f"{y.shape} (expected [N, {t}] ids and [N] labels)")
    steps = a.windows * n
    if x.shape[0] < steps * b:
        sys.exit(f"gpu-check-train: {a.data} has {x.shape[0]} samples, "
                 f"{a.windows} windows of {n} x {b} need {steps * b}")

    options = SessionOptions()
    lib.cleave_session_options_init(C.byref(options))
    options.seed = a.seed
    options.device = DEVICES[a.device]
    check(lib.cleave_session_create(artifact, C.byref(options),
                                    C.byref(session)), "creating the session")

    def save(path):
        check(lib.cleave_artifact_num_globals(artifact, C.byref(count)),
              "globals")
        values = []
        for i in range(count.value):
            info = GlobalInfo()
            check(lib.cleave_artifact_global(artifact, C.c_size_t(i),
                                             C.byref(info)), "global")
            if info.kind not in (PARAM, BUFFER) or info.tensor.dtype != DTYPE_F32:
                continue
            value = np.empty(info.tensor.bytes // 4, np.float32)
            check(lib.cleave_session_read_global(
                session, info.tensor.name, value.ctypes.data_as(C.c_void_p),
                C.c_size_t(info.tensor.bytes)),
                f"reading {info.tensor.name.decode()}")
            values.append(value)
        np.concatenate(values).tofile(path)

    if a.save_initial:
        save(a.save_initial)
    for s in range(steps):
        rows = slice(s * b, (s + 1) * b)
        arrays = [np.ascontiguousarray(x[rows] if len(shape) == 2 else y[rows])
                  for _, _, shape in inputs]
        batch = Batch(b, len(arrays),
                      (C.c_void_p * len(arrays))(*[m.ctypes.data for m in arrays]),
                      (C.c_size_t * len(arrays))(*[m.nbytes for m in arrays]))
        check(lib.cleave_session_micro_step(session, C.byref(batch)),
              f"micro-step {s}")

    save(a.save_params)
    lib.cleave_session_destroy(session)
    lib.cleave_artifact_release(artifact)


if __name__ == "__main__":
    main()

"""Batches in GPU memory from Python, on the fake CUDA driver.

A cuda session reads a batch where it is: host memory (NumPy, CPU tensors)
is uploaded, GPU memory (a CUDA torch tensor, or any object with the CUDA
Array Interface: CuPy, Numba) is copied on the GPU. Here the GPU is the
fake driver of the runtime's tests (test/unit/runtime/session/
FakeCudaDriver.c, whose device memory is host memory) and the artifact
its hand-written softmax regression (FakeArtifact.c); the objects below
offer the driver's allocations through __cuda_array_interface__ as CuPy
would. torch here has no CUDA, so CUDA tensors take the same path only on
a real GPU (scripts/gpu-check.sh)."""

import ctypes
import os

import numpy as np
import pytest

import cleave

CUDA_ARTIFACT = os.environ["CLEAVE_FAKE_SGD_CUDA"]
CPU_ARTIFACT = os.environ["CLEAVE_FAKE_SGD"]
DRIVER = ctypes.CDLL("libcuda.so.1")  # the fake one: LD_LIBRARY_PATH
MICRO_BATCH, FEATURES, CLASSES = 8, 5, 3


class GpuArray:
    """A copy of `host` in the driver's device memory, described by the
    CUDA Array Interface (version 3)."""

    def __init__(self, host, stream=None, strides=None, typestr=None):
        host = np.ascontiguousarray(host)
        self.ptr = ctypes.c_uint64()
        status = DRIVER.cuMemAlloc_v2(ctypes.byref(self.ptr),
                                      ctypes.c_size_t(max(host.nbytes, 1)))
        assert status == 0, status
        ctypes.memmove(self.ptr.value, host.ctypes.data, host.nbytes)
        self.__cuda_array_interface__ = {
            "shape": host.shape,
            "typestr": typestr or host.dtype.str,
            "data": (self.ptr.value, False),
            "version": 3,
            "strides": strides,
            "stream": stream,
        }

    def __del__(self):
        DRIVER.cuMemFree_v2(ctypes.c_uint64(self.ptr.value))


def driver_trace():
    """The fake driver's copies and launches since the last reset, one per
    line ("h2d s3", "d2d s3", "launch s2 sgd_update")."""
    DRIVER.fake_cuda_trace.restype = ctypes.c_char_p
    return DRIVER.fake_cuda_trace().decode().splitlines()


def h2d_sources():
    """Where the fake driver's host-to-device copies since the last reset
    read from."""
    sources = ctypes.POINTER(ctypes.c_void_p)()
    count = DRIVER.fake_cuda_h2d_sources(ctypes.byref(sources))
    return [sources[i] or 0 for i in range(count)]


def data(samples, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    labels = rng.integers(0, CLASSES, samples).astype(np.int64)
    return x, labels


def on_gpu(*arrays, **kwargs):
    return [GpuArray(a, **kwargs) for a in arrays]


def assert_same_params(a, b):
    pa, pb = a.params(), b.params()
    assert pa.keys() == pb.keys()
    for name in pa:
        np.testing.assert_array_equal(pa[name], pb[name], err_msg=name)


def test_gpu_batches_train_like_host_batches():
    """micro_step, train_batch (full and short micro-batches) and eval
    with inputs in GPU memory give exactly what host inputs give."""
    host = cleave.Session(CUDA_ARTIFACT, device="cuda")
    gpu = cleave.Session(CUDA_ARTIFACT, device="cuda")
    x, labels = data(29)
    for first in range(0, 24, MICRO_BATCH):
        rows = slice(first, first + MICRO_BATCH)
        DRIVER.fake_cuda_trace_reset()
        host.micro_step(x[rows], labels[rows])
        assert any(line.startswith("h2d") for line in driver_trace())
        DRIVER.fake_cuda_trace_reset()
        arrays = on_gpu(x[rows], labels[rows])
        gpu.micro_step(*arrays)
        # Both inputs copied on the GPU; no upload reads them (the uploads
        # there are are the session's own, the sample weights).
        copies = [line.split()[0] for line in driver_trace()]
        assert copies.count("d2d") == 2, copies
        for a, host_array in zip(arrays, (x[rows], labels[rows])):
            begin = a.ptr.value
            assert not [p for p in h2d_sources()
                        if begin <= p < begin + host_array.nbytes]
    # 29 rows: three micro-batches of 8 and a short one of 5.
    host.train_batch(x, labels)
    gpu.train_batch(*on_gpu(x, labels))
    host.flush()
    gpu.flush()
    assert gpu.step == host.step > 0
    assert gpu.loss == host.loss
    assert_same_params(gpu, host)
    np.testing.assert_array_equal(gpu.eval(GpuArray(x)), host.eval(x))


def test_gpu_batches_train_like_the_cpu():
    """The same data in GPU memory on the fake GPU and in host memory on
    the CPU twin of the artifact: the same parameters, to rounding."""
    cpu = cleave.Session(CPU_ARTIFACT)
    gpu = cleave.Session(CUDA_ARTIFACT, device="cuda")
    x, labels = data(32, seed=1)
    cpu.train_batch(x, labels)
    gpu.train_batch(*on_gpu(x, labels))
    assert gpu.step == cpu.step == 1
    pc, pg = cpu.params(), gpu.params()
    for name in pc:
        np.testing.assert_allclose(pg[name], pc[name], rtol=1e-6, atol=1e-7)


def test_a_producer_stream_is_waited_for():
    """Version 3's `stream`: the producer's pending work is waited for
    before the session copies, once per input (here the legacy default
    stream, 1, and the per-thread one, 2, which the fake driver traces)."""
    host = cleave.Session(CUDA_ARTIFACT, device="cuda")
    gpu = cleave.Session(CUDA_ARTIFACT, device="cuda")
    x, labels = data(MICRO_BATCH, seed=2)
    host.micro_step(x, labels)
    DRIVER.fake_cuda_trace_reset()
    gpu.micro_step(GpuArray(x, stream=1), GpuArray(labels, stream=2))
    trace = driver_trace()
    assert trace[:2] == ["sync legacy", "sync per-thread"], trace
    assert gpu.loss == host.loss
    DRIVER.fake_cuda_trace_reset()
    gpu.micro_step(*on_gpu(x, labels))
    assert not {"sync legacy", "sync per-thread"} & set(driver_trace())


def test_one_kind_of_memory_per_call():
    session = cleave.Session(CUDA_ARTIFACT, device="cuda")
    x, labels = data(MICRO_BATCH)
    with pytest.raises(TypeError, match=r"micro_step\(\) reads one kind of "
                       r"memory per call: input 'x' is GPU memory and "
                       r"'labels' host memory"):
        session.micro_step(GpuArray(x), labels)
    assert session.micro_steps == 0


def test_a_cpu_session_refuses_gpu_memory():
    session = cleave.Session(CPU_ARTIFACT)
    x, labels = data(MICRO_BATCH)
    with pytest.raises(TypeError, match=r"input 'x' is GPU memory \(a "
                       r"__cuda_array_interface__\) but the session runs on "
                       r"the CPU: pass host memory"):
        session.micro_step(*on_gpu(x, labels))


def test_gpu_inputs_are_checked_like_host_ones():
    session = cleave.Session(CUDA_ARTIFACT, device="cuda")
    x, labels = data(MICRO_BATCH)
    with pytest.raises(TypeError, match=r"input 'x' has dtype float64; the "
                       r"artifact expects float32"):
        session.micro_step(GpuArray(x.astype(np.float64)),
                           GpuArray(labels))
    with pytest.raises(ValueError, match=r"input 'x' has shape \(8, 4\); the "
                       r"artifact expects \(k, 5\)"):
        session.micro_step(GpuArray(x[:, :4]), GpuArray(labels))
    # Column-major strides: refused rather than read wrongly.
    with pytest.raises(TypeError, match=r"input 'x' \(a "
                       r"__cuda_array_interface__\): a strided GPU array is "
                       r"not read"):
        session.micro_step(GpuArray(x, strides=(4, 4 * MICRO_BATCH)),
                           GpuArray(labels))
    # A label past the classes is caught on the host, as for host batches.
    bad = labels.copy()
    bad[3] = CLASSES
    with pytest.raises(cleave.InvalidArgumentError, match=r"labels"):
        session.micro_step(*on_gpu(x, bad))
    assert session.micro_steps == 0

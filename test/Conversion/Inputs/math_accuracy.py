"""Measures the f32 functions of an object file against double-precision
libm, in ulp of the float32 result; fails above a bound.

    math_accuracy.py OBJECT MAX_ULP

OBJECT defines `float erf(float)`, `exp`, `tanh` and `log` (the functions of
cleave-approximate-math-accuracy.mlir, lowered with the approximations).
It is linked into a shared object with the C compiler driver and called
through ctypes on a fixed grid over each function's useful range.
"""
import ctypes
import math
import os
import struct
import subprocess
import sys
import tempfile


def bits(x):
    """The float32 bit pattern of x as a signed integer that orders like x
    (so that the difference of two is their distance in ulp)."""
    (i,) = struct.unpack("<i", struct.pack("<f", x))
    return i if i >= 0 else -(i & 0x7FFFFFFF)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main(obj, max_ulp):
    with tempfile.TemporaryDirectory() as tmp:
        lib_path = os.path.join(tmp, "approx.so")
        subprocess.run(["cc", "-shared", "-o", lib_path, obj, "-lm"],
                       check=True)
        lib = ctypes.CDLL(lib_path)
        grids = {
            "erf": (math.erf, [-6 + 12 * i / 20000 for i in range(20001)]),
            "exp": (math.exp, [-87 + 175 * i / 20000 for i in range(20001)]),
            "tanh": (math.tanh, [-10 + 20 * i / 20000 for i in range(20001)]),
            "log": (math.log, [10 ** (-30 + 60 * i / 20000)
                               for i in range(20001)]),
        }
        failed = False
        for name, (reference, grid) in grids.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            worst, at = 0, None
            for x in grid:
                x = f32(x)
                ulp = abs(bits(fn(x)) - bits(f32(reference(x))))
                if ulp > worst:
                    worst, at = ulp, x
            print(f"{name}: max {worst} ulp (at {at})")
            failed |= worst > max_ulp
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))

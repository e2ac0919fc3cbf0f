#!/usr/bin/env bash
# cleave-train --device on a machine without a CUDA driver: a cuda artifact
# and a CPU artifact on the wrong device each stop with one line on stderr and
# exit 1; a malformed --device is a usage error (exit 2).
#   cleave_train_device_test.sh CLEAVE_TRAIN CUDA_ARTIFACT CPU_ARTIFACT TMPDIR HAS_CUDA
set -uo pipefail
train=$1 cuda=$2 cpu=$3 tmp=$4 has_cuda=${5:-OFF}
mkdir -p "$tmp"
data=$tmp/device_test.npz
# The fakes' shapes: 5 float features, labels in [0, 3).
/usr/bin/python3 - "$data" <<'PY' || exit 77
import sys
import numpy as np
x = np.linspace(-1, 1, 16 * 5, dtype=np.float32).reshape(16, 5)
y = (np.arange(16) % 3).astype(np.int64)
np.savez(sys.argv[1], x_train=x, y_train=y, x_test=x, y_test=y)
PY

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS MESSAGE ARGS...: cleave-train ARGS exits with STATUS and its
# stderr has MESSAGE.
expect() {
  local status=$1 message=$2
  shift 2
  local err
  err=$("$train" --data="$data" --quiet --threads=1 "$@" 2>&1 >/dev/null)
  local got=$?
  [ "$got" = "$status" ] || fail "cleave-train $*: exit $got, expected $status; stderr: $err"
  grep -qF -- "$message" <<<"$err" || fail "cleave-train $*: stderr lacks '$message': $err"
  echo "ok: cleave-train $* -> $status: $err"
}

if [ "$has_cuda" = ON ]; then
  if /usr/bin/python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
    echo "this machine has a CUDA driver: the no-driver case does not apply" >&2
    exit 77
  fi
  why="no CUDA driver (libcuda.so.1 not found)"
else
  why="this runtime was built without CUDA support"
fi
expect 1 "$cuda: $why" "$cuda" --device=cuda
expect 1 "$cuda: $why" "$cuda" --device=cuda:1
expect 1 "$cuda: compiled for CUDA GPUs (sm_80, sm_90 and PTX for sm_80), but the session is on the CPU" "$cuda"
expect 1 "$cpu: compiled for the CPU, but the session is on a CUDA GPU" "$cpu" --device=cuda
expect 2 "invalid value 'gpu' for --device (expected cpu, cuda or cuda:K)" "$cpu" --device=gpu
# The default and --device=cpu still train the CPU artifact.
"$train" --data="$data" --quiet --threads=1 --device=cpu "$cpu" >/dev/null ||
  fail "cleave-train --device=cpu on the CPU artifact failed"
echo PASS

#!/usr/bin/env bash
# cleave-train --device=cuda on the fake CUDA driver (and, under mpirun, the
# fake NCCL): the SGD fake's cuda build must train exactly as its CPU build,
# on one rank and on two. On the GPU cleave-train hands the session the rest
# of each window in one train_batch and reads the loss once per window, so
# this also checks that the windows, the partial window at the end of each
# epoch, --checkpoint-every's shorter calls and the per-step metrics come out
# as on the CPU, which makes one call per micro-step.
#   cleave_train_fake_gpu_test.sh CLEAVE_TRAIN CUDA_ARTIFACT CPU_ARTIFACT TMPDIR FAKE_DIRS MPIEXEC
set -euo pipefail
train=$1 cuda=$2 cpu=$3 tmp=$4 fake_dirs=$5 mpiexec=$6
rm -rf "$tmp" && mkdir -p "$tmp"
data=$tmp/data.npz
# The fakes' shapes: 5 float features, labels in [0, 3); 61 samples give
# windows of N = 4 micro-batches of 8, a short micro-batch and a partial
# window at the end of every epoch.
/usr/bin/python3 - "$data" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(3)
x = rng.uniform(-1, 1, (61, 5)).astype(np.float32)
y = rng.integers(0, 3, 61).astype(np.int64)
np.savez(sys.argv[1], x_train=x, y_train=y, x_test=x[:20], y_test=y[:20])
PY

fail() { echo "FAIL: $*" >&2; exit 1; }

# The per-step records of a metrics file, without the timings.
steps() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") == "step":
        print(r["step"], r["micro_steps"], r["window"], r["window_samples"],
              repr(r["loss"]), r.get("lr"))
PY
}

# run NAME ARTIFACT DEVICE [LAUNCHER...]: trains 3 epochs into $tmp/NAME.*
run() {
  local name=$1 artifact=$2 device=$3
  shift 3
  LD_LIBRARY_PATH=$fake_dirs FAKE_CUDA_UNIFORM=1 "$@" "$train" "$artifact" \
    --data="$data" --quiet --threads=1 --epochs=3 --seed=5 --device="$device" \
    --checkpoint-dir="$tmp/$name.ckpt" --checkpoint-every=3 \
    --metrics="$tmp/$name.jsonl" --save-params="$tmp/$name.params" \
    >"$tmp/$name.out" 2>&1 || { cat "$tmp/$name.out" >&2; fail "$name: cleave-train failed"; }
}

same() {
  cmp -s "$tmp/$1.params" "$tmp/$2.params" || fail "$1 and $2: different parameters"
  diff <(steps "$tmp/$1.jsonl") <(steps "$tmp/$2.jsonl") >&2 ||
    fail "$1 and $2: different optimizer steps"
  [ -n "$(steps "$tmp/$1.jsonl")" ] || fail "$1: no step records"
  echo "ok: $1 = $2 ($(steps "$tmp/$1.jsonl" | wc -l) optimizer steps)"
}

run cpu "$cpu" cpu
run gpu "$cuda" cuda
same gpu cpu

mpirun=("$mpiexec" --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH -x FAKE_CUDA_UNIFORM -np 2)
run cpu2 "$cpu" cpu "${mpirun[@]}"
run gpu2 "$cuda" cuda "${mpirun[@]}"
same gpu2 cpu2
cmp -s "$tmp/cpu.params" "$tmp/cpu2.params" && fail "two ranks trained like one: no reduction?"
echo PASS

#!/usr/bin/env bash
# scripts/gpu-check-prepare.sh and scripts/gpu-check.sh --dry-run, on a
# machine without a GPU: the prepared folder (CPU artifacts only: the test
# does not depend on the compiler's cuda target) passes the dry run, and a
# changed or missing file fails it; the transformer's CPU artifacts train on
# the carried token data through gpu-check-train.py, as the GPU run does.
# Needs /usr/bin/python3 with torch and onnx (scripts/setup.sh).
#   gpu_check_scripts_test.sh SOURCE_DIR BUILD_DIR TMP_DIR
set -uo pipefail
src=$1 build=$2 tmp=$3
out=$tmp/gpu-check-carry
rm -rf "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$src/scripts/gpu-check-prepare.sh" --build="$build" --out="$out" --cpu-only ||
  fail "gpu-check-prepare.sh failed"
for f in bin/cleave-train bin/cleave-bench artifacts/mlp-sgd-cpu.cleave \
         artifacts/lenet-adam-cpu.cleave artifacts/transformer-sgd-cpu.cleave \
         artifacts/transformer-adam-cpu.cleave data/fashion.npz data/tokens.npz \
         MANIFEST.sha256 PREPARED; do
  [ -f "$out/$f" ] || fail "the prepared folder has no $f"
done
ls "$out"/lib/libcleave_runtime.so.* >/dev/null || fail "no libcleave_runtime in the prepared folder"
ls "$out"/lib/libdnnl.so* >/dev/null || fail "oneDNN was not carried"
size=$(du -sb "$out" | cut -f1)
[ "$size" -le $((64 * 1024 * 1024)) ] || fail "the prepared folder is $size bytes, over 64 MiB"

bash "$src/scripts/gpu-check.sh" --carry="$out" --dry-run || fail "the dry run failed on a complete folder"

# The transformer rows' driver, on the CPU with the carried runtime: 20
# windows move the parameters, the same run twice gives the same bits (what
# lets GPU against CPU mean anything), and SGD and Adam differ.
runtime=$(ls "$out"/lib/libcleave_runtime.so.[0-9]* | sort | tail -1)
for run in sgd-1 sgd-2 adam-1; do
  LD_LIBRARY_PATH="$out/lib" OMP_NUM_THREADS=1 /usr/bin/python3 \
    "$src/scripts/gpu-check-train.py" "$runtime" \
    "$out/artifacts/transformer-${run%-*}-cpu.cleave" "$out/data/tokens.npz" \
    --device=cpu --windows=20 --save-initial="$tmp/$run.init" \
    --save-params="$tmp/$run.params" || fail "gpu-check-train.py $run failed"
done
/usr/bin/python3 - "$tmp" <<'PY' || fail "gpu-check-train.py's results"
import sys
import numpy as np
f = lambda name: np.fromfile(f"{sys.argv[1]}/{name}", np.float32)
init, sgd, again, adam = f("sgd-1.init"), f("sgd-1.params"), f("sgd-2.params"), f("adam-1.params")
assert sgd.size == 4165, f"{sgd.size} floats, expected the Block's 4165 parameters"
assert np.linalg.norm(sgd - init) > 1e-4 * np.linalg.norm(init), "SGD did not move the parameters"
assert np.array_equal(sgd, again), "two runs from the same seed differ"
assert not np.array_equal(sgd, adam), "SGD and Adam agree"
PY
# A token-classifier driver refuses an artifact of another interface.
LD_LIBRARY_PATH="$out/lib" /usr/bin/python3 "$src/scripts/gpu-check-train.py" "$runtime" \
  "$out/artifacts/mlp-sgd-cpu.cleave" "$out/data/tokens.npz" --windows=1 \
  --save-params="$tmp/mlp.params" 2>"$tmp/mlp.err" && fail "gpu-check-train.py took the MLP"
grep -q "expected token ids i64 \[B, T\] and class labels i64 \[B\]" "$tmp/mlp.err" ||
  fail "gpu-check-train.py's refusal: $(cat "$tmp/mlp.err")"

# A folder whose manifest is intact but that lacks what the check reads (an
# older gpu-check-prepare.sh's): refused, naming the file.
cp -r "$out" "$tmp/old-carry"
rm "$tmp/old-carry/data/tokens.npz"
(cd "$tmp/old-carry" && find . -type f ! -name MANIFEST.sha256 | sort | xargs sha256sum >MANIFEST.sha256)
bash "$src/scripts/gpu-check.sh" --carry="$tmp/old-carry" --dry-run 2>"$tmp/old.err" &&
  fail "the dry run passed without data/tokens.npz"
grep -q "data/tokens.npz is missing" "$tmp/old.err" || fail "the dry run's refusal: $(cat "$tmp/old.err")"
rm -rf "$tmp/old-carry"
# A real run refuses a folder without cuda artifacts.
bash "$src/scripts/gpu-check.sh" --carry="$out" 2>/dev/null && fail "gpu-check.sh ran without cuda artifacts"

printf 'x' >>"$out/artifacts/mlp-sgd-cpu.cleave"
bash "$src/scripts/gpu-check.sh" --carry="$out" --dry-run 2>/dev/null &&
  fail "the dry run passed with a changed artifact"
rm "$out/MANIFEST.sha256"
bash "$src/scripts/gpu-check.sh" --carry="$out" --dry-run 2>/dev/null &&
  fail "the dry run passed without its manifest"
rm -rf "$out"
echo PASS

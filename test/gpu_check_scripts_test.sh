#!/usr/bin/env bash
# scripts/gpu-check-prepare.sh and scripts/gpu-check.sh --dry-run, on a
# machine without a GPU: the prepared folder (CPU artifacts only: the test
# does not depend on the compiler's cuda target) passes the dry run, and a
# changed or missing file fails it.
#   gpu_check_scripts_test.sh SOURCE_DIR BUILD_DIR TMP_DIR
set -uo pipefail
src=$1 build=$2 tmp=$3
out=$tmp/gpu-check-carry
rm -rf "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$src/scripts/gpu-check-prepare.sh" --build="$build" --out="$out" --cpu-only ||
  fail "gpu-check-prepare.sh failed"
for f in bin/cleave-train bin/cleave-bench artifacts/mlp-sgd-cpu.cleave \
         artifacts/lenet-adam-cpu.cleave data/fashion.npz MANIFEST.sha256 PREPARED; do
  [ -f "$out/$f" ] || fail "the prepared folder has no $f"
done
ls "$out"/lib/libcleave_runtime.so.* >/dev/null || fail "no libcleave_runtime in the prepared folder"
ls "$out"/lib/libdnnl.so* >/dev/null || fail "oneDNN was not carried"
size=$(du -sb "$out" | cut -f1)
[ "$size" -le $((64 * 1024 * 1024)) ] || fail "the prepared folder is $size bytes, over 64 MiB"

bash "$src/scripts/gpu-check.sh" --carry="$out" --dry-run || fail "the dry run failed on a complete folder"
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

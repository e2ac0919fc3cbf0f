#!/usr/bin/env bash
# scripts/gpu-check-prepare.sh and scripts/gpu-check.sh --dry-run, on a
# machine without a GPU: the prepared folder (CPU artifacts only: the test
# does not depend on the compiler's cuda target) passes the dry run, which
# writes its plan (every step with its time limit, the stages in their
# order) to the results folder; a changed or missing file fails it, and so
# does an artifact whose host code was compiled for this machine's CPU
# rather than a portable x86-64 level; the transformer's CPU artifacts train
# on the carried token data through gpu-check-train.py, as the GPU run does,
# and its lockstep of Adam windows against a twin gives the same update for
# the same model and refuses or fails another;
# and gpu-check.sh's step runner, sourced, cuts a step that hangs at its
# limit, reports it as a TIMEOUT row in the results file and goes on. With
# FAKE_GPU_DIR (the session tests' build folder: the fake CUDA driver and its
# hand-written cuda artifact), gpu-check-train.py's --memory=host, pinned and
# device train in lockstep with the CPU twin, bit for bit.
# Needs /usr/bin/python3 with torch and onnx (scripts/setup.sh).
#   gpu_check_scripts_test.sh SOURCE_DIR BUILD_DIR TMP_DIR [FAKE_GPU_DIR]
set -uo pipefail
src=$1 build=$2 tmp=$3 fake_gpu=${4:-}
prepared=$tmp/gpu-check-carry
rm -rf "$prepared"
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$src/scripts/gpu-check-prepare.sh" --build="$build" --out="$prepared" --cpu-only ||
  fail "gpu-check-prepare.sh failed"
for f in bin/cleave-train bin/cleave-bench artifacts/mlp-sgd-cpu.cleave \
         artifacts/lenet-adam-cpu.cleave artifacts/transformer-sgd-cpu.cleave \
         artifacts/transformer-adam-cpu.cleave artifacts/attention-sgd-cpu.cleave \
         data/fashion.npz data/tokens.npz \
         MANIFEST.sha256 PREPARED; do
  [ -f "$prepared/$f" ] || fail "the prepared folder has no $f"
done
ls "$prepared"/lib/libcleave_runtime.so.* >/dev/null || fail "no libcleave_runtime in the prepared folder"
ls "$prepared"/lib/libdnnl.so* >/dev/null || fail "oneDNN was not carried"
size=$(du -sb "$prepared" | cut -f1)
[ "$size" -le $((64 * 1024 * 1024)) ] || fail "the prepared folder is $size bytes, over 64 MiB"

grep -q 'host_cpu=x86-64-v3' "$prepared/PREPARED" || fail "PREPARED: $(cat "$prepared/PREPARED")"

# The dry run passes and writes the plan to the results folder: the stages
# in their order (first contact first, torch.compile last), every step with
# its limit, the first-contact window with graphs off and blocking launches.
plan=$tmp/plan
rm -rf "$plan"
bash "$src/scripts/gpu-check.sh" --carry="$prepared" --dry-run --out="$plan" >"$tmp/dry.out" ||
  fail "the dry run failed on a complete folder: $(cat "$tmp/dry.out")"
[ -f "$plan/results.md" ] || fail "the dry run left no results.md in $plan"
[ -f "$plan/logs.tar.gz" ] ||
  fail "the dry run left no logs.tar.gz in $plan"
order=$(sed -n 's/^- stage \([a-z-]*\) (budget [0-9]* s).*/\1/p' "$plan/results.md" | paste -sd ' ' -)
[ "$order" = "first-contact sanitizer numerics speed memory torch-compile" ] ||
  fail "the plan's stages: '$order'"
steps=$(grep -c '^  - [a-z-]*/[a-z0-9-]* (<= [0-9]* s): ' "$plan/results.md")
[ "$steps" -ge 36 ] || fail "the plan lists $steps steps with limits: $(cat "$plan/results.md")"
# Adam's rows run in lockstep with the CPU twin, in one process.
grep -q '^  - numerics/lenet-adam-lockstep (<= [0-9]* s): .*gpu-check-train.py .*artifacts/lenet-adam-cuda.cleave data/fashion.npz --device=cuda --twin=artifacts/lenet-adam-cpu.cleave .*--windows=20' \
  "$plan/results.md" || fail "the plan's LeNet Adam row: $(grep lenet-adam "$plan/results.md")"
# And with the batches in pinned and device memory.
for memory in pinned device; do
  grep -q "^  - numerics/lenet-adam-lockstep-$memory (<= [0-9]* s): .*gpu-check-train.py .*artifacts/lenet-adam-cuda.cleave .*--windows=4 .*--memory=$memory" \
    "$plan/results.md" || fail "the plan's LeNet row with $memory batches: $(grep "lockstep-$memory" "$plan/results.md")"
done
grep -q '^  - first-contact/mlp-sgd-cuda (<= [0-9]* s): .*CLEAVE_CUDA_GRAPHS=0 CUDA_LAUNCH_BLOCKING=1 .*cleave-train artifacts/mlp-sgd-cuda.cleave .*--limit-train=128' \
  "$plan/results.md" || fail "the plan's first MLP window: $(grep mlp-sgd-cuda "$plan/results.md")"
grep -q '^  - bf16/attention-sgd-bf16-lockstep (<= [0-9]* s): .*gpu-check-train.py .*artifacts/attention-sgd-bf16-cuda.cleave data/tokens.npz --device=cuda --twin=artifacts/attention-sgd-cpu.cleave .*--windows=4 --tolerance=0.1' \
  "$plan/results.md" || fail "the plan's fused attention row: $(grep attention "$plan/results.md")"
grep -q '^  - sanitizer/lenet-memcheck (<= [0-9]* s): .*compute-sanitizer --tool memcheck' "$plan/results.md" ||
  fail "the plan has no memcheck of LeNet"

# GPT-2 small runs only when named, and only from a folder prepared with
# --gpt2: the plan says so rather than failing on the device.
rm -rf "$tmp/plan-gpt2"
bash "$src/scripts/gpu-check.sh" --carry="$prepared" --dry-run --stages=gpt2 \
  --out="$tmp/plan-gpt2" >"$tmp/dry-gpt2.out" ||
  fail "the gpt2 dry run failed: $(cat "$tmp/dry-gpt2.out")"
grep -q 'gpt2: .* was prepared without --gpt2: the stage will FAIL' "$tmp/plan-gpt2/results.md" ||
  fail "the gpt2 plan: $(cat "$tmp/plan-gpt2/results.md")"

# An artifact whose host code is for this machine's CPU (what
# gpu-check-prepare.sh compiled before it passed --target-cpu=x86-64-v3)
# fails the dry run, which names it.
cp -r "$prepared" "$tmp/host-carry"
"$build/bin/cleave-compile" "$src/examples/mlp.mlir" --loss=cross-entropy --optimizer=sgd \
  --micro-batch=32 --accumulate=4 --target-cpu=host \
  -o "$tmp/host-carry/artifacts/mlp-sgd-cpu.cleave" || fail "cleave-compile --target-cpu=host"
(cd "$tmp/host-carry" && find . -type f ! -name MANIFEST.sha256 | sort | xargs sha256sum >MANIFEST.sha256)
bash "$src/scripts/gpu-check.sh" --carry="$tmp/host-carry" --dry-run >/dev/null 2>"$tmp/host.err" &&
  fail "the dry run passed an artifact compiled for the host CPU"
grep -q "artifacts/mlp-sgd-cpu.cleave: host code for CPU '[^']*'.*, not portable" "$tmp/host.err" ||
  fail "the dry run's refusal of host code: $(cat "$tmp/host.err")"
grep -q "artifacts/mlp-adam-cpu.cleave" "$tmp/host.err" &&
  fail "the dry run refused a portable artifact too: $(cat "$tmp/host.err")"
rm -rf "$tmp/host-carry"

# The step runner: a step that hangs is cut at its limit (1 s here) and is a
# TIMEOUT row, printed and in the results file at once, its log in the
# folder and the archive; the next step still runs; a step whose stage's
# budget is spent does not start and is a TIMEOUT row too.
steps=$tmp/steps
rm -rf "$steps"
(
  # shellcheck source=scripts/gpu-check.sh
  source "$src/scripts/gpu-check.sh"
  open_results "$steps" "fake steps"
  stage fake 60 "a stage of fake steps"
  step hang 1 sleep 600 || settle fake "a step that hangs"
  grep -q '^| fake | a step that hangs | cut at its 1 s limit (logs/fake/hang.log) | TIMEOUT |$' \
    "$results" || { echo "no TIMEOUT row in the results at once: $(cat "$results")"; exit 1; }
  tar -tzf "$steps/logs.tar.gz" | grep -qx logs/fake/hang.log ||
    { echo "the archive lacks the hung step's log"; exit 1; }
  step next 30 echo 'done' && settle fake "the next step" &&
    emit fake "the next step" "$(last_line "$step_log")" PASS
  stage spent 0 "a stage whose budget is spent"
  step late 30 echo never || settle spent "a step after the budget"
  [ "$failed" = 1 ] || { echo "a TIMEOUT row did not fail the check"; exit 1; }
) >"$tmp/steps.out" || fail "the step runner: $(cat "$tmp/steps.out")"
grep -q '| TIMEOUT |$' "$tmp/steps.out" || fail "the TIMEOUT row was not printed: $(cat "$tmp/steps.out")"
grep -q '^| fake | the next step | done | PASS |$' "$steps/results.md" ||
  fail "the step after the hung one: $(cat "$steps/results.md")"
grep -q '^| spent | a step after the budget | not started: .* | TIMEOUT |$' "$steps/results.md" ||
  fail "a step after its stage's budget: $(cat "$steps/results.md")"
grep -q 'cut at its 1 s limit' "$steps/logs/fake/hang.log" || fail "the hung step's log: $(cat "$steps/logs/fake/hang.log")"
! grep -qx never "$steps/logs/spent/late.log" || fail "a step ran after its stage's budget was spent"
rm -rf "$steps" "$plan"

# The transformer rows' driver, on the CPU with the carried runtime: 20
# windows move the parameters, the same run twice gives the same bits (what
# lets GPU against CPU mean anything), and SGD and Adam differ.
runtime=$(ls "$prepared"/lib/libcleave_runtime.so.[0-9]* | sort | tail -1)
for run in sgd-1 sgd-2 adam-1; do
  LD_LIBRARY_PATH="$prepared/lib" OMP_NUM_THREADS=1 /usr/bin/python3 \
    "$src/scripts/gpu-check-train.py" "$runtime" \
    "$prepared/artifacts/transformer-${run%-*}-cpu.cleave" "$prepared/data/tokens.npz" \
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
# The Adam rows' lockstep (--twin), here with the CPU artifact as its own
# twin: each window from the twin's state gives the same update, bit for
# bit, on the MLP (images) and the transformer (token ids); a session whose
# update differs (eps 1e-7 for 1e-8) fails the row.
lockstep() { # MODEL DATA [ARGS...]
  local model=$1 data=$2
  shift 2
  LD_LIBRARY_PATH="$prepared/lib" OMP_NUM_THREADS=1 /usr/bin/python3 \
    "$src/scripts/gpu-check-train.py" "$runtime" "$prepared/artifacts/$model-adam-cpu.cleave" \
    "$prepared/data/$data.npz" --device=cpu --twin="$prepared/artifacts/$model-adam-cpu.cleave" \
    --windows=3 "$@" | tail -1
}
verdict=$(lockstep mlp fashion)
[[ $verdict == "1 each window from the CPU's state: the update differs by at most 0.00e+00 of the update "* ]] ||
  fail "the MLP's lockstep against itself: $verdict"
verdict=$(lockstep transformer tokens)
[[ $verdict == "1 "*"at most 0.00e+00 of the update "* ]] ||
  fail "the transformer's lockstep against itself: $verdict"
verdict=$(lockstep mlp fashion --hyper eps=1e-7)
[[ $verdict == "0 each window from the CPU's state: the update differs by at most "[1-9]*"e-02 of the update "* ]] ||
  fail "the lockstep of an MLP with another eps: $verdict"
# A twin of another model is refused.
LD_LIBRARY_PATH="$prepared/lib" /usr/bin/python3 "$src/scripts/gpu-check-train.py" "$runtime" \
  "$prepared/artifacts/mlp-adam-cpu.cleave" "$prepared/data/fashion.npz" --windows=1 \
  --twin="$prepared/artifacts/lenet-adam-cpu.cleave" 2>"$tmp/twin.err" &&
  fail "gpu-check-train.py took LeNet as the MLP's twin"
grep -q "lenet-adam-cpu.cleave is not .*mlp-adam-cpu.cleave's twin" "$tmp/twin.err" ||
  fail "gpu-check-train.py's refusal of a twin: $(cat "$tmp/twin.err")"

# --memory: the session under test reads its batches from page-locked host
# memory or from the GPU's (the fake driver's, with its hand-written cuda
# artifact and that artifact's CPU twin): every window's update is the
# CPU's, bit for bit, as with pageable host memory.
if [ -n "$fake_gpu" ]; then
  for f in fake-driver/libcuda.so.1 fake_sgd_cuda.cleave fake_sgd.cleave; do
    [ -f "$fake_gpu/$f" ] || fail "the fake GPU folder has no $f"
  done
  /usr/bin/python3 - "$tmp/tiny.npz" <<'PY' || fail "writing tiny.npz"
import sys
import numpy as np
rng = np.random.default_rng(0)
np.savez(sys.argv[1], x_train=rng.integers(0, 256, (96, 5), dtype=np.uint8),
         y_train=rng.integers(0, 3, 96, dtype=np.uint8))
PY
  for memory in host pinned device; do
    verdict=$(LD_LIBRARY_PATH="$fake_gpu/fake-driver:$prepared/lib" OMP_NUM_THREADS=1       /usr/bin/python3 "$src/scripts/gpu-check-train.py" "$runtime"       "$fake_gpu/fake_sgd_cuda.cleave" "$tmp/tiny.npz" --device=cuda --memory=$memory       --twin="$fake_gpu/fake_sgd.cleave" --windows=3 | tail -1)
    [[ $verdict == "1 "*"at most 0.00e+00 of the update "* ]] ||
      fail "the fake GPU's lockstep with --memory=$memory: $verdict"
  done
  LD_LIBRARY_PATH="$prepared/lib" /usr/bin/python3 "$src/scripts/gpu-check-train.py" "$runtime"     "$prepared/artifacts/mlp-adam-cpu.cleave" "$prepared/data/fashion.npz" --windows=1     --memory=device --save-params="$tmp/memory.params" 2>"$tmp/memory.err" &&
    fail "gpu-check-train.py took --memory=device on the CPU"
  grep -q "needs --device=cuda" "$tmp/memory.err" ||
    fail "gpu-check-train.py's refusal of --memory: $(cat "$tmp/memory.err")"
fi

# The driver refuses an artifact that is not a classifier (the regression
# example: f32 features, f32 targets).
"$build/bin/cleave-compile" "$src/examples/regression.mlir" --loss=mse --optimizer=sgd \
  --micro-batch=32 --accumulate=4 -o "$tmp/regression.cleave" 2>/dev/null ||
  fail "cleave-compile examples/regression.mlir"
LD_LIBRARY_PATH="$prepared/lib" /usr/bin/python3 "$src/scripts/gpu-check-train.py" "$runtime" \
  "$tmp/regression.cleave" "$prepared/data/fashion.npz" --windows=1 \
  --save-params="$tmp/regression.params" 2>"$tmp/regression.err" &&
  fail "gpu-check-train.py took the regression model"
grep -q "expected images f32 \[B, ...\] or token ids i64 \[B, T\], and class labels i64 \[B\]" "$tmp/regression.err" ||
  fail "gpu-check-train.py's refusal: $(cat "$tmp/regression.err")"

# A folder whose manifest is intact but that lacks what the check reads (an
# older gpu-check-prepare.sh's): refused, naming the file.
cp -r "$prepared" "$tmp/old-carry"
rm "$tmp/old-carry/data/tokens.npz"
(cd "$tmp/old-carry" && find . -type f ! -name MANIFEST.sha256 | sort | xargs sha256sum >MANIFEST.sha256)
bash "$src/scripts/gpu-check.sh" --carry="$tmp/old-carry" --dry-run 2>"$tmp/old.err" &&
  fail "the dry run passed without data/tokens.npz"
grep -q "data/tokens.npz is missing" "$tmp/old.err" || fail "the dry run's refusal: $(cat "$tmp/old.err")"
rm -rf "$tmp/old-carry"
# A real run refuses a folder without cuda artifacts.
bash "$src/scripts/gpu-check.sh" --carry="$prepared" --out="$tmp/real" 2>"$tmp/real.err" &&
  fail "gpu-check.sh ran without cuda artifacts"
grep -q "prepared with --cpu-only" "$tmp/real.err" || fail "the real run's refusal: $(cat "$tmp/real.err")"
rm -rf "$tmp/real"

printf 'x' >>"$prepared/artifacts/mlp-sgd-cpu.cleave"
bash "$src/scripts/gpu-check.sh" --carry="$prepared" --dry-run 2>/dev/null &&
  fail "the dry run passed with a changed artifact"
rm "$prepared/MANIFEST.sha256"
bash "$src/scripts/gpu-check.sh" --carry="$prepared" --dry-run 2>/dev/null &&
  fail "the dry run passed without its manifest"
rm -rf "$prepared"
echo PASS

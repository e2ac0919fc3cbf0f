#!/usr/bin/env bash
# Sets up a machine, builds Cleave and runs every test through ctest; then
# the same again under ASan+UBSan in a second build directory, and each fuzz
# target for a bounded time (scripts/sanitize.sh). Prints how long each stage
# took. CLEAVE_SANITIZE=0 skips the sanitizer stages (a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLEAVE_BUILD_DIR:-build}
jobs=${CLEAVE_JOBS:-$(nproc)}

stages=()
failed=""
summary() {
  echo "=== stage times"
  for line in "${stages[@]}"; do echo "  $line"; done
}
trap summary EXIT

# stage NAME COMMAND...: runs COMMAND, records its time; a failing stage
# fails the run when it ends (the test stages after a failing one still run,
# to report everything at once; a failing setup or build stops here).
stage() {
  local name=$1
  shift
  echo "=== stage: $name"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  local took=$((SECONDS - start))
  stages+=("$(printf '%-18s %4d s (%dm%02ds)%s' "$name" "$took" \
    $((took / 60)) $((took % 60)) "$([ $rc -eq 0 ] || echo ", FAILED")")")
  if [ $rc -ne 0 ]; then
    failed="$failed $name"
    case "$name" in
    *build | setup) exit $rc ;;
    esac
  fi
}

run_tests() {
  OMP_NUM_THREADS=1 CLEAVE_REQUIRE_TORCH=1 \
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
}

start=$SECONDS
stage setup bash scripts/setup.sh
stage build bash scripts/build.sh
# setup.sh installed torch and onnx: tests needing them fail, not skip.
stage tests run_tests
if [ "${CLEAVE_SANITIZE:-1}" != 0 ]; then
  stage "sanitizer build" bash scripts/sanitize.sh build
  stage "sanitizer tests" bash scripts/sanitize.sh test
  stage fuzz bash scripts/sanitize.sh fuzz
fi
total=$((SECONDS - start))
stages+=("$(printf '%-18s %4d s (%dm%02ds)' total "$total" $((total / 60)) \
  $((total % 60)))")
if [ -n "$failed" ]; then
  echo "FAILED stages:$failed"
  exit 1
fi

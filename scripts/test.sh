#!/usr/bin/env bash
# Sets up a machine, builds Cleave and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
build=${CLEAVE_BUILD_DIR:-build}
export OMP_NUM_THREADS=1
# setup.sh installed torch and onnx: tests needing them fail, not skip.
export CLEAVE_REQUIRE_TORCH=1
ctest --test-dir "$build" --output-on-failure -j "${CLEAVE_JOBS:-$(nproc)}"

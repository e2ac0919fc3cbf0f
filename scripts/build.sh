#!/usr/bin/env bash
# Configures (once) and builds Cleave with Ninja into ${CLEAVE_BUILD_DIR:-build}:
# everything, or only the targets named as arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLEAVE_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_INSTALL_PREFIX="$PWD/$build/install"
fi
ninja -C "$build" -j "${CLEAVE_JOBS:-$(nproc)}" "$@"

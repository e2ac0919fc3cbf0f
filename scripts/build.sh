#!/usr/bin/env bash
# Configures (once) and builds Cleave with Ninja into ${CLEAVE_BUILD_DIR:-build}:
# everything, or only the targets named as arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLEAVE_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  # Rebuilds of other checkouts (worktrees, CI reruns) reuse objects
  # (CCACHE_BASEDIR below).
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  cmake -G Ninja -S . -B "$build" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_INSTALL_PREFIX="$PWD/$build/install"
fi
# ccache keys on paths relative to the checkout, so that another clone of
# the repository (CI's fresh clone, a worktree) reuses this one's objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
ninja -C "$build" -j "${CLEAVE_JOBS:-$(nproc)}" "$@"

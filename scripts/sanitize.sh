#!/usr/bin/env bash
# The sanitizer build: Cleave compiled by clang-14 with ASan, UBSan and
# libFuzzer's coverage into ${CLEAVE_SANITIZE_BUILD_DIR:-build-asan}, its
# tests, and its fuzz targets (docs/design/fuzzing-and-sanitizers.md).
#
#   sanitize.sh build [targets...]   configure (once) and build
#   sanitize.sh test [ctest args...] every test but the fuzzing runs and the
#                                    excluded labels below
#   sanitize.sh fuzz [ctest args...] each fuzz target for CLEAVE_FUZZ_TIME
#                                    seconds (30), two at a time
#
# Any sanitizer report aborts the process that made it, so the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLEAVE_SANITIZE_BUILD_DIR:-build-asan}
jobs=${CLEAVE_JOBS:-$(nproc)}

# Reports abort (UBSan: -fno-sanitize-recover=all at compile time), with
# stacks. allow_user_poisoning=0: LLVM's headers poison and unpoison
# BumpPtrAllocator slabs when compiled with ASan, but Debian's libMLIR is not,
# so memory our inlined copies poisoned is then used by the library's copies
# (a false use-after-poison); real heap errors are still found. LSan: leaks
# inside third-party libraries only are suppressed; the file says why for
# each. The design doc says all of this in more detail.
sanitizer_env() {
  export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:allow_user_poisoning=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$PWD/test/sanitizers/lsan.supp:print_suppressions=0"
  export OMP_NUM_THREADS=1
  export CLEAVE_REQUIRE_TORCH=1
}

command=${1:-}
shift || true
case "$command" in
build)
  # The benchmarks and the tracing frontend are left out: the design doc
  # says why.
  if [ ! -f "$build/build.ninja" ]; then
    launcher=()
    if command -v ccache >/dev/null; then
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
    # -O1: what the sanitizers' documentation recommends, and it compiles
    # faster than -O3; line tables name the source lines in reports.
    cmake -G Ninja -S . -B "$build" "${launcher[@]}" \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
      -DCLEAVE_SANITIZE=ON -DCLEAVE_ENABLE_FUZZERS=ON \
      -DCLEAVE_ENABLE_BENCH=OFF -DCLEAVE_ENABLE_TRACE=OFF \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
  fi
  # The build runs the sanitized cleave-compile to make the tests'
  # artifacts, so it needs the same options as the tests.
  sanitizer_env
  # As scripts/build.sh: ccache keys on paths relative to the checkout.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  ninja -C "$build" -j "$jobs" "$@"
  ;;
test)
  sanitizer_env
  # Excluded (the design doc says why): the fuzzing runs (stage `fuzz`),
  # "slow" (the 3-epoch accuracy run), "torch" (PyTorch oracles) and
  # "conformance" (the ONNX node tests: hundreds of compilations).
  rc=0
  ctest --test-dir "$build" --output-on-failure -j "$jobs" \
    -LE '^(fuzz|slow|torch|mpi|conformance)$' "$@" || rc=$?
  # Under mpirun, without LeakSanitizer: OpenMPI's components are dlopened
  # and built without frame pointers, so their leaks at MPI_Finalize come
  # with one-frame stacks in "<unknown module>" that no suppression can
  # attribute. ASan's memory errors and UBSan stay on.
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs" -L '^mpi$' "$@" ||
    rc=$?
  exit $rc
  ;;
fuzz)
  sanitizer_env
  rc=0
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -L '^fuzz$' "$@" ||
    rc=$?
  # What each target did, from libFuzzer's final statistics.
  awk '/ Testing: fuzz\./ { name = $3 }
       /^stat::number_of_executed_units/ { runs[name] = $2 }
       /^stat::new_units_added/ { added[name] = $2 }
       /^stat::average_exec_per_sec/ { rate[name] = $2 }
       END { for (n in runs) printf "fuzz: %-28s %9d executions (%d/s), %d new inputs\n", n, runs[n], rate[n], added[n] }' \
    "$build/Testing/Temporary/LastTest.log" | sort
  exit $rc
  ;;
*)
  echo "usage: $0 build|test|fuzz [args...]" >&2
  exit 2
  ;;
esac

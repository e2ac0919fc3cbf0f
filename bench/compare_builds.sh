#!/usr/bin/env bash
# Two builds of Cleave on the same machine, alternating: for the MLP and
# LeNet at micro-batch 32 and N = 1 and 4 (SGD, and the MLP with Adam too),
# each build compiles its own
# artifact and runs it with its own runtime (cleave-bench, one thread),
# twice. Prints one line per run: model, optimizer, N, build, cleave-bench's
# JSON.
#
#   bash bench/compare_builds.sh OLD_BUILD NEW_BUILD [SECONDS]
#
# (OLD_BUILD: e.g. a worktree of the commit before a change, built with
# `bash scripts/build.sh cleave-compile cleave-bench`.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=$1 new=$2 seconds=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
for config in mlp:sgd mlp:adam lenet:sgd; do
  model=${config%:*} optimizer=${config#*:}
  for n in 1 4; do
    for build in "$old" "$new"; do
      tag=$(basename "$(dirname "$build")")-$(basename "$build")
      "$build/bin/cleave-compile" "$root/examples/$model.mlir" \
        --micro-batch=32 --accumulate="$n" --optimizer="$optimizer" \
        -o "$tmp/$model-$optimizer-$n-$tag.cleave"
    done
    for rep in 1 2; do
      for build in "$old" "$new"; do
        tag=$(basename "$(dirname "$build")")-$(basename "$build")
        echo "$model $optimizer N=$n $build: $("$build/bin/cleave-bench" \
          "$tmp/$model-$optimizer-$n-$tag.cleave" --seconds="$seconds" | tail -1)"
      done
    done
  done
done

#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, builds examples/embed against
# it as a standalone project (find_package(Cleave)), and trains an artifact
# with the result.
#
#   install_and_embed_test.sh <cmake> <generator> <build dir> <source dir> \
#                             <work dir> <artifact>
set -euo pipefail
cmake=$1 generator=$2 build=$3 source=$4 work=$5 artifact=$6

rm -rf "$work"
mkdir -p "$work"
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in include/cleave/runtime.h include/cleave/runtime.hpp \
         include/cleave/kernel_abi.h; do
  test -f "$work/prefix/$f" || { echo "missing from the install: $f"; exit 1; }
done
ls "$work/prefix"/lib*/libcleave_runtime.so \
   "$work/prefix"/lib*/cmake/Cleave/CleaveConfig.cmake > /dev/null

"$cmake" -G "$generator" -S "$source/examples/embed" -B "$work/embed" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
"$cmake" --build "$work/embed" > "$work/build.log"

# The program must use the installed library, not the build tree's. (ldd's
# output is captured first: with pipefail, `ldd | grep -q` fails whenever grep
# exits before ldd has written everything.)
libs=$(ldd "$work/embed/cleave-embed")
if ! grep -q "$work/prefix/.*libcleave_runtime.so" <<< "$libs"; then
  echo "cleave-embed does not link the installed libcleave_runtime:"
  echo "$libs"
  exit 1
fi
"$work/embed/cleave-embed" "$artifact" 3 > "$work/run.log"
cat "$work/run.log"
grep -q "optimizer steps: 2" "$work/run.log"

# The whole user path from the install tree alone: its cleave-compile builds
# a real model, which the embedding program trains (a full window of 3, then
# a short micro-batch and a flush: 2 optimizer steps, finite losses).
if [ -x "$work/prefix/bin/cleave-compile" ]; then
  "$work/prefix/bin/cleave-compile" "$source/examples/mlp.mlir" \
    --micro-batch=8 --accumulate=3 -o "$work/mlp.cleave"
  "$work/embed/cleave-embed" "$work/mlp.cleave" 10 > "$work/mlp.log"
  cat "$work/mlp.log"
  grep -q "optimizer steps: 2" "$work/mlp.log"
  if grep -Eq "loss (nan|-?inf)" "$work/mlp.log"; then
    echo "a non-finite loss"
    exit 1
  fi
  test "$(grep -c "micro-step .*: loss" "$work/mlp.log")" = 4
fi
echo "install and embed: OK"

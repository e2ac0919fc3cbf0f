#!/usr/bin/env bash
# The README's first command. On a fresh Debian 12 machine: installs what
# Cleave needs (scripts/setup.sh), builds it (scripts/build.sh), compiles
# examples/mlp.mlir for micro-batches of 32 accumulated 4 at a time (a window
# of 128 samples per optimizer step) and trains it on Fashion-MNIST, printing
# the test accuracy after each epoch.
#
# Optimizer: SGD with momentum 0.9 and lr 0.01, PyTorch's usual recipe for
# this model (inputs standardised by cleave-train, as torchvision's
# Normalize). Plain SGD at lr 0.01 moves less per 128-sample window.
#
# Threads: OMP_NUM_THREADS defaults to 1. oneDNN with 2 OpenMP threads on a
# shared 2-vCPU machine slows down ~50x as soon as the other vCPU is busy;
# one thread trains the MLP at 30-50k samples/s. On a dedicated machine, set
# OMP_NUM_THREADS to the number of cores.
#
# Environment: CLEAVE_BUILD_DIR (default build), CLEAVE_JOBS (build
# parallelism), EPOCHS (default 5), DATA (default the Debian package's
# directory).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# Only what the example needs; scripts/test.sh builds everything.
bash scripts/build.sh cleave-compile cleave-train

build=${CLEAVE_BUILD_DIR:-build}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
epochs=${EPOCHS:-5}
data=${DATA:-/usr/share/datasets/fashion-mnist}
out="$build/example"
mkdir -p "$out"

echo "train-example: compiling examples/mlp.mlir (micro-batch 32, accumulate 4, momentum)"
"$build/bin/cleave-compile" examples/mlp.mlir \
  --loss=cross-entropy --optimizer=momentum --lr=0.01 --momentum=0.9 \
  --micro-batch=32 --accumulate=4 -o "$out/mlp.cleave"

echo "train-example: training on $data (OMP_NUM_THREADS=$OMP_NUM_THREADS)"
"$build/bin/cleave-train" "$out/mlp.cleave" --data="$data" \
  --epochs="$epochs" --seed=0 --metrics="$out/metrics.jsonl"
echo "train-example: metrics in $out/metrics.jsonl"

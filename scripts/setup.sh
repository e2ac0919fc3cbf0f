#!/usr/bin/env bash
# Installs every Debian package Cleave needs to build, test and train.
# Idempotent: does nothing (not even apt-get update) when all are present.
set -euo pipefail

packages=(
  # Build (ccache: rebuilds and other clones reuse objects)
  cmake ninja-build g++ pkg-config ccache
  # LLVM/MLIR 22 (libmlir-22-dev needs the tools for its CMake exports)
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Runtime libraries (dnnl-config.cmake looks for OpenCL, its GPU runtime)
  libdnnl-dev ocl-icd-opencl-dev opencl-headers libopenmpi-dev openmpi-bin
  nlohmann-json3-dev zlib1g-dev
  # Frontends: the ONNX protobuf library
  libonnx-dev libprotobuf-dev protobuf-compiler
  # Tests and benchmarks: GoogleTest, PyTorch and ONNX as oracles, OpenBLAS
  # so PyTorch's GEMMs run on a real BLAS
  libgtest-dev python3-torch python3-onnx libopenblas0-pthread
  # The ONNX project's backend node tests (test/onnx-node)
  libonnx-testdata
  # The sanitizer build and the fuzz targets (scripts/sanitize.sh): Clang
  # with its ASan, UBSan and libFuzzer runtimes
  clang-14 libclang-rt-14-dev
  # torchvision's classifiers: ONNX import tests (mobilenet, squeezenet) and
  # bench/compile_time.py (resnet18, efficientnet_b0)
  python3-torchvision
  # The dataset the main job trains on
  dataset-fashion-mnist
  # cleave-plot and cleave-train --plot draw metrics with matplotlib
  python3-matplotlib
  # The Python package (python/, docs/user/python.md): pybind11, the venv it
  # is installed into with pip and setuptools, pytest for its tests
  pybind11-dev python3-dev python3-venv python3-setuptools python3-wheel
  python3-pytest
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

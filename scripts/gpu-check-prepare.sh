#!/usr/bin/env bash
# Prepares what scripts/gpu-check.sh needs on a GPU machine that compiles
# nothing and installs nothing: the artifacts (for the GPU and the CPU), the
# tools that run them (cleave-train, cleave-bench), libcleave_runtime and the
# shared libraries they need that such a machine may lack (oneDNN, OpenMPI,
# ...), a slice of Fashion-MNIST and a token dataset for the transformer test
# model, all in one folder that travels with the work tree (the device tool's
# `carry`), at most 64 MiB. Needs /usr/bin/python3 with torch and onnx (the
# transformer is exported by torch.onnx here; the GPU machine compiles
# nothing).
#
#   bash scripts/gpu-check-prepare.sh [--build=DIR] [--out=DIR] [--gpu-arch=sm_90]
#                                     [--cpu-only] [--gpt2]
#
# --build   the build tree with cleave-compile, cleave-train, cleave-bench and
#           libcleave_runtime (default: build; scripts/build.sh makes it)
# --out     the folder to fill (default: .gpu-check, added to
#           .git/info/exclude so that it travels only when carried)
# --cpu-only  skip the cuda artifacts (for testing this script where
#           cleave-compile has no --target=cuda); gpu-check.sh then refuses
#           to run, but --dry-run checks the rest
# --gpt2    also GPT-2 small for gpu-check.sh --stages=gpt2 (7 MiB more:
#           the folder is then close to the 64 MiB the device tool carries)
#
# The artifacts' host code is compiled for x86-64-v3, whatever this
# machine's CPU (gpu-check.sh --dry-run refuses anything less portable).
#
# Then, on the GPU machine (device tool: carry [".gpu-check"]):
#   bash scripts/gpu-check.sh --carry=.gpu-check --out=$OUT/gpu-check
set -euo pipefail
cd "$(dirname "$0")/.."

build=build out=.gpu-check arch=sm_90 cuda=1 gpt2=0
for a in "$@"; do
  case $a in
  --build=*) build=${a#*=} ;;
  --out=*) out=${a#*=} ;;
  --gpu-arch=*) arch=${a#*=} ;;
  --cpu-only) cuda=0 ;;
  --gpt2) gpt2=1 ;;
  *) echo "gpu-check-prepare: unknown argument $a" >&2; exit 2 ;;
  esac
done
limit=$((64 * 1024 * 1024))

for tool in cleave-compile cleave-train cleave-bench; do
  [ -x "$build/bin/$tool" ] || {
    echo "gpu-check-prepare: $build/bin/$tool is missing (bash scripts/build.sh $tool)" >&2
    exit 1
  }
done
runtime=$(ls "$build"/lib/libcleave_runtime.so.[0-9]* 2>/dev/null | sort | tail -1)
[ -n "$runtime" ] || { echo "gpu-check-prepare: no libcleave_runtime.so in $build/lib" >&2; exit 1; }

/usr/bin/python3 -c 'import numpy, onnx, torch' 2>/dev/null || {
  echo "gpu-check-prepare: /usr/bin/python3 needs numpy, onnx and torch (scripts/setup.sh installs them): it exports the transformer test model" >&2
  exit 1
}

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/artifacts" "$out/data"
if [ "$out" = .gpu-check ] && ! grep -qx '/.gpu-check/' .git/info/exclude 2>/dev/null; then
  # A worktree's .git is a file; its exclude file is the main repository's.
  exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.gpu-check/' "$exclude" 2>/dev/null || echo '/.gpu-check/' >>"$exclude"
fi

# Tools and the runtime. The binaries find libcleave_runtime through their
# RUNPATH in the build tree; on the GPU machine gpu-check.sh sets
# LD_LIBRARY_PATH to $out/lib instead.
cp "$build/bin/cleave-train" "$build/bin/cleave-bench" "$out/bin/"
for f in "$build"/lib/libcleave_runtime.so*; do cp -P "$f" "$out/lib/"; done

# Their shared libraries, except the C library's own and the compiler
# runtime (libstdc++, libgcc_s, libgomp): every machine has those, and the
# GPU machine's are newer, hence compatible. Nothing of CUDA: the runtime
# dlopens the driver, cuBLASLt and cuDNN, which the GPU machine has.
skip='^(libc|libm|libdl|libpthread|librt|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s|libgomp|linux-vdso)\.so'
for binary in "$out/bin/cleave-train" "$out/bin/cleave-bench" "$runtime"; do
  LD_LIBRARY_PATH="$build/lib" ldd "$binary" | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  [[ $name == libcleave_runtime* ]] && continue
  cp -L "$path" "$out/lib/$name"
done

# The transformer test model: make_model.py's torch_block17 (the model of
# test/Frontend/Onnx/torch-transformer-cuda.mlir and bench/bf16.py), exported
# by torch.onnx. gpu-check.sh times PyTorch on bench/pytorch_ref.py's
# `transformer`, a second definition of the same Block: the two must have the
# same parameters, name for name and shape for shape, and compute the same
# logits from the same weights (dropout off), or the speed row would compare
# different models.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
transformer=$tmp/transformer.onnx
/usr/bin/python3 test/Frontend/Onnx/Inputs/make_model.py torch_block17 "$transformer"
/usr/bin/python3 - "$transformer" <<'PY'
import sys
import onnx
sys.path.insert(0, "bench")
import pytorch_ref
exported = {i.name: tuple(i.dims) for i in onnx.load(sys.argv[1]).graph.initializer}
twin = {n: tuple(p.shape) for n, p in pytorch_ref.model("transformer").named_parameters()}
if exported != twin:
    sys.exit("gpu-check-prepare: bench/pytorch_ref.py's transformer is not make_model.py's "
             f"torch_block17:\n  ONNX initializers {sorted(exported.items())}\n"
             f"  pytorch_ref.py    {sorted(twin.items())}")
sys.path.insert(0, "test/Frontend/Onnx/Inputs")
import make_model
torch, _, _, Block = make_model.torch_modules()
reference, copy = Block().eval(), pytorch_ref.model("transformer").eval()
copy.load_state_dict(reference.state_dict())
ids = torch.randint(0, pytorch_ref.VOCAB, (16, pytorch_ref.TOKENS))
with torch.no_grad():
    diff = (reference(ids) - copy(ids)).abs().max().item()
if diff > 1e-6:
    sys.exit("gpu-check-prepare: bench/pytorch_ref.py's transformer computes other logits "
             f"than make_model.py's torch_block17 from the same weights (max |diff| {diff:.3g})")
PY

# Artifacts: for each model and optimizer the same options for the CPU and
# the GPU (numerics: K = 20 windows of N = 4 micro-batches of 32), and the
# speed configurations (MLP at micro-batch 256, LeNet at 32, the transformer
# at 64; N = 4, SGD). Every one's host code is for x86-64-v3 (AVX2, FMA),
# not for this machine's CPU: the manifest records the target CPU and its
# features, and the runtime refuses an artifact on a CPU that lacks one, so
# host code for this machine (AVX-512, AMX, ...) could be refused on the GPU
# machine before the check touched its GPU. gpu-check.sh --dry-run checks it.
host_cpu=x86-64-v3
# The transformer's dropout warns once per compile and function; say each
# distinct warning once.
compile() { # name source extra-args...
  local name=$1 source=$2
  shift 2
  "$build/bin/cleave-compile" "$source" --loss=cross-entropy --target-cpu=$host_cpu "$@" \
    -o "$out/artifacts/$name.cleave" 2>>"$tmp/compile.err" || {
    echo "gpu-check-prepare: cleave-compile $source $* failed:" >&2
    cat "$tmp/compile.err" >&2
    exit 1
  }
}
for model in mlp lenet transformer; do
  source=examples/$model.mlir
  [ "$model" = transformer ] && source=$transformer
  for opt in sgd adam; do
    compile "$model-$opt-cpu" "$source" --optimizer=$opt --micro-batch=32 --accumulate=4
    if [ $cuda = 1 ]; then
      compile "$model-$opt-cuda" "$source" --optimizer=$opt --micro-batch=32 \
        --accumulate=4 --target=cuda --gpu-arch="$arch"
    fi
  done
done
# Attention as cuDNN's fused kernels run it on cuda in bf16 (the bf16
# stage's attention row): its twin, f32 on the CPU, spells attention out.
compile attention-sgd-cpu scripts/gpu-check-attention.mlir --optimizer=sgd \
  --micro-batch=32 --accumulate=4
if [ $cuda = 1 ]; then
  compile mlp-speed-cuda examples/mlp.mlir --optimizer=sgd --micro-batch=256 \
    --accumulate=4 --target=cuda --gpu-arch="$arch"
  compile lenet-speed-cuda examples/lenet.mlir --optimizer=sgd --micro-batch=32 \
    --accumulate=4 --target=cuda --gpu-arch="$arch"
  compile transformer-speed-cuda "$transformer" --optimizer=sgd --micro-batch=64 \
    --accumulate=4 --target=cuda --gpu-arch="$arch"
  # bf16 (the matmuls on tensor cores): the numerics builds, each the twin
  # of its f32 CPU build, and the speed builds, with the MLP also at
  # micro-batch 4096 in f32 and bf16, where its GEMMs are large enough for
  # tensor cores to matter.
  for model in mlp lenet transformer; do
    source=examples/$model.mlir
    [ "$model" = transformer ] && source=$transformer
    compile "$model-sgd-bf16-cuda" "$source" --optimizer=sgd --micro-batch=32 \
      --accumulate=4 --target=cuda --gpu-arch="$arch" --precision=bf16
  done
  compile attention-sgd-bf16-cuda scripts/gpu-check-attention.mlir --optimizer=sgd \
    --micro-batch=32 --accumulate=4 --target=cuda --gpu-arch="$arch" --precision=bf16
  compile mlp-speed-bf16-cuda examples/mlp.mlir --optimizer=sgd --micro-batch=256 \
    --accumulate=4 --target=cuda --gpu-arch="$arch" --precision=bf16
  compile transformer-speed-bf16-cuda "$transformer" --optimizer=sgd --micro-batch=64 \
    --accumulate=4 --target=cuda --gpu-arch="$arch" --precision=bf16
  compile mlp4096-speed-cuda examples/mlp.mlir --optimizer=sgd --micro-batch=4096 \
    --accumulate=4 --target=cuda --gpu-arch="$arch"
  compile mlp4096-speed-bf16-cuda examples/mlp.mlir --optimizer=sgd --micro-batch=4096 \
    --accumulate=4 --target=cuda --gpu-arch="$arch" --precision=bf16
fi
if [ $cuda = 1 ] && [ $gpt2 = 1 ]; then
  # GPT-2 small for gpu-check.sh --stages=gpt2 (bench/gpt2.py): bf16,
  # micro-batch 8, N = 8, its parameters drawn at load (--init-normal-std),
  # so the artifact is 7 MiB (mostly its 4 MiB causal mask and its host
  # code), not the 500 MB of its initial values.
  /usr/bin/python3 bench/gpt2.py --config=small --device=cuda --precision=bf16 \
    --micro-batch=8 --accumulate=8 --gpu-arch="$arch" --build="$build" \
    --prepare="$out/artifacts" >/dev/null 2>>"$tmp/compile.err" || {
    echo "gpu-check-prepare: bench/gpt2.py --prepare failed:" >&2
    cat "$tmp/compile.err" >&2
    exit 1
  }
fi
[ -s "$tmp/compile.err" ] && sort -u "$tmp/compile.err" | sed 's/^/gpu-check-prepare: cleave-compile: /' >&2

# 20 windows x 4 micro-batches x 32 samples = 2560 training samples, and 256
# test samples, as one .npz (cleave-train reads x_train/y_train/x_test/y_test).
/usr/bin/python3 - "$out/data/fashion.npz" <<'PY'
import gzip, sys
import numpy as np
src = "/usr/share/datasets/fashion-mnist"
def idx(name, count, header, shape):
    with gzip.open(f"{src}/{name}", "rb") as f:
        f.read(header)
        return np.frombuffer(f.read(count * int(np.prod(shape))),
                             np.uint8).reshape((count,) + shape)
np.savez(sys.argv[1],
         x_train=idx("train-images-idx3-ubyte.gz", 2560, 16, (28, 28)),
         y_train=idx("train-labels-idx1-ubyte.gz", 2560, 8, ()).astype(np.int64),
         x_test=idx("t10k-images-idx3-ubyte.gz", 256, 16, (28, 28)),
         y_test=idx("t10k-labels-idx1-ubyte.gz", 256, 8, ()).astype(np.int64))
PY

# The transformer's data, the same 2560 + 256 samples: sequences of 8 token
# ids below 50 (int64 [N, 8]) and class labels below 5 (int64 [N]), drawn
# from a fixed seed, each label a function of its sequence (the commonest
# id's residue mod 5) so that there is something to learn.
/usr/bin/python3 - "$out/data/tokens.npz" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(9)
def split(n):
    x = rng.integers(0, 50, size=(n, 8), dtype=np.int64)
    y = np.array([np.bincount(row, minlength=50).argmax() % 5 for row in x], np.int64)
    return x, y
x_train, y_train = split(2560)
x_test, y_test = split(256)
np.savez(sys.argv[1], x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
PY

# What gpu-check.sh --dry-run verifies: every file and its checksum.
(cd "$out" && find . -type f ! -name MANIFEST.sha256 | sort | xargs sha256sum) >"$out/MANIFEST.sha256"
echo "cuda_artifacts=$cuda gpu_arch=$arch host_cpu=$host_cpu prepared=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo ?)" >"$out/PREPARED"

size=$(du -sb "$out" | cut -f1)
echo "gpu-check-prepare: $out holds $(find "$out" -type f | wc -l) files, $((size / 1024 / 1024)) MiB"
if [ "$size" -gt "$limit" ]; then
  echo "gpu-check-prepare: more than the 64 MiB the device tool carries:" >&2
  du -ab "$out" | sort -n | tail -8 >&2
  exit 1
fi

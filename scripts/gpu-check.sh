#!/usr/bin/env bash
# The GPU check of issue 9, for a machine with one NVIDIA GPU, a CUDA 13
# driver and PyTorch with CUDA, but no compiler use, package installs or
# network: everything comes from the folder scripts/gpu-check-prepare.sh
# filled (the device tool's `carry`). Prints one table:
#
#   numerics  MLP, LeNet and the transformer test model (make_model.py's
#             torch_block17), SGD and Adam: K = 20 windows (micro-batch 32,
#             N = 4) on the GPU and on the CPU, same seed and data (cleave-
#             train; the transformer's token classification through
#             scripts/gpu-check-train.py); the final parameters agree to 1e-4
#             (relative L2 over every parameter and buffer, --save-params)
#   speed     samples/s of Cleave on the GPU (cleave-bench) against PyTorch's
#             own accumulation loop on the same GPU in the same run
#             (bench/pytorch_ref.py: eager, and torch.compile where it works):
#             MLP at micro-batch 256 (target >= 1.0x eager), LeNet at 32
#             (1.0x), the transformer at 64 (1.3x), N = 4
#   memory    device memory in use with N = 32 and with N = 1 (MLP, micro-
#             batch 256): within 5 %
#
#   bash scripts/gpu-check.sh [--carry=.gpu-check] [--seconds=S] [--dry-run]
#
# --dry-run checks, on any machine, that the carried files are all there and
# intact, that the tools find their libraries, and what would run; it starts
# nothing on a GPU. Exit status: 0 when every check passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

carry=.gpu-check seconds=3 dry=0
for a in "$@"; do
  case $a in
  --carry=*) carry=${a#*=} ;;
  --seconds=*) seconds=${a#*=} ;;
  --dry-run) dry=1 ;;
  *) echo "gpu-check: unknown argument $a" >&2; exit 2 ;;
  esac
done
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

die() { echo "gpu-check: $*" >&2; exit 1; }

# --- the carried folder ---------------------------------------------------
[ -d "$carry" ] || die "$carry does not exist: run scripts/gpu-check-prepare.sh first, and carry it"
carry=$(cd "$carry" && pwd)
[ -f "$carry/MANIFEST.sha256" ] ||
  die "$carry/MANIFEST.sha256 is missing: run scripts/gpu-check-prepare.sh first, and carry $carry"
(cd "$carry" && sha256sum --quiet -c MANIFEST.sha256) ||
  die "files in $carry are missing or changed since gpu-check-prepare.sh"
grep -q 'cuda_artifacts=1' "$carry/PREPARED" ||
  { [ $dry = 1 ] && echo "gpu-check: note: $carry has no cuda artifacts (prepared with --cpu-only)"; } ||
  die "$carry was prepared with --cpu-only: no cuda artifacts"
# What the checks below read: a folder from an older gpu-check-prepare.sh
# passes its own manifest but may lack some of it.
models=(mlp lenet transformer)
needed=(data/fashion.npz data/tokens.npz)
wheres=(cpu)
grep -q 'cuda_artifacts=1' "$carry/PREPARED" && wheres+=(cuda)
for model in "${models[@]}"; do
  for opt in sgd adam; do
    for where in "${wheres[@]}"; do needed+=("artifacts/$model-$opt-$where.cleave"); done
  done
  [ ${#wheres[@]} = 2 ] && needed+=("artifacts/$model-speed-cuda.cleave")
done
for f in "${needed[@]}"; do
  [ -f "$carry/$f" ] || die "$carry/$f is missing: run scripts/gpu-check-prepare.sh again, and carry $carry"
done
cleave_env=(env "LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
train="$carry/bin/cleave-train" bench="$carry/bin/cleave-bench"
runtime=$(ls "$carry"/lib/libcleave_runtime.so.[0-9]* 2>/dev/null | sort | tail -1)
[ -n "$runtime" ] || die "$carry/lib has no libcleave_runtime.so"
for tool in "$train" "$bench"; do
  missing=$("${cleave_env[@]}" ldd "$tool" | grep 'not found' || true)
  [ -z "$missing" ] || die "$tool: libraries not found: $missing"
done

# cuBLASLt and cuDNN: the runtime dlopens libcublasLt.so.13 and
# libcudnn.so.9; on the GPU machine they come with the CUDA toolkit or with
# PyTorch's pip packages (nvidia-cublas, nvidia-cudnn-cu13).
cuda_libs() {
  local dirs=() d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && dirs+=("$d")
  done
  while read -r d; do [ -n "$d" ] && dirs+=("$d"); done < <("$python" - <<'PY' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
seen = set()
for r in roots:
    for lib in glob.glob(os.path.join(r, "nvidia", "**", "lib*.so*"), recursive=True):
        if "cublasLt" in lib or "cudnn" in lib:
            seen.add(os.path.dirname(lib))
print("\n".join(sorted(seen)))
PY
)
  local IFS=:
  echo "${dirs[*]}"
}

if [ $dry = 1 ]; then
  echo "gpu-check: dry run: $carry is complete ($(wc -l <"$carry/MANIFEST.sha256") files, $(du -sh "$carry" | cut -f1)); $(cat "$carry/PREPARED")"
  echo "gpu-check: cleave-train and cleave-bench find their libraries"
  glibc=$(objdump -T "$carry"/lib/*.so* "$train" "$bench" 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n -u | tail -1)
  echo "gpu-check: the carried binaries need ${glibc:-an unknown} or later"
  echo "gpu-check: cuBLASLt/cuDNN would be looked for in: $(cuda_libs)"
  echo "gpu-check: would run: cleave-train x 8 and gpu-check-train.py x 4 (numerics: ${models[*]}), cleave-bench x 5 and pytorch_ref.py x 8 (speed: ${models[*]}; memory)"
  exit 0
fi

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader ||
  echo "gpu-check: nvidia-smi is not available"
"$python" -c 'import torch; assert torch.cuda.is_available(), "no CUDA in torch"' ||
  die "$python has no PyTorch with CUDA"
extra=$(cuda_libs)
cleave_env=(env "LD_LIBRARY_PATH=$carry/lib${extra:+:$extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
device=$("$python" -c 'import torch; print(torch.cuda.get_device_name(0))')
rows=() failed=0
row() { rows+=("$(printf '| %s | %s | %s | %s |' "$@")"); }
judge() { # value-ok(0/1) -> PASS/FAIL
  if [ "$1" = 1 ]; then echo PASS; else failed=1; echo FAIL; fi
}

# --- numerics --------------------------------------------------------------
for model in "${models[@]}"; do
  data="$carry/data/fashion.npz"
  [ "$model" = transformer ] && data="$carry/data/tokens.npz"
  for opt in sgd adam; do
    for where in cpu cuda; do
      artifact="$carry/artifacts/$model-$opt-$where.cleave" log="$work/$model-$opt-$where.log"
      if [ "$model" = transformer ]; then
        # Token ids with one class label per sequence, through the
        # runtime's C API: gpu-check-train.py also saves the initial
        # parameters, for the row's "of the update".
        "${cleave_env[@]}" OMP_NUM_THREADS=4 "$python" scripts/gpu-check-train.py "$runtime" \
          "$artifact" "$data" --device=$where --seed=0 --windows=20 \
          --save-initial="$work/$model-$opt-$where.init" \
          --save-params="$work/$model-$opt-$where.params" >"$log" 2>&1
      else
        "${cleave_env[@]}" OMP_NUM_THREADS=4 "$train" "$artifact" \
          --data="$data" --device=$where --seed=0 --epochs=1 --quiet \
          --save-params="$work/$model-$opt-$where.params" >"$log" 2>&1
      fi || { echo "gpu-check: training $model-$opt on $where failed:"; cat "$log"; } >&2
    done
    verdict=$("$python" - "$work/$model-$opt-cuda.params" "$work/$model-$opt-cpu.params" \
      "$work/$model-$opt-cpu.init" <<'PY'
import os, sys
import numpy as np
try:
    gpu, cpu = (np.fromfile(p, np.float32) for p in sys.argv[1:3])
except OSError as e:
    print(f"0 missing ({e.filename})")
    sys.exit()
if gpu.shape != cpu.shape:
    print(f"0 sizes differ ({gpu.size} vs {cpu.size} floats)")
    sys.exit()
rel = np.linalg.norm(gpu - cpu) / max(np.linalg.norm(cpu), 1e-30)
note = ""
if os.path.exists(sys.argv[3]):
    # How much of the update itself differs (the parameters barely move
    # with a small learning rate).
    init = np.fromfile(sys.argv[3], np.float32)
    if init.shape == cpu.shape:
        step = np.linalg.norm(gpu - cpu) / max(np.linalg.norm(cpu - init), 1e-30)
        note = f", {step:.2e} of the update"
print(f"{int(rel <= 1e-4)} relative L2 {rel:.2e}{note}, max |diff| {np.max(np.abs(gpu - cpu)):.2e}")
PY
)
    row "numerics" "$model $opt, K=20 windows, B=32, N=4: GPU vs CPU parameters" "${verdict#* }" "$(judge "${verdict%% *}")"
  done
done

# --- speed and memory --------------------------------------------------------
json() { "$python" -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d.get('$1', 'n/a'))" 2>/dev/null || echo n/a; }
speed() { # model artifact micro-batch target-ratio
  local model=$1 artifact=$2 b=$3 target=$4 cleave eager compiled
  cleave=$("${cleave_env[@]}" "$bench" "$carry/artifacts/$artifact.cleave" --device=cuda \
    --accumulate=4 --seconds="$seconds" 2>"$work/bench.err" | json samples_per_second)
  [ "$cleave" = n/a ] && cat "$work/bench.err" >&2
  eager=$("$python" bench/pytorch_ref.py "$model" --device=cuda --micro-batch="$b" \
    --accumulate=4 --seconds="$seconds" 2>"$work/torch.err" | json samples_per_second)
  compiled=$("$python" bench/pytorch_ref.py "$model" --device=cuda --compile \
    --micro-batch="$b" --accumulate=4 --seconds="$seconds" 2>"$work/torch-compile.err" |
    json samples_per_second)
  local ratio ok
  read -r ratio ok < <("$python" -c "
c, e, t = '$cleave', '$eager', $target
try: r = float(c) / float(e); print(f'{r:.2f}x', int(r >= t))
except ValueError: print('n/a 0')")
  row "speed" "$model B=$b N=4 samples/s: Cleave / PyTorch eager / torch.compile" \
    "$cleave / $eager / $compiled (${ratio} eager; target >= ${target}x)" "$(judge "$ok")"
}
speed mlp mlp-speed-cuda 256 1.0
speed lenet lenet-speed-cuda 32 1.0
speed transformer transformer-speed-cuda 64 1.3

mem() {
  "${cleave_env[@]}" "$bench" "$carry/artifacts/mlp-speed-cuda.cleave" --device=cuda \
    --accumulate="$1" --seconds=1 2>>"$work/bench.err" | json device_used_mib
}
m1=$(mem 1) m32=$(mem 32)
t1=$("$python" bench/pytorch_ref.py mlp --device=cuda --micro-batch=256 --accumulate=1 --seconds=1 2>/dev/null | json device_peak_mib)
t32=$("$python" bench/pytorch_ref.py mlp --device=cuda --micro-batch=256 --accumulate=32 --seconds=1 2>/dev/null | json device_peak_mib)
read -r growth ok < <("$python" -c "
try: g = float('$m32') / float('$m1') - 1; print(f'{g * 100:+.1f}%', int(abs(g) <= 0.05))
except (ValueError, ZeroDivisionError): print('n/a 0')")
row "memory" "MLP B=256 device MiB in use, N=32 vs N=1 (PyTorch peak tensors)" \
  "$m32 vs $m1 ($growth; PyTorch $t32 vs $t1)" "$(judge "$ok")"

echo
echo "GPU check on $device, $(date -u +%F), $(cat "$carry/PREPARED")"
echo
echo "| check | what | measured | result |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $failed

#!/usr/bin/env bash
# The GPU check (issues 9 and 18): a first-contact instrument for a machine
# with one NVIDIA GPU, a CUDA 13 driver and PyTorch with CUDA, but no
# compiler use, package installs or network, lent for a short window (the
# device tool's 15 minutes, 10 a command). Everything it runs comes from the
# folder scripts/gpu-check-prepare.sh filled (the device tool's `carry`).
#
#   bash scripts/gpu-check.sh --out=DIR [--carry=.gpu-check] [--seconds=S]
#                             [--total=S]
#   bash scripts/gpu-check.sh --dry-run [--carry=.gpu-check] [--out=DIR]
#
# What a run can lose, it loses one step at a time: every step runs under
# `timeout` (its own limit, cut further by its stage's budget and by
# --total), a step cut at its limit is a TIMEOUT row and the check goes on,
# every row is printed as soon as it is known and appended to DIR/results.md
# at once, each step's log lies in DIR/logs/STAGE/STEP.log, and
# DIR/logs.tar.gz (results.md and the logs, without the saved parameters) is
# refreshed after every step. A run killed from outside still leaves every
# finished row and its logs in DIR. With the device tool, give a folder one
# level below $OUT (--out=$OUT/gpu-check): results.md and logs.tar.gz come
# back, the loose logs lie deeper than what it returns.
#
# The stages, in this order (the costly and least telling last):
#   first-contact  (<= 90 s) nvidia-smi, the driver, and the libraries
#             (libcuda, cuBLASLt, cuDNN, NCCL: the files the loader picks
#             from the runtime's search path and their versions, through
#             ctypes, and the files cleave-train actually loaded, from
#             LD_DEBUG=files); then ONE window (micro-batch 32, N = 4) of the
#             MLP and of LeNet on the GPU with CUDA graphs off
#             (CLEAVE_CUDA_GRAPHS=0) and CUDA_LAUNCH_BLOCKING=1, each
#             compared at once with its CPU twin (same seed and data)
#   sanitizer compute-sanitizer --tool memcheck on one window of the MLP and
#             of LeNet (graphs off); SKIPPED, with the tool's reason, where
#             the tool is absent or refuses the device; INFO (no verdict)
#             where it outlasts its limit
#   numerics  MLP, LeNet and the transformer test model (make_model.py's
#             torch_block17), SGD and Adam: K = 20 windows (micro-batch 32,
#             N = 4) on the GPU and on the CPU, same seed and data. SGD runs
#             free: the final parameters agree to 1e-4 (relative L2 over
#             every parameter and buffer, cleave-train --save-params; the
#             transformer's token classification through
#             scripts/gpu-check-train.py). Adam runs in lockstep
#             (gpu-check-train.py --twin): each window starts on the GPU
#             from the CPU's state, and its update agrees with the CPU's to
#             1e-3 of the update. Adam's 20-window trajectory is no test:
#             two correct CPU runs of the MLP that differ only in oneDNN's
#             ISA end 6.1e-3 apart (gpu-check-train.py says why). LeNet's
#             Adam lockstep again with the batches in pinned and in device
#             memory (gpu-check-train.py --memory), 4 windows each
#   speed     samples/s of Cleave on the GPU (cleave-bench) against PyTorch's
#             own accumulation loop on the same GPU in the same run
#             (bench/pytorch_ref.py, eager): MLP at micro-batch 256 (target
#             >= 1.0x eager), LeNet at 32 (1.0x), the transformer at 64
#             (1.3x), N = 4
#   memory    device memory in use with N = 32 and with N = 1 (MLP, micro-
#             batch 256): within 5 %
#   bf16      --precision=bf16 (the matmuls on bf16 tensor cores through
#             cuBLASLt, the convolutions and attention through cuDNN, operands stored in bf16): MLP, LeNet, the
#             transformer and a causal attention classifier (cuDNN's fused
#             attention), SGD, K = 4 windows in lockstep with the f32 CPU
#             twin, each bf16 update within 0.1 of the f32 one; samples/s
#             of Cleave bf16 against PyTorch eager under bf16 autocast (and
#             both in f32), each micro-batch copied from host memory (PyTorch
#             from pinned memory), for the MLP at micro-batch 256 and 4096
#             and the transformer at 64 (target >= 1.0x)
#   torch-compile  PyTorch's loop through torch.compile on the three speed
#             configurations (minutes when cold): informational rows
#   gpt2      not in the default run (give it a command of its own, with
#             --stages=gpt2, on a folder prepared with --gpt2): GPT-2 small (bench/gpt2.py) at micro-batch 8,
#             N = 8, Cleave bf16 against PyTorch's loop under bf16 autocast,
#             eager and torch.compile: tokens/s, MFU, device memory; targets
#             >= 1.3x eager, >= 1.0x torch.compile, >= 35% MFU
#
# --out     the results folder (made if missing; must hold no results.md
#           yet). A real run needs it; a dry run writes its plan there.
# --stages  the stages to run, comma-separated, in the order given (default
#           all: first-contact,sanitizer,numerics,speed,memory,bf16,
#           torch-compile)
# --seconds how long each timed loop runs (default 3)
# --total   the whole run's budget in seconds (default 570, inside the
#           device tool's 600 s command limit): steps that would start
#           after it are TIMEOUT rows without running
# --dry-run checks, on any machine, that the carried files are all there and
#           intact, that every artifact's host code is portable (the
#           manifest's target CPU is an x86-64 level, no AVX-512 or AMX),
#           that the tools find their libraries and which tools the run
#           would use, and prints the plan: every step with its time limit.
#           It starts nothing on a GPU.
#
# Exit status: 0 when every row passed (or was skipped or informational),
# 1 otherwise, 2 for a bad argument.
#
# The script can be sourced (it then defines its functions and runs
# nothing): test/gpu_check_scripts_test.sh drives `step` with a fake step.
set -uo pipefail

python=${PYTHON:-python3}
mode=run failed=0 out='' logs='' results='' carry='' seconds=3 total=570
stage_name='' stage_dir='' stage_end=0 run_end=0 planned=0
step_rc=0 step_log='' step_limit=0

die() { echo "gpu-check: $*" >&2; exit 1; }

# --- results and steps --------------------------------------------------------

# open_results DIR TITLE: the results folder, its results.md and logs/.
open_results() {
  out=$1
  mkdir -p "$out" || die "cannot make $out"
  out=$(cd "$out" && pwd)
  logs=$out/logs results=$out/results.md
  [ -e "$results" ] && die "$results exists: give a fresh --out folder"
  mkdir -p "$logs"
  printf '# %s\n\n' "$2" >"$results"
}

# emit CHECK WHAT MEASURED RESULT: one row, printed and appended now.
emit() {
  [ "$mode" = plan ] && return 0
  local line
  line=$(printf '| %s | %s | %s | %s |' "$1" "$2" "$3" "$4")
  echo "$line"
  [ -n "$results" ] && echo "$line" >>"$results"
  case $4 in FAIL* | TIMEOUT*) failed=1 ;; esac
  return 0
}

# Refreshes DIR/logs.tar.gz (results.md and the logs; not the parameters,
# which the rows' logs summarise).
archive() {
  [ -n "$out" ] || return 0
  tar -czf "$out/logs.tar.gz.part" -C "$out" --exclude='*.params' \
    --exclude='*.init' results.md logs 2>/dev/null &&
    mv -f "$out/logs.tar.gz.part" "$out/logs.tar.gz"
}

# stage NAME BUDGET TITLE: the steps that follow share BUDGET seconds.
stage() {
  stage_name=$1 stage_dir=$logs/$1
  stage_end=$(($(date +%s) + $2))
  if [ "$mode" = plan ]; then
    planned=$((planned + $2))
    say_plan "" "stage $1 (budget $2 s): $3"
  else
    mkdir -p "$stage_dir"
    echo "gpu-check: stage $1 (budget $2 s): $3"
  fi
}

say_plan() { # INDENT TEXT
  echo "$1$2"
  [ -n "$results" ] && echo "$1- $2" >>"$results"
  return 0
}

# A command as the plan shows it: no `env`, no library path, the carried
# folder and the results folder by name, a Python program by its first line.
show_cmd() {
  local a text=''
  for a in "$@"; do
    case $a in env | LD_LIBRARY_PATH=*) continue ;; esac
    a=${a//"$carry"\//}
    [ -n "$out" ] && a=${a//"$out"/OUT}
    [[ $a == *$'\n'* ]] && a="'${a%%$'\n'*}'"
    text+="${text:+ }$a"
  done
  echo "$text"
}

# A command as its log shows it: quoted for the shell, a Python program by
# its first line (the program is in this script).
log_cmd() {
  local a
  printf '$'
  for a in "$@"; do
    if [[ $a == *$'\n'* ]]; then printf " '%s'" "${a%%$'\n'*}"; else printf ' %q' "$a"; fi
  done
  printf '\n'
}

# step ID LIMIT COMMAND...: runs COMMAND under `timeout` for at most LIMIT
# seconds (less where its stage's budget or --total ends sooner), its
# standard output and error in $stage_dir/ID.log, then refreshes the
# archive. Sets step_rc (124: cut at its limit, or not started because the
# budget was spent), step_log and step_limit; returns step_rc. In the plan,
# only says what it would run.
step() {
  local id=$1 limit=$2
  shift 2
  step_log=$stage_dir/$id.log step_limit=$limit
  if [ "$mode" = plan ]; then
    say_plan "  " "$stage_name/$id (<= $limit s): $(show_cmd "$@")"
    step_rc=0
    return 0
  fi
  local now left
  now=$(date +%s)
  left=$((stage_end - now))
  if [ "$run_end" -gt 0 ] && [ $((run_end - now)) -lt "$left" ]; then left=$((run_end - now)); fi
  [ "$left" -lt "$step_limit" ] && step_limit=$left
  {
    log_cmd "$@"
    printf '# limit %s s\n' "$step_limit"
  } >"$step_log"
  if [ "$step_limit" -le 0 ]; then
    echo "gpu-check: not started: the budget of stage $stage_name or of --total is spent" >>"$step_log"
    step_rc=124
  else
    timeout -k 5 "$step_limit" "$@" >>"$step_log" 2>&1 </dev/null
    step_rc=$?
    # 124: stopped by TERM at the limit; 137 at the limit: it ignored TERM
    # and was killed (137 sooner is a SIGKILL from elsewhere, say the OOM
    # killer).
    if [ $step_rc = 137 ] && [ $(($(date +%s) - now)) -ge "$step_limit" ]; then step_rc=124; fi
    [ $step_rc = 124 ] && echo "gpu-check: cut at its $step_limit s limit" >>"$step_log"
  fi
  archive
  return $step_rc
}

# The log's last line that is not the script's own note.
last_line() {
  [ -f "$1" ] || return 0
  grep -v '^gpu-check: cut at\|^# limit\|^\$ ' "$1" | grep -v '^[[:space:]]*$' | tail -1 | cut -c1-200
}

# settle CHECK WHAT: after a failed step, its row (TIMEOUT, or FAIL with the
# log's last line) and status 1; status 0 after a step that succeeded (and
# in the plan, where every step "succeeds").
settle() {
  [ $step_rc = 0 ] && return 0
  local where=${step_log#"$out"/}
  if [ $step_rc = 124 ] && [ "$step_limit" -le 0 ]; then
    emit "$1" "$2" "not started: the budget of stage $stage_name or of --total was spent" TIMEOUT
  elif [ $step_rc = 124 ]; then
    emit "$1" "$2" "cut at its $step_limit s limit (${where})" TIMEOUT
  elif [ $step_rc -gt 128 ]; then
    emit "$1" "$2" "killed by signal $((step_rc - 128)): $(last_line "$step_log") (${where})" FAIL
  else
    emit "$1" "$2" "exit $step_rc: $(last_line "$step_log") (${where})" FAIL
  fi
  return 1
}

# --- Python helpers (run through steps as `python -c`) ------------------------

# GPU and CPU parameters (and the initial ones, where saved) -> the last
# line "OK TEXT", OK 1 within 1e-4 relative L2.
compare_py=$(
  cat <<'PY'
# gpu-check: GPU against CPU parameters
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
if len(sys.argv) > 3 and os.path.exists(sys.argv[3]):
    # How much of the update itself differs (the parameters barely move
    # with a small learning rate).
    init = np.fromfile(sys.argv[3], np.float32)
    if init.shape == cpu.shape:
        step = np.linalg.norm(gpu - cpu) / max(np.linalg.norm(cpu - init), 1e-30)
        note = f", {step:.2e} of the update"
print(f"{int(rel <= 1e-4)} relative L2 {rel:.2e}{note}, max |diff| {np.max(np.abs(gpu - cpu)):.2e}")
PY
)

# The libraries the runtime dlopens, by the names it uses, from the same
# search path: the file the loader picks (/proc/self/maps) and the version
# the library reports. The last line is the row's summary.
libraries_py=$(
  cat <<'PY'
# gpu-check: the CUDA libraries and their versions
import ctypes as C, os
def path(stem):
    with open("/proc/self/maps") as maps:
        for line in maps:
            f = line.split()[-1]
            if os.path.basename(f).startswith(stem):
                return os.path.realpath(f)
    return "?"
# Each library's version encoding.
cuda = lambda v: f"CUDA API {v // 1000}.{v % 1000 // 10}"
mmp = lambda v: f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
summary = []
for soname, stem, fn, kind, dotted in [
        ("libcuda.so.1", "libcuda.so", "cuDriverGetVersion", "ptr", cuda),
        ("libcublasLt.so.13", "libcublasLt.so", "cublasLtGetVersion", "ret", mmp),
        ("libcudnn.so.9", "libcudnn.so", "cudnnGetVersion", "ret", mmp),
        ("libnccl.so.2", "libnccl.so", "ncclGetVersion", "ptr", mmp)]:
    try:
        lib = C.CDLL(soname)
    except OSError as e:
        print(f"{soname}: not found ({e})")
        summary.append(f"{soname} not found")
        continue
    if kind == "ptr":
        v = C.c_int(0)
        getattr(lib, fn)(C.byref(v))
        v = v.value
    else:
        getattr(lib, fn).restype = C.c_size_t
        v = getattr(lib, fn)()
    print(f"{soname}: {path(stem)}: {fn} {v} ({dotted(v)})")
    summary.append(f"{os.path.basename(path(stem))} {dotted(v)}")
print("; ".join(summary))
PY
)

# Each artifact's host code is portable: its manifest's target CPU is an
# x86-64 level and enables no AVX-512 or AMX. Loads each through the carried
# runtime (which also refuses one this CPU cannot run) and prints a line for
# each that is not.
portable_py=$(
  cat <<'PY'
# gpu-check: portable host code
import ctypes as C, json, os, sys
LEVELS = {"x86-64", "x86-64-v2", "x86-64-v3"}
lib = C.CDLL(sys.argv[1], mode=C.RTLD_GLOBAL)
lib.cleave_last_error_message.restype = C.c_char_p
bad = 0
for path in sys.argv[2:]:
    name = os.path.relpath(path, os.path.dirname(os.path.dirname(path)))
    artifact, text = C.c_void_p(), C.c_char_p()
    if lib.cleave_artifact_load(path.encode(), C.byref(artifact)) != 0:
        print(f"{name}: not loaded: {lib.cleave_last_error_message().decode()}")
        bad += 1
        continue
    lib.cleave_artifact_manifest(artifact, C.byref(text))
    target = json.loads(text.value).get("target") or {}
    cpu, features = target.get("cpu"), target.get("features", [])
    wide = [f for f in features if f.startswith(("avx512", "amx"))]
    if cpu not in LEVELS or wide:
        print(f"{name}: host code for CPU '{cpu}'"
              + (f" with {', '.join(wide[:4])}{', ...' if len(wide) > 4 else ''}" if wide else "")
              + ", not portable (an x86-64 level without AVX-512 or AMX, e.g. x86-64-v3)")
        bad += 1
    lib.cleave_artifact_release(artifact)
sys.exit(1 if bad else 0)
PY
)

# The value of KEY in the last JSON object line of a log, or n/a.
json_of() { # LOG KEY
  timeout 30 "$python" -c '
import json, sys
for line in reversed(open(sys.argv[1]).read().splitlines()):
    if line.startswith("{"):
        try:
            value = json.loads(line).get(sys.argv[2], "n/a")
            print(value if isinstance(value, str) else json.dumps(value))
            break
        except ValueError:
            pass
else:
    print("n/a")' "$1" "$2" 2>/dev/null || echo n/a
}

is_number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

# A / B as "1.23x", or n/a.
ratio() {
  if is_number "$1" && is_number "$2" && awk -v b="$2" 'BEGIN { exit !(b > 0) }'; then
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx\n", a / b }'
  else
    echo n/a
  fi
}

# --- the rows ----------------------------------------------------------------

# Trains ARTIFACT on DEVICE for one window (LIMIT: --limit-train=128) or K =
# 20 windows, saving the final parameters to $stage_dir/ID.params. Extra
# environment variables before the artifact: VAR=value...
train_step() { # ID LIMIT DEVICE WINDOWS MODEL-OPT [VAR=value...]
  local id=$1 limit=$2 device=$3 windows=$4 name=$5
  shift 5
  local model=${name%-*} data=$carry/data/fashion.npz args=()
  [ "$windows" = 1 ] && args=(--limit-train=128 --limit-test=32)
  if [ "$model" = transformer ]; then
    # Token ids with one class label per sequence, through the runtime's
    # C API: gpu-check-train.py also saves the initial parameters, for the
    # row's "of the update".
    step "$id" "$limit" "${cleave_env[@]}" OMP_NUM_THREADS=4 "$@" "$python" \
      scripts/gpu-check-train.py "$runtime" "$carry/artifacts/$name-$device.cleave" \
      "$carry/data/tokens.npz" --device="$device" --seed=0 --windows="$windows" \
      --save-initial="$stage_dir/$id.init" --save-params="$stage_dir/$id.params"
  else
    step "$id" "$limit" "${cleave_env[@]}" OMP_NUM_THREADS=4 "$@" "$train" \
      "$carry/artifacts/$name-$device.cleave" --data="$data" --device="$device" \
      --seed=0 --epochs=1 --quiet "${args[@]}" --save-params="$stage_dir/$id.params"
  fi
}

# The row of a comparison whose last line is "1 TEXT" (agrees) or "0 TEXT".
verdict_row() { # CHECK WHAT
  [ "$mode" = plan ] && return 0
  local verdict ok=FAIL
  verdict=$(last_line "$step_log")
  [ "${verdict%% *}" = 1 ] && ok=PASS
  emit "$1" "$2" "${verdict#* }" "$ok"
}

# The GPU run of MODEL-OPT against its CPU twin: the runs, then one row.
twin_row() { # CHECK WHAT MODEL-OPT WINDOWS GPU-LIMIT CPU-LIMIT [VAR=value...]
  local check=$1 what=$2 name=$3 windows=$4 glimit=$5 climit=$6
  shift 6
  train_step "$name-cuda" "$glimit" cuda "$windows" "$name" "$@"
  settle "$check" "$what" || return 0
  train_step "$name-cpu" "$climit" cpu "$windows" "$name"
  settle "$check" "$what (CPU twin)" || return 0
  step "$name-compare" 30 "$python" -c "$compare_py" "$stage_dir/$name-cuda.params" \
    "$stage_dir/$name-cpu.params" "$stage_dir/$name-cpu.init"
  settle "$check" "$what" || return 0
  verdict_row "$check" "$what"
}

first_contact() {
  stage first-contact 90 "the device, its driver and libraries; one window of the MLP and LeNet on the GPU (graphs off, CUDA_LAUNCH_BLOCKING=1) against the CPU"
  if [ "$mode" = plan ] || command -v nvidia-smi >/dev/null; then
    step nvidia-smi 10 nvidia-smi
    [ "$mode" = run ] && sed 1,2d "$step_log"
    step device 10 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
      --format=csv,noheader
    settle device "the GPU: name, driver, memory, compute capability" &&
      emit device "the GPU: name, driver, memory, compute capability" "$(last_line "$step_log")" INFO
  else
    emit device "the GPU (nvidia-smi)" "skipped: nvidia-smi is not on the PATH" SKIPPED
  fi
  step libraries 20 "${cleave_env[@]}" "$python" -c "$libraries_py"
  [ "$mode" = run ] && sed 1,2d "$step_log" | sed '$d'
  settle libraries "libcuda, cuBLASLt, cuDNN, NCCL the runtime's dlopen finds: file and version" &&
    emit libraries "libcuda, cuBLASLt, cuDNN, NCCL the runtime's dlopen finds: file and version" \
      "$(last_line "$step_log")" INFO
  local model first=(CLEAVE_CUDA_GRAPHS=0 CUDA_LAUNCH_BLOCKING=1 LD_DEBUG=files)
  for model in mlp lenet; do
    twin_row first-contact "$model sgd, one window (B=32, N=4), graphs off, CUDA_LAUNCH_BLOCKING=1: GPU vs CPU parameters" \
      "$model-sgd" 1 30 15 "${first[@]}" "LD_DEBUG_OUTPUT=$stage_dir/$model-sgd-cuda.ld"
  done
  [ "$mode" = plan ] && return
  # What cleave-train's two GPU runs actually loaded (the runtime dlopens
  # cuBLASLt and cuDNN on first use; NCCL only for data-parallel runs).
  local loaded
  loaded=$(cat "$stage_dir"/*.ld.* 2>/dev/null | sed -n 's/.*calling init: //p' |
    grep -E '/lib(cuda|cublas|cudnn|nccl|nvrtc|nvJitLink)[^/]*$' | sort -u |
    while read -r f; do readlink -f "$f"; done | sort -u | paste -sd ' ' -)
  emit libraries "CUDA libraries cleave-train loaded in those windows (LD_DEBUG=files)" \
    "${loaded:-none seen}" INFO
}

sanitizer() {
  stage sanitizer 150 "compute-sanitizer --tool memcheck on one window of the MLP and LeNet (graphs off)"
  local tool model what
  tool=$(command -v compute-sanitizer)
  for what in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [ -z "$tool" ] && [ -x "$what" ] && tool=$what
  done
  for model in mlp lenet; do
    what="compute-sanitizer memcheck, $model sgd, one window on the GPU"
    if [ "$mode" = run ] && [ -z "$tool" ]; then
      emit sanitizer "$what" "skipped: compute-sanitizer is not on the PATH nor in /usr/local/cuda" SKIPPED
      continue
    fi
    step "$model-memcheck" 90 "${cleave_env[@]}" CLEAVE_CUDA_GRAPHS=0 OMP_NUM_THREADS=4 \
      "${tool:-compute-sanitizer}" --tool memcheck --error-exitcode 3 --print-limit 20 \
      "$train" "$carry/artifacts/$model-sgd-cuda.cleave" --data="$carry/data/fashion.npz" \
      --device=cuda --seed=0 --epochs=1 --quiet --limit-train=128 --limit-test=32
    [ "$mode" = plan ] && continue
    # memcheck over cuBLASLt and cuDNN can outlast any limit here: no
    # verdict, which fails nothing.
    if [ $step_rc = 124 ]; then
      emit sanitizer "$what" "no verdict: cut at its $step_limit s limit (${step_log#"$out"/})" INFO
      continue
    fi
    # The tool's own refusals: its lines start with "=========".
    local refusal errors
    refusal=$(grep -m1 -E '^========= .*(not supported|[Uu]nable to|[Ff]ailed to|Error: (Target|Device|Could not))' "$step_log" |
      sed 's/^========= *//' | cut -c1-160)
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$step_log" | tail -1)
    if [ -n "$refusal" ] && [ "${errors:-0}" = 0 ]; then
      emit sanitizer "$what" "skipped: $refusal" SKIPPED
    elif [ -n "$refusal" ]; then
      emit sanitizer "$what" "skipped: $refusal (then $errors errors, probably its own)" SKIPPED
    elif [ $step_rc = 0 ] && [ "$errors" = 0 ]; then
      emit sanitizer "$what" "0 errors" PASS
    elif [ -n "$errors" ] && [ "$errors" != 0 ]; then
      emit sanitizer "$what" "$errors errors, the first: $(grep '^========= [^ ]' "$step_log" |
        grep -v 'COMPUTE-SANITIZER\|ERROR SUMMARY' | head -1 | cut -c11-170) (${step_log#"$out"/})" FAIL
    else
      settle sanitizer "$what" || true
      [ $step_rc = 0 ] && emit sanitizer "$what" "no ERROR SUMMARY: $(last_line "$step_log")" FAIL
    fi
  done
}

# MODEL-adam on the GPU in lockstep with its CPU twin, one process: each
# window starts from the CPU's state; the row is the worst window's update.
# VARIANT names another GPU build of the model (MODEL-OPT-VARIANT-cuda: bf16)
# against the same CPU twin, with its own TOLERANCE. MEMORY (host, pinned,
# device) is where the GPU session reads its batches.
lockstep_row() { # CHECK WHAT MODEL-OPT WINDOWS LIMIT [VARIANT TOLERANCE MEMORY]
  local check=$1 what=$2 name=$3 windows=$4 limit=$5 variant=${6:-} tolerance=${7:-0.001}
  local memory=${8:-host}
  local data=$carry/data/fashion.npz gpu=$name${6:+-$6}
  case ${name%-*} in
  transformer | attention) data=$carry/data/tokens.npz ;;
  esac
  step "$gpu-lockstep${8:+-$8}" "$limit" "${cleave_env[@]}" OMP_NUM_THREADS=4 "$python" \
    scripts/gpu-check-train.py "$runtime" "$carry/artifacts/$gpu-cuda.cleave" "$data" \
    --device=cuda --twin="$carry/artifacts/$name-cpu.cleave" --seed=0 --windows="$windows" \
    --tolerance="$tolerance" --memory="$memory"
  settle "$check" "$what" || return 0
  verdict_row "$check" "$what"
}

numerics() {
  stage numerics 240 "K = 20 windows, B = 32, N = 4: SGD free-running, Adam in lockstep; GPU vs CPU"
  local model
  for model in mlp lenet transformer; do
    twin_row numerics "$model sgd, K=20 windows, B=32, N=4: GPU vs CPU parameters" \
      "$model-sgd" 20 60 60
    lockstep_row numerics "$model adam, K=20 windows, B=32, N=4, each from the CPU's state: GPU vs CPU update" \
      "$model-adam" 20 90
  done
  # Batches the caller holds in page-locked or GPU memory
  # (cleave_session_micro_step_ex): uploaded from the caller's buffer, or
  # copied on the GPU, with the same update.
  local memory
  for memory in pinned device; do
    lockstep_row numerics "lenet adam, K=4 windows, batches in $memory memory, each from the CPU's state: GPU vs CPU update" \
      lenet-adam 4 45 "" 0.001 "$memory"
  done
}

declare -A cleave_sps=()
speed_row() { # MODEL MICRO-BATCH TARGET
  local model=$1 b=$2 target=$3 what
  what="$model B=$b N=4 samples/s: Cleave / PyTorch eager (target >= ${target}x)"
  step "$model-cleave" $((seconds + 60)) "${cleave_env[@]}" "$bench" \
    "$carry/artifacts/$model-speed-cuda.cleave" --device=cuda --accumulate=4 --seconds="$seconds"
  settle speed "$what" || return 0
  local cleave eager rate ok notes=''
  [ "$mode" = plan ] || cleave=$(json_of "$step_log" samples_per_second)
  # Why Cleave may be slower than it could be (an entry that runs without a
  # CUDA graph, and the reason): cleave-bench's notes.
  [ "$mode" = plan ] || notes=$(json_of "$step_log" notes)
  case $notes in '[]' | n/a) notes='' ;; esac
  notes=${notes//|//}
  cleave_sps[$model]=${cleave:-}
  step "$model-eager" $((seconds + 90)) "$python" bench/pytorch_ref.py "$model" --device=cuda \
    --micro-batch="$b" --accumulate=4 --seconds="$seconds"
  settle speed "$what" || return 0
  [ "$mode" = plan ] && return 0
  eager=$(json_of "$step_log" samples_per_second)
  rate=$(ratio "$cleave" "$eager") ok=FAIL
  [ "$rate" != n/a ] && awk -v r="${rate%x}" -v t="$target" 'BEGIN { exit !(r >= t) }' && ok=PASS
  emit speed "$what" "$cleave / $eager ($rate)${notes:+; notes: $notes}" "$ok"
}

speed() {
  stage speed 180 "samples/s of Cleave and PyTorch eager on the same GPU, N = 4, SGD"
  step torch 60 "$python" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  settle speed "PyTorch: version, CUDA, device" &&
    emit speed "PyTorch: version, CUDA, device" "$(last_line "$step_log")" INFO
  speed_row mlp 256 1.0
  speed_row lenet 32 1.0
  speed_row transformer 64 1.3
}

memory() {
  stage memory 120 "MLP B=256: device memory in use with N = 32 against N = 1"
  local what="MLP B=256 device MiB in use, N=32 vs N=1 (PyTorch peak tensors)" n m1 m32 t1 t32
  for n in 1 32; do
    step "cleave-n$n" 45 "${cleave_env[@]}" "$bench" "$carry/artifacts/mlp-speed-cuda.cleave" \
      --device=cuda --accumulate="$n" --seconds=1
    settle memory "$what" || return 0
  done
  for n in 1 32; do
    step "torch-n$n" 60 "$python" bench/pytorch_ref.py mlp --device=cuda --micro-batch=256 \
      --accumulate="$n" --seconds=1
  done
  [ "$mode" = plan ] && return
  m1=$(json_of "$stage_dir/cleave-n1.log" device_used_mib)
  m32=$(json_of "$stage_dir/cleave-n32.log" device_used_mib)
  t1=$(json_of "$stage_dir/torch-n1.log" device_peak_mib)
  t32=$(json_of "$stage_dir/torch-n32.log" device_peak_mib)
  local growth ok
  growth=n/a ok=FAIL
  if is_number "$m1" && is_number "$m32" && [ "$m1" != 0 ]; then
    growth=$(awk -v a="$m32" -v b="$m1" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }')
    awk -v a="$m32" -v b="$m1" 'BEGIN { g = a / b - 1; exit !(g <= 0.05 && g >= -0.05) }' && ok=PASS
  fi
  [ "$growth" = n/a ] && growth="n/a: no device_used_mib from cleave-bench in logs/memory/"
  emit memory "$what" "$m32 vs $m1 ($growth; PyTorch $t32 vs $t1)" "$ok"
}

torch_compile() {
  stage torch-compile 300 "PyTorch's loop through torch.compile (cold: minutes), informational"
  local model b what compiled
  for model in mlp:256 lenet:32 transformer:64; do
    b=${model#*:} model=${model%:*}
    what="$model B=$b N=4 samples/s: torch.compile (Cleave / torch.compile)"
    step "$model-compile" 240 "$python" bench/pytorch_ref.py "$model" --device=cuda --compile \
      --micro-batch="$b" --accumulate=4 --seconds="$seconds"
    [ "$mode" = plan ] && continue
    # PyTorch's compiler failing or running out of time says nothing of Cleave.
    if [ $step_rc = 124 ] && [ "$step_limit" -le 0 ]; then
      emit torch-compile "$what" "n/a: not started: the budget of stage $stage_name or of --total was spent" INFO
      continue
    elif [ $step_rc = 124 ]; then
      emit torch-compile "$what" "n/a: cut at its $step_limit s limit" INFO
      continue
    fi
    compiled=$(json_of "$step_log" samples_per_second)
    if [ "$compiled" = n/a ]; then
      emit torch-compile "$what" "n/a: $(last_line "$step_log")" INFO
    else
      emit torch-compile "$what" "$compiled ($(ratio "${cleave_sps[$model]:-}" "$compiled"))" INFO
    fi
  done
}

# samples/s of one configuration in f32 and bf16, Cleave (cleave-bench of
# ARTIFACT-speed-cuda and ARTIFACT-speed-bf16-cuda) and PyTorch eager
# (bench/pytorch_ref.py MODEL, plain and under torch.autocast(bfloat16)),
# both taking each micro-batch from host memory (PyTorch from pinned memory,
# as a DataLoader with pin_memory hands it over: --inputs=pinned; Cleave's
# sessions take host pointers). The target: Cleave bf16 >= PyTorch's
# autocast.
bf16_speed_row() { # ARTIFACT MODEL MICRO-BATCH
  local name=$1 model=$2 b=$3 what v
  what="$model B=$b N=4 samples/s, inputs from host memory: Cleave bf16 / PyTorch bf16 autocast eager (target >= 1.0x); f32 both"
  declare -A sps=()
  for v in f32 bf16; do
    local build=$name-speed
    [ $v = bf16 ] && build=$name-speed-bf16
    step "$name-$v-cleave" $((seconds + 60)) "${cleave_env[@]}" "$bench" \
      "$carry/artifacts/$build-cuda.cleave" --device=cuda \
      --accumulate=4 --seconds="$seconds"
    settle bf16 "$what" || return 0
    [ "$mode" = plan ] || sps[cleave-$v]=$(json_of "$step_log" samples_per_second)
    local autocast=()
    [ $v = bf16 ] && autocast=(--autocast)
    step "$name-$v-eager" $((seconds + 90)) "$python" bench/pytorch_ref.py "$model" --device=cuda \
      --micro-batch="$b" --accumulate=4 --seconds="$seconds" --inputs=pinned "${autocast[@]}"
    settle bf16 "$what" || return 0
    [ "$mode" = plan ] || sps[eager-$v]=$(json_of "$step_log" samples_per_second)
  done
  [ "$mode" = plan ] && return 0
  local rate ok=FAIL
  rate=$(ratio "${sps[cleave-bf16]}" "${sps[eager-bf16]}")
  [ "$rate" != n/a ] && awk -v r="${rate%x}" 'BEGIN { exit !(r >= 1.0) }' && ok=PASS
  emit bf16 "$what" "bf16 ${sps[cleave-bf16]} / ${sps[eager-bf16]} ($rate); f32 ${sps[cleave-f32]} / ${sps[eager-f32]} ($(ratio "${sps[cleave-f32]}" "${sps[eager-f32]}")); Cleave bf16 / f32 $(ratio "${sps[cleave-bf16]}" "${sps[cleave-f32]}")" "$ok"
}

# --precision=bf16 on the GPU: the matmuls through cuBLASLt on bf16 A and B
# (CUDA_R_16BF, CUBLAS_COMPUTE_32F: bf16 tensor cores, f32 sums), narrowed
# by the generated kernels, the weights once per micro-step; the
# convolutions through cuDNN on bf16 tensors, their results widened by the
# generated kernels (mixed-precision.md, "On cuda"). Numerics: each window from the f32 CPU twin's state, the
# bf16 update within 0.1 of the f32 one (the CPU's own bf16 builds are 3e-3
# to 3e-2 from f32 by this measure: see
# bench/README.md). Speed: against PyTorch's bf16 autocast.
bf16() {
  stage bf16 240 "--precision=bf16: the matmuls on tensor cores; each window from the f32 CPU twin's state; samples/s against PyTorch's bf16 autocast"
  local model
  for model in mlp lenet transformer; do
    lockstep_row bf16 "$model sgd bf16, K=4 windows, B=32, N=4, each from the f32 CPU twin's state: GPU bf16 vs CPU f32 update" \
      "$model-sgd" 4 45 bf16 0.1
  done
  # Fused attention (cuDNN's SDPA graphs, never run on a GPU before this
  # row): a session refused for want of an engine shows here.
  lockstep_row bf16 "attention sgd bf16 (cuDNN fused attention), K=4 windows, B=32, N=4, each from the f32 CPU twin's state: GPU bf16 vs CPU f32 update" \
    attention-sgd 4 45 bf16 0.1
  bf16_speed_row mlp mlp 256
  bf16_speed_row transformer transformer 64
  bf16_speed_row mlp4096 mlp 4096
}

# GPT-2 small against PyTorch (bench/gpt2.py): the carried artifact (bf16,
# micro-batch 8, N = 8, parameters drawn at load) timed by cleave-bench,
# PyTorch's own loop under bf16 autocast eager and through torch.compile.
gpt2() {
  stage gpt2 420 "GPT-2 small, B=8 N=8 bf16: tokens/s, MFU and device memory against PyTorch bf16 autocast (eager, torch.compile)"
  local what="GPT-2 small B=8 N=8 tokens/s: Cleave bf16 / PyTorch autocast eager, torch.compile (targets >= 1.3x, >= 1.0x, MFU >= 35%)"
  if [ ! -f "$carry/artifacts/gpt2-small-b8-n8-bf16-cuda.cleave" ]; then
    [ "$mode" = plan ] && say_plan "  " "gpt2: $carry was prepared without --gpt2: the stage will FAIL"
    emit gpt2 "$what" "n/a: $carry was prepared without --gpt2 (scripts/gpu-check-prepare.sh --gpt2)" FAIL
    return 0
  fi
  step gpt2 400 "${cleave_env[@]}" "$python" bench/gpt2.py --config=small --device=cuda \
    --micro-batch=8 --accumulate=8 --seconds="$((seconds * 3))" --compile \
    --build="$carry" --artifact="$carry/artifacts/gpt2-small-b8-n8-bf16-cuda.cleave" \
    --json="$stage_dir/gpt2.json"
  settle gpt2 "$what" || return 0
  [ "$mode" = plan ] && return 0
  local summary ok
  summary=$(timeout 30 "$python" - "$stage_dir/gpt2.json" <<'PY' 2>/dev/null || echo "n/a FAIL"
import json, sys
r = json.load(open(sys.argv[1]))["rows"]
c = r["Cleave bf16"]
e = r.get("PyTorch eager (autocast bf16)", {})
t = r.get("PyTorch torch.compile (autocast bf16)", {})
ok = (e.get("cleave_over_this", 0) >= 1.3 and t.get("cleave_over_this", 0) >= 1.0
      and (c.get("mfu") or 0) >= 0.35)
def mib(x):
    return f"{x.get('peak_mib')} MiB"
print(f"{c['tokens_per_second']:.0f} tokens/s, MFU {100 * (c.get('mfu') or 0):.1f}%, "
      f"{mib(c)}; eager {e.get('tokens_per_second')} ({e.get('cleave_over_this')}x, {mib(e)}); "
      f"torch.compile {t.get('tokens_per_second')} ({t.get('cleave_over_this')}x, {mib(t)}) "
      + ("PASS" if ok else "FAIL"))
PY
)
  ok=${summary##* } summary=${summary% *}
  emit gpt2 "$what" "$summary" "$ok"
}

all_stages="first-contact sanitizer numerics speed memory bf16 torch-compile"
# Stages run only when named in --stages.
extra_stages="gpt2"
stages=$all_stages
checks() {
  local s
  for s in $stages; do
    case $s in
    first-contact) first_contact ;;
    torch-compile) torch_compile ;;
    *) "$s" ;;
    esac
  done
}

# --- the carried folder ------------------------------------------------------

# cuBLASLt and cuDNN: the runtime dlopens libcublasLt.so.13 and
# libcudnn.so.9; on the GPU machine they come with the CUDA toolkit or with
# PyTorch's pip packages (nvidia-cublas, nvidia-cudnn-cu13).
cuda_libs() {
  local dirs=() d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && dirs+=("$d")
  done
  while read -r d; do [ -n "$d" ] && dirs+=("$d"); done < <(timeout 60 "$python" - <<'PY' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
seen = set()
for r in roots:
    for lib in glob.glob(os.path.join(r, "nvidia", "**", "lib*.so*"), recursive=True):
        if "cublasLt" in lib or "cudnn" in lib or "nccl" in lib:
            seen.add(os.path.dirname(lib))
print("\n".join(sorted(seen)))
PY
)
  local IFS=:
  echo "${dirs[*]}"
}

# Checks the carried folder; sets cleave_env, train, bench, runtime.
check_carry() { # DRY
  [ -d "$carry" ] || die "$carry does not exist: run scripts/gpu-check-prepare.sh first, and carry it"
  carry=$(cd "$carry" && pwd)
  [ -f "$carry/MANIFEST.sha256" ] ||
    die "$carry/MANIFEST.sha256 is missing: run scripts/gpu-check-prepare.sh first, and carry $carry"
  (cd "$carry" && sha256sum --quiet -c MANIFEST.sha256) ||
    die "files in $carry are missing or changed since gpu-check-prepare.sh"
  grep -q 'cuda_artifacts=1' "$carry/PREPARED" ||
    { [ "$1" = 1 ] && echo "gpu-check: note: $carry has no cuda artifacts (prepared with --cpu-only)"; } ||
    die "$carry was prepared with --cpu-only: no cuda artifacts"
  # What the checks read: a folder from an older gpu-check-prepare.sh passes
  # its own manifest but may lack some of it.
  local needed=(data/fashion.npz data/tokens.npz) wheres=(cpu) model opt where f
  grep -q 'cuda_artifacts=1' "$carry/PREPARED" && wheres+=(cuda)
  for model in mlp lenet transformer; do
    for opt in sgd adam; do
      for where in "${wheres[@]}"; do needed+=("artifacts/$model-$opt-$where.cleave"); done
    done
    [ ${#wheres[@]} = 2 ] && needed+=("artifacts/$model-speed-cuda.cleave")
  done
  for f in "${needed[@]}"; do
    [ -f "$carry/$f" ] || die "$carry/$f is missing: run scripts/gpu-check-prepare.sh again, and carry $carry"
  done
  cleave_env=(env "LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  train=$carry/bin/cleave-train bench=$carry/bin/cleave-bench
  runtime=$(find "$carry/lib" -maxdepth 1 -name 'libcleave_runtime.so.[0-9]*' | sort | tail -1)
  [ -n "$runtime" ] || die "$carry/lib has no libcleave_runtime.so"
  local tool missing
  for tool in "$train" "$bench"; do
    missing=$("${cleave_env[@]}" ldd "$tool" | grep 'not found' || true)
    [ -z "$missing" ] || die "$tool: libraries not found: $missing"
  done
  # Host code for the preparing machine's CPU would be refused (or die of
  # SIGILL) on a GPU machine whose CPU lacks one of its features.
  local bad
  bad=$("${cleave_env[@]}" timeout 120 "$python" -c "$portable_py" "$runtime" \
    "$carry"/artifacts/*.cleave 2>&1) ||
    die "artifacts without portable host code (scripts/gpu-check-prepare.sh compiles with --target-cpu=x86-64-v3; prepare again):
$bad"
}

main() {
  local self
  self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
  cd "$(dirname "$self")/.." || exit 1
  carry=.gpu-check
  local dry=0 a s dest=''
  for a in "$@"; do
    case $a in
    --carry=*) carry=${a#*=} ;;
    --out=*) dest=${a#*=} ;;
    --seconds=*) seconds=${a#*=} ;;
    --total=*) total=${a#*=} ;;
    --stages=*)
      stages=${a#*=} stages=${stages//,/ }
      for s in $stages; do
        [[ " $all_stages $extra_stages " == *" $s "* ]] ||
          { echo "gpu-check: unknown stage $s (the stages: $all_stages $extra_stages)" >&2; exit 2; }
      done
      ;;
    --dry-run) dry=1 ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$self"; exit 0 ;;
    *) echo "gpu-check: unknown argument $a" >&2; exit 2 ;;
    esac
  done
  [[ $seconds =~ ^[0-9]+$ && $total =~ ^[0-9]+$ ]] ||
    { echo "gpu-check: --seconds and --total take whole seconds" >&2; exit 2; }
  for a in timeout tar gzip "$python"; do
    command -v "$a" >/dev/null || die "$a is not on the PATH"
  done
  check_carry $dry
  local extra
  extra=$(cuda_libs)
  cleave_env=(env "LD_LIBRARY_PATH=$carry/lib${extra:+:$extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  local title
  title="GPU check, $(date -u +%FT%TZ) on $(uname -n); $(cat "$carry/PREPARED")"

  if [ $dry = 1 ]; then
    echo "gpu-check: dry run: $carry is complete ($(wc -l <"$carry/MANIFEST.sha256") files, $(du -sh "$carry" | cut -f1)); $(cat "$carry/PREPARED")"
    echo "gpu-check: cleave-train and cleave-bench find their libraries"
    echo "gpu-check: every artifact's host code is portable (an x86-64 level, no AVX-512 or AMX)"
    local glibc
    glibc=$(objdump -T "$carry"/lib/*.so* "$train" "$bench" 2>/dev/null |
      grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n -u | tail -1)
    echo "gpu-check: the carried binaries need ${glibc:-an unknown} or later"
    echo "gpu-check: cuBLASLt/cuDNN/NCCL would be looked for in: ${extra:-(no CUDA library folder here)}"
    for a in nvidia-smi compute-sanitizer; do
      echo "gpu-check: $a: $(command -v "$a" || echo "not on the PATH here (its rows say skipped)")"
    done
    if [ -n "$dest" ]; then open_results "$dest" "$title (dry run: the plan)"; else logs=OUT/logs; fi
    mode=plan run_end=$(($(date +%s) + total))
    echo "gpu-check: the plan (each step's limit; a stage's steps share its budget, the run --total=$total s):"
    checks
    echo "gpu-check: the stages' budgets add up to $planned s; --total cuts the run at $total s"
    [ -n "$dest" ] && { archive; echo "gpu-check: plan written to $results"; }
    exit 0
  fi

  [ -n "$dest" ] || die "give a results folder: --out=DIR (with the device tool, --out=\$OUT/gpu-check)"
  grep -q 'cuda_artifacts=1' "$carry/PREPARED" || die "$carry was prepared with --cpu-only: no cuda artifacts"
  open_results "$dest" "$title"
  echo "## Plan" >>"$results"
  mode=plan run_end=$(($(date +%s) + total))
  checks >/dev/null
  printf '\n## Rows\n\n| check | what | measured | result |\n|---|---|---|---|\n' >>"$results"
  echo "gpu-check: $title"
  echo "gpu-check: results in $results (the plan: stages' budgets $planned s, --total $total s), logs in $logs and $out/logs.tar.gz"
  echo "| check | what | measured | result |"
  echo "|---|---|---|---|"
  mode=run run_end=$(($(date +%s) + total))
  checks
  local summary
  summary=$(grep -c '^| .* | \(PASS\|FAIL\|TIMEOUT\|SKIPPED\|INFO\) |$' "$results")
  echo "gpu-check: done: $summary rows ($(grep -o '| [A-Z]* |$' "$results" | sort | uniq -c | awk '{printf "%s%s %s", n++ ? ", " : "", $1, $3}')); $([ $failed = 0 ] && echo "all passed" || echo "FAIL or TIMEOUT rows above")" |
    tee -a "$results"
  archive
  exit $failed
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi

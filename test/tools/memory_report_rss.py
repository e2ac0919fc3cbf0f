#!/usr/bin/env python3
"""The memory report against measured peak RSS (issue 21, item 1).

For each model, compiles an artifact, runs it in cleave-bench (a few
windows) and compares what the session cost, measured as the process's peak
resident set (VmHWM) less its resident set just before the session was
created, with the manifest's memory report (`memory.total`):

    0.9 * report <= measured <= 1.1 * report + FIXED_OVERHEAD

FIXED_OVERHEAD is what the report says it leaves out (docs/design/
memory.md): the runtime's and oneDNN's code pages first touched, oneDNN's
JIT-compiled kernels and scratchpads, OpenMP. Measured on AMD EPYC (Zen 4,
AVX-512) in docs/design/memory.md: 2 to 4 MiB for GEMM models, 8 MiB for
LeNet, 17 MiB for resnet18.

    memory_report_rss.py CLEAVE_COMPILE CLEAVE_BENCH WORKDIR [--torch]

--torch adds resnet18 (3x32x32; at micro-batch 8, and planned for a
global batch of 512 in 400 MiB), exported from torchvision through
bench/real_models.py (left out, with a note, where torchvision is missing,
unless CLEAVE_REQUIRE_TORCH=1). Prints one row per model; exits 1 if any is outside.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXED_OVERHEAD_MIB = 16.0
MIB = 1024.0 * 1024.0


def mlp_source(dims):
    """An nn-dialect MLP with ReLUs between the layers."""
    args = [f'    %x: tensor<?x{dims[0]}xf32> {{train.input = "x"}}']
    body, prev = [], "%x"
    for i, (inn, out) in enumerate(zip(dims, dims[1:])):
        args.append(f'    %w{i}: tensor<{out}x{inn}xf32> {{train.param = '
                    f'"fc{i}.weight", train.init = #train.init<kaiming_uniform>}}')
        args.append(f'    %b{i}: tensor<{out}xf32> {{train.param = "fc{i}.bias",'
                    f' train.init = #train.init<fan_in_uniform, {float(inn)}>}}')
        body.append(f"  %l{i} = nn.linear {prev}, %w{i}, %b{i} : "
                    f"tensor<?x{inn}xf32>, tensor<{out}x{inn}xf32>, "
                    f"tensor<{out}xf32> -> tensor<?x{out}xf32>")
        prev = f"%l{i}"
        if i + 2 < len(dims):
            body.append(f"  %r{i} = nn.relu {prev} : tensor<?x{out}xf32>")
            prev = f"%r{i}"
    return ("func.func @forward(\n" + ",\n".join(args) + ")\n"
            f"    -> tensor<?x{dims[-1]}xf32> {{\n" + "\n".join(body) +
            f"\n  return {prev} : tensor<?x{dims[-1]}xf32>\n}}\n")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    compiler, bench, workdir = sys.argv[1:4]
    with_torch = "--torch" in sys.argv[4:]
    os.makedirs(workdir, exist_ok=True)

    # About 20M parameters: 80 MiB of f32 weights, as many of accumulators.
    big = os.path.join(workdir, "mlp20m.mlir")
    with open(big, "w") as f:
        f.write(mlp_source([784, 4096, 4096, 10]))
    # (name, source, options, budget in MiB or None). The planned case lets
    # cleave-compile choose the micro-batch for a global batch of 512 in
    # 200 MiB (--global-batch, --memory-budget): the session must then use
    # no more than that.
    cases = [
        ("mlp20m planned", big, ["--global-batch=512",
                                 "--memory-budget=200MiB", "--optimizer=sgd"]),
        ("mlp20m adam b8", big, ["--micro-batch=8", "--optimizer=adam"]),
        ("mlp20m bf16 b8", big, ["--micro-batch=8", "--precision=bf16"]),
        ("lenet b32", os.path.join(ROOT, "examples", "lenet.mlir"),
         ["--micro-batch=32", "--optimizer=momentum"]),
    ]
    cases = [c + ((200.0,) if "planned" in c[0] else (None,)) for c in cases]
    if with_torch:
        try:
            import torch  # noqa: F401
            import torchvision  # noqa: F401
        except ImportError as e:
            if os.environ.get("CLEAVE_REQUIRE_TORCH") == "1":
                sys.exit(f"memory_report_rss: {e} (scripts/setup.sh installs "
                         "python3-torch and python3-torchvision)")
            print(f"note: no resnet18 row: {e}")
            with_torch = False
    if with_torch:
        onnx = os.path.join(workdir, "resnet18.onnx")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(ROOT, "bench", "real_models.py"),
                        "--export", "resnet18", onnx], check=True,
                       stderr=subprocess.DEVNULL)
        cases.append(("resnet18 b8", onnx,
                      ["--micro-batch=8", "--optimizer=adam"], None))
        # A plan that recomputes: 171 x 3 (the last of each window 170)
        # with --remat=auto, the planner's choice; any choice must keep
        # within the budget.
        cases.append(("resnet18 planned", onnx,
                      ["--global-batch=512", "--memory-budget=400MiB",
                       "--optimizer=adam"], 400.0))

    env = dict(os.environ, OMP_NUM_THREADS="1")
    failed = False
    print(f"{'model':<16} {'report':>10} {'measured':>10} {'allowed':>20}")
    for name, source, options, budget in cases:
        artifact = os.path.join(workdir, name.replace(" ", "_") + ".cleave")
        plan = subprocess.run([compiler, source, "--loss=cross-entropy",
                               *options, "-o", artifact], check=True,
                              stderr=subprocess.DEVNULL, capture_output=False,
                              stdout=subprocess.PIPE, text=True).stdout
        if budget is not None:
            print(plan, end="")
        out = subprocess.run([bench, artifact, "--accumulate=2",
                              "--seconds=0"], check=True, env=env,
                             capture_output=True, text=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        report = row["memory_report_mib"]
        measured = row["peak_rss_mib"] - row["rss_before_session_mib"]
        low, high = 0.9 * report, 1.1 * report + FIXED_OVERHEAD_MIB
        ok = low <= measured <= high
        failed |= not ok
        print(f"{name:<16} {report:>7.1f} MiB {measured:>6.1f} MiB "
              f"{low:>8.1f} to {high:>6.1f} MiB  {'ok' if ok else 'OUTSIDE'}")
        if budget is not None:
            fits = measured <= budget
            failed |= not fits
            print(f"{'':<16} the session used {measured:.1f} MiB of its "
                  f"{budget:.0f} MiB budget: "
                  f"{'ok' if fits else 'OVER BUDGET'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

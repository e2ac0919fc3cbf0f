#!/usr/bin/env python3
"""bf16 mixed precision against f32: Cleave's samples/s with
`--precision=bf16` and with the default f32, same model, micro-batch, N and
thread count, in the same run (cleave-bench drives each artifact as
cleave-train does).

    /usr/bin/python3 bench/bf16.py --build=build --threads=1 --seconds=4
    /usr/bin/python3 bench/bf16.py --build=build --threads=1 --seconds=2 \
        --rounds=5      # a noisy VM: medians of alternated rounds

Models: examples/mlp.mlir, examples/lenet.mlir and the ONNX transformer test
model (test/Frontend/Onnx/Inputs/make_model.py torch_block17), at
micro-batches 32 and 256, N = 4; PyTorch's own loop on the same models
(bench/pytorch_ref.py) in float32 and under torch.autocast(dtype=bfloat16)
in the same run, and for the MLP the GEMM-bound limit of each artifact
(cleave-roofline), with Cleave's share of it also measured paired
(cleave-roofline --paired: a session and the GEMMs alternated). Then bench/real_models.py's resnet18 (3x32x32) and GPT
decoder (width 128, 64 byte tokens) at micro-batch 32 (--real-models=""
leaves them out), against PyTorch's loop on the same modules. Prints a Markdown table with the CPU's name and whether it
has AVX512-BF16 and AMX (without AVX512-BF16 there is nothing to measure:
the compiler refuses bf16 for such a target).
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def has_flag(flag):
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return f" {flag}" in line
    return False


def has_bf16():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return " avx512_bf16" in line
    return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--accumulate", type=int, default=4)
    p.add_argument("--micro-batches", default="32,256")
    p.add_argument("--rounds", type=int, default=1,
                   help="time every configuration this many times, "
                   "alternating their order, and report medians: on a VM "
                   "whose neighbours come and go, ratios of runs taken "
                   "minutes apart mean little")
    p.add_argument("--real-models", default="resnet18,gpt",
                   help="bench/real_models.py models, at micro-batch 32")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds takes a whole number from 1")
    if not has_bf16():
        sys.exit("bf16.py: this CPU has no AVX512-BF16; bf16 artifacts cannot "
                 "run here")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    bin_dir = os.path.join(a.build, "bin")
    real = os.path.join(ROOT, "bench", "real_models.py")

    def samples_per_second(command):
        out = subprocess.run(command, env=env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])["samples_per_second"]

    def compile_both(tmp, source, b):
        """`source` compiled in f32 and in bf16: {precision: artifact}."""
        artifacts = {}
        for precision in ("f32", "bf16"):
            out = os.path.join(tmp, f"m_{precision}.cleave")
            subprocess.run(
                [os.path.join(bin_dir, "cleave-compile"), source,
                 f"--micro-batch={b}", f"--accumulate={a.accumulate}",
                 "--optimizer=sgd", f"--precision={precision}", "-o", out],
                check=True, capture_output=True)
            artifacts[precision] = os.path.abspath(out)
        return artifacts

    def measure(name, b, artifacts, torch_command, with_limit):
        """Each configuration timed once per round, the rounds alternating
        their order, so that every ratio is taken between runs minutes
        apart at most: {key: [one value per round]}."""
        jobs = []
        for precision, artifact in artifacts.items():
            if with_limit:
                # The GEMM-bound limit (bench/README.md): B over the sum of
                # the micro-step's GEMMs timed alone, hot in cache; a bf16
                # GEMM's parameter operand from the layout cache, as in a
                # session. --paired also times a session and the GEMMs
                # alternately, ~10 ms apart: the median of those pairs'
                # ratios (`_paired`), which a VM's drift from one second to
                # the next moves far less than the ratio of separate runs.
                def limit(artifact=artifact, precision=precision):
                    out = json.loads(subprocess.run(
                        [os.path.join(bin_dir, "cleave-roofline"), artifact,
                         "--paired", f"--seconds={a.seconds}"],
                        env=env, check=True, capture_output=True,
                        text=True).stdout)
                    return {precision + "_limit":
                            b / out["micro_step_gemm_ms"] * 1e3,
                            precision + "_paired":
                            out["paired"]["ratio_median"]}
                jobs.append((precision + "_limit", limit))
            jobs.append((precision, lambda artifact=artifact: (
                samples_per_second([
                    os.path.join(bin_dir, "cleave-bench"), artifact,
                    f"--accumulate={a.accumulate}",
                    f"--seconds={a.seconds}"]))))
        for mode, flags in (("torch", []), ("autocast", ["--autocast"])):
            jobs.append((mode, lambda flags=flags: samples_per_second(
                torch_command + flags)))
        speed = collections.defaultdict(list)
        for r in range(a.rounds):
            for key, job in (jobs if r % 2 == 0 else reversed(jobs)):
                load = os.getloadavg()[0]
                result = job()
                for k, v in (result.items() if isinstance(result, dict)
                             else [(key, result)]):
                    speed[k].append(v)
                    print(f"  [load {load:.1f}] {name} b{b} {k}: "
                          + (f"{v:.0%} of the limit" if k.endswith("_paired")
                             else f"{v:.0f} samples/s"), file=sys.stderr)
        return speed

    with tempfile.TemporaryDirectory() as tmp:
        block = os.path.join(tmp, "block.onnx")
        subprocess.run(["/usr/bin/python3", os.path.join(
            ROOT, "test", "Frontend", "Onnx", "Inputs", "make_model.py"),
            "torch_block17", block], check=True)
        models = [("MLP 784-512-512-10", os.path.join(ROOT, "examples",
                                                        "mlp.mlir")),
                  ("LeNet", os.path.join(ROOT, "examples", "lenet.mlir")),
                  ("transformer block (d 16, T 8)", block)]
        rows = []
        for name, source in models:
            for b in [int(x) for x in a.micro_batches.split(",")]:
                reference = {"MLP 784-512-512-10": "mlp", "LeNet": "lenet"}.get(
                    name, "transformer")
                rows.append((name, b, measure(
                    name, b, compile_both(tmp, source, b), [
                        "/usr/bin/python3",
                        os.path.join(ROOT, "bench", "pytorch_ref.py"),
                        reference, f"--micro-batch={b}",
                        f"--accumulate={a.accumulate}",
                        f"--threads={a.threads}", f"--seconds={a.seconds}"],
                    with_limit=name.startswith("MLP"))))
        names = {"resnet18": "resnet18 (3x32x32)",
                 "encoder": "TransformerEncoder (d 128)",
                 "gpt": "GPT decoder (d 128, T 64)"}
        for model in [m for m in a.real_models.split(",") if m]:
            onnx_path = os.path.join(tmp, model + ".onnx")
            subprocess.run(["/usr/bin/python3", real, "--export", model,
                            onnx_path], env=env, check=True)
            rows.append((names[model], 32, measure(
                names[model], 32, compile_both(tmp, onnx_path, 32), [
                    "/usr/bin/python3", real, "--torch", model,
                    f"--seconds={a.seconds}"], with_limit=False)))
    def median(values):
        return statistics.median(values)

    def ratio(s, x, y, percent=False):
        """The median over rounds of x / y, each round's own ratio; with
        several rounds, their range too."""
        r = [p / q for p, q in zip(s[x], s[y])]
        if percent:
            text = f"{median(r):.0%}"
            spread = f" ({min(r) * 100:.0f}-{max(r):.0%})"
        else:
            text = f"{median(r):.2f} ×"
            spread = f" ({min(r):.2f}-{max(r):.2f})"
        return text + spread if len(r) > 1 else text

    amx = "AMX" if has_flag("amx_bf16") else "no AMX"
    print(f"\n{cpu_name()}, AVX512-BF16, {amx}, {a.threads} thread(s), N = "
          f"{a.accumulate}" + (f"; medians of {a.rounds} alternated rounds, "
                               "ratios per round (range)" if a.rounds > 1
                               else "") + "\n")
    print("| model | micro-batch | Cleave f32 | Cleave bf16 | bf16 / f32 | "
          "PyTorch f32 | PyTorch autocast bf16 | Cleave bf16 / autocast |")
    print("|---|---|---|---|---|---|---|---|")
    for name, b, s in rows:
        print(f"| {name} | {b} | {median(s['f32']):,.0f} | "
              f"{median(s['bf16']):,.0f} | {ratio(s, 'bf16', 'f32')} | "
              f"{median(s['torch']):,.0f} | {median(s['autocast']):,.0f} | "
              f"{ratio(s, 'bf16', 'autocast')} |")
    limits = [(name, b, s) for name, b, s in rows if "f32_limit" in s]
    if limits:
        def paired(s, key):
            v = s[key]
            return f"{median(v):.0%}" + (
                f" ({min(v) * 100:.0f}-{max(v):.0%})" if len(v) > 1 else "")

        print("\n| model | micro-batch | f32 GEMM-bound limit | Cleave f32 / "
              "limit | paired | bf16 GEMM-bound limit | Cleave bf16 / limit "
              "| paired |")
        print("|---|---|---|---|---|---|---|---|")
        for name, b, s in limits:
            print(f"| {name} | {b} | {median(s['f32_limit']):,.0f} | "
                  f"{ratio(s, 'f32', 'f32_limit', True)} | "
                  f"{paired(s, 'f32_paired')} | "
                  f"{median(s['bf16_limit']):,.0f} | "
                  f"{ratio(s, 'bf16', 'bf16_limit', True)} | "
                  f"{paired(s, 'bf16_paired')} |")
        print("\n(paired: `cleave-roofline --paired`, a session and the "
              "GEMMs timed alternately, the median ratio of the pairs; per "
              "round, then the median and range over rounds)")


if __name__ == "__main__":
    main()

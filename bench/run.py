#!/usr/bin/python3
"""Cleave against PyTorch on the same machine, in one run.

For the MLP (examples/mlp.mlir) and LeNet (examples/lenet.mlir), with the
same micro-batch, window N and thread count on both sides:

* samples/s of the steady training loop, ms per micro-step and per apply
  step, peak RSS (cleave-bench, bench/pytorch_ref.py);
* the MLP's GEMM-bound limit: the micro-step's GEMMs timed alone through the
  same oneDNN kernels (cleave-roofline), and the fraction of it reached;
* peak RSS at N = 1 and N = 32;
* cleave-compile's wall time for the MLP.

    /usr/bin/python3 bench/run.py [--build=build] [--threads=1] [--seconds=6]

Run it on an idle machine: it prints the load average before each
measurement. Results go to stdout as a Markdown table and to
bench/results/latest.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load():
    return os.getloadavg()[0]


def run_json(cmd, env):
    print(f"  [load {load():.1f}] {' '.join(cmd)}", file=sys.stderr, flush=True)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def compile_model(build, model, b, n, out):
    cmd = [os.path.join(build, "bin", "cleave-compile"),
           os.path.join(ROOT, "examples", f"{model}.mlir"),
           f"--micro-batch={b}", f"--accumulate={n}", "--optimizer=sgd",
           "-o", out]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--accumulate", type=int, default=4)
    a = p.parse_args()
    t = str(a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t,
               MKL_NUM_THREADS=t)
    bench = os.path.join(a.build, "bin", "cleave-bench")
    roofline = os.path.join(a.build, "bin", "cleave-roofline")
    torch_ref = [sys.executable, os.path.join(ROOT, "bench", "pytorch_ref.py")]
    b, n = a.micro_batch, a.accumulate
    results = {"threads": a.threads, "micro_batch": b, "accumulate": n,
               "machine": os.uname().nodename, "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        compile_s = min(compile_model(a.build, "mlp", b, n,
                                      os.path.join(tmp, "c.cleave"))
                        for _ in range(3))
        results["mlp_compile_seconds"] = round(compile_s, 3)
        for model in ("mlp", "lenet"):
            art = os.path.join(tmp, f"{model}.cleave")
            compile_model(a.build, model, b, n, art)
            r = {"cleave": run_json([bench, art, f"--seconds={a.seconds}"], env),
                 "pytorch": run_json(torch_ref + [model, f"--micro-batch={b}",
                                                  f"--accumulate={n}",
                                                  f"--threads={t}",
                                                  f"--seconds={a.seconds}"], env)}
            r["speedup"] = round(r["cleave"]["samples_per_second"] /
                                 r["pytorch"]["samples_per_second"], 2)
            if model == "mlp":
                roof = run_json([roofline, art], env)
                limit = b / (roof["micro_step_gemm_ms"] / 1e3)
                r["gemm_bound_samples_per_second"] = round(limit, 1)
                r["fraction_of_gemm_bound"] = round(
                    r["cleave"]["samples_per_second"] / limit, 3)
                r["roofline"] = roof
                # Memory does not grow with the window: N = 1 against N = 32.
                for window in (1, 32):
                    art_n = os.path.join(tmp, f"mlp_n{window}.cleave")
                    compile_model(a.build, "mlp", b, window, art_n)
                    r[f"cleave_n{window}"] = run_json(
                        [bench, art_n, f"--seconds={a.seconds / 2}"], env)
                    r[f"pytorch_n{window}"] = run_json(
                        torch_ref + ["mlp", f"--micro-batch={b}",
                                     f"--accumulate={window}", f"--threads={t}",
                                     f"--seconds={a.seconds / 2}"], env)
            results["models"][model] = r

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "latest.json"), "w") as f:
        json.dump(results, f, indent=2)

    print(f"\nthreads {a.threads}, micro-batch {b}, N {n}; "
          f"cleave-compile (MLP): {results['mlp_compile_seconds']} s\n")
    print("| model | | samples/s | ms/micro-step | ms/apply | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for model, r in results["models"].items():
        for side in ("cleave", "pytorch"):
            s = r[side]
            print(f"| {model} | {side} | {s['samples_per_second']:.0f} | "
                  f"{s['ms_per_micro_step']:.3f} | {s['ms_per_apply_step']:.3f} | "
                  f"{s['peak_rss_mib']:.1f} |")
        print(f"| {model} | speedup | {r['speedup']}x | | | |")
    m = results["models"]["mlp"]
    print(f"\nMLP GEMM-bound limit: {m['gemm_bound_samples_per_second']:.0f} "
          f"samples/s; Cleave reaches {m['fraction_of_gemm_bound'] * 100:.1f}%")
    print(f"MLP peak RSS, N=1 vs N=32: Cleave {m['cleave_n1']['peak_rss_mib']} vs "
          f"{m['cleave_n32']['peak_rss_mib']} MiB; PyTorch "
          f"{m['pytorch_n1']['peak_rss_mib']} vs {m['pytorch_n32']['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()

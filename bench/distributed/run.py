#!/usr/bin/python3
"""Data-parallel windows: reducing once per window against every micro-step.

Compiles a model twice with --reduce=mean (the default, which reduces the
accumulated gradients once per window, and --reduce-every-micro-step, which
sums each micro-step's gradients across ranks before accumulating them),
builds bench/distributed/dp_bench.cpp against the build's libcleave_runtime,
and runs it under mpirun for R = 1, 2, 4 ranks and N = 1, 4, 16 micro-steps
per window:

    /usr/bin/python3 bench/distributed/run.py [--build=build] \
        [--model=mlp] [--micro-batch=8] [--threads=1]

Prints a Markdown table (time per window: median and best over the timed
windows; bytes each rank sends per window, mean over ranks) and writes the
raw records to bench/distributed/results/latest.json. It prints the load
average before every run: on a shared machine, read the best times.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load():
    return os.getloadavg()[0]


def build_driver(build, out):
    cmd = ["c++", "-O2", "-std=c++17", "-Wall", "-Wextra",
           "-I", os.path.join(ROOT, "runtime", "include"),
           os.path.join(HERE, "dp_bench.cpp"), "-o", out,
           "-L", os.path.join(build, "lib"),
           "-Wl,-rpath," + os.path.join(build, "lib"), "-lcleave_runtime"]
    subprocess.run(cmd, check=True)


def compile_model(build, model, micro_batch, extra, out):
    cmd = [os.path.join(build, "bin", "cleave-compile"),
           os.path.join(ROOT, "examples", f"{model}.mlir"),
           f"--micro-batch={micro_batch}", "--accumulate=1",
           "--optimizer=sgd", "--reduce=mean", *extra, "-o", out]
    subprocess.run(cmd, check=True)


def run(driver, artifact, ranks, n, windows, threads):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe",
           "-np", str(ranks), driver, artifact, f"--accumulate={n}",
           f"--windows={windows}", "--warmup=2", f"--threads={threads}"]
    print(f"  [load {load():.1f}] {' '.join(cmd[4:])}", file=sys.stderr,
          flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    build = os.path.abspath(args.build)

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        driver = os.path.join(tmp, "dp_bench")
        build_driver(build, driver)
        artifacts = {}
        for mode, extra in (("window", []),
                            ("micro-step", ["--reduce-every-micro-step"])):
            artifacts[mode] = os.path.join(tmp, f"{mode}.cleave")
            compile_model(build, args.model, args.micro_batch, extra,
                          artifacts[mode])
        for ranks in (1, 2, 4):
            for n in (1, 4, 16):
                # About 96 micro-steps per configuration.
                windows = max(6, 96 // n)
                for mode in ("window", "micro-step"):
                    r = run(driver, artifacts[mode], ranks, n, windows,
                            args.threads)
                    r["reduce"] = mode
                    r["model"] = args.model
                    results.append(r)

    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "latest.json"), "w") as f:
        json.dump(results, f, indent=1)

    print(f"{args.model}, micro-batch {args.micro_batch}, "
          f"{args.threads} thread(s) per rank\n")
    print("| R | N | reduce | window ms (median) | window ms (best) "
          "| bytes per window per rank |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['ranks']} | {r['accumulate']} | {r['reduce']} "
              f"| {r['window_ms_median']:.1f} | {r['window_ms_best']:.1f} "
              f"| {r['bytes_per_window_mean']:,.0f} |")


if __name__ == "__main__":
    main()

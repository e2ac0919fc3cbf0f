#!/usr/bin/python3
# ===- cleave_plot_test.py - cleave-train --plot and cleave-plot ------------===#
#
# Trains a small run with cleave-train --plot=run.png and a cosine schedule,
# then draws its metrics again with cleave-plot into an SVG, and checks the
# files: a PNG signature, dimensions and a size that a blank canvas does not
# reach; an SVG that parses as XML and holds the axes' labels as text. Also:
# the metrics of a running run (a half-written last line), a file that is
# not metrics, and the plot cleave-train draws when training fails.
#
# Usage: cleave_plot_test.py CLEAVE_TRAIN ARTIFACT DATA_DIR WORK_DIR CLEAVE_PLOT
#
# ===------------------------------------------------------------------------===#

import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

train, artifact, data, work, plot = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def check_png(path, what):
    with open(path, "rb") as f:
        png = f.read()
    check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: no PNG signature")
    width, height = struct.unpack(">II", png[16:24])
    check(width >= 800 and height >= 500,
          f"{what}: {width}x{height} pixels, expected at least 800x500")
    # Four panels of lines and text; a blank 1100x750 canvas compresses to
    # a few kilobytes.
    check(len(png) > 30000, f"{what}: only {len(png)} bytes")


def svg_text(path):
    root = ET.parse(path).getroot()
    return [t.strip() for e in root.iter() if e.tag.endswith("text")
            for t in e.itertext() if t.strip()]


metrics = os.path.join(work, "run.jsonl")
png = os.path.join(work, "run.png")
r = run([train, artifact, "--data=" + data, "--epochs=2", "--seed=1",
         "--limit-train=600", "--limit-test=128", "--accumulate=2",
         "--threads=1", "--lr=0.1", "--lr-schedule=cosine", "--warmup-steps=5",
         "--metrics=" + metrics, "--plot=" + png, "--progress=none"])
check(r.returncode == 0, f"cleave-train --plot failed: {r.returncode}\n"
      f"{r.stdout}{r.stderr}")
check("plotted the metrics in " + png in r.stdout, "no 'plotted' line:\n" +
      r.stdout)
check(os.path.exists(png), png + " was not written")
if os.path.exists(png):
    check_png(png, png)

svg = os.path.join(work, "run.svg")
r = run([plot, metrics, "-o", svg])
check(r.returncode == 0, f"cleave-plot failed: {r.returncode}\n{r.stderr}")
if r.returncode == 0:
    text = svg_text(svg)
    for label in ("optimizer step", "training loss", "learning rate", "epoch",
                  "test loss", "test accuracy (%)"):
        check(label in text, f"{svg}: no text '{label}' (has {text[:40]})")
    check(any("cosine schedule" in t for t in text),
          f"{svg}: the title does not name the schedule")

# A running run: the trainer may be half-way through its last line.
with open(metrics) as f:
    lines = f.read().splitlines(keepends=True)
running = os.path.join(work, "running.jsonl")
with open(running, "w") as f:
    f.writelines(lines[:12])
    f.write(lines[12][: len(lines[12]) // 2])
r = run([plot, running, "-o", os.path.join(work, "running.png")])
check(r.returncode == 0, f"cleave-plot of a running run failed:\n{r.stderr}")
if r.returncode == 0:
    check_png(os.path.join(work, "running.png"), "running.png")

# Not a metrics file: an error naming the line, and no plot.
bad = os.path.join(work, "bad.jsonl")
with open(bad, "w") as f:
    f.write('{"event": "start"}\nnot json\n{"event": "step"}\n')
r = run([plot, bad, "-o", os.path.join(work, "bad.png")])
check(r.returncode == 1 and
      f"cleave-plot: error: {bad}:2: not a JSON record" in r.stderr,
      f"bad metrics: exit {r.returncode}, {r.stderr!r}")
check(not os.path.exists(os.path.join(work, "bad.png")), "bad.png written")

# A failing run still plots what it got to.
failed_metrics = os.path.join(work, "diverged.jsonl")
failed_png = os.path.join(work, "diverged.png")
r = run([train, artifact, "--data=" + data, "--limit-train=600",
         "--limit-test=64", "--accumulate=1", "--threads=1", "--lr=1e30",
         "--metrics=" + failed_metrics, "--plot=" + failed_png,
         "--progress=none"])
check(r.returncode == 1 and "training diverged" in r.stderr,
      f"the diverging run: exit {r.returncode}, {r.stderr!r}")
check("plotted the metrics so far in " + failed_png in r.stderr,
      "no plot after the failure:\n" + r.stderr)
if os.path.exists(failed_png):
    check_png(failed_png, failed_png)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")

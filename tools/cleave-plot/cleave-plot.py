#!/usr/bin/python3
# ===- cleave-plot.py - Draw a cleave-train metrics file ---------------------===#
#
# Draws the JSON-lines metrics file of cleave-train (--metrics; the schema is
# in docs/user/cleave-train.md) into a PNG or SVG: the training loss and the
# learning rate per optimizer step, the test loss and accuracy per epoch. It
# reads finished, failed and running runs alike: the line a running trainer
# is writing may be incomplete and is skipped.
#
# Runs with Debian's python3-matplotlib (the Agg backend: no display needed).
#
# ===------------------------------------------------------------------------===#

import argparse
import json
import os
import sys

TOOL = "cleave-plot"


def fail(message):
    print(f"{TOOL}: error: {message}", file=sys.stderr)
    sys.exit(1)


def read_records(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        fail(f"{path}: cannot read the metrics file ({e.strerror})")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            # A trainer that is still running may be half-way through its
            # last line; anything else is not a metrics file.
            if number == len(lines) and not line.endswith("}"):
                continue
            fail(f"{path}:{number}: not a JSON record ({e.msg})")
        if not isinstance(record, dict) or "event" not in record:
            fail(f"{path}:{number}: not a cleave-train record (no \"event\")")
        records.append(record)
    return records


def series(records):
    """The last record of each optimizer step and of each epoch, in order."""
    steps, epochs, start = {}, {}, None
    for r in records:
        event = r["event"]
        if event == "start":
            start = r
        elif event == "step" and not r.get("skipped"):
            # A skipped window (not finite) took no step.
            steps[r["step"]] = r
        elif event == "epoch":
            epochs[r["epoch"]] = r
    return ([steps[k] for k in sorted(steps)], [epochs[k] for k in sorted(epochs)],
            start)


def schedule_name(records):
    for r in reversed(records):
        if "lr_schedule" in r:
            s = r["lr_schedule"]
            return s.get("kind", "?") + " schedule"
    return None


def draw(records, output, metrics_path):
    try:
        import matplotlib
    except ImportError:
        fail("matplotlib is not installed (Debian: apt-get install "
             "python3-matplotlib)")
    matplotlib.use("Agg")
    # Text stays text in SVG: searchable, and smaller than glyph outlines.
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    steps, epochs, start = series(records)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    (loss_ax, lr_ax), (test_loss_ax, accuracy_ax) = axes

    def empty(ax, what):
        ax.text(0.5, 0.5, what, ha="center", va="center",
                transform=ax.transAxes, color="gray")

    loss_ax.set_title("training loss per optimizer step")
    loss_ax.set_xlabel("optimizer step")
    loss_ax.set_ylabel("training loss")
    if steps:
        loss_ax.plot([r["step"] for r in steps], [r["loss"] for r in steps],
                     linewidth=0.8, label="window mean")
        if epochs:
            loss_ax.plot([r["step"] for r in epochs],
                         [r["train_loss"] for r in epochs], "o",
                         label="epoch mean")
        loss_ax.legend(loc="upper right")
    else:
        empty(loss_ax, "no optimizer step yet")

    lr_ax.set_title("learning rate")
    lr_ax.set_xlabel("optimizer step")
    lr_ax.set_ylabel("learning rate")
    with_lr = [r for r in steps if "lr" in r]
    if with_lr:
        lr_ax.plot([r["step"] for r in with_lr], [r["lr"] for r in with_lr],
                   color="tab:green")
        lr_ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    else:
        empty(lr_ax, "no learning rate recorded" if steps
              else "no optimizer step yet")

    test_loss_ax.set_title("test loss per epoch")
    test_loss_ax.set_xlabel("epoch")
    test_loss_ax.set_ylabel("test loss")
    accuracy_ax.set_title("test accuracy per epoch")
    accuracy_ax.set_xlabel("epoch")
    accuracy_ax.set_ylabel("test accuracy (%)")
    if epochs:
        xs = [r["epoch"] for r in epochs]
        test_loss_ax.plot(xs, [r["test_loss"] for r in epochs], "o-",
                          color="tab:red")
        accuracy_ax.plot(xs, [100 * r["test_accuracy"] for r in epochs], "o-",
                         color="tab:purple")
        for ax in (test_loss_ax, accuracy_ax):
            ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        empty(test_loss_ax, "no epoch finished yet")
        empty(accuracy_ax, "no epoch finished yet")

    title = os.path.basename(start["model"]) if start and "model" in start \
        else os.path.basename(metrics_path)
    details = []
    if start and "accumulate" in start and "micro_batch" in start:
        details.append(f"micro-batch {start['micro_batch']} x "
                       f"N {start['accumulate']}")
    schedule = schedule_name(records)
    if schedule:
        details.append(schedule)
    fig.suptitle(title + (" (" + ", ".join(details) + ")" if details else ""))
    fig.tight_layout()
    try:
        fig.savefig(output)
    except OSError as e:
        fail(f"{output}: cannot write the plot ({e.strerror})")
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(
        prog=TOOL,
        description="Draws a cleave-train metrics file (--metrics) into a "
        "PNG or SVG: training loss and learning rate per optimizer step, test "
        "loss and accuracy per epoch. Works on running runs too.")
    parser.add_argument("metrics", help="the metrics file (JSON lines)")
    parser.add_argument("-o", "--output", required=True,
                        help="the image to write: FILE.png or FILE.svg")
    args = parser.parse_args()
    if not args.output.endswith((".png", ".svg")):
        fail(f"{args.output}: the output must end in .png or .svg")
    records = read_records(args.metrics)
    if not records:
        fail(f"{args.metrics}: no records (is it a cleave-train --metrics "
             "file?)")
    draw(records, args.output, args.metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())

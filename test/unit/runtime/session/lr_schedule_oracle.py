#!/usr/bin/python3
# ===- lr_schedule_oracle.py - Cleave's schedules against PyTorch's --------===#
#
# Calls cleave_lr_schedule_value of libcleave_runtime.so (through ctypes) at
# every step of a run and compares it with PyTorch's own schedulers, stepped
# once per optimizer step as a training loop does: LinearLR (warmup),
# CosineAnnealingLR, StepLR and PolynomialLR chained after it with
# SequentialLR, and OneCycleLR. Usage: lr_schedule_oracle.py LIBRUNTIME.so
# Exit status 77 (skipped) without torch, unless CLEAVE_REQUIRE_TORCH=1.
#
# ===------------------------------------------------------------------------===#

import ctypes
import os
import sys
import warnings

try:
    import torch
except ImportError:
    if os.environ.get("CLEAVE_REQUIRE_TORCH") == "1":
        print("error: torch is required (CLEAVE_REQUIRE_TORCH=1) but cannot "
              "be imported", file=sys.stderr)
        sys.exit(1)
    print("skipped: no torch")
    sys.exit(77)

# SequentialLR steps its schedulers with an epoch argument, which PyTorch
# warns about; the values are what is compared.
warnings.filterwarnings("ignore", category=UserWarning)

CONSTANT, COSINE, STEP, POLYNOMIAL, ONE_CYCLE = range(5)


class Schedule(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("lr", ctypes.c_double),
                ("min_lr", ctypes.c_double), ("warmup_steps", ctypes.c_int64),
                ("warmup_start_factor", ctypes.c_double),
                ("total_steps", ctypes.c_int64), ("step_size", ctypes.c_int64),
                ("gamma", ctypes.c_double), ("power", ctypes.c_double)]


lib = ctypes.CDLL(sys.argv[1])
lib.cleave_lr_schedule_value.argtypes = [
    ctypes.POINTER(Schedule), ctypes.c_int64, ctypes.POINTER(ctypes.c_double)]
lib.cleave_lr_schedule_value.restype = ctypes.c_int
lib.cleave_lr_schedule_init.argtypes = [ctypes.POINTER(Schedule)]
lib.cleave_last_error_message.restype = ctypes.c_char_p


def cleave_lrs(steps, kind, **fields):
    s = Schedule()
    lib.cleave_lr_schedule_init(ctypes.byref(s))
    s.kind = kind
    for name, value in fields.items():
        setattr(s, name, value)
    out = []
    for step in range(steps):
        lr = ctypes.c_double()
        status = lib.cleave_lr_schedule_value(ctypes.byref(s), step,
                                              ctypes.byref(lr))
        if status != 0:
            sys.exit("cleave_lr_schedule_value failed: " +
                     lib.cleave_last_error_message().decode())
        out.append(lr.value)
    return out


def torch_lrs(steps, lr, make):
    """The lr of each optimizer step: read before optimizer.step()."""
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=lr)
    scheduler = make(optimizer)
    out = []
    for _ in range(steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def warmup_then(warmup, start_factor, after):
    lr_sched = torch.optim.lr_scheduler
    return lambda opt: lr_sched.SequentialLR(
        opt, [lr_sched.LinearLR(opt, start_factor, 1.0, total_iters=warmup),
              after(opt)], milestones=[warmup])


failures = 0


def compare(name, cleave, reference):
    global failures
    worst = max(abs(a - b) / max(abs(b), 1e-12)
                for a, b in zip(cleave, reference))
    if len(cleave) != len(reference) or worst > 1e-9:
        failures += 1
        for step, (a, b) in enumerate(zip(cleave, reference)):
            if abs(a - b) > 1e-9 * max(abs(b), 1e-12):
                print(f"{name}: step {step}: cleave {a!r}, torch {b!r}")
                break
    else:
        print(f"{name}: {len(cleave)} steps agree (worst relative "
              f"difference {worst:.1e})")


sched = torch.optim.lr_scheduler
T = 60
compare("linear warmup (LinearLR)",
        cleave_lrs(T, CONSTANT, lr=0.4, warmup_steps=8,
                   warmup_start_factor=0.25),
        torch_lrs(T, 0.4, lambda o: sched.LinearLR(o, 0.25, 1.0,
                                                   total_iters=8)))
# Up to and including total_steps, where PyTorch's cosine reaches eta_min
# (past it PyTorch rises again; Cleave stays at the floor).
compare("cosine (CosineAnnealingLR)",
        cleave_lrs(T + 1, COSINE, lr=0.3, total_steps=T, min_lr=0.003),
        torch_lrs(T + 1, 0.3, lambda o: sched.CosineAnnealingLR(
            o, T_max=T, eta_min=0.003)))
compare("warmup + cosine (SequentialLR)",
        cleave_lrs(T + 1, COSINE, lr=0.3, warmup_steps=7,
                   warmup_start_factor=0.1, total_steps=T, min_lr=0.01),
        torch_lrs(T + 1, 0.3, warmup_then(7, 0.1, lambda o:
                  sched.CosineAnnealingLR(o, T_max=T - 7, eta_min=0.01))))
compare("step (StepLR)",
        cleave_lrs(T, STEP, lr=0.5, step_size=7, gamma=0.3),
        torch_lrs(T, 0.5, lambda o: sched.StepLR(o, step_size=7, gamma=0.3)))
compare("warmup + step (SequentialLR)",
        cleave_lrs(T, STEP, lr=0.5, warmup_steps=5, warmup_start_factor=0.2,
                   step_size=4, gamma=0.5),
        torch_lrs(T, 0.5, warmup_then(5, 0.2, lambda o:
                  sched.StepLR(o, step_size=4, gamma=0.5))))
for power in (1.0, 2.0, 0.5):
    compare(f"polynomial power {power} (PolynomialLR)",
            cleave_lrs(T, POLYNOMIAL, lr=0.2, total_steps=40, power=power),
            torch_lrs(T, 0.2, lambda o: sched.PolynomialLR(
                o, total_iters=40, power=power)))
for total, warmup in ((100, 30), (37, 11), (10, 2)):
    # PyTorch's defaults: div_factor 25, final_div_factor 1e4.
    compare(f"one-cycle {warmup}/{total} (OneCycleLR)",
            cleave_lrs(total, ONE_CYCLE, lr=0.1, total_steps=total,
                       warmup_steps=warmup, warmup_start_factor=1 / 25,
                       min_lr=0.1 / 25 / 1e4),
            torch_lrs(total, 0.1, lambda o: sched.OneCycleLR(
                o, max_lr=0.1, total_steps=total, pct_start=warmup / total,
                cycle_momentum=False)))

sys.exit(1 if failures else 0)

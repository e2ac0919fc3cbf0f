//===- LrSchedule.cpp - Learning-rate schedules ---------------------------===//
//
// Each kind is the closed form of its PyTorch scheduler (the
// `_get_closed_form_lr` of LinearLR, CosineAnnealingLR, StepLR and
// PolynomialLR; OneCycleLR's `get_lr`, which is closed already), with a
// floor added where PyTorch has none and the value held at the floor after
// total_steps where PyTorch would cycle (cosine) or raise (one-cycle).
//
//===----------------------------------------------------------------------===//

#include "LrSchedule.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace cleave::rt {

namespace {

constexpr double kPi = 3.14159265358979323846;

/// OneCycleLR's `_annealing_cos`: from `start` at pct 0 to `end` at pct 1.
double annealCos(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1.0);
}

bool usesTotal(cleave_lr_schedule_kind kind) {
  return kind == CLEAVE_LR_COSINE || kind == CLEAVE_LR_POLYNOMIAL ||
         kind == CLEAVE_LR_ONE_CYCLE;
}

} // namespace

cleave_lr_schedule defaultLrSchedule() {
  cleave_lr_schedule s;
  s.kind = CLEAVE_LR_CONSTANT;
  s.lr = std::numeric_limits<double>::quiet_NaN();
  s.min_lr = 0.0;
  s.warmup_steps = 0;
  s.warmup_start_factor = 0.0;
  s.total_steps = 0;
  s.step_size = 1;
  s.gamma = 0.1;
  s.power = 1.0;
  return s;
}

const char *lrScheduleKindName(cleave_lr_schedule_kind kind) {
  switch (kind) {
  case CLEAVE_LR_CONSTANT:
    return "constant";
  case CLEAVE_LR_COSINE:
    return "cosine";
  case CLEAVE_LR_STEP:
    return "step";
  case CLEAVE_LR_POLYNOMIAL:
    return "polynomial";
  case CLEAVE_LR_ONE_CYCLE:
    return "one-cycle";
  }
  return nullptr;
}

std::optional<cleave_lr_schedule_kind>
parseLrScheduleKind(std::string_view name) {
  for (cleave_lr_schedule_kind kind :
       {CLEAVE_LR_CONSTANT, CLEAVE_LR_COSINE, CLEAVE_LR_STEP,
        CLEAVE_LR_POLYNOMIAL, CLEAVE_LR_ONE_CYCLE})
    if (name == lrScheduleKindName(kind))
      return kind;
  return std::nullopt;
}

Status validateLrSchedule(const cleave_lr_schedule &s) {
  // A C caller may store any int in the enum field; reading it as the C++
  // enum before the range check would be undefined.
  std::underlying_type_t<cleave_lr_schedule_kind> raw;
  std::memcpy(&raw, &s.kind, sizeof(raw));
  if (raw < CLEAVE_LR_CONSTANT || raw > CLEAVE_LR_ONE_CYCLE)
    return makeError(CLEAVE_INVALID_ARGUMENT, "lr schedule: unknown kind ",
                     int64_t(raw), ", expected 0 to ",
                     int(CLEAVE_LR_ONE_CYCLE));
  const char *name = lrScheduleKindName(s.kind);
  auto bad = [&](const char *field, auto value, const char *expected) {
    return makeError(CLEAVE_INVALID_ARGUMENT, "lr schedule (", name,
                     "): ", field, " is ", value, ", expected ", expected);
  };
  if (!std::isfinite(s.lr) || s.lr < 0)
    return bad("lr", s.lr, "a finite value >= 0");
  if (!std::isfinite(s.min_lr) || s.min_lr < 0 || s.min_lr > s.lr)
    return bad("min_lr", s.min_lr, "0 <= min_lr <= lr");
  if (!(s.warmup_start_factor >= 0 && s.warmup_start_factor <= 1))
    return bad("warmup_start_factor", s.warmup_start_factor, "0 to 1");
  if (s.warmup_steps < 0)
    return bad("warmup_steps", s.warmup_steps, "a count >= 0");
  if (usesTotal(s.kind) && s.total_steps < s.warmup_steps)
    return bad("total_steps", s.total_steps,
               "a count >= warmup_steps (the step at which the decay ends)");
  switch (s.kind) {
  case CLEAVE_LR_STEP:
    if (s.step_size < 1)
      return bad("step_size", s.step_size, "a count >= 1");
    if (!std::isfinite(s.gamma) || s.gamma <= 0)
      return bad("gamma", s.gamma, "a finite value > 0");
    break;
  case CLEAVE_LR_POLYNOMIAL:
    if (!std::isfinite(s.power) || s.power <= 0)
      return bad("power", s.power, "a finite value > 0");
    break;
  case CLEAVE_LR_ONE_CYCLE:
    // The rising phase ends at step warmup_steps - 1 and the falling one at
    // total_steps - 1; each must span at least one step.
    if (s.warmup_steps < 2 || s.warmup_steps >= s.total_steps)
      return makeError(CLEAVE_INVALID_ARGUMENT,
                       "lr schedule (one-cycle): warmup_steps is ",
                       s.warmup_steps, " and total_steps ", s.total_steps,
                       ", expected 2 <= warmup_steps < total_steps (the "
                       "rising phase ends at step warmup_steps - 1)");
    break;
  case CLEAVE_LR_CONSTANT:
  case CLEAVE_LR_COSINE:
    break;
  }
  return Status::success();
}

double lrScheduleValue(const cleave_lr_schedule &s, int64_t step) {
  const double x = double(step);
  if (s.kind == CLEAVE_LR_ONE_CYCLE) {
    const double initial = s.warmup_start_factor * s.lr;
    const double peakStep = double(s.warmup_steps - 1);
    const double lastStep = double(s.total_steps - 1);
    if (x <= peakStep)
      return annealCos(initial, s.lr, x / peakStep);
    if (x >= lastStep)
      return s.min_lr;
    return annealCos(s.lr, s.min_lr, (x - peakStep) / (lastStep - peakStep));
  }
  if (step < s.warmup_steps) {
    const double f = s.warmup_start_factor;
    return s.lr * (f + (1.0 - f) * x / double(s.warmup_steps));
  }
  const int64_t t = step - s.warmup_steps;
  const double span = double(s.total_steps - s.warmup_steps);
  switch (s.kind) {
  case CLEAVE_LR_CONSTANT:
    return s.lr;
  case CLEAVE_LR_COSINE:
    if (step >= s.total_steps)
      return s.min_lr;
    return s.min_lr +
           (s.lr - s.min_lr) * (1.0 + std::cos(kPi * double(t) / span)) / 2.0;
  case CLEAVE_LR_STEP:
    return std::max(s.min_lr,
                    s.lr * std::pow(s.gamma, double(t / s.step_size)));
  case CLEAVE_LR_POLYNOMIAL:
    if (step >= s.total_steps)
      return s.min_lr;
    return s.min_lr +
           (s.lr - s.min_lr) * std::pow(1.0 - double(t) / span, s.power);
  case CLEAVE_LR_ONE_CYCLE:
    break;
  }
  return s.lr;
}

} // namespace cleave::rt

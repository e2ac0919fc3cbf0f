//===- LrSchedule.h - Learning-rate schedules -------------------*- C++ -*-===//
//
// The learning rate as a closed-form function of the optimizer step
// (docs/design/lr-schedules.md): what a session writes into hyperparameter
// `lr` before each apply_step. Closed forms rather than PyTorch's chained
// (recursive) updates, so that any step's value, after a resume too, is
// computed from the step counter alone.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_LRSCHEDULE_H
#define CLEAVE_RUNTIME_LRSCHEDULE_H

#include "Status.h"

#include "cleave/runtime.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace cleave::rt {

/// The defaults of cleave_lr_schedule_init.
cleave_lr_schedule defaultLrSchedule();

/// "constant", "cosine", "step", "polynomial", "one-cycle"; nullptr for an
/// unknown kind.
const char *lrScheduleKindName(cleave_lr_schedule_kind kind);
std::optional<cleave_lr_schedule_kind> parseLrScheduleKind(std::string_view);

/// Checks every field `s.kind` uses (and that `s.lr` is not NaN); the error
/// names the field and the range it must be in.
Status validateLrSchedule(const cleave_lr_schedule &s);

/// lr(step) of a valid schedule, step >= 0.
double lrScheduleValue(const cleave_lr_schedule &s, int64_t step);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_LRSCHEDULE_H

//===- CApi.cpp - The C API of libcleave_runtime --------------------------===//
//
// Thin wrappers that check pointer arguments, call the C++ implementation and
// turn its Status into a cleave_status plus the thread's last error message.
// Every function is a boundary: nothing thrown below (allocation failures,
// library exceptions) gets past it.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime.h"

#include "Artifact.h"
#include "Checkpoint.h"
#include "Executable.h"
#include "LrSchedule.h"
#include "Session.h"
#include "Status.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>

using cleave::rt::Artifact;
using cleave::rt::BatchMemory;
using cleave::rt::Executable;
using cleave::rt::makeError;
using cleave::rt::Session;
using cleave::rt::Status;

struct cleave_artifact {
  std::atomic<int64_t> refs{1};
  std::shared_ptr<const Artifact> impl;
};

struct cleave_session {
  std::unique_ptr<Session> impl;
  /// Retained for the session's lifetime.
  cleave_artifact *artifact = nullptr;
};

struct cleave_executable {
  std::unique_ptr<Executable> impl;
};

namespace {

thread_local std::string lastError;
/// Set instead of lastError when storing the message itself failed.
thread_local const char *lastErrorFallback = nullptr;

cleave_status report(const Status &status) noexcept {
  if (!status.ok()) {
    try {
      lastError = status.message();
      lastErrorFallback = nullptr;
    } catch (...) {
      lastErrorFallback = "out of memory while reporting an error";
    }
  }
  return status.code();
}

/// Reports an exception caught at the boundary; allocation may fail here too.
cleave_status reportException(const char *function, cleave_status code,
                              const char *what,
                              const char *detail = "") noexcept {
  try {
    return report(makeError(code, function, ": ", what, detail));
  } catch (...) {
    lastErrorFallback =
        code == CLEAVE_OUT_OF_MEMORY ? "out of memory" : "unexpected exception";
    return code;
  }
}

/// Runs `fn(function)` (returning a Status) so that no exception escapes.
template <typename Fn>
cleave_status guarded(const char *function, Fn &&fn) noexcept {
  try {
    return report(fn(function));
  } catch (const std::bad_alloc &) {
    return reportException(function, CLEAVE_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return reportException(function, CLEAVE_INTERNAL,
                           "unexpected exception: ", e.what());
  } catch (...) {
    return reportException(function, CLEAVE_INTERNAL, "unexpected exception");
  }
}

Status nullArgument(const char *function, const char *name) {
  return makeError(CLEAVE_INVALID_ARGUMENT, function, ": ", name, " is NULL");
}

/// Used inside the lambdas given to guarded(), whose parameter `function`
/// names the API function in messages.
#define CLEAVE_CHECK_ARG(ptr)                                                  \
  do {                                                                         \
    if (!(ptr))                                                                \
      return nullArgument(function, #ptr);                                     \
  } while (false)

// The C enums list the schema's cases in the schema's order
// (artifact_schema.def), so values convert by their index.
#define CLEAVE_SAME_CASE(C, Enum, ident)                                       \
  static_assert(C == static_cast<int>(cleave::abi::Enum::ident))
CLEAVE_SAME_CASE(CLEAVE_DTYPE_F32, DType, f32);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_F64, DType, f64);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_I32, DType, i32);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_I64, DType, i64);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_I8, DType, i8);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_U8, DType, u8);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_I16, DType, i16);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_U16, DType, u16);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_U32, DType, u32);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_F16, DType, f16);
CLEAVE_SAME_CASE(CLEAVE_DTYPE_BF16, DType, bf16);
static_assert(cleave::abi::kCaseCount<cleave::abi::DType> ==
              CLEAVE_DTYPE_BF16 + 1);
CLEAVE_SAME_CASE(CLEAVE_GLOBAL_PARAM, GlobalKind, param);
CLEAVE_SAME_CASE(CLEAVE_GLOBAL_BUFFER, GlobalKind, buffer);
CLEAVE_SAME_CASE(CLEAVE_GLOBAL_ACCUMULATOR, GlobalKind, accumulator);
CLEAVE_SAME_CASE(CLEAVE_GLOBAL_STATE, GlobalKind, state);
CLEAVE_SAME_CASE(CLEAVE_GLOBAL_COUNTER, GlobalKind, counter);
static_assert(cleave::abi::kCaseCount<cleave::abi::GlobalKind> ==
              CLEAVE_GLOBAL_COUNTER + 1);
// A graph's caller sees its inputs, outputs and globals (scratch is the
// executable's own; hyperparameters are a training artifact's).
CLEAVE_SAME_CASE(CLEAVE_ARG_INPUT, ArgRole, input);
CLEAVE_SAME_CASE(CLEAVE_ARG_OUTPUT, ArgRole, output);
CLEAVE_SAME_CASE(CLEAVE_ARG_GLOBAL, ArgRole, global);
#undef CLEAVE_SAME_CASE

cleave_dtype toC(cleave::rt::DType dtype) {
  return static_cast<cleave_dtype>(dtype);
}

cleave_tensor_info toC(const cleave::rt::TensorDesc &t) {
  cleave_tensor_info info;
  info.name = t.name.c_str();
  info.dtype = toC(t.dtype);
  info.rank = int32_t(t.shape.size());
  info.shape = t.shape.empty() ? nullptr : t.shape.data();
  info.bytes = t.bytes;
  return info;
}

Status indexOutOfRange(const char *function, size_t index, size_t count,
                       const char *what) {
  return makeError(CLEAVE_INVALID_ARGUMENT, function, ": index ", index,
                   " is out of range (the artifact has ", count, " ", what,
                   ")");
}

Status findEntry(const char *function, const cleave::rt::Manifest &m,
                 const char *entry, const cleave::rt::EntryDesc *&out) {
  std::optional<cleave::rt::EntryKind> kind =
      cleave::abi::parse<cleave::rt::EntryKind>(entry);
  if (!kind || !m.entry(*kind).present)
    return makeError(CLEAVE_NOT_FOUND, function,
                     ": the artifact has no entry '", entry, "'");
  out = &m.entry(*kind);
  return Status::success();
}

Status findGraphEntry(const char *function, const Executable &exe,
                      const char *entry, size_t &out) {
  std::optional<size_t> index = exe.findEntry(entry);
  if (!index)
    return makeError(CLEAVE_NOT_FOUND, function,
                     ": the executable has no entry '", entry, "'");
  out = *index;
  return Status::success();
}

} // namespace

extern "C" {

const char *cleave_dtype_name(cleave_dtype dtype) {
  if (dtype < CLEAVE_DTYPE_F32 || dtype > CLEAVE_DTYPE_BF16)
    return "?";
  return cleave::abi::name(static_cast<cleave::rt::DType>(dtype));
}

size_t cleave_dtype_size(cleave_dtype dtype) {
  if (dtype < CLEAVE_DTYPE_F32 || dtype > CLEAVE_DTYPE_BF16)
    return 0;
  return cleave::rt::dtypeSize(static_cast<cleave::rt::DType>(dtype));
}

const char *cleave_status_string(cleave_status status) {
  switch (status) {
  case CLEAVE_OK:
    return "ok";
  case CLEAVE_INVALID_ARGUMENT:
    return "invalid argument";
  case CLEAVE_NOT_FOUND:
    return "not found";
  case CLEAVE_IO_ERROR:
    return "I/O error";
  case CLEAVE_INVALID_ARTIFACT:
    return "invalid artifact";
  case CLEAVE_INVALID_CHECKPOINT:
    return "invalid checkpoint";
  case CLEAVE_FAILED_PRECONDITION:
    return "failed precondition";
  case CLEAVE_OUT_OF_MEMORY:
    return "out of memory";
  case CLEAVE_INTERNAL:
    return "internal error";
  case CLEAVE_NON_FINITE:
    return "not finite";
  }
  return "unknown status";
}

const char *cleave_last_error_message(void) {
  return lastErrorFallback ? lastErrorFallback : lastError.c_str();
}

//===----------------------------------------------------------------------===//
// Artifacts
//===----------------------------------------------------------------------===//

cleave_status cleave_artifact_load(const char *path, cleave_artifact **out) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(path);
    CLEAVE_CHECK_ARG(out);
    std::shared_ptr<Artifact> artifact;
    CLEAVE_RETURN_IF_ERROR(Artifact::load(path, artifact));
    auto *handle = new cleave_artifact();
    handle->impl = std::move(artifact);
    *out = handle;
    return Status::success();
  });
}

cleave_status cleave_artifact_retain(cleave_artifact *artifact) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    artifact->refs.fetch_add(1, std::memory_order_relaxed);
    return Status::success();
  });
}

void cleave_artifact_release(cleave_artifact *artifact) {
  if (artifact && artifact->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete artifact;
}

cleave_status cleave_artifact_path(const cleave_artifact *artifact,
                                   const char **path) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(path);
    *path = artifact->impl->path().c_str();
    return Status::success();
  });
}

cleave_status cleave_artifact_manifest(const cleave_artifact *artifact,
                                       const char **json) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(json);
    *json = artifact->impl->manifest().text.c_str();
    return Status::success();
  });
}

cleave_status cleave_artifact_micro_batch(const cleave_artifact *artifact,
                                          int64_t *out) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(out);
    *out = artifact->impl->manifest().microBatch;
    return Status::success();
  });
}

cleave_status cleave_artifact_accumulate(const cleave_artifact *artifact,
                                         int64_t *out) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(out);
    *out = artifact->impl->manifest().accumulate;
    return Status::success();
  });
}

cleave_status cleave_artifact_window_samples(const cleave_artifact *artifact,
                                             int64_t *out) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(out);
    *out = artifact->impl->manifest().windowSamples;
    return Status::success();
  });
}

cleave_status cleave_artifact_num_inputs(const cleave_artifact *artifact,
                                         size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(count);
    *count = artifact->impl->manifest().userInputs.size();
    return Status::success();
  });
}

cleave_status cleave_artifact_input(const cleave_artifact *artifact,
                                    size_t index, cleave_tensor_info *info) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(info);
    const cleave::rt::Manifest &m = artifact->impl->manifest();
    if (index >= m.userInputs.size())
      return indexOutOfRange(function, index, m.userInputs.size(), "inputs");
    *info = toC(m.inputs[m.userInputs[index]]);
    return Status::success();
  });
}

cleave_status cleave_artifact_num_globals(const cleave_artifact *artifact,
                                          size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(count);
    *count = artifact->impl->manifest().globals.size();
    return Status::success();
  });
}

cleave_status cleave_artifact_global(const cleave_artifact *artifact,
                                     size_t index, cleave_global_info *info) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(info);
    const cleave::rt::Manifest &m = artifact->impl->manifest();
    if (index >= m.globals.size())
      return indexOutOfRange(function, index, m.globals.size(), "globals");
    const cleave::rt::GlobalDesc &g = m.globals[index];
    info->tensor = toC(g);
    info->kind = static_cast<cleave_global_kind>(g.kind);
    info->of = g.of.c_str();
    return Status::success();
  });
}

cleave_status
cleave_artifact_num_hyperparameters(const cleave_artifact *artifact,
                                    size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(count);
    *count = artifact->impl->manifest().hypers.size();
    return Status::success();
  });
}

cleave_status cleave_artifact_hyperparameter(const cleave_artifact *artifact,
                                             size_t index,
                                             cleave_hyperparameter_info *info) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(info);
    const cleave::rt::Manifest &m = artifact->impl->manifest();
    if (index >= m.hypers.size())
      return indexOutOfRange(function, index, m.hypers.size(),
                             "hyperparameters");
    info->name = m.hypers[index].name.c_str();
    info->default_value = m.hypers[index].defaultValue;
    return Status::success();
  });
}

cleave_status cleave_artifact_has_entry(const cleave_artifact *artifact,
                                        const char *entry, int *present) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(entry);
    CLEAVE_CHECK_ARG(present);
    std::optional<cleave::rt::EntryKind> kind =
        cleave::abi::parse<cleave::rt::EntryKind>(entry);
    *present = kind && artifact->impl->manifest().entry(*kind).present;
    return Status::success();
  });
}

cleave_status cleave_artifact_num_outputs(const cleave_artifact *artifact,
                                          const char *entry, size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(entry);
    CLEAVE_CHECK_ARG(count);
    const cleave::rt::EntryDesc *e = nullptr;
    CLEAVE_RETURN_IF_ERROR(
        findEntry(function, artifact->impl->manifest(), entry, e));
    *count = e->outputs.size();
    return Status::success();
  });
}

cleave_status cleave_artifact_output(const cleave_artifact *artifact,
                                     const char *entry, size_t index,
                                     cleave_tensor_info *info) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(entry);
    CLEAVE_CHECK_ARG(info);
    const cleave::rt::EntryDesc *e = nullptr;
    CLEAVE_RETURN_IF_ERROR(
        findEntry(function, artifact->impl->manifest(), entry, e));
    if (index >= e->outputs.size())
      return indexOutOfRange(function, index, e->outputs.size(), "outputs");
    *info = toC(e->outputs[index]);
    return Status::success();
  });
}

cleave_status cleave_artifact_num_warnings(const cleave_artifact *artifact,
                                           size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(count);
    *count = artifact->impl->manifest().warnings.size();
    return Status::success();
  });
}

cleave_status cleave_artifact_warning(const cleave_artifact *artifact,
                                      size_t index, cleave_warning_info *info) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(info);
    const cleave::rt::Manifest &m = artifact->impl->manifest();
    if (index >= m.warnings.size())
      return indexOutOfRange(function, index, m.warnings.size(), "warnings");
    info->op = m.warnings[index].op.c_str();
    info->loc = m.warnings[index].loc.c_str();
    info->message = m.warnings[index].message.c_str();
    return Status::success();
  });
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

void cleave_session_options_init(cleave_session_options *options) {
  if (!options)
    return;
  options->seed = 0;
  options->accumulate = 0;
  options->num_threads = 0;
  options->distributed = 0;
  options->device = CLEAVE_DEVICE_CPU;
  options->device_ordinal = 0;
  options->on_nonfinite = CLEAVE_NONFINITE_STOP;
}

namespace {
/// The device fields the session and executable options share.
Status readPlacement(int32_t device, int32_t ordinal, int32_t numThreads,
                     cleave::rt::Placement &out) {
  if (device != CLEAVE_DEVICE_CPU && device != CLEAVE_DEVICE_CUDA)
    return makeError(CLEAVE_INVALID_ARGUMENT, "options: device is ", device,
                     ", expected CLEAVE_DEVICE_CPU (0) or "
                     "CLEAVE_DEVICE_CUDA (1)");
  out.device = device == CLEAVE_DEVICE_CUDA ? cleave::rt::DeviceKind::cuda
                                            : cleave::rt::DeviceKind::cpu;
  static_assert(CLEAVE_DEVICE_ORDINAL_AUTO == cleave::rt::kAutoDeviceOrdinal);
  out.deviceOrdinal = ordinal;
  out.numThreads = numThreads;
  return Status::success();
}
} // namespace

cleave_status cleave_session_create(cleave_artifact *artifact,
                                    const cleave_session_options *options,
                                    cleave_session **out) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(artifact);
    CLEAVE_CHECK_ARG(out);
    Session::Options opts;
    if (options) {
      opts.seed = options->seed;
      opts.accumulate = options->accumulate;
      opts.distributed = options->distributed != 0;
      CLEAVE_RETURN_IF_ERROR(readPlacement(options->device,
                                           options->device_ordinal,
                                           options->num_threads, opts));
      if (options->on_nonfinite != CLEAVE_NONFINITE_STOP &&
          options->on_nonfinite != CLEAVE_NONFINITE_SKIP)
        return makeError(CLEAVE_INVALID_ARGUMENT, "options: on_nonfinite is ",
                         options->on_nonfinite,
                         ", expected CLEAVE_NONFINITE_STOP (0) or "
                         "CLEAVE_NONFINITE_SKIP (1)");
      opts.skipNonfinite = options->on_nonfinite == CLEAVE_NONFINITE_SKIP;
    }
    std::unique_ptr<Session> session;
    CLEAVE_RETURN_IF_ERROR(Session::create(artifact->impl, opts, session));
    auto *handle = new cleave_session();
    handle->impl = std::move(session);
    handle->artifact = artifact;
    artifact->refs.fetch_add(1, std::memory_order_relaxed);
    *out = handle;
    return Status::success();
  });
}

void cleave_session_destroy(cleave_session *session) {
  if (!session)
    return;
  cleave_artifact *artifact = session->artifact;
  delete session;
  cleave_artifact_release(artifact);
}

cleave_status cleave_session_artifact(const cleave_session *session,
                                      cleave_artifact **artifact) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(artifact);
    *artifact = session->artifact;
    return Status::success();
  });
}

cleave_status cleave_session_micro_step(cleave_session *session,
                                        const cleave_batch *batch) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(batch);
    return session->impl->microStep(*batch);
  });
}

cleave_status cleave_session_train_batch(cleave_session *session,
                                         const cleave_batch *batch,
                                         int64_t micro_size) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(batch);
    return session->impl->trainBatch(*batch, micro_size);
  });
}

namespace {
/// `memory` (CLEAVE_MEMORY_*) as the session's kind, or an error naming the
/// values it may take.
Status batchMemory(const char *function, int memory, BatchMemory &out) {
  switch (memory) {
  case CLEAVE_MEMORY_HOST:
    out = BatchMemory::host;
    return Status::success();
  case CLEAVE_MEMORY_PINNED:
    out = BatchMemory::pinned;
    return Status::success();
  case CLEAVE_MEMORY_DEVICE:
    out = BatchMemory::device;
    return Status::success();
  }
  return makeError(CLEAVE_INVALID_ARGUMENT, function, ": memory is ", memory,
                   ", expected CLEAVE_MEMORY_HOST (0), CLEAVE_MEMORY_PINNED "
                   "(1) or CLEAVE_MEMORY_DEVICE (2)");
}
} // namespace

cleave_status cleave_session_micro_step_ex(cleave_session *session,
                                           const cleave_batch *batch,
                                           int memory) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(batch);
    BatchMemory kind = BatchMemory::host;
    CLEAVE_RETURN_IF_ERROR(batchMemory(function, memory, kind));
    return session->impl->microStep(*batch, kind);
  });
}

cleave_status cleave_session_train_batch_ex(cleave_session *session,
                                            const cleave_batch *batch,
                                            int64_t micro_size, int memory) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(batch);
    BatchMemory kind = BatchMemory::host;
    CLEAVE_RETURN_IF_ERROR(batchMemory(function, memory, kind));
    return session->impl->trainBatch(*batch, micro_size, kind);
  });
}

cleave_status cleave_session_flush(cleave_session *session) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    return session->impl->flush();
  });
}

cleave_status cleave_session_eval(cleave_session *session,
                                  const cleave_batch *batch) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(batch);
    return session->impl->eval(*batch);
  });
}

cleave_status cleave_session_eval_ex(cleave_session *session,
                                     const cleave_batch *batch, int memory) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(batch);
    BatchMemory kind = BatchMemory::host;
    CLEAVE_RETURN_IF_ERROR(batchMemory(function, memory, kind));
    return session->impl->eval(*batch, kind);
  });
}

cleave_status cleave_session_output(const cleave_session *session,
                                    const char *entry, const char *name,
                                    const void **data, size_t *bytes) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(entry);
    CLEAVE_CHECK_ARG(name);
    CLEAVE_CHECK_ARG(data);
    CLEAVE_CHECK_ARG(bytes);
    return session->impl->output(entry, name, *data, *bytes);
  });
}

cleave_status cleave_session_last_loss(const cleave_session *session,
                                       double *loss) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(loss);
    *loss = session->impl->lastLoss();
    return Status::success();
  });
}

cleave_status cleave_session_last_count(const cleave_session *session,
                                        int64_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(count);
    *count = session->impl->lastCount();
    return Status::success();
  });
}

cleave_status cleave_session_set_accumulation(cleave_session *session,
                                              int64_t n) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    return session->impl->setAccumulation(n);
  });
}

cleave_status cleave_session_accumulation(const cleave_session *session,
                                          int64_t *n) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(n);
    *n = session->impl->accumulation();
    return Status::success();
  });
}

cleave_status cleave_session_set_hyperparameter(cleave_session *session,
                                                const char *name,
                                                double value) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(name);
    return session->impl->setHyperparameter(name, value);
  });
}

cleave_status cleave_session_hyperparameter(const cleave_session *session,
                                            const char *name, double *value) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(name);
    CLEAVE_CHECK_ARG(value);
    return session->impl->hyperparameter(name, *value);
  });
}

void cleave_lr_schedule_init(cleave_lr_schedule *schedule) {
  if (schedule)
    *schedule = cleave::rt::defaultLrSchedule();
}

const char *cleave_lr_schedule_kind_name(cleave_lr_schedule_kind kind) {
  // A C caller may pass any int; compare it as one before using the enum.
  std::underlying_type_t<cleave_lr_schedule_kind> raw;
  std::memcpy(&raw, &kind, sizeof(raw));
  if (raw < CLEAVE_LR_CONSTANT || raw > CLEAVE_LR_ONE_CYCLE)
    return "?";
  return cleave::rt::lrScheduleKindName(kind);
}

cleave_status cleave_lr_schedule_value(const cleave_lr_schedule *schedule,
                                       int64_t step, double *lr) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(schedule);
    CLEAVE_CHECK_ARG(lr);
    if (step < 0)
      return makeError(CLEAVE_INVALID_ARGUMENT, function, ": step is ", step,
                       ", expected an optimizer step >= 0");
    CLEAVE_RETURN_IF_ERROR(cleave::rt::validateLrSchedule(*schedule));
    *lr = cleave::rt::lrScheduleValue(*schedule, step);
    return Status::success();
  });
}

cleave_status
cleave_session_set_lr_schedule(cleave_session *session,
                               const cleave_lr_schedule *schedule) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    return session->impl->setLrSchedule(schedule);
  });
}

cleave_status cleave_session_lr_schedule(const cleave_session *session,
                                         cleave_lr_schedule *schedule,
                                         int *active) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(schedule);
    CLEAVE_CHECK_ARG(active);
    const std::optional<cleave_lr_schedule> &s = session->impl->lrSchedule();
    *active = s ? 1 : 0;
    if (s)
      *schedule = *s;
    return Status::success();
  });
}

cleave_status cleave_session_micro_steps(const cleave_session *session,
                                         int64_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(count);
    *count = session->impl->microSteps();
    return Status::success();
  });
}

cleave_status cleave_session_step(const cleave_session *session,
                                  int64_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(count);
    *count = session->impl->step();
    return Status::success();
  });
}

cleave_status cleave_session_num_notes(const cleave_session *session,
                                       size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(count);
    *count = session->impl->notes().size();
    return Status::success();
  });
}

cleave_status cleave_session_note(const cleave_session *session, size_t index,
                                  const char **note) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(note);
    const std::deque<std::string> &notes = session->impl->notes();
    if (index >= notes.size())
      return indexOutOfRange(function, index, notes.size(), "notes");
    *note = notes[index].c_str();
    return Status::success();
  });
}

cleave_status cleave_session_seed(const cleave_session *session,
                                  uint64_t *seed) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(seed);
    *seed = session->impl->seed();
    return Status::success();
  });
}

cleave_status cleave_session_rank(const cleave_session *session, int *rank,
                                  int *size) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(rank);
    CLEAVE_CHECK_ARG(size);
    *rank = session->impl->rank();
    *size = session->impl->numRanks();
    return Status::success();
  });
}

cleave_status cleave_session_bytes_sent(const cleave_session *session,
                                        uint64_t *last_window,
                                        uint64_t *total) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    if (last_window)
      *last_window = session->impl->lastWindowBytesSent();
    if (total)
      *total = session->impl->totalBytesSent();
    return Status::success();
  });
}

cleave_status cleave_session_sum_across_ranks(cleave_session *session,
                                              double *values, size_t count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    if (count > 0)
      CLEAVE_CHECK_ARG(values);
    return session->impl->sumAcrossRanks(values, count);
  });
}

cleave_status cleave_session_read_global(const cleave_session *session,
                                         const char *name, void *dst,
                                         size_t bytes) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(name);
    if (bytes > 0)
      CLEAVE_CHECK_ARG(dst);
    return session->impl->readGlobal(name, dst, bytes);
  });
}

cleave_status cleave_session_write_global(cleave_session *session,
                                          const char *name, const void *src,
                                          size_t bytes) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(name);
    if (bytes > 0)
      CLEAVE_CHECK_ARG(src);
    return session->impl->writeGlobal(name, src, bytes);
  });
}

cleave_status cleave_session_set_user_state(cleave_session *session,
                                            const char *key, const void *value,
                                            size_t bytes) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(key);
    return session->impl->setUserState(key, value, bytes);
  });
}

cleave_status cleave_session_user_state(const cleave_session *session,
                                        const char *key, const void **value,
                                        size_t *bytes) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(key);
    CLEAVE_CHECK_ARG(value);
    CLEAVE_CHECK_ARG(bytes);
    return session->impl->userState(key, *value, *bytes);
  });
}

cleave_status cleave_session_save_checkpoint(const cleave_session *session,
                                             const char *path) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(path);
    return session->impl->saveCheckpoint(path);
  });
}

cleave_status cleave_session_load_checkpoint(cleave_session *session,
                                             const char *path) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(session);
    CLEAVE_CHECK_ARG(path);
    return session->impl->loadCheckpoint(path);
  });
}

cleave_status cleave_checkpoint_user_state(const char *path, const char *key,
                                           void *dst, size_t capacity,
                                           size_t *bytes) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(path);
    CLEAVE_CHECK_ARG(key);
    CLEAVE_CHECK_ARG(bytes);
    cleave::rt::LoadedCheckpoint checkpoint;
    CLEAVE_RETURN_IF_ERROR(cleave::rt::readCheckpoint(path, checkpoint));
    const auto &state = checkpoint.contents().userState;
    auto it = state.find(key);
    if (it == state.end())
      return makeError(CLEAVE_NOT_FOUND, path, ": no user-state key '", key,
                       "'");
    *bytes = it->second.size();
    if (capacity < it->second.size())
      return Status::success();
    if (!it->second.empty()) {
      CLEAVE_CHECK_ARG(dst);
      std::memcpy(dst, it->second.data(), it->second.size());
    }
    return Status::success();
  });
}

//===----------------------------------------------------------------------===//
// Executables
//===----------------------------------------------------------------------===//

void cleave_executable_options_init(cleave_executable_options *options) {
  if (!options)
    return;
  options->num_threads = 0;
  options->distributed = 0;
  options->device = CLEAVE_DEVICE_CPU;
  options->device_ordinal = 0;
}

cleave_status cleave_executable_load(const char *path,
                                     const cleave_executable_options *options,
                                     cleave_executable **out) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(path);
    CLEAVE_CHECK_ARG(out);
    Executable::Options opts;
    if (options) {
      opts.distributed = options->distributed != 0;
      CLEAVE_RETURN_IF_ERROR(readPlacement(options->device,
                                           options->device_ordinal,
                                           options->num_threads, opts));
    }
    std::shared_ptr<Artifact> artifact;
    CLEAVE_RETURN_IF_ERROR(
        Artifact::load(path, artifact, cleave::rt::ArtifactKind::graph));
    std::unique_ptr<Executable> exe;
    CLEAVE_RETURN_IF_ERROR(Executable::create(std::move(artifact), opts, exe));
    auto *handle = new cleave_executable();
    handle->impl = std::move(exe);
    *out = handle;
    return Status::success();
  });
}

void cleave_executable_destroy(cleave_executable *executable) {
  delete executable;
}

cleave_status cleave_executable_manifest(const cleave_executable *executable,
                                         const char **json) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(json);
    *json = executable->impl->artifact().manifest().text.c_str();
    return Status::success();
  });
}

cleave_status cleave_executable_num_entries(const cleave_executable *executable,
                                            size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(count);
    *count = executable->impl->numEntries();
    return Status::success();
  });
}

cleave_status cleave_executable_entry_name(const cleave_executable *executable,
                                           size_t index, const char **name) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(name);
    const Executable &exe = *executable->impl;
    if (index >= exe.numEntries())
      return indexOutOfRange(function, index, exe.numEntries(), "entries");
    *name = exe.entry(index).name.c_str();
    return Status::success();
  });
}

cleave_status cleave_executable_num_args(const cleave_executable *executable,
                                         const char *entry, size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(entry);
    CLEAVE_CHECK_ARG(count);
    size_t index = 0;
    CLEAVE_RETURN_IF_ERROR(
        findGraphEntry(function, *executable->impl, entry, index));
    *count = executable->impl->callerArgs(index).size();
    return Status::success();
  });
}

cleave_status cleave_executable_arg(const cleave_executable *executable,
                                    const char *entry, size_t index,
                                    cleave_arg_info *info) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(entry);
    CLEAVE_CHECK_ARG(info);
    size_t e = 0;
    CLEAVE_RETURN_IF_ERROR(
        findGraphEntry(function, *executable->impl, entry, e));
    const auto &args = executable->impl->callerArgs(e);
    if (index >= args.size())
      return indexOutOfRange(function, index, args.size(), "arguments");
    const cleave::rt::GraphArgDesc &a = *args[index];
    // callerArgs holds no scratch; the rest convert by index.
    info->role = static_cast<cleave_arg_role>(a.role);
    info->tensor = toC(a.tensor);
    return Status::success();
  });
}

cleave_status cleave_executable_num_notes(const cleave_executable *executable,
                                          size_t *count) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(count);
    *count = executable->impl->notes().size();
    return Status::success();
  });
}

cleave_status cleave_executable_note(const cleave_executable *executable,
                                     size_t index, const char **note) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(note);
    const std::deque<std::string> &notes = executable->impl->notes();
    if (index >= notes.size())
      return indexOutOfRange(function, index, notes.size(), "notes");
    *note = notes[index].c_str();
    return Status::success();
  });
}

cleave_status cleave_executable_run(cleave_executable *executable,
                                    const char *entry, void *const *args,
                                    size_t num_args) {
  return guarded(__func__, [&](const char *function) -> Status {
    CLEAVE_CHECK_ARG(executable);
    CLEAVE_CHECK_ARG(entry);
    size_t index = 0;
    CLEAVE_RETURN_IF_ERROR(
        findGraphEntry(function, *executable->impl, entry, index));
    return executable->impl->run(index, args, num_args).withContext(function);
  });
}

} // extern "C"

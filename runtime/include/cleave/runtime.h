/*===- runtime.h - Cleave runtime C API ---------------------------*- C -*-===//
 *
 * The C API of libcleave_runtime: load a compiled model (an artifact, see
 * docs/design/runtime-abi.md), create a training session on it, feed it
 * micro-batches, evaluate, checkpoint. docs/design/runtime.md describes the
 * session's state machine, the checkpoint format and the determinism
 * guarantees.
 *
 * Conventions
 * -----------
 * - Every function that can fail returns a `cleave_status`. On failure the
 *   calling thread's error message (one line: what, where, what was expected)
 *   is available from cleave_last_error_message() until the next failing call
 *   on that thread. No function aborts, throws or crashes on bad input (NULL
 *   pointers, wrong sizes, unknown names, corrupt files), nor when a kernel
 *   fails inside an entry point (a oneDNN error, or generated code that
 *   breaks the kernel ABI): the call that ran the entry point returns the
 *   kernel's error (CLEAVE_INTERNAL, or CLEAVE_OUT_OF_MEMORY), whose message
 *   names the entry point, the kernel function and the kernel.
 * - A session whose entry point failed is left with its globals part updated:
 *   it becomes unusable. Every later call that would run an entry point or
 *   write a checkpoint (micro_step, train_batch, flush, eval,
 *   set_accumulation, save_checkpoint) returns CLEAVE_FAILED_PRECONDITION
 *   with the original message. Accessors still answer (their values are
 *   those the failed entry left). Loading a checkpoint, which replaces every
 *   global, makes the session usable again; so does nothing else.
 * - Outputs are written through pointer arguments, and only on success.
 * - Strings and arrays returned by an artifact (names, shapes, the manifest)
 *   are owned by the artifact and stay valid while it is alive; a session
 *   keeps its artifact alive.
 * - Thread safety: an artifact is immutable once loaded and may be shared by
 *   any number of threads and sessions. A session must be used by one thread
 *   at a time (calls on one session must not overlap); distinct sessions are
 *   independent and may run concurrently.
 *
 * Example: train an artifact whose inputs are `image` (f32 [B, 784]) and
 * `labels` (i64 [B]); the sample-weights input is filled by the runtime.
 *
 *   cleave_artifact *model = NULL;
 *   cleave_session *session = NULL;
 *   cleave_session_options options;
 *   cleave_session_options_init(&options);
 *   options.seed = 42;
 *   if (cleave_artifact_load("model.cleave", &model) != CLEAVE_OK ||
 *       cleave_session_create(model, &options, &session) != CLEAVE_OK) {
 *     fprintf(stderr, "error: %s\n", cleave_last_error_message());
 *     return 1;
 *   }
 *   cleave_artifact_release(model);          // the session keeps it alive
 *   cleave_session_set_hyperparameter(session, "lr", 0.05);
 *
 *   const void *data[2] = {images, labels};  // k rows each, row-major
 *   size_t bytes[2] = {k * 784 * sizeof(float), k * sizeof(int64_t)};
 *   cleave_batch batch = {k, 2, data, bytes};
 *   double loss;
 *   if (cleave_session_micro_step(session, &batch) != CLEAVE_OK) ...
 *   cleave_session_last_loss(session, &loss); // mean loss of the k samples
 *   ...                                        // applies every N micro-steps
 *   cleave_session_flush(session);             // applies a partial window
 *   cleave_session_save_checkpoint(session, "run.ckpt");
 *   cleave_session_destroy(session);
 *
 *===----------------------------------------------------------------------===*/

#ifndef CLEAVE_RUNTIME_H
#define CLEAVE_RUNTIME_H

#include "cleave/kernel_abi.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define CLEAVE_API __attribute__((visibility("default")))
#else
#define CLEAVE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The artifact ABI version this runtime loads (`cleave_abi_version()`). */
#define CLEAVE_RUNTIME_ABI_VERSION CLEAVE_KERNEL_ABI_VERSION

/*===----------------------------------------------------------------------===
 * Status and errors
 *===----------------------------------------------------------------------===*/

typedef enum cleave_status {
  CLEAVE_OK = 0,
  /** A NULL pointer, a wrong size or count, a value out of range. */
  CLEAVE_INVALID_ARGUMENT = 1,
  /** A name (global, hyperparameter, output, entry, user-state key) that the
   *  artifact or session does not have. */
  CLEAVE_NOT_FOUND = 2,
  /** A file could not be opened, read, written or renamed. */
  CLEAVE_IO_ERROR = 3,
  /** Not a Cleave artifact, an unsupported ABI version, an invalid manifest,
   *  or a kernels table the runtime cannot build. */
  CLEAVE_INVALID_ARTIFACT = 4,
  /** A checkpoint that is truncated, corrupt, of another format version or
   *  written by a session of a different model. */
  CLEAVE_INVALID_CHECKPOINT = 5,
  /** The call is not valid for this artifact or session (e.g. evaluation of an
   *  artifact without an eval_step entry). */
  CLEAVE_FAILED_PRECONDITION = 6,
  /** An allocation failed. */
  CLEAVE_OUT_OF_MEMORY = 7,
  /** A broken invariant, e.g. an entry point that did not update the window
   *  counters as the ABI requires. */
  CLEAVE_INTERNAL = 8,
  /** A window's gradients or loss were not finite (NaN or infinite): its
   *  optimizer step was skipped, leaving the parameters and optimizer state
   *  as they were and the accumulators zeroed. Returned by the call that
   *  applied the window when the session stops on it
   *  (CLEAVE_NONFINITE_STOP); the session stays usable. */
  CLEAVE_NON_FINITE = 9
} cleave_status;

/** The enumerator's name without the prefix ("ok", "invalid argument", ...). */
CLEAVE_API const char *cleave_status_string(cleave_status status);

/** The message of the last failing call on this thread ("" if none). */
CLEAVE_API const char *cleave_last_error_message(void);

/*===----------------------------------------------------------------------===
 * Descriptions of tensors, globals and hyperparameters
 *===----------------------------------------------------------------------===*/

/** Element types. Parameters, optimizer state and the other globals are
 *  f32, f64, i32 or i64; a model's inputs and outputs may also have the
 *  narrow types it exchanges data in (images as u8, half-precision floats),
 *  laid out as C's `int8_t` ... `uint32_t`, IEEE binary16 (f16) and the
 *  upper half of a binary32 (bf16). */
typedef enum cleave_dtype {
  CLEAVE_DTYPE_F32 = 0,
  CLEAVE_DTYPE_F64 = 1,
  CLEAVE_DTYPE_I32 = 2,
  CLEAVE_DTYPE_I64 = 3,
  CLEAVE_DTYPE_I8 = 4,
  CLEAVE_DTYPE_U8 = 5,
  CLEAVE_DTYPE_I16 = 6,
  CLEAVE_DTYPE_U16 = 7,
  CLEAVE_DTYPE_U32 = 8,
  CLEAVE_DTYPE_F16 = 9,
  CLEAVE_DTYPE_BF16 = 10
} cleave_dtype;

/** The manifest's name of a dtype ("f32", "f64", "i32", "i64", "i8", "u8",
 *  "i16", "u16", "u32", "f16", "bf16"; "?" if unknown). */
CLEAVE_API const char *cleave_dtype_name(cleave_dtype dtype);
/** Bytes per element of a dtype (0 if unknown). */
CLEAVE_API size_t cleave_dtype_size(cleave_dtype dtype);

/** Kinds of `globals` (persistent state owned by a session). */
typedef enum cleave_global_kind {
  CLEAVE_GLOBAL_PARAM = 0,       /**< trainable parameter */
  CLEAVE_GLOBAL_BUFFER = 1,      /**< non-trainable model state */
  CLEAVE_GLOBAL_ACCUMULATOR = 2, /**< gradient / sample-count accumulator */
  CLEAVE_GLOBAL_STATE = 3,       /**< optimizer state */
  CLEAVE_GLOBAL_COUNTER = 4      /**< train.step, train.micro_steps, ... */
} cleave_global_kind;

/** A dense row-major tensor: the element type and the shape. */
typedef struct cleave_tensor_info {
  const char *name;
  cleave_dtype dtype;
  int32_t rank;
  const int64_t *shape; /**< `rank` dimensions (NULL when rank is 0) */
  size_t bytes;         /**< size of the whole tensor in bytes */
} cleave_tensor_info;

typedef struct cleave_global_info {
  cleave_tensor_info tensor;
  cleave_global_kind kind;
  /** The parameter an accumulator or optimizer-state slot belongs to, or "". */
  const char *of;
} cleave_global_info;

typedef struct cleave_hyperparameter_info {
  const char *name;
  double default_value;
} cleave_hyperparameter_info;

/** A compiler warning recorded in the manifest (e.g. an op whose result
 *  depends on how a batch is split into micro-batches). */
typedef struct cleave_warning_info {
  const char *op;
  const char *loc;
  const char *message;
} cleave_warning_info;

/*===----------------------------------------------------------------------===
 * Artifacts
 *===----------------------------------------------------------------------===*/

/** A loaded artifact: the shared object and its validated manifest.
 *  Reference-counted; immutable. */
typedef struct cleave_artifact cleave_artifact;

/** Loads the artifact at `path` (dlopen), checks its ABI version and validates
 *  every field of its manifest. On success `*out` holds one reference. */
CLEAVE_API cleave_status cleave_artifact_load(const char *path,
                                              cleave_artifact **out);
/** Adds a reference. */
CLEAVE_API cleave_status cleave_artifact_retain(cleave_artifact *artifact);
/** Drops a reference (NULL is allowed); the last one unloads the artifact. */
CLEAVE_API void cleave_artifact_release(cleave_artifact *artifact);

/** The path the artifact was loaded from. */
CLEAVE_API cleave_status cleave_artifact_path(const cleave_artifact *artifact,
                                              const char **path);
/** The manifest, NUL-terminated JSON. */
CLEAVE_API cleave_status
cleave_artifact_manifest(const cleave_artifact *artifact, const char **json);
/** The micro-batch size B every graph was compiled for. */
CLEAVE_API cleave_status
cleave_artifact_micro_batch(const cleave_artifact *artifact, int64_t *out);
/** The default accumulation count N (the manifest's `accumulate`). */
CLEAVE_API cleave_status
cleave_artifact_accumulate(const cleave_artifact *artifact, int64_t *out);
/** One rank's samples per window the artifact was compiled for: N x B, or
 *  fewer when the last micro-batch of each window is short (cleave-compile
 *  --global-batch with a micro-batch that does not divide it). A trainer
 *  feeds each window's micro-batches whole but its last, which holds
 *  `*out` - (N - 1) x B samples; the update is then exactly that of one
 *  batch of `*out` samples. */
CLEAVE_API cleave_status
cleave_artifact_window_samples(const cleave_artifact *artifact, int64_t *out);

/** The data inputs a caller supplies in a cleave_batch, in manifest order.
 *  The sample-weights input is filled by the runtime and is not listed. Every
 *  input's first dimension is the micro-batch size B. */
CLEAVE_API cleave_status
cleave_artifact_num_inputs(const cleave_artifact *artifact, size_t *count);
CLEAVE_API cleave_status cleave_artifact_input(const cleave_artifact *artifact,
                                               size_t index,
                                               cleave_tensor_info *info);

CLEAVE_API cleave_status
cleave_artifact_num_globals(const cleave_artifact *artifact, size_t *count);
CLEAVE_API cleave_status cleave_artifact_global(const cleave_artifact *artifact,
                                                size_t index,
                                                cleave_global_info *info);

CLEAVE_API cleave_status cleave_artifact_num_hyperparameters(
    const cleave_artifact *artifact, size_t *count);
CLEAVE_API cleave_status
cleave_artifact_hyperparameter(const cleave_artifact *artifact, size_t index,
                               cleave_hyperparameter_info *info);

/** Whether the artifact has entry point `entry` ("micro_step", "apply_step",
 *  "eval_step"): `*present` is 1 or 0. */
CLEAVE_API cleave_status cleave_artifact_has_entry(
    const cleave_artifact *artifact, const char *entry, int *present);
/** The outputs of entry point `entry` (e.g. eval_step's prediction). */
CLEAVE_API cleave_status cleave_artifact_num_outputs(
    const cleave_artifact *artifact, const char *entry, size_t *count);
CLEAVE_API cleave_status cleave_artifact_output(const cleave_artifact *artifact,
                                                const char *entry, size_t index,
                                                cleave_tensor_info *info);

CLEAVE_API cleave_status
cleave_artifact_num_warnings(const cleave_artifact *artifact, size_t *count);
CLEAVE_API cleave_status cleave_artifact_warning(
    const cleave_artifact *artifact, size_t index, cleave_warning_info *info);

/*===----------------------------------------------------------------------===
 * Sessions
 *===----------------------------------------------------------------------===*/

/** A training session: the globals (parameters, accumulators, optimizer
 *  state, counters), the hyperparameter values, the accumulation count N, the
 *  kernel context and the staging buffers of one artifact. */
typedef struct cleave_session cleave_session;

typedef struct cleave_session_options {
  /** Seed of the generator that draws random initial values. Default 0. */
  uint64_t seed;
  /** Accumulation count N; 0 (the default) takes the manifest's `accumulate`.
   */
  int64_t accumulate;
  /** When positive, the session calls omp_set_num_threads(num_threads) on the
   *  calling thread before each entry-point call. 0 (the default) leaves
   *  OpenMP alone. */
  int32_t num_threads;
  /** Nonzero: data-parallel over MPI_COMM_WORLD. The session initialises MPI
   *  if needed and attaches a communicator that the artifact's cross-rank
   *  reduction uses. 0 (the default): one rank, MPI is not touched. */
  int32_t distributed;
  /** What runs the entry points: CLEAVE_DEVICE_CPU (the default) or
   *  CLEAVE_DEVICE_CUDA. It must be what the artifact was compiled for;
   *  otherwise, and where a cuda session cannot run (no driver, no GPU, no
   *  code for the GPU's architecture, a runtime built without CUDA), creating
   *  the session fails with CLEAVE_FAILED_PRECONDITION and one line. */
  int32_t device;
  /** Which GPU (CUDA device ordinal) for CLEAVE_DEVICE_CUDA. Default 0.
   *  CLEAVE_DEVICE_ORDINAL_AUTO: in a distributed session, the GPU whose
   *  ordinal is the rank's index among the job's processes on its machine
   *  (one GPU per process, which NCCL needs); otherwise GPU 0. A distributed
   *  cuda session of several ranks reduces its windows with NCCL
   *  (libnccl.so.2, loaded at run time). */
  int32_t device_ordinal;
  /** What a window whose gradients or loss are not finite does, where the
   *  artifact checks (every artifact but Adasum and ZeRO-1 ones): its step is
   *  skipped either way; CLEAVE_NONFINITE_STOP (the default) also fails the
   *  call that applied it with CLEAVE_NON_FINITE, naming the optimizer step,
   *  the window and the first tensor that is not finite;
   *  CLEAVE_NONFINITE_SKIP goes on (the global "train.skipped_steps" counts
   *  such windows), as PyTorch's GradScaler skips an overflowing step. */
  int32_t on_nonfinite;
} cleave_session_options;

/** Values of cleave_session_options.on_nonfinite. */
enum { CLEAVE_NONFINITE_STOP = 0, CLEAVE_NONFINITE_SKIP = 1 };

/** Values of cleave_session_options.device. */
enum { CLEAVE_DEVICE_CPU = 0, CLEAVE_DEVICE_CUDA = 1 };
/** cleave_session_options.device_ordinal: one GPU per rank of the machine. */
#define CLEAVE_DEVICE_ORDINAL_AUTO (-1)

/** Sets every field of `options` to its default. */
CLEAVE_API void cleave_session_options_init(cleave_session_options *options);

/** A batch of `samples` rows of every user input (cleave_artifact_input order).
 *  `data[i]` points to `samples` contiguous rows of input i and `bytes[i]` is
 *  its size, which must be `samples` times the input's row size. */
typedef struct cleave_batch {
  int64_t samples;
  size_t num_inputs;
  const void *const *data;
  const size_t *bytes;
} cleave_batch;

/** Where a batch's buffers are (the `_ex` calls; the others take host
 *  memory). Every kind is the caller's again when the call returns: the
 *  session has copied what it reads by then.
 *
 *  - CLEAVE_MEMORY_HOST: pageable host memory. On a CUDA device the rows are
 *    copied into the session's page-locked staging buffer, then uploaded.
 *  - CLEAVE_MEMORY_PINNED: page-locked host memory (cuMemHostAlloc,
 *    PyTorch's pin_memory()). Uploaded straight from the caller's buffer.
 *  - CLEAVE_MEMORY_DEVICE: memory of the session's device (on CUDA, a
 *    device pointer in the session's context, written by work that has
 *    completed). Copied on the device; inputs the host checks (class labels,
 *    token labels) are also downloaded, which costs one wait.
 *
 *  On the CPU all three are host memory. A short batch is padded with its
 *  last row wherever it is. On CUDA a buffer of another kind than `memory`
 *  says (or GPU memory of another device, or rows past the end of their
 *  allocation) is refused with CLEAVE_INVALID_ARGUMENT before anything is
 *  copied; the index inputs of a device batch are checked before any of
 *  its micro-steps runs. */
enum {
  CLEAVE_MEMORY_HOST = 0,
  CLEAVE_MEMORY_PINNED = 1,
  CLEAVE_MEMORY_DEVICE = 2
};

/** Creates a session: allocates every global (64-byte aligned), initialises
 *  them in manifest order from `options->seed`, sets hyperparameters to their
 *  defaults and builds the kernel context. `options` may be NULL (defaults). */
CLEAVE_API cleave_status cleave_session_create(
    cleave_artifact *artifact, const cleave_session_options *options,
    cleave_session **out);
/** Destroys a session (NULL is allowed). */
CLEAVE_API void cleave_session_destroy(cleave_session *session);

/** The session's artifact (borrowed: valid while the session lives). */
CLEAVE_API cleave_status cleave_session_artifact(const cleave_session *session,
                                                 cleave_artifact **artifact);

/** Runs micro_step on `batch` (1 <= samples <= B; shorter batches are padded
 *  and weighted out), then apply_step if the window now holds N micro-steps.
 *  A kernel failure makes the session unusable (see Conventions). */
CLEAVE_API cleave_status cleave_session_micro_step(cleave_session *session,
                                                   const cleave_batch *batch);

/** Splits `batch` (any number of samples) into consecutive micro-batches of
 *  `micro_size` samples (1 <= micro_size <= B; the last may be shorter) and
 *  runs cleave_session_micro_step on each: the result is identical to feeding
 *  them one by one, including the applies at every N micro-steps. It does not
 *  flush. */
CLEAVE_API cleave_status cleave_session_train_batch(cleave_session *session,
                                                    const cleave_batch *batch,
                                                    int64_t micro_size);

/** cleave_session_micro_step and cleave_session_train_batch on a batch in
 *  `memory` (CLEAVE_MEMORY_*). */
CLEAVE_API cleave_status cleave_session_micro_step_ex(cleave_session *session,
                                                      const cleave_batch *batch,
                                                      int memory);
CLEAVE_API cleave_status cleave_session_train_batch_ex(
    cleave_session *session, const cleave_batch *batch, int64_t micro_size,
    int memory);

/** Runs apply_step if the current window holds at least one micro-step. */
CLEAVE_API cleave_status cleave_session_flush(cleave_session *session);

/** Runs eval_step (forward only) on `batch` (1 <= samples <= B). Inputs that
 *  eval_step does not read may be NULL. Results: cleave_session_output. */
CLEAVE_API cleave_status cleave_session_eval(cleave_session *session,
                                             const cleave_batch *batch);
/** cleave_session_eval on a batch in `memory` (CLEAVE_MEMORY_*). */
CLEAVE_API cleave_status cleave_session_eval_ex(cleave_session *session,
                                                const cleave_batch *batch,
                                                int memory);

/** The buffer of output `name` of entry `entry`, as last written (all B rows,
 *  including padding). Valid until the next call on the session. */
CLEAVE_API cleave_status cleave_session_output(const cleave_session *session,
                                               const char *entry,
                                               const char *name,
                                               const void **data,
                                               size_t *bytes);

/** The mean per-sample loss of the last cleave_session_micro_step (or of all
 *  samples of the last cleave_session_train_batch); NaN before the first.
 *  For an artifact with token labels (a loss per token, inputs with
 *  `ignore_index`), the mean over the real tokens: those of real samples
 *  whose label is not the ignore index. */
CLEAVE_API cleave_status cleave_session_last_loss(const cleave_session *session,
                                                  double *loss);

/** What cleave_session_last_loss is a mean over: the real samples of the
 *  last micro-step (or train_batch), or their real tokens for token labels;
 *  0 before the first. The window's normaliser is the sum of these counts. */
CLEAVE_API cleave_status
cleave_session_last_count(const cleave_session *session, int64_t *count);

/** Sets the accumulation count N (>= 1). If the current window already holds N
 *  or more micro-steps, apply_step runs at once. */
CLEAVE_API cleave_status
cleave_session_set_accumulation(cleave_session *session, int64_t n);
CLEAVE_API cleave_status
cleave_session_accumulation(const cleave_session *session, int64_t *n);

CLEAVE_API cleave_status cleave_session_set_hyperparameter(
    cleave_session *session, const char *name, double value);
CLEAVE_API cleave_status cleave_session_hyperparameter(
    const cleave_session *session, const char *name, double *value);

/*===----------------------------------------------------------------------===
 * Learning-rate schedules
 *
 * A schedule makes hyperparameter `lr` a function of the optimizer step: the
 * session sets it to lr(s) before the apply_step that takes optimizer step s
 * (s = cleave_session_step() before that apply, counted from 0), and never
 * per micro-step. Changing N does not stretch or shrink the schedule: it is
 * indexed by optimizer steps. Nothing is recompiled; the schedule is saved in
 * checkpoints and restored with them. docs/design/lr-schedules.md gives the
 * formulas (PyTorch's LinearLR, CosineAnnealingLR, StepLR, PolynomialLR and
 * OneCycleLR in closed form) and their edge cases.
 *
 * Every kind but one-cycle starts with a linear warmup: for s < warmup_steps,
 *   lr(s) = lr * (f + (1 - f) * s / warmup_steps),  f = warmup_start_factor;
 * then, with t = s - warmup_steps and D = total_steps - warmup_steps:
 *   constant    lr
 *   cosine      min_lr + (lr - min_lr) * (1 + cos(pi * t / D)) / 2, and
 *               min_lr from step total_steps on
 *   step        max(min_lr, lr * gamma^floor(t / step_size))
 *   polynomial  min_lr + (lr - min_lr) * (1 - t / D)^power, and min_lr from
 *               step total_steps on (power 1: linear decay)
 *   one-cycle   PyTorch's OneCycleLR (cosine annealing, two phases) with
 *               max_lr = lr, initial lr = warmup_start_factor * lr, final lr
 *               = min_lr and pct_start = warmup_steps / total_steps; min_lr
 *               from step total_steps - 1 on.
 *===----------------------------------------------------------------------===*/

typedef enum cleave_lr_schedule_kind {
  CLEAVE_LR_CONSTANT = 0,
  CLEAVE_LR_COSINE = 1,
  CLEAVE_LR_STEP = 2,
  CLEAVE_LR_POLYNOMIAL = 3,
  CLEAVE_LR_ONE_CYCLE = 4
} cleave_lr_schedule_kind;

typedef struct cleave_lr_schedule {
  cleave_lr_schedule_kind kind;
  /** The peak learning rate, reached at the end of the warmup (one-cycle's
   *  max_lr). NaN (the default): cleave_session_set_lr_schedule takes the
   *  session's current value of hyperparameter `lr`. */
  double lr;
  /** The floor, 0 <= min_lr <= lr: where cosine and polynomial decay end,
   *  the least step decay reaches, one-cycle's final learning rate. */
  double min_lr;
  /** Steps of linear warmup (>= 0); one-cycle: the steps of its rising phase
   *  (2 <= warmup_steps < total_steps). */
  int64_t warmup_steps;
  /** The warmup starts at warmup_start_factor * lr (0 to 1; default 0). */
  double warmup_start_factor;
  /** Cosine, polynomial, one-cycle: the step at which the decay ends
   *  (>= warmup_steps). Unused by constant and step. */
  int64_t total_steps;
  /** Step decay: lr is multiplied by gamma (> 0) every step_size (>= 1)
   *  steps after the warmup. Defaults 1 and 0.1 (PyTorch's gamma). */
  int64_t step_size;
  double gamma;
  /** Polynomial decay's exponent (> 0; default 1, a linear decay). */
  double power;
} cleave_lr_schedule;

/** Sets every field of `schedule` to its default: a constant schedule at the
 *  session's current lr, without warmup. */
CLEAVE_API void cleave_lr_schedule_init(cleave_lr_schedule *schedule);

/** The kind's name: "constant", "cosine", "step", "polynomial", "one-cycle"
 *  ("?" if unknown). */
CLEAVE_API const char *
cleave_lr_schedule_kind_name(cleave_lr_schedule_kind kind);

/** The learning rate of optimizer step `step` (>= 0) under `schedule`, whose
 *  fields must all be valid (lr included: not NaN). */
CLEAVE_API cleave_status cleave_lr_schedule_value(
    const cleave_lr_schedule *schedule, int64_t step, double *lr);

/** Makes hyperparameter `lr` follow `schedule` (checked first; the artifact
 *  must have a hyperparameter `lr`) from the next apply_step on, and sets it
 *  to the schedule's value at the current step at once, so that
 *  cleave_session_hyperparameter(session, "lr") always reads the learning
 *  rate the next optimizer step will use. While a schedule is set,
 *  cleave_session_set_hyperparameter refuses `lr`. NULL removes the
 *  schedule; `lr` keeps its current value. */
CLEAVE_API cleave_status cleave_session_set_lr_schedule(
    cleave_session *session, const cleave_lr_schedule *schedule);

/** The session's schedule: `*active` is 1 and `*schedule` holds it (with the
 *  peak lr resolved), or `*active` is 0 and `*schedule` is untouched. */
CLEAVE_API cleave_status cleave_session_lr_schedule(
    const cleave_session *session, cleave_lr_schedule *schedule, int *active);

/** Micro-steps in the current window (`train.micro_steps`). */
CLEAVE_API cleave_status
cleave_session_micro_steps(const cleave_session *session, int64_t *count);
/** Optimizer steps taken (`train.step`). */
CLEAVE_API cleave_status cleave_session_step(const cleave_session *session,
                                             int64_t *count);
/** The seed the session was created with (or restored from a checkpoint). */
CLEAVE_API cleave_status cleave_session_seed(const cleave_session *session,
                                             uint64_t *seed);
/** Notes on what the session's device chose, one line each, in the order
 *  they arose: e.g. how much of a GPU's free memory the session takes (its
 *  budget, checked when it is created), an entry point that runs without a
 *  CUDA graph, and why; a kernel that runs on a non-deterministic engine
 *  for want of a deterministic one, whose results may then differ in the
 *  last bits from run to run (the note says so). Each arises once; the
 *  count only grows, so a caller prints the notes past those it has
 *  printed. The text lives as long as the session. */
CLEAVE_API cleave_status cleave_session_num_notes(const cleave_session *session,
                                                  size_t *count);
CLEAVE_API cleave_status cleave_session_note(const cleave_session *session,
                                             size_t index, const char **note);
/** This process's rank and the number of ranks (0 and 1 unless distributed). */
CLEAVE_API cleave_status cleave_session_rank(const cleave_session *session,
                                             int *rank, int *size);
/** Payload bytes this rank has sent to the other ranks: `*last_window` by the
 *  artifact's code during the last completed window (its micro-steps and its
 *  apply_step; 0 before the first), `*total` since the session was created
 *  (also the broadcast of rank 0's initial values and
 *  cleave_session_sum_across_ranks). Each collective counts what its
 *  bandwidth-optimal schedule sends (a ring for reductions), exactly, whatever
 *  algorithm MPI runs (docs/design/distributed.md). Both 0 with one rank.
 *  Either pointer may be NULL. */
CLEAVE_API cleave_status cleave_session_bytes_sent(
    const cleave_session *session, uint64_t *last_window, uint64_t *total);
/** Sums `count` doubles across the ranks of the job, in place: every rank
 *  passes its values and receives the sums (the same bits on every rank), as
 *  a trainer needs to combine losses, sample counts or test accuracies. Every
 *  rank must make the same calls with the same `count`; with one rank the
 *  values are unchanged. Like every collective it ends the job if a rank
 *  does not arrive within the collective timeout (CLEAVE_COLLECTIVE_TIMEOUT_S,
 *  default 60 s). */
CLEAVE_API cleave_status cleave_session_sum_across_ranks(
    cleave_session *session, double *values, size_t count);

/** Copies global `name` to `dst`; `bytes` must be its exact size (`dst` may
 *  be NULL for an empty global). */
CLEAVE_API cleave_status cleave_session_read_global(
    const cleave_session *session, const char *name, void *dst, size_t bytes);
/** Overwrites global `name` from `src`; `bytes` must be its exact size
 *  (`src` may be NULL for an empty global). */
CLEAVE_API cleave_status cleave_session_write_global(cleave_session *session,
                                                     const char *name,
                                                     const void *src,
                                                     size_t bytes);

/** Stores `bytes` opaque bytes under `key` in the session's user state, which
 *  checkpoints save and restore (a trainer keeps its epoch, position and
 *  shuffle seed there). `value` NULL removes the key. */
CLEAVE_API cleave_status cleave_session_set_user_state(cleave_session *session,
                                                       const char *key,
                                                       const void *value,
                                                       size_t bytes);
/** The value under `key` (CLEAVE_NOT_FOUND if absent). `*value` stays valid
 *  until the key is set again or a checkpoint is loaded. */
CLEAVE_API cleave_status
cleave_session_user_state(const cleave_session *session, const char *key,
                          const void **value, size_t *bytes);

/** Writes a checkpoint (every global, N, hyperparameter values, the
 *  learning-rate schedule, the seed, the user state) to `path` atomically:
 *  `path`.tmp is written, fsync'ed and renamed over `path`, then the
 *  directory is fsync'ed. On failure `path` is untouched. In a data-parallel
 *  session with more than one rank the call is collective: every rank's
 *  state (accumulators and sharded optimizer state differ between ranks) is
 *  sent to rank 0, which alone writes them all to its `path` (the other
 *  ranks' `path` is not used); every rank returns the outcome of the write.
 *  User-state keys starting with `cleave.rank` are reserved for this. */
CLEAVE_API cleave_status
cleave_session_save_checkpoint(const cleave_session *session, const char *path);
/** Restores a checkpoint written by a session of the same model. The file is
 *  verified completely (format, model identity, CRC32 of every section) before
 *  anything changes: on failure the session is untouched. In a data-parallel
 *  session the call is collective: rank 0 reads its `path` and sends every
 *  rank its part; no rank changes unless every rank's part checks out. A
 *  data-parallel checkpoint loads only into a job of the same size. */
CLEAVE_API cleave_status cleave_session_load_checkpoint(cleave_session *session,
                                                        const char *path);

/** Reads the value under user-state `key` of the checkpoint at `path`
 *  without a session (a program finds there what it needs to resume, such as
 *  the artifact the checkpoint belongs to). The file is verified as
 *  cleave_session_load_checkpoint verifies it. `*bytes` is set to the value's
 *  size; the value is copied to `dst` only when `capacity` >= that size (call
 *  with capacity 0 to learn it). CLEAVE_NOT_FOUND if the key is absent. */
CLEAVE_API cleave_status cleave_checkpoint_user_state(const char *path,
                                                      const char *key,
                                                      void *dst,
                                                      size_t capacity,
                                                      size_t *bytes);

/*===----------------------------------------------------------------------===
 * Executables: the entries of a graph artifact
 *===----------------------------------------------------------------------===*/

/** A loaded graph artifact (manifest `"kind": "graph"`, as the tracing
 *  frontend writes them) ready to run: entry points of any name over buffers
 *  the caller owns, plus the kernel context and scratch arena the executable
 *  owns. It keeps no state between calls and has no window or counters: what
 *  persists lives in the caller's buffers (`global` arguments are updated in
 *  place). Training artifacts are refused here, and graph artifacts by
 *  cleave_artifact_load. An executable must be used by one thread at a time.
 *
 *   cleave_executable *exe = NULL;
 *   if (cleave_executable_load("graph.cleave", NULL, &exe) != CLEAVE_OK) ...
 *   size_t n;
 *   cleave_executable_num_args(exe, "graph", &n);   // describe each with
 *   void *args[n];                                 // cleave_executable_arg
 *   ...                                            // 64-byte aligned buffers
 *   cleave_executable_run(exe, "graph", args, n);
 *   cleave_executable_destroy(exe);
 */
typedef struct cleave_executable cleave_executable;

typedef struct cleave_executable_options {
  /** When positive, omp_set_num_threads(num_threads) on the calling thread
   *  before each entry call. 0 (the default) leaves OpenMP alone. */
  int32_t num_threads;
  /** Nonzero: join the data-parallel job over MPI_COMM_WORLD (initialising
   *  MPI if needed); the entries' cross-rank reductions run over its ranks.
   *  0 (the default): one rank, MPI is not touched. */
  int32_t distributed;
  /** What runs the entry points, as cleave_session_options.device: it must
   *  be what the artifact was compiled for. On CLEAVE_DEVICE_CUDA the
   *  executable keeps a device copy of every argument: a run copies inputs
   *  and globals to the GPU and outputs and globals back, and returns when
   *  they are back. */
  int32_t device;
  /** Which GPU, as cleave_session_options.device_ordinal. Default 0. */
  int32_t device_ordinal;
} cleave_executable_options;

/** Sets every field of `options` to its default. */
CLEAVE_API void
cleave_executable_options_init(cleave_executable_options *options);

/** What an argument of an entry is. */
typedef enum cleave_arg_role {
  CLEAVE_ARG_INPUT = 0,  /**< read by the entry */
  CLEAVE_ARG_OUTPUT = 1, /**< written by the entry */
  CLEAVE_ARG_GLOBAL = 2  /**< persistent state: read and updated in place */
} cleave_arg_role;

typedef struct cleave_arg_info {
  cleave_arg_role role;
  cleave_tensor_info tensor;
} cleave_arg_info;

/** Loads the graph artifact at `path` (the same checks as
 *  cleave_artifact_load) and builds its kernel context. `options` may be
 *  NULL (defaults). */
CLEAVE_API cleave_status cleave_executable_load(
    const char *path, const cleave_executable_options *options,
    cleave_executable **out);
/** Destroys an executable (NULL is allowed) and unloads its artifact. */
CLEAVE_API void cleave_executable_destroy(cleave_executable *executable);

/** The manifest, NUL-terminated JSON. */
CLEAVE_API cleave_status cleave_executable_manifest(
    const cleave_executable *executable, const char **json);
/** The entry points, in manifest order (sorted by name). */
CLEAVE_API cleave_status cleave_executable_num_entries(
    const cleave_executable *executable, size_t *count);
CLEAVE_API cleave_status cleave_executable_entry_name(
    const cleave_executable *executable, size_t index, const char **name);
/** The arguments a caller passes to `entry`, in order. */
CLEAVE_API cleave_status cleave_executable_num_args(
    const cleave_executable *executable, const char *entry, size_t *count);
CLEAVE_API cleave_status
cleave_executable_arg(const cleave_executable *executable, const char *entry,
                      size_t index, cleave_arg_info *info);

/** Runs `entry` with `args[i]` pointing to argument i's buffer (`num_args`
 *  must be cleave_executable_num_args). Each pointer must be 64-byte aligned
 *  and hold the argument's dtype and shape, row-major; only a buffer of zero
 *  bytes may be NULL. Inputs are not written; globals are updated in place.
 *  If a kernel fails, the kernel's error is returned and the outputs and
 *  globals are unspecified; the executable holds no state of its own, so it
 *  stays usable.
 */
/** The executable's notes, as a session's (cleave_session_num_notes). */
CLEAVE_API cleave_status
cleave_executable_num_notes(const cleave_executable *executable, size_t *count);
CLEAVE_API cleave_status cleave_executable_note(
    const cleave_executable *executable, size_t index, const char **note);
CLEAVE_API cleave_status cleave_executable_run(cleave_executable *executable,
                                               const char *entry,
                                               void *const *args,
                                               size_t num_args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CLEAVE_RUNTIME_H */

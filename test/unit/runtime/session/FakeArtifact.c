/*===- FakeArtifact.c - A hand-written artifact for runtime tests -*- C -*-===//
 *
 * A softmax-regression model (logits = W x + b, weighted cross-entropy)
 * implementing the artifact ABI of docs/design/runtime-abi.md exactly as a
 * compiled model would: micro_step computes forward and backward by hand and
 * accumulates into the accumulator globals, train.samples and
 * train.micro_steps; apply_step normalises by train.samples, updates the
 * parameters, advances train.step and zeroes the window.
 *
 * Compiled twice:
 *  - FAKE_SGD: SGD with momentum (hyperparameters lr, momentum); apply_step
 *    sums gradients and sample counts across ranks (reduce "sum") through
 *    cleave_cross_rank_reduce, which resolves against libcleave_runtime.
 *  - FAKE_ADAM: AdamW (lr, beta1, beta2, eps, weight_decay); micro_step
 *    applies a dropout mask to the inputs drawn from a hash of train.rng, which
 *    it advances (so resuming needs train.rng restored); extra buffers
 *    exercise every initialiser kind, including `data`.
 *  - FAKE_SGD with FAKE_CUDA: the SGD model as a `"device": "cuda"`
 *    artifact for the fake CUDA driver (FakeCudaDriver.c), whose device
 *    memory is host memory: a global constructor hands a module to
 *    mgpuModuleLoad, as MLIR's lowering does, and apply_step runs its
 *    update as a kernel of that module, launched with mgpuLaunchKernel on
 *    cleave_gpu_stream(ctx).
 *
 * Every pointer the runtime passes must be 64-byte aligned and ctx non-NULL;
 * otherwise the fake poisons its results with NaN so that tests notice.
 *
 *===----------------------------------------------------------------------===*/

#include "cleave/kernel_abi.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define B 8 /* micro-batch */
#define D 5 /* features */
#define C 3 /* classes */

#if defined(FAKE_SGD) == defined(FAKE_ADAM)
#error "define exactly one of FAKE_SGD and FAKE_ADAM"
#endif
/* The reduction kind of the SGD fake's apply step (a data-parallel test
 * builds it with CLEAVE_REDUCE_ADASUM too). */
#ifndef FAKE_REDUCE
#define FAKE_REDUCE CLEAVE_REDUCE_SUM
#endif

#if defined(FAKE_CUDA) && !defined(FAKE_SGD)
#error "FAKE_CUDA needs FAKE_SGD"
#endif

#ifdef FAKE_CUDA
#include "FakeCuda.h"

#include <stddef.h>

#define DEVICE_FIELDS                                                          \
  "\"device\": \"cuda\", \"gpu_arches\": [\"sm_80\", \"sm_90\"], "            \
  "\"ptx_arch\": \"sm_80\", "
#else
#define DEVICE_FIELDS ""
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

/* The manifests are JSON text pasted from macros; keep their layout. */
/* clang-format off */

/* Globals shared by both variants, in manifest order. */
#define COMMON_GLOBALS                                                         \
  "{\"name\": \"fc.weight\", \"kind\": \"param\", \"dtype\": \"f32\", "        \
  "\"shape\": [" STR(C) ", " STR(D) "], \"init\": {\"kind\": "                 \
  "\"kaiming_uniform\"}},"                                                     \
  "{\"name\": \"fc.bias\", \"kind\": \"param\", \"dtype\": \"f32\", "          \
  "\"shape\": [" STR(C) "], \"init\": {\"kind\": \"fan_in_uniform\", "         \
  "\"fan_in\": " STR(D) "}},"                                                  \
  "{\"name\": \"fc.weight.grad\", \"kind\": \"accumulator\", \"of\": "         \
  "\"fc.weight\", \"dtype\": \"f32\", \"shape\": [" STR(C) ", " STR(D) "], "   \
  "\"init\": {\"kind\": \"zeros\"}},"                                          \
  "{\"name\": \"fc.bias.grad\", \"kind\": \"accumulator\", \"of\": "           \
  "\"fc.bias\", \"dtype\": \"f32\", \"shape\": [" STR(C) "], \"init\": "       \
  "{\"kind\": \"zeros\"}},"                                                    \
  "{\"name\": \"train.samples\", \"kind\": \"accumulator\", \"dtype\": "       \
  "\"f32\", \"shape\": [], \"init\": {\"kind\": \"zeros\"}},"                  \
  "{\"name\": \"train.step\", \"kind\": \"counter\", \"dtype\": \"i64\", "     \
  "\"shape\": [], \"init\": {\"kind\": \"zeros\"}},"                           \
  "{\"name\": \"train.micro_steps\", \"kind\": \"counter\", \"dtype\": "       \
  "\"i64\", \"shape\": [], \"init\": {\"kind\": \"zeros\"}}"

#define INPUTS                                                                 \
  "\"inputs\": ["                                                              \
  "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [" STR(B) ", " STR(D)      \
  "]},"                                                                        \
  "{\"name\": \"labels\", \"dtype\": \"i64\", \"shape\": [" STR(B) "], "       \
  "\"index_bound\": " STR(C) "},"                                              \
  "{\"name\": \"weights\", \"dtype\": \"f32\", \"shape\": [" STR(B) "], "      \
  "\"role\": \"sample_weights\"}],"

#define EVAL_ENTRY                                                             \
  "\"eval_step\": {\"args\": ["                                                \
  "{\"role\": \"input\", \"name\": \"x\"},"                                    \
  "{\"role\": \"output\", \"name\": \"prediction\", \"dtype\": \"f32\", "      \
  "\"shape\": [" STR(B) ", " STR(C) "]},"                                      \
  "{\"role\": \"global\", \"name\": \"fc.weight\"},"                           \
  "{\"role\": \"global\", \"name\": \"fc.bias\"}]}"

#define MICRO_STEP_HEAD                                                        \
  "\"micro_step\": {\"args\": ["                                               \
  "{\"role\": \"input\", \"name\": \"x\"},"                                    \
  "{\"role\": \"input\", \"name\": \"labels\"},"                               \
  "{\"role\": \"input\", \"name\": \"weights\"},"                              \
  "{\"role\": \"output\", \"name\": \"loss\", \"dtype\": \"f32\", "            \
  "\"shape\": []},"                                                            \
  "{\"role\": \"global\", \"name\": \"fc.weight\"},"                           \
  "{\"role\": \"global\", \"name\": \"fc.bias\"},"                             \
  "{\"role\": \"global\", \"name\": \"fc.weight.grad\"},"                      \
  "{\"role\": \"global\", \"name\": \"fc.bias.grad\"},"                        \
  "{\"role\": \"global\", \"name\": \"train.samples\"},"                       \
  "{\"role\": \"global\", \"name\": \"train.micro_steps\"},"

/* The scratch area holds the softmax probabilities; a literal, because it is
 * pasted into the manifest text. */
#define SCRATCH_BYTES 96
_Static_assert(SCRATCH_BYTES == B * C * sizeof(float), "scratch size");

#ifdef FAKE_SGD

static const char kManifest[] =
    "{\"abi_version\": " STR(CLEAVE_KERNEL_ABI_VERSION) ", " DEVICE_FIELDS
    "\"micro_batch\": " STR(B) ", \"accumulate\": 4, "
    "\"reduce\": \"sum\", \"dtype\": \"f32\","
    "\"globals\": [" COMMON_GLOBALS ","
    "{\"name\": \"fc.weight.momentum\", \"kind\": \"state\", \"of\": "
    "\"fc.weight\", \"dtype\": \"f32\", \"shape\": [" STR(C) ", " STR(D) "], "
    "\"init\": {\"kind\": \"zeros\"}},"
    "{\"name\": \"fc.bias.momentum\", \"kind\": \"state\", \"of\": "
    "\"fc.bias\", \"dtype\": \"f32\", \"shape\": [" STR(C) "], \"init\": "
    "{\"kind\": \"zeros\"}}],"
    "\"hyperparameters\": [{\"name\": \"lr\", \"default\": 0.1},"
    "{\"name\": \"momentum\", \"default\": 0.9}]," INPUTS
    "\"entries\": {" MICRO_STEP_HEAD
    "{\"role\": \"scratch\", \"bytes\": " STR(SCRATCH_BYTES) "}]},"
    "\"apply_step\": {\"args\": ["
    "{\"role\": \"hyper\", \"name\": \"lr\"},"
    "{\"role\": \"hyper\", \"name\": \"momentum\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight.grad\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias.grad\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight.momentum\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias.momentum\"},"
    "{\"role\": \"global\", \"name\": \"train.samples\"},"
    "{\"role\": \"global\", \"name\": \"train.step\"},"
    "{\"role\": \"global\", \"name\": \"train.micro_steps\"}]}," EVAL_ENTRY
    "},"
    "\"kernels\": [],"
    "\"warnings\": []}";

#define NUM_MICRO_ARGS 11
#define NUM_APPLY_ARGS 11

#else /* FAKE_ADAM */

/* The bytes that `data` initialisers read: fc.scale is floats [4, 8) of it. */
static const float kInitData[8] = {0.f, 0.f, 0.f, 0.f, 0.5f, -1.25f, 3.f, 8.f};

static const char kManifest[] =
    "{\"abi_version\": " STR(CLEAVE_KERNEL_ABI_VERSION) ", "
    "\"micro_batch\": " STR(B) ", \"accumulate\": 2, "
    "\"reduce\": \"none\", \"dtype\": \"f32\","
    "\"globals\": [" COMMON_GLOBALS ","
    "{\"name\": \"train.rng\", \"kind\": \"counter\", \"dtype\": \"i64\", "
    "\"shape\": [], \"init\": {\"kind\": \"constant\", \"value\": 7}},"
    "{\"name\": \"fc.weight.exp_avg\", \"kind\": \"state\", \"of\": "
    "\"fc.weight\", \"dtype\": \"f32\", \"shape\": [" STR(C) ", " STR(D) "], "
    "\"init\": {\"kind\": \"zeros\"}},"
    "{\"name\": \"fc.weight.exp_avg_sq\", \"kind\": \"state\", \"of\": "
    "\"fc.weight\", \"dtype\": \"f32\", \"shape\": [" STR(C) ", " STR(D) "], "
    "\"init\": {\"kind\": \"zeros\"}},"
    "{\"name\": \"fc.bias.exp_avg\", \"kind\": \"state\", \"of\": "
    "\"fc.bias\", \"dtype\": \"f32\", \"shape\": [" STR(C) "], \"init\": "
    "{\"kind\": \"zeros\"}},"
    "{\"name\": \"fc.bias.exp_avg_sq\", \"kind\": \"state\", \"of\": "
    "\"fc.bias\", \"dtype\": \"f32\", \"shape\": [" STR(C) "], \"init\": "
    "{\"kind\": \"zeros\"}},"
    "{\"name\": \"fc.scale\", \"kind\": \"buffer\", \"dtype\": \"f32\", "
    "\"shape\": [4], \"init\": {\"kind\": \"data\", \"offset\": 16, "
    "\"bytes\": 16}},"
    "{\"name\": \"aux.uniform\", \"kind\": \"buffer\", \"dtype\": \"f64\", "
    "\"shape\": [2000], \"init\": {\"kind\": \"uniform\", \"lo\": -2, "
    "\"hi\": 3}},"
    "{\"name\": \"aux.normal\", \"kind\": \"buffer\", \"dtype\": \"f32\", "
    "\"shape\": [20, 100], \"init\": {\"kind\": \"normal\", \"mean\": 1, "
    "\"std\": 2}},"
    "{\"name\": \"aux.ones\", \"kind\": \"buffer\", \"dtype\": \"f64\", "
    "\"shape\": [3], \"init\": {\"kind\": \"ones\"}},"
    "{\"name\": \"aux.constant\", \"kind\": \"buffer\", \"dtype\": \"i32\", "
    "\"shape\": [2, 2], \"init\": {\"kind\": \"constant\", \"value\": -5}},"
    "{\"name\": \"aux.empty\", \"kind\": \"buffer\", \"dtype\": \"f32\", "
    "\"shape\": [0, 4], \"init\": {\"kind\": \"zeros\"}}],"
    "\"hyperparameters\": [{\"name\": \"lr\", \"default\": 0.01},"
    "{\"name\": \"beta1\", \"default\": 0.9},"
    "{\"name\": \"beta2\", \"default\": 0.999},"
    "{\"name\": \"eps\", \"default\": 1e-8},"
    "{\"name\": \"weight_decay\", \"default\": 0.01}]," INPUTS
    "\"entries\": {" MICRO_STEP_HEAD
    "{\"role\": \"global\", \"name\": \"train.rng\"},"
    "{\"role\": \"scratch\", \"bytes\": " STR(SCRATCH_BYTES) "}]},"
    "\"apply_step\": {\"args\": ["
    "{\"role\": \"hyper\", \"name\": \"lr\"},"
    "{\"role\": \"hyper\", \"name\": \"beta1\"},"
    "{\"role\": \"hyper\", \"name\": \"beta2\"},"
    "{\"role\": \"hyper\", \"name\": \"eps\"},"
    "{\"role\": \"hyper\", \"name\": \"weight_decay\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight.grad\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias.grad\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight.exp_avg\"},"
    "{\"role\": \"global\", \"name\": \"fc.weight.exp_avg_sq\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias.exp_avg\"},"
    "{\"role\": \"global\", \"name\": \"fc.bias.exp_avg_sq\"},"
    "{\"role\": \"global\", \"name\": \"train.samples\"},"
    "{\"role\": \"global\", \"name\": \"train.step\"},"
    "{\"role\": \"global\", \"name\": \"train.micro_steps\"}]}," EVAL_ENTRY
    "},"
    "\"kernels\": [],"
    "\"warnings\": [{\"op\": \"nn.dropout\", \"loc\": \"fake.mlir:3:5\", "
    "\"message\": \"the dropout mask depends on how the batch is split into "
    "micro-batches\"}]}";

#define NUM_MICRO_ARGS 12
#define NUM_APPLY_ARGS 16

/* Keep probability of the input dropout. */
#define KEEP 0.75f

/* A 64-bit mix (splitmix64's finaliser) of the dropout stream position. */
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif

/* clang-format on */

static int aligned(const void *p) { return ((uintptr_t)p & 63u) == 0; }

/* Nonzero if the runtime broke the ABI: a NULL ctx or a misaligned pointer. */
static int badCall(void *ctx, void **args, int n) {
  if (!ctx)
    return 1;
  for (int i = 0; i < n; ++i)
    if (!args[i] || !aligned(args[i]))
      return 1;
  return 0;
}

int32_t cleave_abi_version(void) { return CLEAVE_KERNEL_ABI_VERSION; }

const char *cleave_manifest(void) { return kManifest; }

const void *cleave_init_data(void) {
#ifdef FAKE_ADAM
  return kInitData;
#else
  return NULL;
#endif
}

/* logits[c] = b[c] + sum_d W[c, d] x[d] */
static void logits(const float *W, const float *b, const float *x, float *z) {
  for (int c = 0; c < C; ++c) {
    float acc = b[c];
    for (int d = 0; d < D; ++d)
      acc += W[c * D + d] * x[d];
    z[c] = acc;
  }
}

/* The micro-step on micro_step's arguments `args`; a NaN loss if `bad`. */
static void microStepBody(void **args, int bad) {
  const float *x = (const float *)args[0];
  const int64_t *labels = (const int64_t *)args[1];
  const float *w = (const float *)args[2];
  float *loss = (float *)args[3];
  const float *W = (const float *)args[4];
  const float *b = (const float *)args[5];
  float *gW = (float *)args[6];
  float *gb = (float *)args[7];
  float *samples = (float *)args[8];
  int64_t *microSteps = (int64_t *)args[9];
#ifdef FAKE_ADAM
  int64_t *rng = (int64_t *)args[10];
#endif
  float *probs = (float *)args[NUM_MICRO_ARGS - 1]; /* scratch */

  double total = 0.0;
  float weightSum = 0.f;
  for (int i = 0; i < B; ++i) {
    float xi[D];
    for (int d = 0; d < D; ++d) {
      xi[d] = x[i * D + d];
#ifdef FAKE_ADAM
      uint64_t r =
          mix((uint64_t)*rng * 0x9e3779b97f4a7c15ull + (uint64_t)(i * D + d));
      xi[d] = (r >> 40) < (uint64_t)(KEEP * (1 << 24)) ? xi[d] / KEEP : 0.f;
#endif
    }
    float z[C];
    logits(W, b, xi, z);
    float m = z[0];
    for (int c = 1; c < C; ++c)
      m = z[c] > m ? z[c] : m;
    float s = 0.f;
    for (int c = 0; c < C; ++c)
      s += expf(z[c] - m);
    float lse = m + logf(s);
    int64_t label = labels[i];
    if (label < 0 || label >= C) {
      bad = 1;
      label = 0;
    }
    total += (double)(w[i] * (lse - z[label]));
    for (int c = 0; c < C; ++c) {
      probs[i * C + c] = expf(z[c] - lse);
      float g = (probs[i * C + c] - (c == label ? 1.f : 0.f)) * w[i];
      gb[c] += g;
      for (int d = 0; d < D; ++d)
        gW[c * D + d] += g * xi[d];
    }
    weightSum += w[i];
  }
  *loss = bad ? NAN : (float)total;
  *samples += weightSum;
  *microSteps += 1;
#ifdef FAKE_ADAM
  *rng += 1;
#endif
}

#ifdef FAKE_CUDA
/* The fake module's kernels, as the fake driver calls them: params[0]
 * points to the entry's `args`, params[1] to an int64_t `bad` (CUDA passes
 * each argument by address; the fake driver's graphs copy both as 8-byte
 * values). All the work of the entry points is in them, as in a compiled
 * cuda artifact, so that replaying a captured graph redoes all of it. */
static void sgdUpdate(void **args, int bad);
static void microStepKernel(void **params) {
  microStepBody(*(void ***)params[0], (int)*(const int64_t *)params[1]);
}
static void sgdKernel(void **params) {
  sgdUpdate(*(void ***)params[0], (int)*(const int64_t *)params[1]);
}
static const fake_cuda_kernel kKernels[] = {{"micro_step", microStepKernel},
                                            {"sgd_update", sgdKernel}};
static fake_cuda_module kModule = {FAKE_CUDA_MODULE_MAGIC, 2, kKernels};
static void *module;

/* What MLIR's gpu.binary lowering emits: load at dlopen, unload at dlclose. */
__attribute__((constructor)) static void loadModule(void) {
  module = mgpuModuleLoad(&kModule, sizeof(kModule));
}
__attribute__((destructor)) static void unloadModule(void) {
  mgpuModuleUnload(module);
}

/* One launch of kernel `name` on the entry's stream, the way MLIR's
 * lowering of gpu.launch_func does it. */
static void launch(void *ctx, const char *name, void **args, int bad) {
  int64_t flag = bad;
  void *params[2] = {&args, &flag};
  mgpuLaunchKernel(mgpuModuleGetFunction(module, name), 1, 1, 1, 1, 1, 1, 0,
                   cleave_gpu_stream(ctx), params, NULL, 2);
}
#endif

void cleave_entry_micro_step(void *ctx, void **args) {
  int bad = badCall(ctx, args, NUM_MICRO_ARGS);
#ifdef FAKE_CUDA
  launch(ctx, "micro_step", args, bad);
#else
  microStepBody(args, bad);
#endif
}

#ifdef FAKE_SGD

/* The SGD update of apply_step's arguments `args`; NaN parameters if `bad`. */
static void sgdUpdate(void **args, int bad) {
  float lr = *(const float *)args[0];
  float mu = *(const float *)args[1];
  float *params[2] = {(float *)args[2], (float *)args[3]};
  float *grads[2] = {(float *)args[4], (float *)args[5]};
  float *moms[2] = {(float *)args[6], (float *)args[7]};
  float *samples = (float *)args[8];
  int64_t *step = (int64_t *)args[9];
  int64_t *microSteps = (int64_t *)args[10];
  const int64_t sizes[2] = {C * D, C};
  float inv = *samples > 0.f ? 1.f / *samples : 0.f;
  for (int t = 0; t < 2; ++t)
    for (int64_t j = 0; j < sizes[t]; ++j) {
      float g = grads[t][j] * inv;
      moms[t][j] = mu * moms[t][j] + g;
      params[t][j] = bad ? NAN : params[t][j] - lr * moms[t][j];
      grads[t][j] = 0.f;
    }
  *samples = 0.f;
  *microSteps = 0;
  *step += 1;
}

void cleave_entry_apply_step(void *ctx, void **args) {
  float *grads[2] = {(float *)args[4], (float *)args[5]};
  float *samples = (float *)args[8];
  const int64_t sizes[3] = {C * D, C, 1};
  int bad = badCall(ctx, args, NUM_APPLY_ARGS);

  /* The window's gradient sums and sample counts of all ranks. */
  float *reduced[3] = {grads[0], grads[1], samples};
  if (ctx)
    cleave_cross_rank_reduce(ctx, FAKE_REDUCE, 3, reduced, sizes);
#ifdef FAKE_CUDA
  launch(ctx, "sgd_update", args, bad);
#else
  sgdUpdate(args, bad);
#endif
}

#else /* FAKE_ADAM */

void cleave_entry_apply_step(void *ctx, void **args) {
  float lr = *(const float *)args[0];
  float beta1 = *(const float *)args[1];
  float beta2 = *(const float *)args[2];
  float eps = *(const float *)args[3];
  float wd = *(const float *)args[4];
  float *params[2] = {(float *)args[5], (float *)args[6]};
  float *grads[2] = {(float *)args[7], (float *)args[8]};
  float *m[2] = {(float *)args[9], (float *)args[11]};
  float *v[2] = {(float *)args[10], (float *)args[12]};
  float *samples = (float *)args[13];
  int64_t *step = (int64_t *)args[14];
  int64_t *microSteps = (int64_t *)args[15];
  const int64_t sizes[2] = {C * D, C};
  int bad = badCall(ctx, args, NUM_APPLY_ARGS);

  int64_t t = *step + 1;
  float c1 = 1.f - powf(beta1, (float)t);
  float c2 = 1.f - powf(beta2, (float)t);
  float inv = *samples > 0.f ? 1.f / *samples : 0.f;
  for (int k = 0; k < 2; ++k)
    for (int64_t j = 0; j < sizes[k]; ++j) {
      float g = grads[k][j] * inv;
      m[k][j] = beta1 * m[k][j] + (1.f - beta1) * g;
      v[k][j] = beta2 * v[k][j] + (1.f - beta2) * g * g;
      float update = (m[k][j] / c1) / (sqrtf(v[k][j] / c2) + eps);
      params[k][j] =
          bad ? NAN : params[k][j] - lr * (update + wd * params[k][j]);
      grads[k][j] = 0.f;
    }
  *samples = 0.f;
  *microSteps = 0;
  *step = t;
}

#endif

void cleave_entry_eval_step(void *ctx, void **args) {
  const float *x = (const float *)args[0];
  float *prediction = (float *)args[1];
  const float *W = (const float *)args[2];
  const float *b = (const float *)args[3];
  int bad = badCall(ctx, args, 4);
  for (int i = 0; i < B; ++i) {
    logits(W, b, x + i * D, prediction + i * C);
    if (bad)
      for (int c = 0; c < C; ++c)
        prediction[i * C + c] = NAN;
  }
}

/*===- KernelFaultArtifact.c - Kernel calls that fail on demand ---*- C -*-===//
 *
 * A training artifact that calls the runtime's kernels as compiled code does,
 * and makes one of its kernel calls break the ABI when the test asks, so that
 * the tests can see what a session does when a kernel fails inside an entry
 * point. The test dlopens the same file first and calls fault_set(); dlopen
 * hands the runtime that same loaded instance.
 *
 * The model: y = x w + b through matmul kernel 0 (B = 2, K = 3, N = 2, with a
 * bias), loss = sum(y), gradient w.grad += x^T 1; apply_step sums w.grad
 * across ranks through cleave_cross_rank_reduce, then w -= lr * w.grad.
 * eval_step writes y as its prediction.
 *
 * Faults (fault_set):
 *   FAULT_MICRO_STEP  micro_step passes NULL for the bias of kernel 0
 *   FAULT_APPLY_STEP  apply_step asks for reduction kind 9, which is none
 *   FAULT_EVAL_STEP   eval_step passes NULL for the bias of kernel 0
 * Like compiled code, each entry runs to its end after the failed call.
 *
 *===----------------------------------------------------------------------===*/

#include "cleave/kernel_abi.h"

#include <stddef.h>
#include <stdint.h>

#define STR_(x) #x
#define STR(x) STR_(x)

enum { FAULT_NONE, FAULT_MICRO_STEP, FAULT_APPLY_STEP, FAULT_EVAL_STEP };

static int fault = FAULT_NONE;

void fault_set(int where) { fault = where; }

/* clang-format off */
static const char kManifest[] =
    "{\"abi_version\": " STR(CLEAVE_KERNEL_ABI_VERSION) ", "
    "\"micro_batch\": 2, \"accumulate\": 2, "
    "\"reduce\": \"sum\", \"dtype\": \"f32\","
    "\"globals\": ["
    "{\"name\": \"w\", \"kind\": \"param\", \"dtype\": \"f32\", \"shape\": "
    "[3, 2], \"init\": {\"kind\": \"constant\", \"value\": 0.5}},"
    "{\"name\": \"b\", \"kind\": \"param\", \"dtype\": \"f32\", \"shape\": "
    "[2], \"init\": {\"kind\": \"constant\", \"value\": 0.25}},"
    "{\"name\": \"w.grad\", \"kind\": \"accumulator\", \"of\": \"w\", "
    "\"dtype\": \"f32\", \"shape\": [3, 2], \"init\": {\"kind\": \"zeros\"}},"
    "{\"name\": \"train.step\", \"kind\": \"counter\", \"dtype\": \"i64\", "
    "\"shape\": [], \"init\": {\"kind\": \"zeros\"}},"
    "{\"name\": \"train.micro_steps\", \"kind\": \"counter\", \"dtype\": "
    "\"i64\", \"shape\": [], \"init\": {\"kind\": \"zeros\"}}],"
    "\"hyperparameters\": [{\"name\": \"lr\", \"default\": 0.125}],"
    "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 3]}],"
    "\"entries\": {"
    "\"micro_step\": {\"args\": ["
    "{\"role\": \"input\", \"name\": \"x\"},"
    "{\"role\": \"output\", \"name\": \"loss\", \"dtype\": \"f32\", "
    "\"shape\": []},"
    "{\"role\": \"global\", \"name\": \"w\"},"
    "{\"role\": \"global\", \"name\": \"b\"},"
    "{\"role\": \"global\", \"name\": \"w.grad\"},"
    "{\"role\": \"global\", \"name\": \"train.micro_steps\"},"
    "{\"role\": \"scratch\", \"bytes\": 16}]},"
    "\"apply_step\": {\"args\": ["
    "{\"role\": \"hyper\", \"name\": \"lr\"},"
    "{\"role\": \"global\", \"name\": \"w\"},"
    "{\"role\": \"global\", \"name\": \"w.grad\"},"
    "{\"role\": \"global\", \"name\": \"train.step\"},"
    "{\"role\": \"global\", \"name\": \"train.micro_steps\"}]},"
    "\"eval_step\": {\"args\": ["
    "{\"role\": \"input\", \"name\": \"x\"},"
    "{\"role\": \"output\", \"name\": \"y\", \"dtype\": \"f32\", "
    "\"shape\": [2, 2]},"
    "{\"role\": \"global\", \"name\": \"w\"},"
    "{\"role\": \"global\", \"name\": \"b\"}]}},"
    "\"kernels\": [{\"id\": 0, \"op\": \"matmul\", \"batch\": 1, \"m\": 2, "
    "\"k\": 3, \"n\": 2, \"trans_a\": false, \"trans_b\": false, "
    "\"b_batched\": false, \"bias\": true, \"activation\": \"none\", "
    "\"accumulate\": false}],"
    "\"warnings\": []}";
/* clang-format on */

int32_t cleave_abi_version(void) { return CLEAVE_KERNEL_ABI_VERSION; }
const char *cleave_manifest(void) { return kManifest; }
const void *cleave_init_data(void) { return NULL; }

void cleave_entry_micro_step(void *ctx, void **args) {
  const float *x = (const float *)args[0];
  float *loss = (float *)args[1];
  const float *w = (const float *)args[2];
  const float *b = (const float *)args[3];
  float *grad = (float *)args[4];
  int64_t *microSteps = (int64_t *)args[5];
  float *y = (float *)args[6];
  cleave_kernel_matmul(ctx, 0, x, w, fault == FAULT_MICRO_STEP ? NULL : b, y);
  float sum = 0.f;
  for (int i = 0; i < 4; ++i)
    sum += y[i];
  *loss = sum;
  for (int k = 0; k < 3; ++k)
    for (int n = 0; n < 2; ++n)
      grad[k * 2 + n] += x[k] + x[3 + k];
  *microSteps += 1;
}

void cleave_entry_apply_step(void *ctx, void **args) {
  float lr = *(const float *)args[0];
  float *w = (float *)args[1];
  float *grad = (float *)args[2];
  int64_t *step = (int64_t *)args[3];
  int64_t *microSteps = (int64_t *)args[4];
  const int64_t size = 6;
  cleave_cross_rank_reduce(
      ctx, fault == FAULT_APPLY_STEP ? 9 : CLEAVE_REDUCE_SUM, 1, &grad, &size);
  for (int i = 0; i < 6; ++i) {
    w[i] -= lr * grad[i];
    grad[i] = 0.f;
  }
  *step += 1;
  *microSteps = 0;
}

void cleave_entry_eval_step(void *ctx, void **args) {
  const float *x = (const float *)args[0];
  float *y = (float *)args[1];
  const float *w = (const float *)args[2];
  const float *b = (const float *)args[3];
  cleave_kernel_matmul(ctx, 0, x, w, fault == FAULT_EVAL_STEP ? NULL : b, y);
}

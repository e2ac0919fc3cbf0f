/*===- GraphArtifact.c - A hand-written graph artifact -----------*- C -*-===//
 *
 * What the tracing frontend compiles, written by hand: a manifest of kind
 * "graph" whose entries take caller-owned buffers.
 *
 *   axpy    w += a * x (w a global updated in place), y = 2 * w, and a
 *           scratch area it fills (to prove it is there and aligned)
 *   matmul  c = a @ b through the runtime's kernel 0 (to prove the
 *           executable's kernel context reaches the entry)
 *   unknown_kernel  calls kernel 1, which the manifest does not have (code
 *           that breaks the kernel ABI), then writes c = 7
 *
 *===----------------------------------------------------------------------===*/

#include "cleave/kernel_abi.h"

#include <stddef.h>
#include <stdint.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static const char kManifest[] =
    "{\"abi_version\": " STR(CLEAVE_KERNEL_ABI_VERSION) ", "
    "\"kind\": \"graph\","
    "\"globals\": ["
    "{\"name\": \"w\", \"kind\": \"param\", \"dtype\": \"f32\", \"shape\": "
    "[4], \"init\": {\"kind\": \"zeros\"}}],"
    "\"hyperparameters\": [], \"inputs\": [],"
    "\"entries\": {"
    "\"axpy\": {\"args\": ["
    "{\"role\": \"input\", \"name\": \"x\", \"dtype\": \"f32\", \"shape\": "
    "[4]},"
    "{\"role\": \"input\", \"name\": \"a\", \"dtype\": \"f32\", \"shape\": "
    "[]},"
    "{\"role\": \"output\", \"name\": \"y\", \"dtype\": \"f32\", \"shape\": "
    "[4]},"
    "{\"role\": \"global\", \"name\": \"w\"},"
    "{\"role\": \"scratch\", \"bytes\": 100}]},"
    "\"matmul\": {\"args\": ["
    "{\"role\": \"input\", \"name\": \"a\", \"dtype\": \"f32\", \"shape\": "
    "[2, 3]},"
    "{\"role\": \"input\", \"name\": \"b\", \"dtype\": \"f32\", \"shape\": "
    "[3, 2]},"
    "{\"role\": \"output\", \"name\": \"c\", \"dtype\": \"f32\", \"shape\": "
    "[2, 2]}]},"
    "\"unknown_kernel\": {\"args\": ["
    "{\"role\": \"output\", \"name\": \"c\", \"dtype\": \"f32\", \"shape\": "
    "[2, 2]}]}},"
    "\"kernels\": [{\"id\": 0, \"op\": \"matmul\", \"batch\": 1, \"m\": 2, "
    "\"k\": 3, \"n\": 2, \"trans_a\": false, \"trans_b\": false, "
    "\"b_batched\": false, \"bias\": false, \"activation\": \"none\", "
    "\"accumulate\": false}]}";

int32_t cleave_abi_version(void) { return CLEAVE_KERNEL_ABI_VERSION; }
const char *cleave_manifest(void) { return kManifest; }
const void *cleave_init_data(void) { return NULL; }

void cleave_entry_axpy(void *ctx, void **args) {
  (void)ctx;
  const float *x = (const float *)args[0];
  float a = *(const float *)args[1];
  float *y = (float *)args[2];
  float *w = (float *)args[3];
  unsigned char *scratch = (unsigned char *)args[4];
  for (int i = 0; i < 100; ++i)
    scratch[i] = (unsigned char)i;
  for (int i = 0; i < 4; ++i) {
    w[i] += a * x[i];
    y[i] = 2 * w[i];
  }
}

void cleave_entry_matmul(void *ctx, void **args) {
  cleave_kernel_matmul(ctx, 0, (const float *)args[0], (const float *)args[1],
                       NULL, (float *)args[2]);
}

void cleave_entry_unknown_kernel(void *ctx, void **args) {
  float *c = (float *)args[0];
  cleave_kernel_matmul(ctx, 1, c, c, NULL, c);
  for (int i = 0; i < 4; ++i)
    c[i] = 7.f;
}

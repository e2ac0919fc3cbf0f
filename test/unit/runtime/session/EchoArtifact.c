/*===- EchoArtifact.c - An artifact whose manifest a test chooses -*- C -*-===//
 *
 * Loading tests need many manifests, valid and broken. This artifact returns
 * whatever manifest and ABI version the test set through echo_set() before
 * asking the runtime to load it: the test dlopens the same file first, and
 * dlopen hands the runtime that same loaded instance.
 *
 * Its entry points do nothing at all, which also makes it an artifact that
 * breaks the counter contract (micro_step never advances
 * train.micro_steps). It exports micro_step and apply_step but no eval_step.
 *
 *===----------------------------------------------------------------------===*/

#include <stddef.h>
#include <stdint.h>

static const char *manifest = NULL;
static int32_t abiVersion = 1;

void echo_set(const char *text, int32_t version) {
  manifest = text;
  abiVersion = version;
}

int32_t cleave_abi_version(void) { return abiVersion; }
const char *cleave_manifest(void) { return manifest; }
const void *cleave_init_data(void) { return NULL; }

void cleave_entry_micro_step(void *ctx, void **args) {
  (void)ctx;
  (void)args;
}

void cleave_entry_apply_step(void *ctx, void **args) {
  (void)ctx;
  (void)args;
}

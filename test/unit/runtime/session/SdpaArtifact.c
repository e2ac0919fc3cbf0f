/*===- SdpaArtifact.c - Fused attention on the fake GPU -----------*- C -*-===//
 *
 * A hand-written `"device": "cuda"` graph artifact whose entries call the
 * runtime's fused attention kernels, for the fake CUDA driver and its cuDNN
 * (FakeCudnn.c, which interprets the operation graphs the runtime builds):
 * what a compiled transformer's entry points pass to the kernel ABI, with
 * q, k, v, the mask, o and the gradients stored in bf16 and lse in f32, as
 * cleave-compile makes them for cuda.
 *
 *   attention_causal, _bwd   batch 3, T = S = 10, D = Dv = 16, scale 0.3,
 *                            causal, no mask                  kernels 0, 1
 *   attention_masked, _bwd   batch 2, T = 6, S = 9, D = 8, Dv = 16,
 *                            scale 0.45, an additive [T, S] mask, not
 *                            causal                           kernels 2, 3
 *   attention_dropout, _bwd  batch 2, T = S = 7, D = Dv = 8, scale 0.35,
 *                            causal, dropout 0.25 with keep [2, 7, 7]
 *                                                             kernels 4, 5
 *
 * With FAKE_F32 kernel 0 is an f32 entry ("math" and "io_type" f32), and
 * with FAKE_HEAD_DIM_12 kernel 2 has head_dim 12: a cuda session refuses
 * both, as cuDNN's fused attention runs neither.
 *
 *===----------------------------------------------------------------------===*/

#include "cleave/kernel_abi.h"

#include <stddef.h>
#include <stdint.h>

#define STR_(x) #x
#define STR(x) STR_(x)

// clang-format off
#define TENSOR(role, name, dtype, shape)                                       \
  "{\"role\": \"" role "\", \"name\": \"" name "\", \"dtype\": \"" dtype       \
  "\", \"shape\": " shape "}"
#define ENTRY(name, args) "\"" name "\": {\"args\": [" args "]}"

/* The forward's arguments q, k, v[, mask or keep], o, lse; the backward's q,
 * k, v[, mask or keep], o, lse, d_o, dq, dk, dv. */
#define FWD_ARGS(q, k, v, mask, o, lse)                                        \
  TENSOR("input", "q", "bf16", q) ", "                                         \
  TENSOR("input", "k", "bf16", k) ", "                                         \
  TENSOR("input", "v", "bf16", v) ", " mask                                    \
  TENSOR("output", "o", "bf16", o) ", "                                        \
  TENSOR("output", "lse", "f32", lse)
#define BWD_ARGS(q, k, v, mask, o, lse)                                        \
  TENSOR("input", "q", "bf16", q) ", "                                         \
  TENSOR("input", "k", "bf16", k) ", "                                         \
  TENSOR("input", "v", "bf16", v) ", " mask                                    \
  TENSOR("input", "o", "bf16", o) ", "                                         \
  TENSOR("input", "lse", "f32", lse) ", "                                      \
  TENSOR("input", "d_o", "bf16", o) ", "                                       \
  TENSOR("output", "dq", "bf16", q) ", "                                       \
  TENSOR("output", "dk", "bf16", k) ", "                                       \
  TENSOR("output", "dv", "bf16", v)

#define CAUSAL_Q "[3, 10, 16]"
#define CAUSAL_LSE "[3, 10]"
#define MASKED_Q "[2, 6, 8]"
#define MASKED_K "[2, 9, 8]"
#define MASKED_V "[2, 9, 16]"
#define MASKED_O "[2, 6, 16]"
#define MASKED_LSE "[2, 6]"
#define MASK TENSOR("input", "mask", "bf16", "[6, 9]") ", "
#define DROPOUT_Q "[2, 7, 8]"
#define DROPOUT_LSE "[2, 7]"
#define KEEP TENSOR("input", "keep", "bf16", "[2, 7, 7]") ", "

#define SDPA(id, op, batch, t, s, d, dv, scale, causal, mask, math)            \
  "{\"id\": " STR(id) ", \"op\": \"" op "\", \"batch\": " STR(batch)           \
  ", \"seq_q\": " STR(t) ", \"seq_kv\": " STR(s) ", \"head_dim\": " STR(d)     \
  ", \"value_dim\": " STR(dv) ", \"scale\": " STR(scale)                       \
  ", \"causal\": " STR(causal) ", \"mask\": " STR(mask)                        \
  ", \"math\": \"" math "\", \"io_type\": \"" math "\"}"
#define SDPA_DROPOUT(id, op, batch, t, s, d, dv, scale, causal, dropout)       \
  "{\"id\": " STR(id) ", \"op\": \"" op "\", \"batch\": " STR(batch)           \
  ", \"seq_q\": " STR(t) ", \"seq_kv\": " STR(s) ", \"head_dim\": " STR(d)     \
  ", \"value_dim\": " STR(dv) ", \"scale\": " STR(scale)                       \
  ", \"causal\": " STR(causal) ", \"mask\": false, \"dropout\": " STR(dropout) \
  ", \"math\": \"bf16\", \"io_type\": \"bf16\"}"
// clang-format on

#ifdef FAKE_F32
#define CAUSAL_FWD_MATH "f32"
#else
#define CAUSAL_FWD_MATH "bf16"
#endif
#ifdef FAKE_HEAD_DIM_12
#define MASKED_FWD_HEAD_DIM 12
#else
#define MASKED_FWD_HEAD_DIM 8
#endif

// clang-format off
static const char kManifest[] =
    "{\"abi_version\": " STR(CLEAVE_KERNEL_ABI_VERSION) ", "
    "\"kind\": \"graph\", \"device\": \"cuda\", "
    "\"gpu_arches\": [\"sm_80\", \"sm_90\"], \"ptx_arch\": \"sm_80\", "
    "\"globals\": [], \"hyperparameters\": [], \"inputs\": [], \"entries\": {"
    ENTRY("attention_causal", FWD_ARGS(CAUSAL_Q, CAUSAL_Q, CAUSAL_Q, "",
                                       CAUSAL_Q, CAUSAL_LSE)) ", "
    ENTRY("attention_causal_bwd", BWD_ARGS(CAUSAL_Q, CAUSAL_Q, CAUSAL_Q, "",
                                           CAUSAL_Q, CAUSAL_LSE)) ", "
    ENTRY("attention_masked", FWD_ARGS(MASKED_Q, MASKED_K, MASKED_V, MASK,
                                       MASKED_O, MASKED_LSE)) ", "
    ENTRY("attention_masked_bwd", BWD_ARGS(MASKED_Q, MASKED_K, MASKED_V, MASK,
                                           MASKED_O, MASKED_LSE)) ", "
    ENTRY("attention_dropout", FWD_ARGS(DROPOUT_Q, DROPOUT_Q, DROPOUT_Q, KEEP,
                                        DROPOUT_Q, DROPOUT_LSE)) ", "
    ENTRY("attention_dropout_bwd", BWD_ARGS(DROPOUT_Q, DROPOUT_Q, DROPOUT_Q,
                                            KEEP, DROPOUT_Q, DROPOUT_LSE))
    "}, \"kernels\": ["
    SDPA(0, "sdpa_fwd", 3, 10, 10, 16, 16, 0.3, true, false,
         CAUSAL_FWD_MATH) ", "
    SDPA(1, "sdpa_bwd", 3, 10, 10, 16, 16, 0.3, true, false, "bf16") ", "
    SDPA(2, "sdpa_fwd", 2, 6, 9, MASKED_FWD_HEAD_DIM, 16, 0.45, false, true,
         "bf16") ", "
    SDPA(3, "sdpa_bwd", 2, 6, 9, 8, 16, 0.45, false, true, "bf16") ", "
    SDPA_DROPOUT(4, "sdpa_fwd", 2, 7, 7, 8, 8, 0.35, true, 0.25) ", "
    SDPA_DROPOUT(5, "sdpa_bwd", 2, 7, 7, 8, 8, 0.35, true, 0.25) "]}";
// clang-format on

int32_t cleave_abi_version(void) { return CLEAVE_KERNEL_ABI_VERSION; }
const char *cleave_manifest(void) { return kManifest; }
const void *cleave_init_data(void) { return NULL; }

void cleave_entry_attention_causal(void *ctx, void **args) {
  cleave_kernel_sdpa_fwd(ctx, 0, args[0], args[1], args[2], NULL, NULL, args[3],
                         (float *)args[4]);
}

void cleave_entry_attention_causal_bwd(void *ctx, void **args) {
  cleave_kernel_sdpa_bwd(ctx, 1, args[0], args[1], args[2], NULL, NULL, args[3],
                         (const float *)args[4], args[5], args[6], args[7],
                         args[8]);
}

void cleave_entry_attention_masked(void *ctx, void **args) {
  cleave_kernel_sdpa_fwd(ctx, 2, args[0], args[1], args[2], args[3], NULL,
                         args[4], (float *)args[5]);
}

void cleave_entry_attention_masked_bwd(void *ctx, void **args) {
  cleave_kernel_sdpa_bwd(ctx, 3, args[0], args[1], args[2], args[3], NULL,
                         args[4], (const float *)args[5], args[6], args[7],
                         args[8], args[9]);
}

void cleave_entry_attention_dropout(void *ctx, void **args) {
  cleave_kernel_sdpa_fwd(ctx, 4, args[0], args[1], args[2], NULL, args[3],
                         args[4], (float *)args[5]);
}

void cleave_entry_attention_dropout_bwd(void *ctx, void **args) {
  cleave_kernel_sdpa_bwd(ctx, 5, args[0], args[1], args[2], NULL, args[3],
                         args[4], (const float *)args[5], args[6], args[7],
                         args[8], args[9]);
}

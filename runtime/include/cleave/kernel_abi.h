/*===- kernel_abi.h - Runtime kernels called by generated code ---*- C -*-===//
 *
 * The C ABI between code Cleave generates and the runtime's kernels. The
 * contract (manifest fields, layouts, semantics) is specified in
 * docs/design/runtime-abi.md; this header is its only C declaration on the
 * runtime side, mirrored by exactly one compiler file.
 *
 *===----------------------------------------------------------------------===*/

#ifndef CLEAVE_KERNEL_ABI_H
#define CLEAVE_KERNEL_ABI_H

#include <stdint.h>

/**
 * Version of the ABI: what an artifact's `cleave_abi_version()` returns and
 * its manifest's `abi_version` says. The one definition of the number: the
 * compiler and the runtime both take it from here.
 */
#define CLEAVE_KERNEL_ABI_VERSION 1

/*
 * The symbols every artifact exports (see docs/design/runtime-abi.md), by
 * the names the runtime looks up and the compiler defines:
 *
 *   int32_t     cleave_abi_version(void);   CLEAVE_KERNEL_ABI_VERSION
 *   const char *cleave_manifest(void);      the manifest, JSON, NUL-ended
 *   const void *cleave_init_data(void);     initial values of the globals
 *   void        cleave_entry_<entry>(void *ctx, void **buffers);
 */
#define CLEAVE_SYMBOL_ABI_VERSION "cleave_abi_version"
#define CLEAVE_SYMBOL_MANIFEST "cleave_manifest"
#define CLEAVE_SYMBOL_INIT_DATA "cleave_init_data"
#define CLEAVE_SYMBOL_ENTRY_PREFIX "cleave_entry_"
/**
 * Artifacts for the `cuda` target only: the CUDA stream (a `CUstream`) the
 * entry point that received `ctx` enqueues its work on. Generated code passes
 * it to every kernel launch; see docs/design/gpu.md.
 */
#define CLEAVE_SYMBOL_GPU_STREAM "cleave_gpu_stream"
/** The prefix of every symbol of the ABI. */
#define CLEAVE_SYMBOL_PREFIX "cleave_"

typedef int32_t (*cleave_abi_version_fn)(void);
typedef const char *(*cleave_manifest_fn)(void);
typedef const void *(*cleave_init_data_fn)(void);
typedef void (*cleave_entry_fn)(void *ctx, void **buffers);
typedef void *(*cleave_gpu_stream_fn)(void *ctx);

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Common rules for every function below:
 *
 * - `ctx` is the opaque pointer the runtime passes to an artifact's entry
 *   points (a `cleave::rt::KernelContext`); generated code forwards it
 *   unchanged.
 * - `id` is the `id` of an entry of the manifest's `kernels` array. That entry
 *   fixes every shape and attribute; the primitive behind it was created when
 *   the session was created, so a call only binds pointers and executes.
 * - Every tensor is dense, row-major, f32: `NCHW` activations, `OIHW` weights
 *   (`O = groups * O/groups`, `I = C / groups`).
 * - Outputs are overwritten unless the entry says `accumulate: true`, in which
 *   case the result is added to what the output already holds.
 * - Kernels do not return errors: everything about a kernel that can be checked
 *   is checked when the session is created. A call that fails nonetheless (a
 *   oneDNN error at execution, or a call that does not match its entry: an
 *   unknown id, an id of another op, a NULL tensor, a bad count; a bug in the
 *   caller) records one line naming the function and the kernel in `ctx`.
 *   From then on every call on that `ctx` does nothing (reads and writes no
 *   tensor, communicates nothing), so generated code simply runs on to the
 *   end of its entry point, and the runtime returns the error from the call
 *   that ran the entry point. Nothing aborts.
 * - A context runs one kernel at a time: calls on one `ctx` must not overlap.
 */

/**
 * For each of `batch` entries: `c = act(op(a) * op(b) + bias)`, or
 * `c += op(a) * op(b)` when the entry has `accumulate: true`.
 *
 * `a` is `[batch, M, K]` (`[batch, K, M]` with `trans_a`); `b` is `[K, N]`
 * (`[N, K]` with `trans_b`), with a leading `batch` dimension only if
 * `b_batched`; `bias` is `[N]`, or NULL when the entry has `bias: false`;
 * `c` is `[batch, M, N]`. `a` and `b` are f32, or bf16 where the entry's
 * `a_type` / `b_type` says so.
 */
void cleave_kernel_matmul(void *ctx, int64_t id, const void *a, const void *b,
                          const float *bias, float *c);

/**
 * `dst = act(conv2d(src, wei) + bias)`. `src` is `[N, C, H, W]`, `wei` is
 * `[O, C/groups, KH, KW]`, `bias` is `[O]` (NULL when the entry has
 * `bias: false`), `dst` is `[N, O, OH, OW]`. `src` is f32, or bf16 where the
 * entry's `src_type` says so (and `diff_dst` below where `diff_dst_type` does);
 * likewise `wei` with `wei_type`, and the result (`dst`, `diff_src`,
 * `diff_wei`) with `dst_type`. `bias` is always f32.
 */
void cleave_kernel_conv2d_fwd(void *ctx, int64_t id, const void *src,
                              const void *wei, const float *bias, void *dst);

/**
 * Gradient of a convolution with respect to its input: `diff_src` (`[N, C, H,
 * W]`, overwritten) from `diff_dst` (`[N, O, OH, OW]`) and `wei`.
 */
void cleave_kernel_conv2d_bwd_data(void *ctx, int64_t id, const void *diff_dst,
                                   const void *wei, void *diff_src);

/**
 * Gradient of a convolution with respect to its weights: `diff_wei` (`[O,
 * C/groups, KH, KW]`) from `src` and `diff_dst`; added into `diff_wei` when the
 * entry has `accumulate: true`.
 */
void cleave_kernel_conv2d_bwd_weights(void *ctx, int64_t id, const void *src,
                                      const void *diff_dst, void *diff_wei);

/**
 * Max or average pooling (`max_pool2d_fwd` / `avg_pool2d_fwd` entries): `dst`
 * (`[N, C, OH, OW]`) from `src` (`[N, C, H, W]`). Padded positions never win a
 * max; an average counts them only with `count_include_pad`.
 */
void cleave_kernel_pool_fwd(void *ctx, int64_t id, const float *src,
                            float *dst);

/**
 * Gradient of pooling (`max_pool2d_bwd` / `avg_pool2d_bwd` entries) with
 * respect to its input: `diff_src` (`[N, C, H, W]`, overwritten) from
 * `diff_dst` (`[N, C, OH, OW]`). Max pooling routes each output gradient to the
 * first maximal element of its window in row-major order and needs `src` (the
 * forward input) to find it; average pooling does not read `src`.
 */
void cleave_kernel_pool_bwd(void *ctx, int64_t id, const float *src,
                            const float *diff_dst, float *diff_src);

/**
 * Scaled dot-product attention (`sdpa_fwd` entries). For each of `batch`
 * slices (the batch and head dimensions), with `S = scale * q k^T` (`[T, S]`)
 * plus `mask` when given, and `S[i][j] = -inf` where `j > i` with `causal`:
 * `o = softmax(S) v`, the softmax over each row, and `lse[i] = log(sum_j
 * exp(S[i][j]))`, the row's log-sum-exp (what the backward pass recomputes
 * the probabilities from). `q` is `[batch, T, D]`, `k` `[batch, S, D]`, `v`
 * `[batch, S, Dv]`, `mask` `[T, S]` (NULL when the entry has `mask: false`),
 * `o` `[batch, T, Dv]`, `lse` `[batch, T]`. With the entry's `dropout` r > 0,
 * the probabilities are multiplied by `keep / (1 - r)` before the product
 * with `v` (`lse` is not): `keep` is `[batch, T, S]`, 1 where a probability
 * is kept and 0 where it is dropped (NULL without dropout). `lse` is f32;
 * the other tensors are f32, or bf16 where the entry's `io_type` says so.
 */
void cleave_kernel_sdpa_fwd(void *ctx, int64_t id, const void *q, const void *k,
                            const void *v, const void *mask, const void *keep,
                            void *o, float *lse);

/**
 * Gradient of attention (`sdpa_bwd` entries) with respect to `q`, `k` and
 * `v` (`dq`, `dk`, `dv`, overwritten), from the forward pass's operands, its
 * `o` and `lse`, and `d_o`, the gradient with respect to `o`. With `P` the
 * probabilities (`exp(S - lse)`) and `K = P * keep / (1 - r)` (`K = P`
 * without dropout): `dv = K^T d_o`, `dS = P * (dK - rowsum(d_o * o))` with
 * `dK = (d_o v^T) * keep / (1 - r)`, `dq = scale * dS k`, `dk = scale * dS^T
 * q`.
 */
void cleave_kernel_sdpa_bwd(void *ctx, int64_t id, const void *q, const void *k,
                            const void *v, const void *mask, const void *keep,
                            const void *o, const float *lse, const void *d_o,
                            void *dq, void *dk, void *dv);

/**
 * The CUDA stream of `ctx` (a `CUstream`, NULL for the default stream), for
 * artifacts compiled for the `cuda` target. Every pointer such an artifact's
 * entry points receive, and passes on to the kernels below, is a device
 * pointer; an entry point only enqueues work on this stream.
 */
void *cleave_gpu_stream(void *ctx);

/** Values of `kind` for cleave_cross_rank_reduce. */
#define CLEAVE_REDUCE_SUM 0
#define CLEAVE_REDUCE_MEAN 1
#define CLEAVE_REDUCE_ADASUM 2

/**
 * Combines `count` buffers across data-parallel ranks, in place:
 * `buffers[i]` holds `sizes[i]` floats. `kind` is CLEAVE_REDUCE_SUM,
 * CLEAVE_REDUCE_MEAN or CLEAVE_REDUCE_ADASUM (applied per buffer). Every rank
 * makes the same call with the same sizes. The identity with one rank.
 */
void cleave_cross_rank_reduce(void *ctx, int32_t kind, int64_t count,
                              float **buffers, const int64_t *sizes);

/*
 * ZeRO-1 sharded optimizer state. A tensor of `n` floats is cut into `ranks`
 * shards of `s = ceil(n / ranks)` floats: rank `r` owns elements
 * `[r * s, (r + 1) * s)` of the flattened tensor, and shard positions past
 * `n` are zero padding. The three functions below take `count` tensors:
 * `inputs[i]` and `outputs[i]` are the whole tensor `i` (`sizes[i]` floats)
 * or this rank's shard of it (`ceil(sizes[i] / ranks)` floats), as each
 * says. `ranks` is the number the artifact was compiled for; the job must
 * have exactly that many ranks (the session checks it when it is created; a
 * call that disagrees fails as above). With one rank, they copy.
 */

/**
 * `outputs[i]` (a shard) receives this rank's shard of the sum over ranks of
 * `inputs[i]` (whole, not modified). Every rank makes the same call.
 */
void cleave_reduce_scatter(void *ctx, int32_t ranks, int64_t count,
                           const float *const *inputs, const int64_t *sizes,
                           float *const *outputs);

/**
 * `outputs[i]` (whole) receives every rank's `inputs[i]` (a shard), each in
 * its place. Every rank makes the same call.
 */
void cleave_all_gather(void *ctx, int32_t ranks, int64_t count,
                       const float *const *inputs, const int64_t *sizes,
                       float *const *outputs);

/**
 * `outputs[i]` (a shard) receives this rank's shard of `inputs[i]` (whole),
 * zero-padded. Communicates nothing.
 */
void cleave_shard(void *ctx, int32_t ranks, int64_t count,
                  const float *const *inputs, const int64_t *sizes,
                  float *const *outputs);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CLEAVE_KERNEL_ABI_H */

//===- Kernels.cpp - C entry points of the kernel ABI ---------------------===//
//
// The extern "C" functions of runtime/include/cleave/kernel_abi.h. Each is one
// call of the context's kernel library (kernels/KernelLibrary.h), whichever
// device it is on. Nothing may throw across the C boundary and the ABI has no
// error return, so a call that cannot run (a library error at execution, or a
// call that breaks the ABI: everything else was checked when the library was
// built) records one line naming the function and the kernel in the context
// (KernelContext::fail). That makes every later call on the context a no-op,
// and the caller of the entry point returns the error. Nothing here aborts.
//
//===----------------------------------------------------------------------===//

#include "cleave/kernel_abi.h"
#include "collectives/Collectives.h"
#include "kernels/KernelContext.h"

#include <algorithm>
#include <new>
#include <string>

using namespace cleave::rt;

namespace {

/// Records the error `makeError()` builds as the error of `ctx` (the calling
/// thread's, when `ctx` is NULL). Messages are built only on failure: kernel
/// calls run for every kernel of every micro-step and must not allocate.
template <typename MakeError>
void fail(void *ctx, MakeError &&makeError) noexcept {
  Status error;
  try {
    error = makeError();
  } catch (...) {
    // Out of memory while describing the error: the error stays, without
    // its message (an empty string allocates nothing).
    error = Status(CLEAVE_OUT_OF_MEMORY, std::string());
  }
  if (ctx)
    static_cast<KernelContext *>(ctx)->fail(std::move(error));
  else
    KernelContext::failWithoutContext(std::move(error));
}

/// An error of `entry` that breaks the ABI: generated code that does not
/// match its own manifest, hence CLEAVE_INTERNAL.
Status abiError(const char *entry, const std::string &what) {
  return Status(CLEAVE_INTERNAL, std::string(entry) + ": " + what);
}

} // namespace

Status cleave::rt::currentException(const std::string &where) {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    return Status(CLEAVE_OUT_OF_MEMORY, where + ": out of memory");
  } catch (const std::exception &e) {
    return Status(CLEAVE_INTERNAL, where + ": " + e.what());
  } catch (...) {
    return Status(CLEAVE_INTERNAL, where + ": unknown exception");
  }
}

namespace {

/// The context of a call to `entry`, or null when the call must do nothing:
/// `ctx` is NULL (recorded as an error) or a call on it failed before.
/// `kernelId` (-1: none) is named in the error.
KernelContext *liveContext(const char *entry, void *ctx,
                           int64_t kernelId = -1) {
  if (!ctx) {
    fail(nullptr, [&] {
      return abiError(entry, (kernelId >= 0
                                  ? "kernel " + std::to_string(kernelId) + ": "
                                  : std::string()) +
                                 "the context is NULL");
    });
    return nullptr;
  }
  auto *context = static_cast<KernelContext *>(ctx);
  return context->failed() ? nullptr : context;
}

/// Runs `fn()`, which returns a Status, and records what went wrong (its
/// error or an exception, prefixed with `entry`) in `ctx`.
template <typename Fn>
void record(const char *entry, void *ctx, Fn &&fn) noexcept {
  Status status;
  try {
    status = fn();
  } catch (...) {
    return fail(ctx, [&] { return currentException(entry); });
  }
  if (!status.ok())
    fail(ctx, [&] {
      return Status(status.code(),
                    std::string(entry) + ": " + status.message());
    });
}

/// Runs `fn(library)` on the kernel library of `ctx` unless the call must do
/// nothing (see liveContext), and records its error.
template <typename Fn>
void call(const char *entry, void *ctx, int64_t id, Fn &&fn) noexcept {
  KernelContext *context = liveContext(entry, ctx, id);
  if (!context)
    return;
  record(entry, ctx, [&] { return fn(context->library()); });
}

} // namespace

extern "C" {

void cleave_kernel_matmul(void *ctx, int64_t id, const void *a, const void *b,
                          const float *bias, float *c) {
  call("cleave_kernel_matmul", ctx, id,
       [&](KernelLibrary &l) { return l.matmul(id, a, b, bias, c); });
}

void cleave_kernel_conv2d_fwd(void *ctx, int64_t id, const void *src,
                              const void *wei, const float *bias, void *dst) {
  call("cleave_kernel_conv2d_fwd", ctx, id, [&](KernelLibrary &l) {
    return l.convolution(KernelKind::ConvolutionForward, id, src, wei, bias,
                         dst);
  });
}

void cleave_kernel_conv2d_bwd_data(void *ctx, int64_t id, const void *diff_dst,
                                   const void *wei, void *diff_src) {
  call("cleave_kernel_conv2d_bwd_data", ctx, id, [&](KernelLibrary &l) {
    return l.convolution(KernelKind::ConvolutionBackwardData, id, diff_dst, wei,
                         nullptr, diff_src);
  });
}

void cleave_kernel_conv2d_bwd_weights(void *ctx, int64_t id, const void *src,
                                      const void *diff_dst, void *diff_wei) {
  call("cleave_kernel_conv2d_bwd_weights", ctx, id, [&](KernelLibrary &l) {
    return l.convolution(KernelKind::ConvolutionBackwardWeights, id, src,
                         diff_dst, nullptr, diff_wei);
  });
}

void cleave_kernel_pool_fwd(void *ctx, int64_t id, const float *src,
                            float *dst) {
  call("cleave_kernel_pool_fwd", ctx, id,
       [&](KernelLibrary &l) { return l.poolForward(id, src, dst); });
}

void cleave_kernel_pool_bwd(void *ctx, int64_t id, const float *src,
                            const float *diff_dst, float *diff_src) {
  call("cleave_kernel_pool_bwd", ctx, id, [&](KernelLibrary &l) {
    return l.poolBackward(id, src, diff_dst, diff_src);
  });
}

void cleave_kernel_sdpa_fwd(void *ctx, int64_t id, const void *q, const void *k,
                            const void *v, const void *mask, const void *keep,
                            void *o, float *lse) {
  call("cleave_kernel_sdpa_fwd", ctx, id, [&](KernelLibrary &l) {
    return l.attentionForward(id, q, k, v, mask, keep, o, lse);
  });
}

void cleave_kernel_sdpa_bwd(void *ctx, int64_t id, const void *q, const void *k,
                            const void *v, const void *mask, const void *keep,
                            const void *o, const float *lse, const void *d_o,
                            void *dq, void *dk, void *dv) {
  call("cleave_kernel_sdpa_bwd", ctx, id, [&](KernelLibrary &l) {
    return l.attentionBackward(id,
                               {q, k, v, mask, keep, o, lse, d_o, dq, dk, dv});
  });
}

void cleave_cross_rank_reduce(void *ctx, int32_t kind, int64_t count,
                              float **buffers, const int64_t *sizes) {
  const char *entry = "cleave_cross_rank_reduce";
  KernelContext *context = liveContext(entry, ctx);
  if (!context)
    return;
  if (kind != CLEAVE_REDUCE_SUM && kind != CLEAVE_REDUCE_MEAN &&
      kind != CLEAVE_REDUCE_ADASUM)
    return fail(ctx, [&] {
      return abiError(entry, "unknown reduction kind " + std::to_string(kind) +
                                 " (expected 0 = sum, 1 = mean, 2 = adasum)");
    });
  if (count < 0)
    return fail(ctx, [&] {
      return abiError(entry, "negative buffer count " + std::to_string(count));
    });
  if (count > 0 && (!buffers || !sizes))
    return fail(ctx, [&] {
      return abiError(entry, "NULL buffer or size array for " +
                                 std::to_string(count) + " buffers");
    });
  // Checked with one rank too, so that a bad call fails the same way whatever
  // the number of ranks.
  for (int64_t i = 0; i < count; ++i)
    if (sizes[i] < 0 || (sizes[i] > 0 && !buffers[i]))
      return fail(ctx, [&] {
        return abiError(entry, "buffer " + std::to_string(i) + " of " +
                                   std::to_string(count) +
                                   " is invalid (size " +
                                   std::to_string(sizes[i]) +
                                   (buffers[i] ? ")" : ", NULL pointer)"));
      });
  // On the session's collectives: MPI on host buffers, NCCL on device ones
  // (enqueued like the kernels around it), or one rank, where sum, mean and
  // Adasum of a single contribution are that contribution.
  record(entry, ctx, [&] {
    return context->collectives().reduce(static_cast<ReduceKind>(kind), count,
                                         buffers, sizes);
  });
}

} // extern "C"

namespace {

int64_t shardSize(int64_t size, int32_t ranks) {
  return (size + ranks - 1) / ranks;
}

/// Checks the arguments of a ZeRO-1 call and that the job has the ranks the
/// artifact was compiled for. False when the call must do nothing (an error
/// is recorded, now or before); otherwise `collectives` is set.
bool checkSharding(const char *entry, void *ctx, int32_t ranks, int64_t count,
                   const float *const *inputs, const int64_t *sizes,
                   float *const *outputs, bool inputsAreShards,
                   Collectives *&collectives) {
  KernelContext *context = liveContext(entry, ctx);
  if (!context)
    return false;
  auto reject = [&](auto &&what) {
    fail(ctx, [&] { return abiError(entry, what()); });
    return false;
  };
  if (ranks < 1)
    return reject([&] {
      return "ranks is " + std::to_string(ranks) + ", expected >= 1";
    });
  if (count < 0)
    return reject(
        [&] { return "negative tensor count " + std::to_string(count); });
  if (count > 0 && (!inputs || !sizes || !outputs))
    return reject([&] {
      return "NULL input, size or output array for " + std::to_string(count) +
             " tensors";
    });
  for (int64_t i = 0; i < count; ++i) {
    if (sizes[i] < 0)
      return reject([&] {
        return "tensor " + std::to_string(i) + " has negative size " +
               std::to_string(sizes[i]);
      });
    const int64_t shard = shardSize(sizes[i], ranks);
    const int64_t in = inputsAreShards ? shard : sizes[i];
    const int64_t out = inputsAreShards ? sizes[i] : shard;
    if ((in > 0 && !inputs[i]) || (out > 0 && !outputs[i]))
      return reject([&] {
        return "tensor " + std::to_string(i) + " of " + std::to_string(count) +
               " has a NULL buffer";
      });
  }
  collectives = &context->collectives();
  const int size = collectives->size();
  if (size != ranks)
    return reject([&] {
      return "the artifact shards its optimizer state over " +
             std::to_string(ranks) + " ranks, the job has " +
             std::to_string(size);
    });
  return true;
}

/// Copies this rank's shard of `size` floats at `whole` to `shard`,
/// zero-padded, on `library`'s device.
Status copyShard(KernelLibrary &library, const float *whole, int64_t size,
                 int rank, int32_t ranks, float *shard) {
  const int64_t s = shardSize(size, ranks);
  const int64_t begin = std::min<int64_t>(size, int64_t(rank) * s);
  const int64_t end = std::min<int64_t>(size, begin + s);
  CLEAVE_RETURN_IF_ERROR(library.copy(shard, whole + begin, end - begin));
  return library.zero(shard + (end - begin), s - (end - begin));
}

/// reduce_scatter and all_gather: checked arguments, then the collective,
/// or a plain copy with one rank (a shard of one rank is the whole tensor).
void runShardedCollective(
    const char *entry, void *ctx, int32_t ranks, int64_t count,
    const float *const *inputs, const int64_t *sizes, float *const *outputs,
    bool inputsAreShards,
    Status (Collectives::*collective)(int64_t, const float *const *,
                                      const int64_t *, float *const *)) {
  Collectives *collectives = nullptr;
  if (!checkSharding(entry, ctx, ranks, count, inputs, sizes, outputs,
                     inputsAreShards, collectives))
    return;
  if (collectives->size() == 1) {
    KernelLibrary &library = static_cast<KernelContext *>(ctx)->library();
    record(entry, ctx, [&] {
      for (int64_t i = 0; i < count; ++i)
        CLEAVE_RETURN_IF_ERROR(library.copy(outputs[i], inputs[i], sizes[i]));
      return Status::success();
    });
    return;
  }
  record(entry, ctx, [&] {
    return (collectives->*collective)(count, inputs, sizes, outputs);
  });
}

} // namespace

extern "C" {

void cleave_reduce_scatter(void *ctx, int32_t ranks, int64_t count,
                           const float *const *inputs, const int64_t *sizes,
                           float *const *outputs) {
  runShardedCollective("cleave_reduce_scatter", ctx, ranks, count, inputs,
                       sizes, outputs, /*inputsAreShards=*/false,
                       &Collectives::reduceScatterShards);
}

void cleave_all_gather(void *ctx, int32_t ranks, int64_t count,
                       const float *const *inputs, const int64_t *sizes,
                       float *const *outputs) {
  runShardedCollective("cleave_all_gather", ctx, ranks, count, inputs, sizes,
                       outputs, /*inputsAreShards=*/true,
                       &Collectives::allGatherShards);
}

void cleave_shard(void *ctx, int32_t ranks, int64_t count,
                  const float *const *inputs, const int64_t *sizes,
                  float *const *outputs) {
  Collectives *collectives = nullptr;
  if (!checkSharding("cleave_shard", ctx, ranks, count, inputs, sizes, outputs,
                     /*inputsAreShards=*/false, collectives))
    return;
  const int rank = collectives->rank();
  KernelLibrary &library = static_cast<KernelContext *>(ctx)->library();
  record("cleave_shard", ctx, [&] {
    for (int64_t i = 0; i < count; ++i)
      CLEAVE_RETURN_IF_ERROR(
          copyShard(library, inputs[i], sizes[i], rank, ranks, outputs[i]));
    return Status::success();
  });
}

} // extern "C"

extern "C" void *cleave_gpu_stream(void *ctx) {
  const char *entry = "cleave_gpu_stream";
  KernelContext *context = liveContext(entry, ctx);
  if (!context)
    return nullptr;
  if (void *queue = context->library().queue())
    return queue;
  fail(ctx, [&] {
    return abiError(entry, "the session runs on the CPU (a cuda artifact in "
                           "a CPU session; the session refuses those)");
  });
  return nullptr;
}

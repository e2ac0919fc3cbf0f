//===- Kernels.cpp - C entry points of the kernel ABI ---------------------===//
//
// The extern "C" functions of runtime/include/cleave/kernel_abi.h. Each finds
// its kernel in the context, runs it and waits. Nothing may throw across the
// C boundary and the ABI has no error return, so a call that cannot run (a
// caller bug: everything checkable was checked when the context was created)
// prints one line naming the kernel and aborts.
//
//===----------------------------------------------------------------------===//

#include "cleave/kernel_abi.h"
#include "kernels/Convolution.h"
#include "kernels/KernelContext.h"
#include "kernels/Matmul.h"
#include "kernels/Pooling.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace cleave::rt;

namespace {

[[noreturn]] void die(const char *entry, const std::string &what) {
  std::fprintf(stderr, "cleave: %s: %s\n", entry, what.c_str());
  std::fflush(stderr);
  std::abort();
}

const char *kindName(KernelKind kind) {
  switch (kind) {
  case KernelKind::Matmul:
    return "matmul";
  case KernelKind::ConvolutionForward:
    return "conv2d_fwd";
  case KernelKind::ConvolutionBackwardData:
    return "conv2d_bwd_data";
  case KernelKind::ConvolutionBackwardWeights:
    return "conv2d_bwd_weights";
  case KernelKind::PoolingForward:
    return "max_pool2d_fwd or avg_pool2d_fwd";
  case KernelKind::PoolingBackward:
    return "max_pool2d_bwd or avg_pool2d_bwd";
  }
  return "?";
}

/// "kernel <id> (<op>)", for messages.
std::string kernelName(const Kernel &kernel) {
  return "kernel " + std::to_string(kernel.id()) + " (" + kernel.op() + ")";
}

/// Finds kernel `id` of `ctx`, checks it belongs to entry point `entry`
/// (kind `kind`), runs `fn(kernel, stream)` and waits for it. Never throws.
/// Messages are built only on failure: this runs for every kernel call of
/// every micro-step, which must not allocate.
template <typename K, typename Fn>
void dispatch(const char *entry, void *ctx, int64_t id, KernelKind kind,
              Fn &&fn) noexcept {
  if (!ctx)
    die(entry, "kernel " + std::to_string(id) + ": the context is NULL");
  auto *context = static_cast<KernelContext *>(ctx);
  Kernel *kernel = context->kernel(id);
  if (!kernel)
    die(entry, "no kernel " + std::to_string(id) + " (the context has " +
                   std::to_string(context->numKernels()) + ")");
  if (kernel->kind() != kind)
    die(entry, kernelName(*kernel) + " is not a " + kindName(kind) + " kernel");
  try {
    dnnl::stream &stream = context->stream();
    fn(static_cast<K &>(*kernel), stream);
    stream.wait();
  } catch (const dnnl::error &e) {
    die(entry, kernelName(*kernel) + ": oneDNN failed: " + e.what() + " (" +
                   dnnl_status2str(e.status) + ")");
  } catch (const std::exception &e) {
    die(entry, kernelName(*kernel) + ": " + e.what());
  } catch (...) {
    die(entry, kernelName(*kernel) + ": unknown exception");
  }
}

} // namespace

extern "C" {

void cleave_kernel_matmul(void *ctx, int64_t id, const float *a, const float *b,
                          const float *bias, float *c) {
  dispatch<MatmulKernel>(
      "cleave_kernel_matmul", ctx, id, KernelKind::Matmul,
      [&](MatmulKernel &k, dnnl::stream &s) { k.run(s, a, b, bias, c); });
}

void cleave_kernel_conv2d_fwd(void *ctx, int64_t id, const float *src,
                              const float *wei, const float *bias, float *dst) {
  dispatch<ConvolutionKernel>("cleave_kernel_conv2d_fwd", ctx, id,
                              KernelKind::ConvolutionForward,
                              [&](ConvolutionKernel &k, dnnl::stream &s) {
                                k.run(s, src, wei, bias, dst);
                              });
}

void cleave_kernel_conv2d_bwd_data(void *ctx, int64_t id, const float *diff_dst,
                                   const float *wei, float *diff_src) {
  dispatch<ConvolutionKernel>("cleave_kernel_conv2d_bwd_data", ctx, id,
                              KernelKind::ConvolutionBackwardData,
                              [&](ConvolutionKernel &k, dnnl::stream &s) {
                                k.run(s, diff_dst, wei, nullptr, diff_src);
                              });
}

void cleave_kernel_conv2d_bwd_weights(void *ctx, int64_t id, const float *src,
                                      const float *diff_dst, float *diff_wei) {
  dispatch<ConvolutionKernel>("cleave_kernel_conv2d_bwd_weights", ctx, id,
                              KernelKind::ConvolutionBackwardWeights,
                              [&](ConvolutionKernel &k, dnnl::stream &s) {
                                k.run(s, src, diff_dst, nullptr, diff_wei);
                              });
}

void cleave_kernel_pool_fwd(void *ctx, int64_t id, const float *src,
                            float *dst) {
  dispatch<PoolingKernel>(
      "cleave_kernel_pool_fwd", ctx, id, KernelKind::PoolingForward,
      [&](PoolingKernel &k, dnnl::stream &s) { k.forward(s, src, dst); });
}

void cleave_kernel_pool_bwd(void *ctx, int64_t id, const float *src,
                            const float *diff_dst, float *diff_src) {
  dispatch<PoolingKernel>("cleave_kernel_pool_bwd", ctx, id,
                          KernelKind::PoolingBackward,
                          [&](PoolingKernel &k, dnnl::stream &s) {
                            k.backward(s, src, diff_dst, diff_src);
                          });
}

void cleave_cross_rank_reduce(void *ctx, int32_t kind, int64_t count,
                              float **buffers, const int64_t *sizes) {
  const char *entry = "cleave_cross_rank_reduce";
  if (!ctx)
    die(entry, "the context is NULL");
  if (kind != CLEAVE_REDUCE_SUM && kind != CLEAVE_REDUCE_MEAN &&
      kind != CLEAVE_REDUCE_ADASUM)
    die(entry, "unknown reduction kind " + std::to_string(kind) +
                   " (expected 0 = sum, 1 = mean, 2 = adasum)");
  if (count < 0)
    die(entry, "negative buffer count " + std::to_string(count));
  if (count > 0 && (!buffers || !sizes))
    die(entry,
        "NULL buffer or size array for " + std::to_string(count) + " buffers");
  // Checked with one rank too, so that a bad call fails the same way whatever
  // the number of ranks.
  for (int64_t i = 0; i < count; ++i)
    if (sizes[i] < 0 || (sizes[i] > 0 && !buffers[i]))
      die(entry, "buffer " + std::to_string(i) + " of " +
                     std::to_string(count) + " is invalid (size " +
                     std::to_string(sizes[i]) +
                     (buffers[i] ? ")" : ", NULL pointer)"));
  Communicator *comm = static_cast<KernelContext *>(ctx)->communicator();
  // One rank: sum, mean and Adasum of a single contribution are that
  // contribution.
  if (!comm)
    return;
  try {
    crossRankReduce(comm, kind, count, buffers, sizes);
  } catch (const std::exception &e) {
    die(entry, e.what());
  } catch (...) {
    die(entry, "unknown exception from the communicator");
  }
}

} // extern "C"

namespace {

int64_t shardSize(int64_t size, int32_t ranks) {
  return (size + ranks - 1) / ranks;
}

/// Checks the arguments of a ZeRO-1 call and that the job has the ranks the
/// artifact was compiled for; returns the collectives (null: one rank).
ShardedCollectives *checkSharding(const char *entry, void *ctx, int32_t ranks,
                                  int64_t count, const float *const *inputs,
                                  const int64_t *sizes, float *const *outputs,
                                  bool inputsAreShards) {
  if (!ctx)
    die(entry, "the context is NULL");
  if (ranks < 1)
    die(entry, "ranks is " + std::to_string(ranks) + ", expected >= 1");
  if (count < 0)
    die(entry, "negative tensor count " + std::to_string(count));
  if (count > 0 && (!inputs || !sizes || !outputs))
    die(entry, "NULL input, size or output array for " + std::to_string(count) +
                   " tensors");
  for (int64_t i = 0; i < count; ++i) {
    if (sizes[i] < 0)
      die(entry, "tensor " + std::to_string(i) + " has negative size " +
                     std::to_string(sizes[i]));
    const int64_t shard = shardSize(sizes[i], ranks);
    const int64_t in = inputsAreShards ? shard : sizes[i];
    const int64_t out = inputsAreShards ? sizes[i] : shard;
    if ((in > 0 && !inputs[i]) || (out > 0 && !outputs[i]))
      die(entry, "tensor " + std::to_string(i) + " of " +
                     std::to_string(count) + " has a NULL buffer");
  }
  ShardedCollectives *collectives =
      static_cast<KernelContext *>(ctx)->shardedCollectives();
  const int size = collectives ? collectives->size() : 1;
  if (size != ranks)
    die(entry, "the artifact shards its optimizer state over " +
                   std::to_string(ranks) + " ranks, the job has " +
                   std::to_string(size));
  return collectives;
}

/// Copies this rank's shard of `size` floats at `whole` to `shard`,
/// zero-padded.
void copyShard(const float *whole, int64_t size, int rank, int32_t ranks,
               float *shard) {
  const int64_t s = shardSize(size, ranks);
  const int64_t begin = std::min<int64_t>(size, int64_t(rank) * s);
  const int64_t end = std::min<int64_t>(size, begin + s);
  std::copy(whole + begin, whole + end, shard);
  std::fill(shard + (end - begin), shard + s, 0.0f);
}

/// reduce_scatter and all_gather: checked arguments, then the collective,
/// or a plain copy with one rank (a shard of one rank is the whole tensor).
void runShardedCollective(
    const char *entry, void *ctx, int32_t ranks, int64_t count,
    const float *const *inputs, const int64_t *sizes, float *const *outputs,
    bool inputsAreShards,
    void (ShardedCollectives::*collective)(int64_t, const float *const *,
                                           const int64_t *, float *const *)) {
  ShardedCollectives *collectives = checkSharding(
      entry, ctx, ranks, count, inputs, sizes, outputs, inputsAreShards);
  if (!collectives) {
    for (int64_t i = 0; i < count; ++i)
      std::copy(inputs[i], inputs[i] + sizes[i], outputs[i]);
    return;
  }
  try {
    (collectives->*collective)(count, inputs, sizes, outputs);
  } catch (const std::exception &e) {
    die(entry, e.what());
  } catch (...) {
    die(entry, "unknown exception from the collectives");
  }
}

} // namespace

extern "C" {

void cleave_reduce_scatter(void *ctx, int32_t ranks, int64_t count,
                           const float *const *inputs, const int64_t *sizes,
                           float *const *outputs) {
  runShardedCollective("cleave_reduce_scatter", ctx, ranks, count, inputs,
                       sizes, outputs, /*inputsAreShards=*/false,
                       &ShardedCollectives::reduceScatter);
}

void cleave_all_gather(void *ctx, int32_t ranks, int64_t count,
                       const float *const *inputs, const int64_t *sizes,
                       float *const *outputs) {
  runShardedCollective("cleave_all_gather", ctx, ranks, count, inputs, sizes,
                       outputs, /*inputsAreShards=*/true,
                       &ShardedCollectives::allGather);
}

void cleave_shard(void *ctx, int32_t ranks, int64_t count,
                  const float *const *inputs, const int64_t *sizes,
                  float *const *outputs) {
  ShardedCollectives *collectives =
      checkSharding("cleave_shard", ctx, ranks, count, inputs, sizes, outputs,
                    /*inputsAreShards=*/false);
  const int rank = collectives ? collectives->rank() : 0;
  for (int64_t i = 0; i < count; ++i)
    copyShard(inputs[i], sizes[i], rank, ranks, outputs[i]);
}

} // extern "C"

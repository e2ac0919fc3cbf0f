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

/// Finds kernel `id` of `ctx`, checks it belongs to entry point `entry`
/// (kind `kind`), runs `fn(kernel, stream)` and waits for it. Never throws.
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
  std::string name = "kernel " + std::to_string(id) + " (" + kernel->op() + ")";
  if (kernel->kind() != kind)
    die(entry, name + " is not a " + kindName(kind) + " kernel");
  try {
    dnnl::stream &stream = context->stream();
    fn(static_cast<K &>(*kernel), stream);
    stream.wait();
  } catch (const dnnl::error &e) {
    die(entry, name + ": oneDNN failed: " + e.what() + " (" +
                   dnnl_status2str(e.status) + ")");
  } catch (const std::exception &e) {
    die(entry, name + ": " + e.what());
  } catch (...) {
    die(entry, name + ": unknown exception");
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

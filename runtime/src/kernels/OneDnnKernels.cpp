//===- OneDnnKernels.cpp - The kernel table on oneDNN ---------------------===//
//
// Creation of every kernel of a manifest and the arena they share, and the
// calls of kernel_abi.h on them.
//
//===----------------------------------------------------------------------===//

#include "kernels/OneDnnKernels.h"
#include "kernels/Attention.h"
#include "kernels/Convolution.h"
#include "kernels/Kernel.h"
#include "kernels/KernelSpec.h"
#include "kernels/LayoutCache.h"
#include "kernels/Matmul.h"
#include "kernels/Pooling.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

namespace cleave::rt {

namespace {

struct FreeDeleter {
  void operator()(char *p) const { std::free(p); }
};

template <KernelKind Kind>
std::unique_ptr<Kernel> buildConv(KernelSpec &spec, BuildEnv &env) {
  return std::make_unique<ConvolutionKernel>(spec, env, Kind);
}
template <KernelKind Kind, bool Max>
std::unique_ptr<Kernel> buildPool(KernelSpec &spec, BuildEnv &env) {
  return std::make_unique<PoolingKernel>(spec, env, Kind, Max);
}

/// The oneDNN kernel for each op of the manifest's table.
std::unique_ptr<Kernel> buildKernel(KernelSpec &spec, BuildEnv &env) {
  switch (spec.kernelOp()) {
  case abi::KernelOp::matmul:
    return std::make_unique<MatmulKernel>(spec, env);
  case abi::KernelOp::conv2d_fwd:
    return buildConv<KernelKind::ConvolutionForward>(spec, env);
  case abi::KernelOp::conv2d_bwd_data:
    return buildConv<KernelKind::ConvolutionBackwardData>(spec, env);
  case abi::KernelOp::conv2d_bwd_weights:
    return buildConv<KernelKind::ConvolutionBackwardWeights>(spec, env);
  case abi::KernelOp::max_pool2d_fwd:
    return buildPool<KernelKind::PoolingForward, true>(spec, env);
  case abi::KernelOp::avg_pool2d_fwd:
    return buildPool<KernelKind::PoolingForward, false>(spec, env);
  case abi::KernelOp::max_pool2d_bwd:
    return buildPool<KernelKind::PoolingBackward, true>(spec, env);
  case abi::KernelOp::avg_pool2d_bwd:
    return buildPool<KernelKind::PoolingBackward, false>(spec, env);
  case abi::KernelOp::sdpa_fwd:
  case abi::KernelOp::sdpa_bwd:
    return std::make_unique<AttentionKernel>(spec);
  }
  spec.fail("no oneDNN kernel for this op");
}

/// "kernel <id> (<op>)", for messages.
std::string kernelName(const Kernel &kernel) {
  return "kernel " + std::to_string(kernel.id()) + " (" + kernel.op() + ")";
}

/// currentException, which also names oneDNN's status and `implementation`
/// (the oneDNN implementation) for oneDNN's errors. Call only from a catch
/// block.
Status currentOneDnnException(const std::string &where,
                              const std::string &implementation) {
  try {
    throw;
  } catch (const dnnl::error &e) {
    return Status(e.status == dnnl_out_of_memory ? CLEAVE_OUT_OF_MEMORY
                                                 : CLEAVE_INTERNAL,
                  where + ": oneDNN error: " + e.what() + " (" +
                      dnnl_status2str(e.status) + ")" +
                      (implementation.empty() ? "" : " in " + implementation));
  } catch (...) {
    return currentException(where);
  }
}

} // namespace

const char *kernelKindName(KernelKind kind) {
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
  case KernelKind::AttentionForward:
    return "sdpa_fwd";
  case KernelKind::AttentionBackward:
    return "sdpa_bwd";
  }
  return "?";
}

struct OneDnnKernels::Impl {
  // Declaration order is destruction order reversed: kernels (which hold
  // primitives and memories of the engine) go before the arena and engine.
  dnnl::engine engine;
  dnnl::stream stream;
  std::unique_ptr<char, FreeDeleter> arena;
  size_t arenaBytes = 0;
  LayoutCache cache;
  std::vector<std::unique_ptr<Kernel>> kernels;
};

OneDnnKernels::OneDnnKernels(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
OneDnnKernels::~OneDnnKernels() = default;

std::unique_ptr<OneDnnKernels>
OneDnnKernels::create(const nlohmann::json &kernels, std::string &error) {
  if (!kernels.is_array()) {
    error = std::string("manifest field 'kernels' must be an array, got ") +
            jsonTypeName(kernels);
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  std::string current = "the oneDNN CPU engine";
  try {
    impl->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    impl->stream = dnnl::stream(impl->engine);
    impl->kernels.resize(kernels.size());
    ArenaPlanner planner;
    BuildEnv env{impl->engine, planner, &impl->cache};
    for (size_t i = 0; i < kernels.size(); ++i) {
      const nlohmann::json &entry = kernels[i];
      current = "kernels[" + std::to_string(i) + "]";
      KernelHeader header = readKernelHeader(entry, i, kernels.size());
      current = "kernel " + std::to_string(header.id);
      if (impl->kernels[header.id])
        throw KernelSpecError(current + ": duplicate id (kernels[" +
                              std::to_string(i) + "] reuses it)");
      current += std::string(" (") + abi::name(header.op) + ")";
      KernelSpec spec(entry, header);
      planner.beginKernel();
      impl->kernels[header.id] = buildKernel(spec, env);
    }
    current = "the kernel arena";
    impl->arenaBytes = planner.bytes();
    if (impl->arenaBytes > 0) {
      size_t rounded = (impl->arenaBytes + ArenaPlanner::kAlignment - 1) /
                       ArenaPlanner::kAlignment * ArenaPlanner::kAlignment;
      impl->arena.reset(static_cast<char *>(
          std::aligned_alloc(ArenaPlanner::kAlignment, rounded)));
      if (!impl->arena)
        throw std::bad_alloc();
      planner.bind(impl->arena.get());
    }
  } catch (const KernelSpecError &e) {
    error = e.what();
    return nullptr;
  } catch (const dnnl::error &e) {
    error = current + ": oneDNN cannot create the primitive: " + e.what() +
            " (" + dnnl_status2str(e.status) + ")";
    return nullptr;
  } catch (const std::bad_alloc &) {
    error = current + ": out of memory" +
            (impl->arenaBytes
                 ? " allocating " + std::to_string(impl->arenaBytes) + " bytes"
                 : std::string());
    return nullptr;
  } catch (const std::exception &e) {
    error = current + ": " + e.what();
    return nullptr;
  }
  return std::unique_ptr<OneDnnKernels>(new OneDnnKernels(std::move(impl)));
}

Kernel *OneDnnKernels::kernel(int64_t id) const {
  if (id < 0 || static_cast<uint64_t>(id) >= impl_->kernels.size())
    return nullptr;
  return impl_->kernels[id].get();
}

Kernel *OneDnnKernels::find(int64_t id, KernelKind kind, Status &error) const {
  Kernel *k = kernel(id);
  if (!k)
    error = makeError(CLEAVE_INTERNAL, "no kernel ", id, " (the context has ",
                      impl_->kernels.size(), ")");
  else if (k->kind() != kind)
    error = makeError(CLEAVE_INTERNAL, kernelName(*k), " is not a ",
                      kernelKindName(kind), " kernel");
  else
    return k;
  return nullptr;
}

template <typename K, typename Fn>
Status OneDnnKernels::run(int64_t id, KernelKind kind, Fn &&fn) {
  Status error;
  Kernel *kernel = find(id, kind, error);
  if (!kernel)
    return error;
  try {
    fn(static_cast<K &>(*kernel), impl_->stream);
    impl_->stream.wait();
  } catch (...) {
    return currentOneDnnException(kernelName(*kernel), kernel->describe());
  }
  return Status::success();
}

Status OneDnnKernels::matmul(int64_t id, const void *a, const void *b,
                             const float *bias, float *c) {
  return run<MatmulKernel>(
      id, KernelKind::Matmul,
      [&](MatmulKernel &m, dnnl::stream &s) { m.run(s, a, b, bias, c); });
}

Status OneDnnKernels::convolution(KernelKind kind, int64_t id, const void *in0,
                                  const void *in1, const float *bias,
                                  void *out) {
  return run<ConvolutionKernel>(id, kind,
                                [&](ConvolutionKernel &conv, dnnl::stream &s) {
                                  conv.run(s, in0, in1, bias, out);
                                });
}

Status OneDnnKernels::poolForward(int64_t id, const float *src, float *dst) {
  return run<PoolingKernel>(
      id, KernelKind::PoolingForward,
      [&](PoolingKernel &p, dnnl::stream &s) { p.forward(s, src, dst); });
}

Status OneDnnKernels::poolBackward(int64_t id, const float *src,
                                   const float *diffDst, float *diffSrc) {
  return run<PoolingKernel>(id, KernelKind::PoolingBackward,
                            [&](PoolingKernel &p, dnnl::stream &s) {
                              p.backward(s, src, diffDst, diffSrc);
                            });
}

Status OneDnnKernels::attentionForward(int64_t id, const void *q, const void *k,
                                       const void *v, const void *mask,
                                       const void *keep, void *o, float *lse) {
  return run<AttentionKernel>(id, KernelKind::AttentionForward,
                              [&](AttentionKernel &a, dnnl::stream &) {
                                a.forward(q, k, v, mask, keep, o, lse);
                              });
}

Status OneDnnKernels::attentionBackward(int64_t id,
                                        const AttentionGradients &operands) {
  return run<AttentionKernel>(
      id, KernelKind::AttentionBackward,
      [&](AttentionKernel &a, dnnl::stream &) { a.backward(operands); });
}

Status OneDnnKernels::copy(float *dst, const float *src, int64_t floats) {
  std::copy(src, src + floats, dst);
  return Status::success();
}

Status OneDnnKernels::zero(float *dst, int64_t floats) {
  std::fill(dst, dst + floats, 0.0f);
  return Status::success();
}

size_t OneDnnKernels::numKernels() const { return impl_->kernels.size(); }

std::string OneDnnKernels::describeKernel(int64_t id) const {
  Kernel *k = kernel(id);
  return k ? k->describe() : std::string();
}

size_t OneDnnKernels::arenaBytes() const { return impl_->arenaBytes; }

dnnl::stream &OneDnnKernels::stream() { return impl_->stream; }

void OneDnnKernels::enableLayoutCache(std::vector<BufferRange> parameters,
                                      std::vector<BufferRange> accumulators) {
  impl_->cache.enable(impl_->engine, std::move(parameters),
                      std::move(accumulators));
}

void OneDnnKernels::parametersChanged() { impl_->cache.parametersChanged(); }

Status OneDnnKernels::beginUpdate() {
  CLEAVE_RETURN_IF_ERROR(settle());
  impl_->cache.beginUpdate();
  return Status::success();
}

void OneDnnKernels::endUpdate() { impl_->cache.endUpdate(); }

Status OneDnnKernels::settle() {
  if (!impl_->cache.unsettled())
    return Status::success();
  try {
    impl_->cache.settle(impl_->stream);
  } catch (const dnnl::error &e) {
    return Status(e.status == dnnl_out_of_memory ? CLEAVE_OUT_OF_MEMORY
                                                 : CLEAVE_INTERNAL,
                  std::string("adding the window's weight gradients into "
                              "their accumulators: oneDNN error: ") +
                      e.what() + " (" + dnnl_status2str(e.status) + ")");
  }
  return Status::success();
}

void OneDnnKernels::globalsReplaced() {
  impl_->cache.discardPartialSums();
  impl_->cache.parametersChanged();
}

size_t OneDnnKernels::layoutCacheBytes() const { return impl_->cache.bytes(); }

} // namespace cleave::rt

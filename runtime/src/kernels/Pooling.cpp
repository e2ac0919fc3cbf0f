//===- Pooling.cpp - The 2-D pooling kernels ------------------------------===//
//
// oneDNN pooling_v2 primitives (the version with dilation) on plain NCHW.
//
// Layouts stay plain: pooling is memory-bound, so staging through a blocked
// layout would add two full copies to a pass that is itself about one copy.
// oneDNN has NCHW implementations (simple_nchw, and jit:avx512_core from 16
// channels on).
//
// Tie-breaking, checked by the unit tests: oneDNN's max pooling keeps the
// first maximal element of a window in row-major (kh, kw) order and skips
// padded positions, which is exactly the ABI's rule, so the workspace it
// records routes gradients as the ABI requires.
//
//===----------------------------------------------------------------------===//

#include "kernels/Pooling.h"
#include "kernels/KernelSpec.h"

#include <stdexcept>

namespace cleave::rt {

using dims = dnnl::memory::dims;

namespace {

/// Whether window `i` along one dimension touches at least one real input
/// element (windows made only of padding have no max and no average). The
/// taps are start + j * dilation, increasing in j: the window has input
/// exactly when its first tap at or after 0 exists and lies before `in`.
/// Computed directly rather than tap by tap, since the manifest may give
/// windows of up to 2^31 taps.
bool windowHasInput(int64_t i, int64_t in, int64_t kernel, int64_t stride,
                    int64_t padBegin, int64_t dilation) {
  int64_t start = i * stride - padBegin;
  int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  return first < kernel && start + first * dilation < in;
}

/// Fails if some window along one dimension lies entirely in the padding.
/// Only windows that start before the input or end after it can; they are
/// checked from both ends inwards.
void checkNoEmptyWindow(const KernelSpec &spec, const char *dim, int64_t in,
                        int64_t out, int64_t kernel, int64_t stride,
                        int64_t padBegin, int64_t dilation) {
  int64_t extent = dilation * (kernel - 1) + 1;
  auto check = [&](int64_t i) {
    if (!windowHasInput(i, in, kernel, stride, padBegin, dilation))
      spec.fail(std::string("output position ") + std::to_string(i) +
                " along " + dim +
                " pools only padding (reduce the padding or the dilation)");
  };
  for (int64_t i = 0; i < out && i * stride - padBegin < 0; ++i)
    check(i);
  for (int64_t i = out - 1; i >= 0 && i * stride - padBegin + extent > in; --i)
    check(i);
}

} // namespace

PoolingKernel::PoolingKernel(KernelSpec &spec, BuildEnv &env, KernelKind kind,
                             bool max)
    : Kernel(kind, spec.id(), spec.op()), max_(max) {
  const PoolEntry e = readPoolEntry(spec);
  const int64_t n = e.n, c = e.c, h = e.h, w = e.w, oh = e.oh, ow = e.ow;
  const auto &kernel = e.kernel, &strides = e.strides;
  const auto &dilations = e.dilations;
  const auto &padding = e.padding;
  const bool includePad = e.includePad;
  checkNoEmptyWindow(spec, "h", h, oh, kernel[0], strides[0], padding[0],
                     dilations[0]);
  checkNoEmptyWindow(spec, "w", w, ow, kernel[1], strides[1], padding[1],
                     dilations[1]);
  // oneDNN 2.6 refuses average pooling without padding in the count when the
  // gap between taps reaches the input size (dilation - 1 >= input), though
  // such windows are well defined; say so here rather than through a bare
  // oneDNN status. One-tap windows are exempt: their dilation is ignored.
  if (!max && !includePad)
    for (int d = 0; d < 2; ++d) {
      int64_t in = d == 0 ? h : w;
      if (kernel[d] > 1 && dilations[d] - 1 >= in)
        spec.fail(std::string("dilation ") + std::to_string(dilations[d]) +
                  " along " + (d == 0 ? "h" : "w") +
                  " exceeds the input size (" + std::to_string(in) +
                  "): average pooling without count_include_pad does not "
                  "support it");
    }

  dnnl::memory::desc srcDesc = plainDesc({n, c, h, w});
  dnnl::memory::desc dstDesc = plainDesc({n, c, oh, ow});
  dnnl::algorithm alg =
      max ? dnnl::algorithm::pooling_max
          : (includePad ? dnnl::algorithm::pooling_avg_include_padding
                        : dnnl::algorithm::pooling_avg_exclude_padding);
  dims stridesD{strides[0], strides[1]};
  dims kernelD{kernel[0], kernel[1]};
  // The ABI's dilations are 1-based (1 = dense), oneDNN's 0-based. A one-tap
  // window's dilation changes nothing, and oneDNN rejects some of them (see
  // above), so it is dropped.
  dims dilates{kernel[0] == 1 ? 0 : dilations[0] - 1,
               kernel[1] == 1 ? 0 : dilations[1] - 1};
  dims padL{padding[0], padding[1]}, padR{padding[2], padding[3]};
  dnnl::primitive_attr attr = makeAttr();

  bool backward = kind == KernelKind::PoolingBackward;
  // Only max pooling backward needs the workspace of a training forward.
  auto prop = backward ? dnnl::prop_kind::forward_training
                       : dnnl::prop_kind::forward_inference;
  dnnl::pooling_v2_forward::primitive_desc fwdPd(
      dnnl::pooling_v2_forward::desc(prop, alg, srcDesc, dstDesc, stridesD,
                                     kernelD, dilates, padL, padR),
      attr, env.engine);

  if (!backward) {
    impl_ = fwdPd.impl_info_str();
    src_ = unboundMemory(srcDesc, env.engine);
    dst_ = unboundMemory(dstDesc, env.engine);
    forward_.emplace(dnnl::pooling_v2_forward(fwdPd), fwdPd, env);
    forward_->args[DNNL_ARG_SRC] = src_;
    forward_->args[DNNL_ARG_DST] = dst_;
    return;
  }

  dnnl::pooling_v2_backward::primitive_desc bwdPd(
      dnnl::pooling_v2_backward::desc(alg, srcDesc, dstDesc, stridesD, kernelD,
                                      dilates, padL, padR),
      attr, env.engine, fwdPd);
  impl_ = bwdPd.impl_info_str();
  diffDst_ = unboundMemory(dstDesc, env.engine);
  diffSrc_ = unboundMemory(srcDesc, env.engine);
  backward_.emplace(dnnl::pooling_v2_backward(bwdPd), bwdPd, env);
  backward_->args[DNNL_ARG_DIFF_DST] = diffDst_;
  backward_->args[DNNL_ARG_DIFF_SRC] = diffSrc_;
  if (!max)
    return;

  // Recompute the forward pass: its destination is thrown away, its
  // workspace (the winner of each window) feeds the backward primitive.
  impl_ += ", forward " + std::string(fwdPd.impl_info_str());
  src_ = unboundMemory(srcDesc, env.engine);
  dst_ = unboundMemory(fwdPd.dst_desc(), env.engine);
  dnnl::memory workspace = unboundMemory(fwdPd.workspace_desc(), env.engine);
  env.arena.place(dst_);
  env.arena.place(workspace);
  forward_.emplace(dnnl::pooling_v2_forward(fwdPd), fwdPd, env);
  forward_->args[DNNL_ARG_SRC] = src_;
  forward_->args[DNNL_ARG_DST] = dst_;
  forward_->args[DNNL_ARG_WORKSPACE] = workspace;
  backward_->args[DNNL_ARG_WORKSPACE] = workspace;
}

void PoolingKernel::forward(dnnl::stream &stream, const float *src,
                            float *dst) {
  if (!src || !dst)
    throw std::invalid_argument("a NULL tensor was passed for src or dst");
  src_.set_data_handle(const_cast<float *>(src));
  dst_.set_data_handle(dst);
  forward_->execute(stream);
}

void PoolingKernel::backward(dnnl::stream &stream, const float *src,
                             const float *diffDst, float *diffSrc) {
  if (!diffDst || !diffSrc || (max_ && !src))
    throw std::invalid_argument(
        max_ ? "a NULL tensor was passed for src, diff_dst or diff_src"
             : "a NULL tensor was passed for diff_dst or diff_src");
  diffDst_.set_data_handle(const_cast<float *>(diffDst));
  diffSrc_.set_data_handle(diffSrc);
  if (max_) {
    src_.set_data_handle(const_cast<float *>(src));
    forward_->execute(stream);
  }
  backward_->execute(stream);
}

std::string PoolingKernel::describe() const { return op() + " " + impl_; }

} // namespace cleave::rt

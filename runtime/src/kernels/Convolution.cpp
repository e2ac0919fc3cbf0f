//===- Convolution.cpp - The 2-D convolution kernels ----------------------===//
//
// One oneDNN convolution primitive per entry, staged through blocked layouts
// when that pays.
//
// Layout choice, measured single-thread (OMP_NUM_THREADS=1, AVX-512 VM,
// oneDNN 2.6.3), GFLOP/s of fwd / bwd_data / bwd_weights, N=32, including the
// per-call reorders of the blocked variant:
//
//   C  HxW   O  k   plain NCHW (gemm:jit)   blocked + reorders (jit:avx512)
//   32 14   64  3   136 / 118 / 133         231 / 233 / 229
//   64  7   64  3   111 /  96 / 128         242 / 244 / 220
//   16 28   16  3    74 /  49 /  40         207 / 210 / 200
//    6 14   16  5    59 /  42 /  55         192 /  81 /  69
//    3 32   64  5   139 / 111 /  53         158 /  38 / 180
//    1 28   32  3    68 /  72 /  39          84 /  13 /  86
//    1 28    6  5    32 /  15 /  18          50 /   6 /  54
//
// Blocked layouts win everywhere except where a tensor's channels are padded
// far beyond their real count (bwd_data producing a 1- or 3-channel diff_src
// blocked by 16: 16x and 5.3x padding). Up to 2.7x padding still won (C=6).
// So the kernel takes oneDNN's choice unless some activation operand's
// padded size exceeds kMaxPaddingFactor times its real size, and then uses
// plain NCHW. The weights do not count: in f32 they are blocked by the same
// 16 channels as the activations, so the activations' padding says it;
// oneDNN's bf16 kernels on AMX keep activations unpadded (channels last)
// and block the weights' channels by 32, and padding them is cheap there
// (LeNet's second convolution's backward data, 6 channels padded to 32 in
// the weights: 0.085 ms blocked on AMX against 0.44 ms for the plain GEMM
// convolution; Intel Xeon, one thread, micro-batch 32).
//
// Dead taps. Where the input is small next to the kernel's reach (resnet18
// on 32x32 images ends with 3x3 convolutions, padding 1, over 1x1 maps),
// some taps of the kernel meet only padding, whichever output is computed:
// of a 3x3 kernel over a 1x1 map, only the centre ever meets the input.
// oneDNN computes or streams all of them; its bf16 kernels on AMX pay most
// (oneDNN 2.6.3, one thread, Intel Xeon with AMX, resnet18's 512-channel 3x3
// convolutions over 1x1 maps at micro-batch 32, ms per call, f32 / bf16:
// forward 0.52 / 3.37, backward data 0.39 / 5.45, backward weights 4.65 /
// 5.26, for 17 MFLOP of live work). So the kernel crops the weights to the
// taps some output reads the input through (a rectangle: per dimension, the
// union over outputs of each output's taps, checked contiguous) and shrinks
// the padding by the taps cropped on each side, which leaves every output's
// window on the same input elements. The primitive is a smaller
// convolution of the same tensors; its weights are a strided view of the
// caller's (and of a cached copy or partial sum: both are keyed by the
// view's address). A dead tap's weight gradient is zero: accumulated, it is
// left as it is; overwritten, the kernel writes the zeros itself.
//
//===----------------------------------------------------------------------===//

#include "kernels/Convolution.h"
#include "kernels/ConvTaps.h"
#include "kernels/KernelSpec.h"

#include <cstring>
#include <stdexcept>

namespace cleave::rt {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

namespace {

/// Above this ratio of padded to real elements in any operand, the blocked
/// layout's wasted work outweighs its speed (see the table above).
constexpr double kMaxPaddingFactor = 4.0;

/// Shapes and attributes of a convolution, in oneDNN's terms.
struct ConvGeometry {
  dims src, wei, dst, bias;
  dims strides, dilates, padL, padR;
  tag weiTag;
};

double paddingFactor(const dnnl::memory::desc &desc) {
  double real = 1, padded = 1;
  for (int i = 0; i < desc.data.ndims; ++i) {
    real *= static_cast<double>(desc.data.dims[i]);
    padded *= static_cast<double>(desc.data.padded_dims[i]);
  }
  return real == 0 ? 1 : padded / real;
}

/// The primitive descriptor of `kind` for `g`, with every operand in `fmt`
/// (`any` or the plain tags). `relu`/`bias` only apply to the forward kind.
dnnl::primitive_desc makeConvPd(KernelKind kind, const ConvGeometry &g,
                                bool any, bool bias, bool relu, bool bf16,
                                bool bf16Result, const dnnl::engine &engine) {
  using dt = dnnl::memory::data_type;
  auto desc = [&](const dims &d, tag plain, dt type) {
    return dnnl::memory::desc(d, type, any ? tag::any : plain);
  };
  // bf16: the primitive's inputs are bfloat16 (the staging reorders round
  // them), its output f32 (products accumulated in f32), or bf16 where the
  // entry stores the result in bf16 (`bf16Result`: rounded once, by the
  // primitive). Which operands are inputs depends on the direction.
  dt in = bf16 ? dt::bf16 : dt::f32;
  dt out = bf16Result ? dt::bf16 : dt::f32;
  bool fwd = kind == KernelKind::ConvolutionForward;
  bool bwdData = kind == KernelKind::ConvolutionBackwardData;
  dnnl::memory::desc src = desc(g.src, tag::nchw, bwdData ? out : in);
  dnnl::memory::desc wei =
      desc(g.wei, g.weiTag,
           kind == KernelKind::ConvolutionBackwardWeights ? out : in);
  dnnl::memory::desc dst = desc(g.dst, tag::nchw, fwd ? out : in);
  dnnl::memory::desc biasDesc(g.bias, dnnl::memory::data_type::f32, tag::x);
  const auto direct = dnnl::algorithm::convolution_direct;
  const auto training = dnnl::prop_kind::forward_training;

  dnnl::primitive_attr attr = makeAttr();
  if (kind == KernelKind::ConvolutionForward) {
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(ops);
    }
    auto d = bias ? dnnl::convolution_forward::desc(training, direct, src, wei,
                                                    biasDesc, dst, g.strides,
                                                    g.dilates, g.padL, g.padR)
                  : dnnl::convolution_forward::desc(training, direct, src, wei,
                                                    dst, g.strides, g.dilates,
                                                    g.padL, g.padR);
    return dnnl::convolution_forward::primitive_desc(d, attr, engine);
  }

  // Backward primitives need the forward they differentiate as a hint (in
  // bf16 mode, oneDNN's bf16 training recipe: bf16 inputs and output).
  dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(
          training, direct, desc(g.src, tag::nchw, in),
          desc(g.wei, g.weiTag, in), desc(g.dst, tag::nchw, in), g.strides,
          g.dilates, g.padL, g.padR),
      engine);
  if (kind == KernelKind::ConvolutionBackwardData)
    return dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(direct, src, wei, dst, g.strides,
                                              g.dilates, g.padL, g.padR),
        attr, engine, hint);
  return dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(direct, src, wei, dst, g.strides,
                                               g.dilates, g.padL, g.padR),
      attr, engine, hint);
}

/// oneDNN argument ids of the (in0, in1, out) operands for each direction.
struct ConvArgs {
  int in0, in1, out;
};
ConvArgs convArgs(KernelKind kind) {
  switch (kind) {
  case KernelKind::ConvolutionForward:
    return {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  case KernelKind::ConvolutionBackwardData:
    return {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
  default:
    return {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS};
  }
}

} // namespace

ConvolutionKernel::ConvolutionKernel(KernelSpec &spec, BuildEnv &env,
                                     KernelKind kind)
    : Kernel(kind, spec.id(), spec.op()) {
  const ConvEntry e = readConvEntry(spec);
  const int64_t n = e.n, c = e.c, h = e.h, w = e.w, o = e.o, kh = e.kh,
                kw = e.kw, oh = e.oh, ow = e.ow, groups = e.groups;
  const auto &strides = e.strides, &dilations = e.dilations;
  const auto &padding = e.padding;
  const bool relu = e.relu, accumulate = e.accumulate, bf16 = e.bf16;
  hasBias_ = e.bias;

  ConvGeometry g;
  g.src = {n, c, h, w};
  g.dst = {n, o, oh, ow};
  g.bias = {o};
  // Grouped weights are [G, O/G, C/G, KH, KW] to oneDNN: the same bytes as
  // the ABI's [O, C/G, KH, KW].
  if (groups == 1) {
    g.wei = {o, c, kh, kw};
    g.weiTag = tag::oihw;
  } else {
    g.wei = {groups, o / groups, c / groups, kh, kw};
    g.weiTag = tag::goihw;
  }
  g.strides = {strides[0], strides[1]};
  // The ABI's dilations are 1-based (1 = dense), oneDNN's 0-based.
  g.dilates = {dilations[0] - 1, dilations[1] - 1};
  g.padL = {padding[0], padding[1]};
  g.padR = {padding[2], padding[3]};

  // Crop the taps that meet only padding (see the top of the file and
  // ConvTaps.h).
  const std::array<int64_t, 2> in = {h, w}, out = {oh, ow};
  taps_ = {kh, kw};
  bool cropped = false;
  for (int d = 0; d < 2; ++d) {
    TapRange live = liveTaps(in[d], out[d], taps_[d], strides[d], padding[d],
                             padding[d + 2], dilations[d]);
    tapBegin_[d] = live.begin;
    tapEnd_[d] = live.end;
    if (live.size() == taps_[d])
      continue;
    cropped = true;
    g.padL[d] = padding[d] - live.begin * dilations[d];
    g.padR[d] = padding[d + 2] - (taps_[d] - live.end) * dilations[d];
  }
  // The caller's weights, dense; the primitive's, the live taps of them.
  const dims fullWei = g.wei;
  g.wei[g.wei.size() - 2] = tapEnd_[0] - tapBegin_[0];
  g.wei[g.wei.size() - 1] = tapEnd_[1] - tapBegin_[1];
  dims weiStrides(fullWei.size(), 1);
  for (size_t i = fullWei.size() - 1; i > 0; --i)
    weiStrides[i - 1] = weiStrides[i] * fullWei[i];
  const int64_t firstTap = tapBegin_[0] * kw + tapBegin_[1];

  ConvArgs args = convArgs(kind);
  dnnl::primitive_desc pd = makeConvPd(kind, g, /*any=*/true, hasBias_, relu,
                                       bf16, e.dstBf16, env.engine);
  double worst = 1;
  for (int arg : {args.in0, args.in1, args.out})
    if (arg != DNNL_ARG_WEIGHTS && arg != DNNL_ARG_DIFF_WEIGHTS)
      worst = std::max(
          worst, paddingFactor(pd.query_md(dnnl::query::exec_arg_md, arg)));
  blocked_ = worst <= kMaxPaddingFactor;
  if (!blocked_)
    pd = makeConvPd(kind, g, /*any=*/false, hasBias_, relu, bf16, e.dstBf16,
                    env.engine);
  impl_ = pd.impl_info_str();
  if (bf16 && impl_.find("ref") != std::string::npos)
    spec.fail("oneDNN has no bf16 " + op() + " for this CPU and shape (it "
              "chose '" + impl_ + "'); bf16 artifacts need AVX512-BF16");
  bf16_ = bf16;
  stored_ = e.srcBf16 || e.diffDstBf16 || e.weiBf16 || e.dstBf16;

  // Plain descriptors of the caller's tensors, per argument id: f32, but an
  // operand the entry says is stored in bf16 (which a blocked layout still
  // reorders, converting nothing).
  using dt = dnnl::memory::data_type;
  auto type = [](bool bf16Stored) { return bf16Stored ? dt::bf16 : dt::f32; };
  // The weights: the caller's dense tensor, or the view of its live taps.
  auto weights = [&](dt t) {
    return cropped ? dnnl::memory::desc(g.wei, t, weiStrides)
                   : dnnl::memory::desc(g.wei, t, g.weiTag);
  };
  auto plain = [&](int arg) {
    if (arg == DNNL_ARG_WEIGHTS)
      return weights(type(e.weiBf16));
    if (arg == DNNL_ARG_DIFF_WEIGHTS)
      return weights(type(e.dstBf16));
    if (arg == DNNL_ARG_SRC)
      return dnnl::memory::desc(g.src, type(e.srcBf16), tag::nchw);
    if (arg == DNNL_ARG_DIFF_SRC)
      return dnnl::memory::desc(g.src, type(e.dstBf16), tag::nchw);
    if (arg == DNNL_ARG_DIFF_DST)
      return dnnl::memory::desc(g.dst, type(e.diffDstBf16), tag::nchw);
    return dnnl::memory::desc(g.dst, type(e.dstBf16), tag::nchw);
  };
  auto wanted = [&](int arg) {
    return pd.query_md(dnnl::query::exec_arg_md, arg);
  };
  using Role = Operand::Role;
  in0_ = Operand(Role::Input, plain(args.in0), wanted(args.in0), env);
  in1_ = Operand(Role::Input, plain(args.in1), wanted(args.in1), env);
  out_ = Operand(accumulate ? Role::AccumulatedOutput : Role::Output,
                 plain(args.out), wanted(args.out), env);
  in0Arg_ = args.in0;
  in1Arg_ = args.in1;
  outArg_ = args.out;

  // The operand that may live in the cache: the weights of the forward and
  // backward-data directions when staged, the weight gradient of an
  // accumulating backward-weights one.
  cache_ = env.cache;
  if (kind == KernelKind::ConvolutionBackwardWeights) {
    deferGradient_ = cache_ && accumulate;
    plainLayout_ = plain(args.out);
    blockedLayout_ = wanted(args.out);
  } else {
    // The cache converts f32 weights; weights stored in bf16 are reordered
    // (converting nothing) by the kernel.
    cacheWeights_ = cache_ && in1_.staged() && !e.weiBf16;
    plainLayout_ = plain(args.in1);
    blockedLayout_ = wanted(args.in1);
  }

  if (cropped) {
    bool bwdWeights = kind == KernelKind::ConvolutionBackwardWeights;
    zeroElementBytes_ =
        (bwdWeights ? e.dstBf16 : e.weiBf16) ? sizeof(uint16_t) : sizeof(float);
    weightsOffset_ = size_t(firstTap) * zeroElementBytes_;
    zeroDeadTaps_ = bwdWeights && !accumulate;
    // Every dimension but the two spatial ones.
    zeroRows_ = 1;
    for (size_t i = 0; i + 2 < fullWei.size(); ++i)
      zeroRows_ *= fullWei[i];
  }

  conv_.emplace(dnnl::primitive(pd), pd, env);
  conv_->args[args.in0] = in0_.forPrimitive();
  conv_->args[args.in1] = in1_.forPrimitive();
  conv_->args[args.out] = out_.forPrimitive();
  if (hasBias_) {
    bias_ = unboundMemory(wanted(DNNL_ARG_BIAS), env.engine);
    conv_->args[DNNL_ARG_BIAS] = bias_;
  }
}

void ConvolutionKernel::run(dnnl::stream &stream, const void *in0,
                            const void *in1, const float *bias, void *out) {
  if (!in0 || !in1 || !out)
    throw std::invalid_argument("a NULL tensor was passed");
  if (hasBias_ && !bias)
    throw std::invalid_argument("the entry has a bias but NULL was passed");
  // The primitive's weights (or weight gradient) begin at the first live
  // tap.
  const bool bwdWeights = kind() == KernelKind::ConvolutionBackwardWeights;
  if (bwdWeights)
    out = static_cast<char *>(out) + weightsOffset_;
  else
    in1 = static_cast<const char *>(in1) + weightsOffset_;
  in0_.bind(in0);
  in1_.bind(in1);
  out_.bind(out);
  if (hasBias_)
    bias_.set_data_handle(const_cast<float *>(bias));
  in0_.stageIn(stream);
  const dnnl::memory *weights =
      cacheWeights_ ? cache_->weights(stream, in1, plainLayout_, blockedLayout_)
                    : nullptr;
  if (weights) {
    conv_->args[in1Arg_] = *weights;
  } else {
    conv_->args[in1Arg_] = in1_.forPrimitive();
    in1_.stageIn(stream);
  }

  PartialSum *sum = deferGradient_
                        ? cache_->partialSum(out, plainLayout_, blockedLayout_)
                        : nullptr;
  // The first gradient of a window is written straight into the partial
  // sum; later ones are staged and added to it.
  const bool intoSum = sum && sum->empty();
  conv_->args[outArg_] = intoSum ? sum->memory() : out_.forPrimitive();
  conv_->execute(stream);
  if (intoSum)
    sum->markWritten();
  else if (sum)
    sum->add(stream, out_.forPrimitive());
  else
    out_.stageOut(stream);
  if (zeroDeadTaps_) {
    stream.wait();
    zeroDeadTaps(static_cast<char *>(out) - weightsOffset_);
  }
}

void ConvolutionKernel::zeroDeadTaps(char *weightGradient) const {
  const size_t bytes = zeroElementBytes_;
  const int64_t rowLength = taps_[0] * taps_[1];
  for (int64_t r = 0; r < zeroRows_; ++r) {
    char *row = weightGradient + size_t(r * rowLength) * bytes;
    for (int64_t y = 0; y < taps_[0]; ++y) {
      bool liveRow = y >= tapBegin_[0] && y < tapEnd_[0];
      for (int64_t x = 0; x < taps_[1]; ++x)
        if (!liveRow || x < tapBegin_[1] || x >= tapEnd_[1])
          std::memset(row + size_t(y * taps_[1] + x) * bytes, 0, bytes);
    }
  }
}

std::string ConvolutionKernel::describe() const {
  int staged = in0_.staged() + in1_.staged() + out_.staged();
  std::string crop;
  if (tapEnd_[0] - tapBegin_[0] != taps_[0] ||
      tapEnd_[1] - tapBegin_[1] != taps_[1])
    crop = ", taps " + std::to_string(tapEnd_[0] - tapBegin_[0]) + "x" +
           std::to_string(tapEnd_[1] - tapBegin_[1]) + " of " +
           std::to_string(taps_[0]) + "x" + std::to_string(taps_[1]);
  return op() + " " + impl_ + crop + ", " +
         (blocked_ ? "oneDNN's layouts" : "plain layouts") + ", " +
         std::to_string(staged) + " of 3 operands staged" +
         (bf16_ ? ", bf16 inputs" : "") + (stored_ ? " (stored in bf16)" : "");
}

} // namespace cleave::rt

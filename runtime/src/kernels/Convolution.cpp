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
// So the kernel takes oneDNN's choice unless some operand's padded size
// exceeds kMaxPaddingFactor times its real size, and then uses plain NCHW.
//
//===----------------------------------------------------------------------===//

#include "kernels/Convolution.h"
#include "kernels/KernelSpec.h"

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

  ConvArgs args = convArgs(kind);
  dnnl::primitive_desc pd = makeConvPd(kind, g, /*any=*/true, hasBias_, relu,
                                       bf16, e.dstBf16, env.engine);
  double worst = 1;
  for (int arg : {args.in0, args.in1, args.out})
    worst = std::max(worst,
                     paddingFactor(pd.query_md(dnnl::query::exec_arg_md, arg)));
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
  auto plain = [&](int arg) {
    if (arg == DNNL_ARG_WEIGHTS)
      return dnnl::memory::desc(g.wei, type(e.weiBf16), g.weiTag);
    if (arg == DNNL_ARG_DIFF_WEIGHTS)
      return dnnl::memory::desc(g.wei, type(e.dstBf16), g.weiTag);
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
}

std::string ConvolutionKernel::describe() const {
  int staged = in0_.staged() + in1_.staged() + out_.staged();
  return op() + " " + impl_ + ", " +
         (blocked_ ? "oneDNN's layouts" : "plain layouts") + ", " +
         std::to_string(staged) + " of 3 operands staged" +
         (bf16_ ? ", bf16 inputs" : "") + (stored_ ? " (stored in bf16)" : "");
}

} // namespace cleave::rt

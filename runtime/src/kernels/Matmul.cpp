//===- Matmul.cpp - The matmul kernel -------------------------------------===//
//
// One oneDNN matmul primitive per entry, on the caller's plain layouts.
//
// Layouts: weights stay in the caller's row-major layout (transposes are
// expressed as strides). oneDNN 2.6's brgemm matmul packs B internally, so a
// `format_tag::any` weight layout would only add a reorder per call (the
// weights change every step). Measured single-thread on this project's VM
// (AVX-512, OMP_NUM_THREADS=1): 32x784x512 190 GFLOP/s (with or without
// trans_b, bias and ReLU); the weight-gradient GEMM 512x32x784 with trans_a
// and accumulate 210 GFLOP/s; 32x512x10 110-130 GFLOP/s. That is oneDNN's
// peak for these shapes, so there is nothing for a layout change to win.
//
// bf16: both operands are converted to bf16 copies laid out as the f32
// tensors are (a transpose stays a stride: the conversion is a straight
// sweep, and oneDNN's brgemm reads a transposed bf16 operand at about the
// speed of a dense one; bench/README.md). One that is a parameter (the
// weights, as B in the forward and backward-data GEMMs) is taken from the
// session's LayoutCache, which converts it once per parameter generation (an
// apply step, a write through the API, a checkpoint load) instead of once per
// call; the forward GEMM (transposed B) and the backward-data GEMM (plain B)
// of one weight share that one copy. The bf16 copy is the same rounding of
// the same f32 values, so the results do not change. An operand the entry
// says is stored in bf16 (`a_type`, `b_type`: an activation the generated
// loop that computed it also wrote in bf16, mixed-precision.md) is read as
// it is. Where oneDNN has no kernel for a strided bf16 operand, the
// operands are staged into dense bf16 copies instead.
//
//===----------------------------------------------------------------------===//

#include "kernels/Matmul.h"
#include "kernels/KernelSpec.h"
#include "kernels/LayoutCache.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace cleave::rt {

using dims = dnnl::memory::dims;

namespace {

/// `desc` (a plain strided tensor) with its dimensions in memory order:
/// the row-major description of the same bytes, so that the transposed and
/// the plain view of one buffer name one cache entry. Null when the tensor
/// is not dense and row-major in some order of its dimensions.
std::optional<dnnl::memory::desc>
inMemoryOrder(const dnnl::memory::desc &desc) {
  const dnnl_memory_desc_t &d = desc.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks ||
      (d.ndims != 2 && d.ndims != 3))
    return std::nullopt;
  std::vector<int> order(d.ndims);
  for (int i = 0; i < d.ndims; ++i)
    order[i] = i;
  const dnnl_dims_t &strides = d.format_desc.blocking.strides;
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return strides[x] > strides[y]; });
  dnnl::memory::dims sorted;
  for (int i : order)
    sorted.push_back(d.dims[i]);
  dnnl::memory::desc rowMajor(sorted, desc.data_type(),
                              d.ndims == 3 ? dnnl::memory::format_tag::abc
                                           : dnnl::memory::format_tag::ab);
  // Same bytes: each dimension's stride is the row-major one of its place.
  for (int i = 0; i < d.ndims; ++i)
    if (strides[order[i]] != rowMajor.data.format_desc.blocking.strides[i] &&
        d.dims[order[i]] != 1)
      return std::nullopt;
  return rowMajor;
}

} // namespace

MatmulKernel::MatmulKernel(KernelSpec &spec, BuildEnv &env)
    : Kernel(kKind, spec.id(), spec.op()) {
  const MatmulEntry e = readMatmulEntry(spec);
  const int64_t batch = e.batch, m = e.m, k = e.k, n = e.n;
  const bool transA = e.transA, transB = e.transB, bBatched = e.bBatched;
  const bool relu = e.relu, accumulate = e.accumulate, bf16 = e.bf16;
  using dt = dnnl::memory::data_type;
  hasBias_ = e.bias;

  // Without transposed or per-batch B, the batch is just more rows of one
  // GEMM: a [batch*M, K] x [K, N] product is faster than `batch` small ones.
  bool fold = !bBatched && !transA;
  int64_t rows = fold ? batch * m : m;
  bool batched = !fold && batch > 1;
  int64_t bBatch = bBatched ? batch : 1;
  auto shape = [&](int64_t b, int64_t r, int64_t c) {
    return batched ? dims{b, r, c} : dims{r, c};
  };
  auto strided = [&](int64_t b, int64_t r, int64_t c, bool trans, dt type) {
    // A transposed [r, c] operand is stored as [c, r].
    dims strides = trans ? dims{r * c, 1, r} : dims{r * c, c, 1};
    if (!batched)
      strides.erase(strides.begin());
    return dnnl::memory::desc(shape(b, r, c), type, strides);
  };
  dnnl::memory::desc aDesc =
      strided(batch, rows, k, transA, e.aBf16 ? dt::bf16 : dt::f32);
  dnnl::memory::desc bDesc =
      strided(bBatch, k, n, transB, e.bBf16 ? dt::bf16 : dt::f32);
  dnnl::memory::desc cDesc = plainDesc(shape(batch, rows, n));
  dnnl::memory::desc biasDesc = plainDesc(shape(1, 1, n));

  dnnl::post_ops ops;
  if (accumulate)
    ops.append_sum(1.f);
  if (relu)
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  dnnl::primitive_attr attr = makeAttr();
  attr.set_post_ops(ops);

  // bf16: the primitive reads bfloat16 copies of A and B (rounded by the
  // staging reorders) laid out as the f32 tensors are, and writes f32,
  // accumulating in f32; bias, post-ops and C stay f32. An operand stored
  // in bf16 is offered as it is. Where no kernel reads those strided,
  // dense copies (the staging reorders apply the transposes).
  auto bf16Copy = [&](const dnnl::memory::desc &d) {
    dnnl::memory::desc copy = d;
    copy.data.data_type = dnnl_bf16;
    return copy;
  };
  auto denseBf16Copy = [&](const dnnl::memory::desc &d) {
    dnnl::memory::dims dims = d.dims();
    return dnnl::memory::desc(dims, dt::bf16,
                              dims.size() == 3 ? dnnl::memory::format_tag::abc
                                               : dnnl::memory::format_tag::ab);
  };
  auto primitive = [&](const dnnl::memory::desc &a,
                       const dnnl::memory::desc &b) {
    dnnl::matmul::desc desc = hasBias_
                                  ? dnnl::matmul::desc(a, b, biasDesc, cDesc)
                                  : dnnl::matmul::desc(a, b, cDesc);
    return dnnl::matmul::primitive_desc(desc, attr, env.engine);
  };
  auto isRef = [](const dnnl::matmul::primitive_desc &pd) {
    return std::string(pd.impl_info_str()).find("ref") != std::string::npos;
  };
  dnnl::memory::desc aWanted = bf16 && !e.aBf16 ? bf16Copy(aDesc) : aDesc;
  dnnl::memory::desc bWanted = bf16 && !e.bBf16 ? bf16Copy(bDesc) : bDesc;
  dnnl::matmul::primitive_desc pd = primitive(aWanted, bWanted);
  if (bf16 && isRef(pd) &&
      (aWanted != denseBf16Copy(aDesc) || bWanted != denseBf16Copy(bDesc))) {
    // No kernel reads a bf16 operand strided: read dense copies.
    aWanted = denseBf16Copy(aDesc);
    bWanted = denseBf16Copy(bDesc);
    pd = primitive(aWanted, bWanted);
  }
  impl_ = pd.impl_info_str();
  if (bf16 && isRef(pd))
    spec.fail("oneDNN has no bf16 matmul for this CPU (it chose '" + impl_ +
              "'); bf16 artifacts need AVX512-BF16");

  using Role = Operand::Role;
  a_ = Operand(Role::Input, aDesc, aWanted, env);
  b_ = Operand(Role::Input, bDesc, bWanted, env);
  aPlain_ = aDesc;
  bPlain_ = bDesc;
  aWanted_ = aWanted;
  bWanted_ = bWanted;
  cache_ = env.cache;
  if (cache_) {
    aCached_ = cachedCopy(aDesc, aWanted, env);
    bCached_ = cachedCopy(bDesc, bWanted, env);
  }
  c_ = unboundMemory(cDesc, env.engine);
  matmul_.emplace(dnnl::matmul(pd), pd, env);
  matmul_->args[DNNL_ARG_SRC] = a_.forPrimitive();
  matmul_->args[DNNL_ARG_WEIGHTS] = b_.forPrimitive();
  matmul_->args[DNNL_ARG_DST] = c_;
  if (hasBias_) {
    bias_ = unboundMemory(biasDesc, env.engine);
    matmul_->args[DNNL_ARG_BIAS] = bias_;
  }
}

void MatmulKernel::run(dnnl::stream &stream, const void *a, const void *b,
                       const float *bias, float *c) {
  if (!a || !b || !c)
    throw std::invalid_argument("a NULL tensor was passed for a, b or c");
  if (hasBias_ && !bias)
    throw std::invalid_argument("the entry has a bias but NULL was passed");
  a_.bind(a);
  b_.bind(b);
  c_.set_data_handle(c);
  if (hasBias_)
    bias_.set_data_handle(const_cast<float *>(bias));
  stageOrCache(stream, a_, a, DNNL_ARG_SRC, aCached_);
  stageOrCache(stream, b_, b, DNNL_ARG_WEIGHTS, bCached_);
  matmul_->execute(stream);
}

MatmulKernel::CachedCopy
MatmulKernel::cachedCopy(const dnnl::memory::desc &plain,
                         const dnnl::memory::desc &wanted, BuildEnv &env) {
  CachedCopy copy{plain, wanted, {}};
  std::optional<dnnl::memory::desc> plainInOrder = inMemoryOrder(plain);
  std::optional<dnnl::memory::desc> wantedInOrder = inMemoryOrder(wanted);
  if (plainInOrder && wantedInOrder &&
      plainInOrder->dims() == wantedInOrder->dims() && wanted != plain) {
    // The copy has the tensor's own layout: ask for it in memory order, as
    // every kernel reading this buffer does, and view it as `wanted`.
    copy.plain = *plainInOrder;
    copy.wanted = *wantedInOrder;
    copy.view = unboundMemory(wanted, env.engine);
  }
  return copy;
}

void MatmulKernel::stageOrCache(dnnl::stream &stream, Operand &operand,
                                const void *data, int arg, CachedCopy &cached) {
  const dnnl::memory *copy =
      cache_ && operand.staged()
          ? cache_->weights(stream, data, cached.plain, cached.wanted)
          : nullptr;
  if (copy) {
    if (cached.view)
      cached.view.set_data_handle(copy->get_data_handle());
    matmul_->args[arg] = cached.view ? cached.view : *copy;
    return;
  }
  matmul_->args[arg] = operand.forPrimitive();
  operand.stageIn(stream);
}

std::string MatmulKernel::describe() const {
  // What the primitive reads, and what the caller passes.
  using dt = dnnl::memory::data_type;
  const bool aStored = aPlain_.data_type() == dt::bf16;
  const bool bStored = bPlain_.data_type() == dt::bf16;
  std::string line = "matmul " + impl_;
  if (aWanted_.data_type() == dt::bf16)
    line += ", bf16 inputs";
  if (aStored || bStored)
    line += std::string(" (") +
            (aStored && bStored ? "a and b"
             : aStored          ? "a"
                                : "b") +
            " stored in bf16" + (a_.staged() || b_.staged() ? ", staged" : "") +
            ")";
  return line;
}

} // namespace cleave::rt

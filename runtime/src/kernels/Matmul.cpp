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
// bf16: both operands are converted to dense bf16 copies. One that is a
// parameter (the weights, as B in the forward and backward-data GEMMs) is
// taken from the session's LayoutCache, which converts it once per parameter
// generation (an apply step, a write through the API, a checkpoint load)
// instead of once per call: the bf16 copy is the same rounding of the same
// f32 values, so the results do not change. An operand the entry says is
// stored in bf16 (`a_type`, `b_type`: an activation the generated loop that
// computed it also wrote in bf16, mixed-precision.md) is read as it is,
// strided for a transpose where oneDNN has a kernel for that, else through
// a bf16 copy made dense, which converts nothing.
//
//===----------------------------------------------------------------------===//

#include "kernels/Matmul.h"
#include "kernels/KernelSpec.h"
#include "kernels/LayoutCache.h"

#include <stdexcept>

namespace cleave::rt {

using dims = dnnl::memory::dims;

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

  // bf16: the primitive reads dense bfloat16 copies of A and B (rounded by
  // the staging reorders, which also apply the transposes) and writes f32,
  // accumulating in f32; bias, post-ops and C stay f32. An operand stored
  // in bf16 is first offered as it is.
  auto bf16Copy = [&](const dnnl::memory::desc &d) {
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
      (aWanted != bf16Copy(aDesc) || bWanted != bf16Copy(bDesc))) {
    // No kernel reads a stored operand strided: read dense copies.
    aWanted = bf16Copy(aDesc);
    bWanted = bf16Copy(bDesc);
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
  stageOrCache(stream, a_, a, DNNL_ARG_SRC, aPlain_, aWanted_);
  stageOrCache(stream, b_, b, DNNL_ARG_WEIGHTS, bPlain_, bWanted_);
  matmul_->execute(stream);
}

void MatmulKernel::stageOrCache(dnnl::stream &stream, Operand &operand,
                                const void *data, int arg,
                                const dnnl::memory::desc &plain,
                                const dnnl::memory::desc &wanted) {
  const dnnl::memory *copy = cache_ && operand.staged()
                                 ? cache_->weights(stream, data, plain, wanted)
                                 : nullptr;
  if (copy) {
    matmul_->args[arg] = *copy;
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

//===- Attention.cpp - Fused attention on the host ------------------------===//
//
// The loops of kernel_abi.h's sdpa functions.
//
//===----------------------------------------------------------------------===//

#include "kernels/Attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace cleave::rt {

namespace {

float widen(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

/// Round to nearest even; a NaN stays a (quiet) NaN.
uint16_t narrow(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if (std::isnan(value))
    return uint16_t((word >> 16) | 0x40);
  word += 0x7fff + ((word >> 16) & 1);
  return uint16_t(word >> 16);
}

} // namespace

AttentionKernel::AttentionKernel(KernelSpec &spec)
    : Kernel(spec.kernelOp() == abi::KernelOp::sdpa_fwd
                 ? KernelKind::AttentionForward
                 : KernelKind::AttentionBackward,
             spec.id(), spec.op()),
      e_(readSdpaEntry(spec)) {
  row_.resize(e_.seqKv);
  if (kind() == KernelKind::AttentionBackward) {
    dq_.resize(e_.seqQ * e_.headDim);
    dk_.resize(e_.seqKv * e_.headDim);
    dv_.resize(e_.seqKv * e_.valueDim);
  }
}

float AttentionKernel::load(const void *tensor, int64_t index) const {
  return e_.bf16 ? widen(static_cast<const uint16_t *>(tensor)[index])
                 : static_cast<const float *>(tensor)[index];
}

void AttentionKernel::store(void *tensor, int64_t index, float value) const {
  if (e_.bf16)
    static_cast<uint16_t *>(tensor)[index] = narrow(value);
  else
    static_cast<float *>(tensor)[index] = value;
}

float AttentionKernel::kept(const void *keep, int64_t index) const {
  if (e_.dropout == 0)
    return 1;
  return load(keep, index) * float(1.0 / (1.0 - e_.dropout));
}

void AttentionKernel::scores(const void *q, const void *k, const void *mask,
                             int64_t slice, int64_t i, float *row) const {
  const int64_t D = e_.headDim, S = e_.seqKv;
  const int64_t qRow = (slice * e_.seqQ + i) * D;
  for (int64_t j = 0; j < S; ++j) {
    if (e_.causal && j > i) {
      row[j] = -std::numeric_limits<float>::infinity();
      continue;
    }
    const int64_t kRow = (slice * S + j) * D;
    float dot = 0;
    for (int64_t d = 0; d < D; ++d)
      dot += load(q, qRow + d) * load(k, kRow + d);
    row[j] = dot * float(e_.scale);
    if (mask)
      row[j] += load(mask, i * S + j);
  }
}

void AttentionKernel::forward(const void *q, const void *k, const void *v,
                              const void *mask, const void *keep, void *o,
                              float *lse) {
  const int64_t T = e_.seqQ, S = e_.seqKv, Dv = e_.valueDim;
  float *row = row_.data();
  for (int64_t b = 0; b < e_.batch; ++b)
    for (int64_t i = 0; i < T; ++i) {
      scores(q, k, mask, b, i, row);
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < S; ++j)
        max = std::max(max, row[j]);
      // A row masked throughout has no finite maximum: it sums no term, and
      // its log-sum-exp and result are NaN, as the decomposition's are.
      float shift = std::isfinite(max) ? max : 0;
      float sum = 0;
      for (int64_t j = 0; j < S; ++j)
        sum += row[j] = std::exp(row[j] - shift);
      lse[b * T + i] = shift + std::log(sum);
      for (int64_t j = 0; j < S; ++j)
        row[j] *= kept(keep, (b * T + i) * S + j);
      for (int64_t c = 0; c < Dv; ++c) {
        float acc = 0;
        for (int64_t j = 0; j < S; ++j)
          acc += row[j] * load(v, (b * S + j) * Dv + c);
        store(o, (b * T + i) * Dv + c, acc / sum);
      }
    }
}

void AttentionKernel::backward(const AttentionGradients &x) {
  const int64_t T = e_.seqQ, S = e_.seqKv, D = e_.headDim, Dv = e_.valueDim;
  const float scale = float(e_.scale);
  for (int64_t b = 0; b < e_.batch; ++b) {
    std::fill(dk_.begin(), dk_.end(), 0.0f);
    std::fill(dv_.begin(), dv_.end(), 0.0f);
    for (int64_t i = 0; i < T; ++i) {
      float *p = row_.data();
      scores(x.q, x.k, x.mask, b, i, p);
      const float rowLse = x.lse[b * T + i];
      // rowsum(dO * O): the softmax's VJP without the probabilities' row.
      float delta = 0;
      for (int64_t c = 0; c < Dv; ++c)
        delta +=
            load(x.dO, (b * T + i) * Dv + c) * load(x.o, (b * T + i) * Dv + c);
      std::fill(dq_.begin() + i * D, dq_.begin() + (i + 1) * D, 0.0f);
      for (int64_t j = 0; j < S; ++j) {
        p[j] = std::exp(p[j] - rowLse);
        // Dropout: the product with v saw p * keep / (1 - r), and its
        // gradient reaches p through the same factor.
        const float factor = kept(x.keep, (b * T + i) * S + j);
        float dp = 0;
        for (int64_t c = 0; c < Dv; ++c) {
          float dO = load(x.dO, (b * T + i) * Dv + c);
          dv_[j * Dv + c] += p[j] * factor * dO;
          dp += dO * load(x.v, (b * S + j) * Dv + c);
        }
        float ds = p[j] * (dp * factor - delta) * scale;
        for (int64_t d = 0; d < D; ++d) {
          dq_[i * D + d] += ds * load(x.k, (b * S + j) * D + d);
          dk_[j * D + d] += ds * load(x.q, (b * T + i) * D + d);
        }
      }
    }
    for (int64_t n = 0; n < T * D; ++n)
      store(x.dq, b * T * D + n, dq_[n]);
    for (int64_t n = 0; n < S * D; ++n)
      store(x.dk, b * S * D + n, dk_[n]);
    for (int64_t n = 0; n < S * Dv; ++n)
      store(x.dv, b * S * Dv + n, dv_[n]);
  }
}

std::string AttentionKernel::describe() const {
  std::ostringstream out;
  out << op() << " host loops " << (e_.bf16 ? "bf16" : "f32") << " batch "
      << e_.batch << " T " << e_.seqQ << " S " << e_.seqKv << " D "
      << e_.headDim << (e_.causal ? " causal" : "") << (e_.mask ? " mask" : "");
  if (e_.dropout != 0)
    out << " dropout " << e_.dropout;
  return out.str();
}

} // namespace cleave::rt

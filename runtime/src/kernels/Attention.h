//===- Attention.h - Fused attention on the host ----------------*- C++ -*-===//
//
// `sdpa_fwd` and `sdpa_bwd` entries on the CPU: plain loops, one row of
// scores at a time. The CPU target decomposes attention (attention.md), so
// these run only when a cuda artifact's kernels run on the host (the
// backend tests' GpuKernelsOnHost), where they define what cuDNN's fused
// kernels must compute.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_ATTENTION_H
#define CLEAVE_RUNTIME_KERNELS_ATTENTION_H

#include "kernels/Kernel.h"
#include "kernels/KernelSpec.h"

#include <vector>

namespace cleave::rt {

/// Fused attention, forward or backward, as kernel_abi.h defines it. Sums
/// are f32, as a GPU kernel's; bf16 tensors are read and written rounded to
/// nearest even. Nothing is kept across calls.
class AttentionKernel final : public Kernel {
public:
  explicit AttentionKernel(KernelSpec &spec);

  void forward(const void *q, const void *k, const void *v, const void *mask,
               const void *keep, void *o, float *lse);
  void backward(const AttentionGradients &operands);
  std::string describe() const override;

private:
  /// The scaled, masked scores of row `i` of slice `q`/`k` into `row`
  /// (seq_kv floats).
  void scores(const void *q, const void *k, const void *mask, int64_t slice,
              int64_t i, float *row) const;
  float load(const void *tensor, int64_t index) const;
  /// What a probability at `index` ([batch, T, S]) is multiplied by after
  /// the softmax: keep / (1 - dropout), or 1 without dropout.
  float kept(const void *keep, int64_t index) const;
  void store(void *tensor, int64_t index, float value) const;

  SdpaEntry e_;
  /// One row of scores; one slice's gradient sums (backward).
  std::vector<float> row_, dq_, dk_, dv_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_ATTENTION_H

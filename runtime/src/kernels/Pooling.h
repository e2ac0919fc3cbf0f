//===- Pooling.h - The 2-D pooling kernels ----------------------*- C++ -*-===//
//
// `max_pool2d_fwd`, `avg_pool2d_fwd`, `max_pool2d_bwd` and `avg_pool2d_bwd`
// entries.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_POOLING_H
#define CLEAVE_RUNTIME_KERNELS_POOLING_H

#include "kernels/Kernel.h"

#include <optional>

namespace cleave::rt {

class KernelSpec;

/// Max or average pooling, forward or backward, on plain NCHW tensors.
///
/// Max pooling backward needs to know which element of each window won. The
/// ABI passes the forward input instead of oneDNN's workspace (generated code
/// knows nothing of workspaces), so the backward kernel recomputes the forward
/// pass into an arena-backed destination and workspace, then runs the backward
/// primitive on that workspace.
class PoolingKernel final : public Kernel {
public:
  /// Reads and validates the entry (`op` decides direction and algorithm),
  /// then creates the primitives.
  PoolingKernel(KernelSpec &spec, BuildEnv &env, KernelKind kind, bool max);

  /// dst = pool(src). Forward kernels only.
  void forward(dnnl::stream &stream, const float *src, float *dst);
  /// diff_src = d pool / d src applied to diff_dst. Backward kernels only;
  /// `src` is read by max pooling only.
  void backward(dnnl::stream &stream, const float *src, const float *diffDst,
                float *diffSrc);
  std::string describe() const override;

private:
  bool max_ = false;
  dnnl::memory src_, dst_, diffDst_, diffSrc_;
  /// The forward primitive: the kernel itself for forward kernels, the
  /// workspace recomputation for max pooling backward.
  std::optional<Step> forward_;
  std::optional<Step> backward_;
  std::string impl_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_POOLING_H

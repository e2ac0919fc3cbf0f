//===- Matmul.h - The matmul kernel -----------------------------*- C++ -*-===//
//
// `matmul` entries: batched GEMM with optional transposes, shared or batched
// B, bias, ReLU, and accumulation into C.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_MATMUL_H
#define CLEAVE_RUNTIME_KERNELS_MATMUL_H

#include "kernels/Kernel.h"

#include <optional>

namespace cleave::rt {

class KernelSpec;

class MatmulKernel final : public Kernel {
public:
  static constexpr KernelKind kKind = KernelKind::Matmul;

  /// Reads and validates the entry, then creates the primitive.
  MatmulKernel(KernelSpec &spec, BuildEnv &env);

  /// c = act(op(a) op(b) + bias), or c += op(a) op(b) with `accumulate`.
  /// `bias` must be non-null exactly when the entry has a bias. `a` and `b`
  /// are f32, or bf16 where the entry's `a_type`/`b_type` says so.
  void run(dnnl::stream &stream, const void *a, const void *b,
           const float *bias, float *c);
  std::string describe() const override;

private:
  /// How an operand asks the layout cache for its copy: the f32 tensor and
  /// the copy's layout, and when the copy keeps the tensor's own layout, both
  /// in memory order (so the forward GEMM's transposed view of a weight and
  /// the backward-data GEMM's plain one share a copy) with `view` to read it
  /// as the primitive expects.
  struct CachedCopy {
    dnnl::memory::desc plain, wanted;
    dnnl::memory view;
  };
  static CachedCopy cachedCopy(const dnnl::memory::desc &plain,
                               const dnnl::memory::desc &wanted, BuildEnv &env);
  /// Stages `operand` for this call, or takes the cache's copy when it is a
  /// parameter (a bf16 weight converted once per parameter generation).
  void stageOrCache(dnnl::stream &stream, Operand &operand, const void *data,
                    int arg, CachedCopy &cached);

  bool hasBias_ = false;
  /// A and B, staged into bf16 copies when the entry multiplies in bf16 and
  /// they are stored in f32.
  Operand a_, b_;
  /// Their layouts.
  dnnl::memory::desc aPlain_, bPlain_, aWanted_, bWanted_;
  /// What they ask the cache for.
  CachedCopy aCached_, bCached_;
  /// The session's copies of parameters (null in graph executables).
  LayoutCache *cache_ = nullptr;
  dnnl::memory bias_, c_;
  std::optional<Step> matmul_;
  std::string impl_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_MATMUL_H

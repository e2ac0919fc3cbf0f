//===- Convolution.h - The 2-D convolution kernels --------------*- C++ -*-===//
//
// `conv2d_fwd`, `conv2d_bwd_data` and `conv2d_bwd_weights` entries.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_CONVOLUTION_H
#define CLEAVE_RUNTIME_KERNELS_CONVOLUTION_H

#include "kernels/Kernel.h"
#include "kernels/LayoutCache.h"

#include <array>
#include <optional>

namespace cleave::rt {

class KernelSpec;

/// One convolution primitive (forward, backward data or backward weights)
/// with its three tensor operands in call order and an optional bias.
///
/// oneDNN's convolutions are 1.5-3x faster on blocked layouts than on plain
/// NCHW, even counting a reorder of every operand on every call; the kernel
/// lets oneDNN choose (`format_tag::any`) and stages the caller's plain
/// tensors through the arena, unless the chosen layout pads channels so much
/// (e.g. a 1-channel image blocked by 16) that the plain GEMM-based
/// implementation wins. See Convolution.cpp for the measurements.
///
/// Staged weights that are a session parameter come from the context's
/// LayoutCache instead, reordered once per parameter generation rather than
/// per call; and a staged weight gradient added into an accumulator goes to
/// the cache's blocked partial sum, reordered back once per window.
///
/// Kernel taps that only ever meet padding (a 3x3 kernel with padding 1 over
/// a 1x1 map, as at the deep end of a CNN on small images) are cropped: the
/// primitive convolves with the live taps alone, reading and writing them as
/// a strided view of the caller's weights, and the gradient of a dead tap is
/// zero without being computed. See Convolution.cpp.
class ConvolutionKernel final : public Kernel {
public:
  /// Reads and validates the entry (`op` decides the direction), then creates
  /// the primitive and its staging reorders.
  ConvolutionKernel(KernelSpec &spec, BuildEnv &env, KernelKind kind);

  /// The operands in the order of the entry point's arguments:
  ///   forward:          src, wei, (bias), dst
  ///   backward data:    diff_dst, wei, diff_src
  ///   backward weights: src, diff_dst, diff_wei
  /// `bias` is read by forward kernels with a bias only and must then be
  /// non-null.
  /// An operand is bf16 where the entry's `src_type`, `diff_dst_type`,
  /// `wei_type` or `dst_type` says so, else f32.
  void run(dnnl::stream &stream, const void *in0, const void *in1,
           const float *bias, void *out);
  std::string describe() const override;

private:
  /// Writes 0 to the dead taps of the dense weight gradient at
  /// `weightGradient`.
  void zeroDeadTaps(char *weightGradient) const;

  bool hasBias_ = false;
  Operand in0_, in1_, out_;
  /// oneDNN argument ids of in0_, in1_ and out_.
  int in0Arg_ = 0, in1Arg_ = 0, outArg_ = 0;
  LayoutCache *cache_ = nullptr;
  /// Weights (forward and backward data, staged): the plain and blocked
  /// layouts the cache is asked for.
  bool cacheWeights_ = false;
  /// Accumulated weight gradient (backward weights): its plain and blocked
  /// layouts, for the cache's partial sums.
  bool deferGradient_ = false;
  dnnl::memory::desc plainLayout_, blockedLayout_;
  dnnl::memory bias_;
  std::optional<Step> conv_;
  std::string impl_;
  bool blocked_ = false;
  bool bf16_ = false;
  /// The live taps, [begin, end) per spatial dimension (rows, columns), and
  /// the kernel's full extent; the primitive's weights start
  /// `weightsOffset_` bytes into the caller's.
  std::array<int64_t, 2> tapBegin_{}, tapEnd_{}, taps_{};
  size_t weightsOffset_ = 0;
  /// An overwritten weight gradient with dead taps: they are zeroed after
  /// the primitive has written the live ones. Rows of taps_[0] x taps_[1]
  /// elements of `zeroElementBytes_` each, `zeroRows_` of them.
  bool zeroDeadTaps_ = false;
  int64_t zeroRows_ = 0;
  size_t zeroElementBytes_ = 0;
  /// Some operand is stored in bf16 (`src_type`, `diff_dst_type`,
  /// `wei_type`, `dst_type`).
  bool stored_ = false;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_CONVOLUTION_H

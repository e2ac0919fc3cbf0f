//===- Bf16Rule.h - Which kernels multiply in bf16 ---------------*- C++
//-*-===//
//
// With precision=bf16 the matmuls and convolutions multiply in bf16, but
// for matmuls with a short reduction and one kind of convolution:
// cleave-store-bf16 and cleave-lower-runtime-calls ask multipliesInBf16, so
// that a kernel left in f32 is neither given bf16 operands nor marked bf16
// (docs/design/mixed-precision.md, "Which kernels").
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_PRECISION_BF16RULE_H
#define CLEAVE_COMPILER_CONVERSION_PRECISION_BF16RULE_H

#include "dialects/Runtime/IR/RtOps.h"

#include <cstdint>

namespace mlir::cleave {

/// Whether `k` is a convolution with a single input channel and no groups
/// (the first layer of a model of grayscale images, as LeNet's). oneDNN 2.6
/// has no JIT bf16 kernel for it and runs it through its GEMM-based
/// convolution, 2.5-4x slower than its f32 JIT one (LeNet's first layer at
/// micro-batch 32 on AMD Zen 5: forward 0.37 against 0.086 ms, backward
/// weights 0.51 against 0.20 ms): it stays f32. cuda keeps the rule for
/// now: the forward reduction is the window alone (KH x KW products), but
/// the weight gradient's is N x OH x OW, so bf16 may pay there on a GPU;
/// not measured.
inline bool isSingleChannelConvolution(rt::KernelOp k) {
  Value weights;
  switch (k.getKind()) {
  case rt::KernelKind::conv2d_fwd:
  case rt::KernelKind::conv2d_bwd_data:
    weights = k.getInputs()[1];
    break;
  case rt::KernelKind::conv2d_bwd_weights:
    weights = k.getOutputs()[0];
    break;
  default:
    return false;
  }
  ArrayRef<int64_t> shape = cast<ShapedType>(weights.getType()).getShape();
  auto groups = k.getConfig().getAs<IntegerAttr>("groups");
  return shape.size() == 4 && shape[1] == 1 && groups && groups.getInt() == 1;
}

/// The shortest reduction (K) of a matmul the pipelines multiply in bf16.
/// One with K <= 16 stays f32: each output element is then at most 16
/// products, so the kernel's time goes to writing its f32 output, which
/// bf16 does not shrink, and to oneDNN's bf16 blocking, which pairs K
/// elements and pads short ones, while its operands still cost a narrowing
/// each (a store in a loop, or a loop of its own). Measured on AMD Zen 5
/// (mixed-precision.md, "Which kernels"): the d-16 transformer block,
/// whose layers have K = 16 and whose attention has K = 8, went from 0.92x
/// its f32 speed to 0.99x at micro-batch 32 and from 0.94x to 1.01x at 256.
/// Small M or N alone (a last layer of 10 outputs) stays bf16: its operands
/// are narrowed anyway for their other matmuls or held in bf16, and keeping
/// it f32 would hold them in f32 too (the MLP's held activations at
/// micro-batch 32: 306 KiB instead of 178).
constexpr int64_t kMinBf16MatmulK = 17;

/// A matmul kernel's per-matrix reduction length K.
inline int64_t matmulK(rt::KernelOp k) {
  ArrayRef<int64_t> a = cast<ShapedType>(k.getInputs()[0].getType()).getShape();
  return k.getFlag("trans_a") ? a[a.size() - 2] : a.back();
}

/// Whether `k` multiplies in bf16 under precision=bf16: every matmul whose
/// K is at least `minMatmulK` (the pipelines pass kMinBf16MatmulK; 0 makes
/// every matmul bf16), and every convolution unless `convolutions` is false,
/// but a single-channel one. (On cuda cleave-store-bf16 also leaves f32 a
/// convolution whose operands cannot all be stored in bf16, and
/// cleave-lower-runtime-calls follows its result's type.) Pooling never: it
/// only compares and averages.
inline bool multipliesInBf16(rt::KernelOp k, bool convolutions,
                             int64_t minMatmulK) {
  switch (k.getKind()) {
  case rt::KernelKind::matmul:
    return matmulK(k) >= minMatmulK;
  case rt::KernelKind::conv2d_fwd:
  case rt::KernelKind::conv2d_bwd_data:
  case rt::KernelKind::conv2d_bwd_weights:
    return convolutions && !isSingleChannelConvolution(k);
  case rt::KernelKind::sdpa_fwd:
  case rt::KernelKind::sdpa_bwd:
    // Made only where cuDNN's fused attention runs it, in bf16 alone.
    return true;
  default:
    return false;
  }
}

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_PRECISION_BF16RULE_H

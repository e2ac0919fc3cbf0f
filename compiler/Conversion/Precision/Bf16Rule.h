//===- Bf16Rule.h - Which kernels multiply in bf16 ---------------*- C++
//-*-===//
//
// With precision=bf16 every matmul and convolution multiplies in bf16, but
// one kind of convolution: cleave-store-bf16 and cleave-lower-runtime-calls
// ask multipliesInBf16, so that a kernel left in f32 is neither given bf16
// operands nor marked bf16 (docs/design/mixed-precision.md).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_PRECISION_BF16RULE_H
#define CLEAVE_COMPILER_CONVERSION_PRECISION_BF16RULE_H

#include "dialects/Runtime/IR/RtOps.h"

namespace mlir::cleave {

/// Whether `k` is a convolution with a single input channel and no groups
/// (the first layer of a model of grayscale images, as LeNet's). oneDNN 2.6
/// has no JIT bf16 kernel for it and runs it through its GEMM-based
/// convolution, 2.5-4x slower than its f32 JIT one (LeNet's first layer at
/// micro-batch 32 on AMD Zen 5: forward 0.37 against 0.086 ms, backward
/// weights 0.51 against 0.20 ms): it stays f32.
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

/// Whether `k` multiplies in bf16 under precision=bf16: every matmul, and
/// every convolution where the target multiplies them in bf16
/// (`convolutions`; cuDNN does not on f32 buffers) but a single-channel one.
/// Pooling never: it only compares and averages.
inline bool multipliesInBf16(rt::KernelOp k, bool convolutions) {
  switch (k.getKind()) {
  case rt::KernelKind::matmul:
    return true;
  case rt::KernelKind::conv2d_fwd:
  case rt::KernelKind::conv2d_bwd_data:
  case rt::KernelKind::conv2d_bwd_weights:
    return convolutions && !isSingleChannelConvolution(k);
  default:
    return false;
  }
}

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_PRECISION_BF16RULE_H

//===- Bf16Target.h - Whether the target converts bf16 natively -*- C++ -*-===//
//
// Shared by the CpuLoops passes that treat bf16 conversions differently on
// a target with AVX512-BF16 (VCVTNEPS2BF16).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_CPULOOPS_BF16TARGET_H
#define CLEAVE_COMPILER_CONVERSION_CPULOOPS_BF16TARGET_H

namespace mlir {
class Operation;
namespace cleave {

/// Whether the target that cleave-write-manifest recorded on the module
/// around `op` (`rt.target`) has AVX512-BF16; no record: it is not known to.
bool targetConvertsBf16Natively(Operation *op);

} // namespace cleave
} // namespace mlir

#endif // CLEAVE_COMPILER_CONVERSION_CPULOOPS_BF16TARGET_H

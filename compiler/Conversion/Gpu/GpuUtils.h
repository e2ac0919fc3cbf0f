//===- GpuUtils.h - What host code of a cuda artifact may touch -*- C++ -*-===//
//
// Shared by the GPU loop mapping, the host-access verifier and the constant
// passes, so that what one leaves on the host is exactly what the other
// accepts.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_GPU_GPUUTILS_H
#define CLEAVE_COMPILER_CONVERSION_GPU_GPUUTILS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Operation.h"

namespace mlir::cleave {

/// The buffer `value` is a view of (through any number of views), or
/// `value` itself.
Value viewRoot(Value value);

/// Whether `get` reads a `constant` global: one the kernels may each hold a
/// copy of, since nothing writes it.
bool readsConstantGlobal(memref::GetGlobalOp get);

/// The `memref.get_global` of a constant that `value` is, or is a view of;
/// null if none.
memref::GetGlobalOp constantGlobalSource(Value value);

/// Whether `value` is (a view of) a host stack array (`memref.alloca`): the
/// arrays of pointers and sizes the collectives take are host memory.
bool isHostStackMemory(Value value);

/// Whether `op` itself (not counting nested ops) reads, writes, allocates
/// or frees memory other than the host stack. An effect on an unknown value
/// counts.
bool touchesDeviceMemory(Operation *op);

/// Whether `op` or an op nested in it does.
bool touchesDeviceMemoryRecursively(Operation *op);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_GPU_GPUUTILS_H

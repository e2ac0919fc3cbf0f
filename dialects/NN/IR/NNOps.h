//===- NNOps.h - nn dialect ops ---------------------------------*- C++ -*-===//
//
// Declares the nn ops and the shape helpers their verifiers and VJPs share.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_IR_NNOPS_H
#define CLEAVE_NN_IR_NNOPS_H

#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/Interfaces/DifferentiableOpInterface.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::cleave::nn {
/// NNOps.td's NN_Elementwise: each result element from the operand elements
/// at the same position after numpy broadcasting. A marker: no verifier (the
/// ops' own shape inference checks the broadcast).
template <typename ConcreteType>
class Elementwise : public OpTrait::TraitBase<ConcreteType, Elementwise> {};
} // namespace mlir::cleave::nn

#define GET_OP_CLASSES
#include "dialects/NN/IR/NNOps.h.inc"

namespace mlir::cleave::nn {

/// Numpy broadcast of two shapes; dynamic dimensions stay dynamic unless the
/// other side fixes them. Fails (with a message in `why`) when they conflict.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs,
                                                std::string *why = nullptr);

/// Normalises a possibly negative axis for a tensor of rank `rank`.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Whether `perm` swaps the last two dimensions and keeps the others.
bool swapsLastTwo(ArrayRef<int64_t> perm);

/// nn.attention's result shape for query, key and value of these types (the
/// query's leading dimensions, then [T, Dv]), or failure, with a diagnostic
/// at `loc` if given.
FailureOr<SmallVector<int64_t>>
attentionResultShape(std::optional<Location> loc, RankedTensorType query,
                     RankedTensorType key, RankedTensorType value);

/// nn.attention's rules for a mask of type `mask` added to scores of
/// `scores` and `elementType`: the same element type, a broadcast that
/// neither enlarges the scores nor fixes a dimension they leave dynamic.
/// `emitError` (may be null: no diagnostic) reports the first violation.
LogicalResult verifyAttentionMask(ArrayRef<int64_t> scores, Type elementType,
                                  RankedTensorType mask,
                                  function_ref<InFlightDiagnostic()> emitError);

/// Output size of a convolution or pooling window along one axis.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

} // namespace mlir::cleave::nn

#endif // CLEAVE_NN_IR_NNOPS_H

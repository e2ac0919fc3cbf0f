//===- Kernels.h - Interpreter kernel plumbing (internal) -------*- C++ -*-===//
//
// What the kernel files share: the frame a kernel reads its operands from
// and writes its results to, the kernel table, and small index helpers.
// Not installed; only the interpreter's own sources include it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_INTERPRETER_KERNELS_H
#define CLEAVE_COMPILER_INTERPRETER_KERNELS_H

#include "compiler/Interpreter/Interpreter.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace mlir::cleave::interp::kernels {

/// The values computed so far in one function invocation, and the state.
class Frame {
public:
  Frame(State &state, const InterpretOptions &options)
      : state(state), options(options) {}

  /// The value of `v`; the driver guarantees operands are computed before
  /// their users run.
  const Tensor &get(Value v) const {
    auto it = values.find(v);
    assert(it != values.end() && "operand used before it was computed");
    return it->second;
  }
  void set(Value v, Tensor t) { values.insert_or_assign(v, std::move(t)); }
  bool has(Value v) const { return values.count(v); }

  State &getState() { return state; }

  /// The elements of `t`, an operand `op` multiplies, as the products see
  /// them: rounded to bf16 where the options say `op` multiplies in bf16.
  std::vector<double> multiplied(Operation *op, const Tensor &t) const;

  /// Whether the products of `op` take bf16-rounded operands.
  bool roundsOperandsToBf16(Operation *op) const {
    return options.roundsOperandsToBf16 && options.roundsOperandsToBf16(op);
  }

  /// `sums`, the sums of `op`'s products, as `op` stores them: rounded to
  /// f32 and then to bf16 where the options say its result is bf16.
  void storeResult(Operation *op, std::vector<double> &sums) const;

private:
  State &state;
  const InterpretOptions &options;
  llvm::DenseMap<Value, Tensor> values;
};

/// A kernel reads `op`'s operands from the frame and sets all its results;
/// on a run-time error it emits a diagnostic at `op` and fails.
using Kernel = LogicalResult (*)(Operation *op, Frame &frame);

/// Kernels by op TypeID.
class KernelTable {
public:
  /// Registers `Fn` for ops of class `OpTy`.
  template <typename OpTy, LogicalResult (*Fn)(OpTy, Frame &)> void add() {
    kernels[TypeID::get<OpTy>()] = [](Operation *op, Frame &frame) {
      return Fn(llvm::cast<OpTy>(op), frame);
    };
  }
  Kernel lookup(TypeID id) const { return kernels.lookup(id); }

private:
  llvm::DenseMap<TypeID, Kernel> kernels;
};

void registerNNKernels(KernelTable &table);
void registerConvPoolKernels(KernelTable &table);
/// nn.gather, nn.gather_elements and their gradients.
void registerGatherKernels(KernelTable &table);
void registerTrainKernels(KernelTable &table);

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Calls `fn(T{})` with T = float or double according to a float dtype.
template <typename Fn> decltype(auto) dispatchFloat(DType dtype, Fn &&fn) {
  assert(isFloat(dtype) && "expected a floating-point dtype");
  if (dtype == DType::f32)
    return fn(float{});
  return fn(double{});
}

/// Product of `shape`.
int64_t numElementsOf(ArrayRef<int64_t> shape);

/// Calls `fn(index, linear)` for every multi-index of `shape` in row-major
/// order.
template <typename Fn> void forEachIndex(ArrayRef<int64_t> shape, Fn &&fn) {
  int64_t n = numElementsOf(shape);
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(ArrayRef<int64_t>(idx), linear);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// Strides to read an operand of shape `in` broadcast (numpy rules) to
/// `out`: broadcast dimensions get stride 0. `in` must broadcast to `out`.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> out);

/// Dot product of a multi-index with strides.
inline int64_t offsetOf(ArrayRef<int64_t> idx, ArrayRef<int64_t> strides) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    off += idx[i] * strides[i];
  return off;
}

/// "[2, 3]".
std::string shapeToString(ArrayRef<int64_t> shape);

} // namespace mlir::cleave::interp::kernels

#endif // CLEAVE_COMPILER_INTERPRETER_KERNELS_H

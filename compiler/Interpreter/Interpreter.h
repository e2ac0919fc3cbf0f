//===- Interpreter.h - Reference interpreter for nn and train --*- C++ -*-===//
//
// A naive, loop-based interpreter of the nn and train dialects: the oracle
// that numerical tests compare compiled code and the passes against.
//
//===----------------------------------------------------------------------===//
//
// Semantics follow the op descriptions in NNOps.td and TrainOps.td exactly;
// clarity beats speed everywhere. Two precision rules apply:
//
// - Elementwise ops (arithmetic, activations and their gradients, dropout,
//   the optimizer updates, clipping's scaling) run in the tensor's element
//   type: f64 tensors in double, f32 tensors in float.
// - Every kernel that sums (reductions, matmul, linear, convolution and its
//   gradients, pooling, softmax, the losses, normalisation, the global norm)
//   accumulates in double for both element types and rounds each result
//   once to the element type. For f64 that is the natural precision; for
//   f32 it makes the reference at least as accurate as any backend, so a
//   comparison measures the backend's error, not the reference's.
//
// Where the op descriptions leave a choice, the interpreter follows PyTorch:
// relu' and leaky_relu' take the negative branch at exactly 0.
//
// Errors the IR cannot rule out statically (an index or label out of range,
// an unsupported op, a global that does not exist) are reported with
// `emitError` at the op; the interpreter never aborts on its input.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_INTERPRETER_INTERPRETER_H
#define CLEAVE_COMPILER_INTERPRETER_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlir::cleave::interp {

/// The element types the interpreter stores.
enum class DType { f32, f64, i32, i64 };

/// The DType of an MLIR element type, if the interpreter supports it.
std::optional<DType> getDType(Type elementType);

/// The MLIR element type of a DType.
Type getMLIRType(MLIRContext *ctx, DType dtype);

/// Printable name ("f32", ...).
StringRef stringifyDType(DType dtype);

inline bool isFloat(DType d) { return d == DType::f32 || d == DType::f64; }

/// A dense, row-major tensor value with its own storage (value semantics:
/// copies are deep).
class Tensor {
public:
  /// A rank-0 f64 zero; mainly so containers can default-construct.
  Tensor() : Tensor(DType::f64, {}) {}
  /// A zero-filled tensor.
  Tensor(DType dtype, ArrayRef<int64_t> shape);

  /// A tensor holding `values`, converted to `dtype` (one per element).
  static Tensor fromDoubles(DType dtype, ArrayRef<int64_t> shape,
                            ArrayRef<double> values);
  static Tensor fromInts(DType dtype, ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> values);
  /// A rank-0 tensor.
  static Tensor scalar(DType dtype, double value);
  /// A tensor of `shape` whose every element is `value`.
  static Tensor splat(DType dtype, ArrayRef<int64_t> shape, double value);

  DType getDType() const { return dtype; }
  ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return shape.size(); }
  int64_t getNumElements() const;
  /// Row-major strides in elements.
  SmallVector<int64_t> getStrides() const;

  /// Typed access; `T` must be the dtype's C++ type (a mismatch aborts).
  template <typename T> ArrayRef<T> data() const {
    const auto &v = std::get<std::vector<T>>(storage);
    return ArrayRef<T>(v.data(), v.size());
  }
  template <typename T> MutableArrayRef<T> data() {
    auto &v = std::get<std::vector<T>>(storage);
    return MutableArrayRef<T>(v.data(), v.size());
  }

  /// Element `i` (row-major linear index) converted to double / int64.
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Stores `value` converted to the dtype.
  void setDouble(int64_t i, double value);
  void setInt(int64_t i, int64_t value);
  /// Element `i` of this tensor becomes element `j` of `from`, which has
  /// the same dtype: exact for every dtype (an int64 through double is not).
  void copyElement(int64_t i, const Tensor &from, int64_t j);

  /// All elements converted to double.
  std::vector<double> toDoubles() const;

  /// Whether the tensor fits `type`: same element type, same rank and equal
  /// static dimensions (dynamic ones match anything).
  bool matches(ShapedType type) const;

  /// A printable description like "tensor<2x3xf64>".
  std::string describe() const;

  bool operator==(const Tensor &other) const {
    return dtype == other.dtype && shape == other.shape &&
           storage == other.storage;
  }

private:
  using Storage = std::variant<std::vector<float>, std::vector<double>,
                               std::vector<int32_t>, std::vector<int64_t>>;
  DType dtype;
  SmallVector<int64_t> shape;
  Storage storage;
};

/// The persistent state a training step reads and writes: the value of
/// every `train.global`, by symbol name.
class State {
public:
  /// Creates one entry per `train.global` of `module`. An elements
  /// `initial_value` and the deterministic initialisers (`zeros`, `ones`,
  /// `constant`) give exact values; every other global starts at zero.
  /// Random initialisers are drawn by the runtime's generator, which the
  /// interpreter does not reproduce: callers set those values explicitly.
  static FailureOr<State> fromModule(ModuleOp module);

  bool contains(StringRef name) const { return values.count(name); }
  /// The value of `name`, or null if there is no such global.
  const Tensor *lookup(StringRef name) const;
  Tensor *lookup(StringRef name);
  /// Sets (or creates) `name`.
  void set(StringRef name, Tensor value);

  /// The global names in sorted order (deterministic iteration).
  std::vector<std::string> getNames() const;

private:
  llvm::StringMap<Tensor> values;
};

/// How `interpret` computes beyond the ops' own semantics.
struct InterpretOptions {
  /// Emulates a back end that multiplies in bf16: for each nn.matmul,
  /// nn.linear, nn.conv2d, nn.conv2d_grad_input, nn.conv2d_grad_weight,
  /// nn.fused_attention and nn.fused_attention_grad (every operand but the
  /// log-sum-exp) this returns true for, the multiplied operands are
  /// rounded to bf16
  /// (nearest even) before the products, which are then summed in double as
  /// always; a bias is not rounded. The bf16 products of f32 sums are exact
  /// in f32, so a back end that rounds the same operands differs from this
  /// by its f32 summation alone (mixed-precision.md).
  std::function<bool(Operation *)> roundsOperandsToBf16;
  /// Emulates convolutions and fused attention that write their results
  /// in bf16 (cuda's, on cuDNN's bf16 tensors): for each nn.conv2d,
  /// nn.conv2d_grad_input, nn.conv2d_grad_weight, nn.fused_attention (its
  /// result, not the log-sum-exp) and nn.fused_attention_grad this returns
  /// true for, the result is rounded to f32 and then to bf16 (nearest
  /// even), a convolution's before the bias is added.
  std::function<bool(Operation *)> roundsResultsToBf16;
};

/// Runs `func` (a single block of supported ops ending in `func.return`) on
/// `args`, reading and updating `state`. Returns the values `func.return`
/// returns, or failure after emitting a diagnostic at the offending op.
FailureOr<SmallVector<Tensor>> interpret(func::FuncOp func,
                                         ArrayRef<Tensor> args, State &state,
                                         const InterpretOptions &options = {});

/// Whether the interpreter has a kernel for operations named `name`.
bool isSupported(OperationName name);

} // namespace mlir::cleave::interp

#endif // CLEAVE_COMPILER_INTERPRETER_INTERPRETER_H

//===- Internal.h - The tracer's recording machinery ------------*- C++ -*-===//
//
// What a cleave::Tensor points to, the nodes of the pending trace, and the
// process-wide tracer state (the generator, the no-grad depth, the list of
// tensors with pending values, the compiled-graph cache and the counters).
// docs/design/tracing.md describes the model.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRACE_INTERNAL_H
#define CLEAVE_TRACE_INTERNAL_H

#include "cleave/trace.h"

#include "compiler/Frontend/Trace/TraceGraph.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cleave::detail {

namespace tg = mlir::cleave::trace;

/// Throws cleave::Error(code, message).
[[noreturn]] void fail(cleave_status code, const std::string &message);

/// 64-byte aligned, zero-initialised host memory (the ABI's alignment), at
/// least one alignment unit so that empty tensors have a valid pointer.
class Storage {
public:
  static std::shared_ptr<Storage> allocate(size_t bytes);
  ~Storage();
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;

  unsigned char *data() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  Storage(unsigned char *data, size_t bytes) : data_(data), bytes_(bytes) {}
  unsigned char *data_;
  size_t bytes_;
};

size_t dtypeSize(DType dtype);
tg::ElementType elementType(DType dtype);

/// A tensor type at trace time: the real batch size is in shape[0].
struct Type {
  DType dtype = DType::F32;
  Shape shape;
  bool batched = false;

  int64_t numel() const;
  size_t bytes() const { return size_t(numel()) * dtypeSize(dtype); }
  /// The canonical form, the batch abstracted.
  tg::TensorType canonical() const;
};

/// What a materialised tensor is to a graph.
enum class Role : uint8_t { Value, Parameter, Gradient, State };

struct TensorImpl;

/// A node of the pending trace. Leaves (OpKind::Argument) read materialised
/// storage or carry a hyperparameter value; every other node computes its
/// results from its operands.
struct Node {
  struct Use {
    std::shared_ptr<Node> node;
    uint32_t result = 0;
  };

  tg::OpKind kind = tg::OpKind::Constant;
  /// Creation order, which is a topological order.
  uint64_t id = 0;
  std::vector<Use> operands;
  std::vector<Type> results;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool differentiable = false;

  // Leaves only.
  tg::ArgumentKind leafKind = tg::ArgumentKind::Data;
  /// The storage read (null for a hyperparameter leaf).
  std::shared_ptr<Storage> storage;
  /// Gradient and state leaves: their parameter's storage.
  std::shared_ptr<Storage> ofStorage;
  /// The tensor the leaf was read from (backward() finds parameters here).
  std::weak_ptr<TensorImpl> source;
  /// Hyperparameter leaves: the value.
  double hyper = 0.0;
};

/// What a Tensor handle points to.
struct TensorImpl {
  Type type;
  Role role = Role::Value;
  /// The materialised value; null for a value that was never computed.
  std::shared_ptr<Storage> storage;
  /// The current value while pending (node null when materialised). A
  /// parameter, gradient or state tensor is pending between an update and
  /// the mark_step that writes it back into `storage`.
  Node::Use pending;
  /// Parameters: gradients flow into them.
  bool requiresGrad = false;
  /// Parameters: the gradient accumulator, created by the first backward.
  std::shared_ptr<TensorImpl> grad;
  /// Gradients and optimizer state: the parameter's storage.
  std::shared_ptr<Storage> ofStorage;
  /// The leaf that reads `storage` in the current trace.
  std::shared_ptr<Node> leaf;

  bool isPending() const { return pending.node != nullptr; }
};

/// The generator of docs/design/runtime.md: std::mt19937_64, whose sequence
/// the standard fixes, and uniform01 = (engine() >> 11) * 2^-53.
class Generator {
public:
  explicit Generator(uint64_t seed = 0) : engine_(seed) {}
  double uniform01() {
    ++draws_;
    return double(engine_() >> 11) * 0x1.0p-53;
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  /// Values drawn since seeding: a position in the stream.
  uint64_t draws() const { return draws_; }

private:
  std::mt19937_64 engine_;
  uint64_t draws_ = 0;
};

class Cache;

/// Process-wide tracer state. Single-threaded by contract.
class Tracer {
public:
  static Tracer &get();
  ~Tracer();

  uint64_t nextNodeId() { return nextNodeId_++; }
  bool gradEnabled() const { return noGradDepth_ == 0; }
  void pushNoGrad() { ++noGradDepth_; }
  void popNoGrad() { --noGradDepth_; }
  Generator &generator() { return generator_; }
  void seed(uint64_t seed) { generator_ = Generator(seed); }

  /// Remembers that `impl` has a pending value, for the next mark_step.
  void notePending(const std::shared_ptr<TensorImpl> &impl);

  /// mark_step(): cuts and runs everything live and pending.
  void markStep();
  /// Computes `impl`'s pending value alone (item(), toFloatVector()). A
  /// plain value becomes materialised; a parameter, gradient or state
  /// tensor keeps its pending update (only a full mark_step writes state
  /// back), and the computed values are returned in `out`.
  void computeNow(const std::shared_ptr<TensorImpl> &impl,
                  std::shared_ptr<Storage> &out);
  /// The IR mark_step would compile now.
  std::string pendingIR();

  /// The GradAccumulator that exists, if any. While one does, backward()
  /// weights each gradient by the number of samples of its loss's batch and
  /// notes that number in `backwardBatches`, which the accumulator's step()
  /// consumes.
  const GradAccumulator *accumulator = nullptr;
  std::vector<int64_t> backwardBatches;

  trace::Stats &stats() { return stats_; }
  trace::Options &options() { return options_; }
  Cache &cache() { return *cache_; }

private:
  Tracer();
  /// Cuts the graph `roots` need. With `writeBack`, state roots are updated
  /// in place and plain roots materialised; otherwise every root is computed
  /// into a fresh buffer returned in `fresh` (one per root).
  void cut(const std::vector<std::shared_ptr<TensorImpl>> &roots,
           bool writeBack, std::vector<std::shared_ptr<Storage>> *fresh);
  std::vector<std::shared_ptr<TensorImpl>> livePending();

  uint64_t nextNodeId_ = 1;
  int noGradDepth_ = 0;
  Generator generator_;
  std::vector<std::weak_ptr<TensorImpl>> pending_;
  /// pending_'s size after it was last pruned.
  size_t prunedSize_ = 0;
  trace::Stats stats_;
  trace::Options options_;
  std::unique_ptr<Cache> cache_;
};

//===----------------------------------------------------------------------===//
// Recording helpers (Tensor.cpp)
//===----------------------------------------------------------------------===//

/// The value of `impl` as an operand: its pending node, or a leaf reading
/// its storage.
Node::Use valueOf(const std::shared_ptr<TensorImpl> &impl);

/// Records a node of `kind` on `operands`. `differentiableOp` is false for
/// ops gradients never flow through.
std::shared_ptr<Node>
recordNode(tg::OpKind kind, const std::vector<Node::Use> &operands,
           std::vector<Type> results, std::vector<int64_t> ints,
           std::vector<double> floats, bool differentiableOp);

/// Records a node of `kind` on `operands` and returns one tensor per result.
/// `differentiableOp` is false for ops gradients never flow through.
std::vector<Tensor>
record(tg::OpKind kind, const std::vector<Node::Use> &operands,
       std::vector<Type> results, std::vector<int64_t> ints = {},
       std::vector<double> floats = {}, bool differentiableOp = true);

/// A leaf carrying a scalar hyperparameter (f32) or step count (i64).
Node::Use hyperLeaf(double value, DType dtype);

/// A materialised tensor of `type` (zeros) with `role`.
std::shared_ptr<TensorImpl> makeMaterialized(const Type &type, Role role);

/// Gives a state tensor (parameter, gradient, optimizer state) a new pending
/// value: an in-place update recorded in the trace.
void assign(const std::shared_ptr<TensorImpl> &target, Node::Use value);

} // namespace cleave::detail

#endif // CLEAVE_TRACE_INTERNAL_H

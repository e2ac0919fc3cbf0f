//===- Rematerialize.cpp - Recompute held activations in the backward pass ===//
//
// The micro-step holds every forward value the backward pass reads from the
// end of the forward pass to its last use. This pass trades some of those
// bytes for recomputation: a held value is recomputed right before its first
// backward use from values that stay held anyway, and the original dies at
// its last forward use (docs/design/memory.md, "Rematerialisation").
//
// It runs on tensors after the last CSE, so that nothing merges a clone back
// into its original, and after elementwise fusion, so that a candidate's
// chain is made of the loop nests and library calls the step really runs.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Abi/EntryAbi.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEREMATERIALIZE
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// What recomputing an op costs, cheapest first (docs/design/memory.md).
enum class Cost {
  /// Views, fills and loop nests without reductions: one more pass over
  /// memory.
  LoopNest = 0,
  /// Loop nests with reductions (normalisation statistics, softmax).
  Reduction = 1,
  /// Pooling kernels.
  Pooling = 2,
  /// GEMMs and convolutions: recomputed only when nothing else fits.
  Contraction = 3,
};

bool isView(Operation *op) {
  return isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
             tensor::ExtractSliceOp, tensor::CastOp>(op);
}

/// Values any op may read without holding anything: constants, empty
/// tensors, and the entry's buffers (inputs, parameters, state).
bool isFreeLeaf(Operation *op) {
  return isa<tensor::EmptyOp, bufferization::ToTensorOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>();
}

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  Type e = t.getElementType();
  int64_t elementBytes =
      e.isIntOrFloat()
          ? std::max<int64_t>(1, (e.getIntOrFloatBitWidth() + 7) / 8)
          : 8;
  return t.getNumElements() * elementBytes;
}

Cost costClass(Operation *op) {
  if (auto kernel = dyn_cast<rt::KernelOp>(op)) {
    switch (kernel.getKind()) {
    case rt::KernelKind::max_pool2d_fwd:
    case rt::KernelKind::avg_pool2d_fwd:
      return Cost::Pooling;
    default:
      return Cost::Contraction;
    }
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalgOp.getNumReductionLoops() == 0 ? Cost::LoopNest
                                                : Cost::Reduction;
  return Cost::LoopNest;
}

/// Floating-point operations (or loop iterations) of one run of `op`: the
/// cost model's measure of recomputation.
double flops(Operation *op) {
  if (auto kernel = dyn_cast<rt::KernelOp>(op)) {
    auto out = cast<ShapedType>(kernel.getOutputs()[0].getType());
    double elements = out.getNumElements();
    auto in = [&](unsigned i) {
      return cast<ShapedType>(kernel.getInputs()[i].getType());
    };
    switch (kernel.getKind()) {
    case rt::KernelKind::matmul: {
      ShapedType a = in(0);
      int64_t rank = a.getRank();
      return 2 * elements *
             a.getDimSize(kernel.getFlag("trans_a") ? rank - 2 : rank - 1);
    }
    case rt::KernelKind::conv2d_fwd: {
      ShapedType w = in(1);
      return 2 * elements * w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
    }
    case rt::KernelKind::sdpa_fwd: {
      // q k^T and P v: 2 T S (D + Dv) per slice; `elements` is B T Dv.
      ShapedType q = in(0), k = in(1);
      return 2 * elements * k.getDimSize(1) *
             (1 + double(q.getDimSize(2)) / out.getDimSize(2));
    }
    case rt::KernelKind::max_pool2d_fwd:
    case rt::KernelKind::avg_pool2d_fwd: {
      double window = 1;
      for (int64_t k : kernel.getInts("kernel"))
        window *= k;
      return elements * window;
    }
    default:
      return elements;
    }
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    double iterations = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges())
      if (!ShapedType::isDynamic(range))
        iterations *= range;
    return iterations;
  }
  return 0;
}

/// The ops that recompute some held values, in their original order.
struct Chain {
  SmallVector<Operation *> ops;
  Cost cost = Cost::LoopNest;
  double flops = 0;
  /// Library calls (GEMMs, convolutions, pooling) among the ops.
  int64_t calls = 0;
  /// Memory the recomputing kernels add: the CPU runtime keeps a copy of a
  /// convolution's weight (and, in bf16, of a GEMM's) per kernel call.
  int64_t weightCopies = 0;
};

/// A held buffer: a forward value the backward pass reads, with the views
/// of it that the backward pass reads.
struct Group {
  Value root;
  SmallVector<Value> members;
  int64_t bytes = 0;
  /// Some member is an entry output, written where the runtime reads it.
  bool pinned = false;
};

/// What the runtime allocates per kernel call (docs/design/memory.md).
struct WeightCopies {
  bool conv = false, bf16Gemm = false;
};

class Rematerializer {
public:
  Rematerializer(func::FuncOp f, Value loss, WeightCopies copies)
      : body(f.getBody().front()), copies(copies) {
    int64_t i = 0;
    for (Operation &op : body)
      position[&op] = i++;
    findForward(loss);
    findHeld(loss);
  }

  /// Takes candidates by the cost model until the held estimate fits
  /// `target` (none: every loop-nest candidate), then rewrites. Returns the
  /// function's summary.
  DictionaryAttr run(std::optional<double> target, double targetFraction,
                     Builder &b);

private:
  void findForward(Value loss);
  void findHeld(Value loss);
  bool isBackwardUse(OpOperand &use) const {
    Operation *top = body.findAncestorOpInBlock(*use.getOwner());
    return top && !forward.contains(top);
  }
  Value rootOf(Value v) const {
    while (Operation *def = v.getDefiningOp()) {
      if (!isView(def) || !forward.contains(def))
        break;
      v = def->getOperand(0);
    }
    return v;
  }
  bool available(Value v) const;
  std::optional<Chain> chainFor(const Group &g) const;
  void apply(const Group &g, const Chain &chain);

  void add(Chain &chain, Operation *op) const;

  Block &body;
  WeightCopies copies;
  DenseMap<Operation *, int64_t> position;
  /// The top-level ops the loss depends on.
  DenseSet<Operation *> forward;
  /// Held values (forward values with a backward use) by their group.
  DenseMap<Value, Value> heldRoot;
  llvm::MapVector<Value, Group> groups;
  DenseSet<Value> accepted;
};

void Rematerializer::findForward(Value loss) {
  SmallVector<Value> worklist = {loss};
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !forward.insert(def).second)
      continue;
    llvm::append_range(worklist, def->getOperands());
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(def->getRegions(), above);
    llvm::append_range(worklist, above);
  }
}

void Rematerializer::findHeld(Value loss) {
  for (Operation &op : body) {
    if (!forward.contains(&op) || isFreeLeaf(&op))
      continue;
    for (Value v : op.getResults()) {
      if (v == loss)
        continue;
      bool held = false, output = false;
      for (OpOperand &use : v.getUses()) {
        if (!isBackwardUse(use))
          continue;
        held = true;
        // An entry output is written where the runtime reads it.
        output |= isa<bufferization::MaterializeInDestinationOp>(
            body.findAncestorOpInBlock(*use.getOwner()));
      }
      if (!held)
        continue;
      Value root = rootOf(v);
      Operation *rootDef = root.getDefiningOp();
      // A view of an input or parameter holds no scratch bytes.
      if (!rootDef || !forward.contains(rootDef) || isFreeLeaf(rootDef))
        continue;
      heldRoot[v] = root;
      Group &g = groups[root];
      g.root = root;
      g.members.push_back(v);
      g.bytes = tensorBytes(root.getType());
      g.pinned |= output;
    }
  }
}

bool Rematerializer::available(Value v) const {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != &body || !forward.contains(def) ||
      isFreeLeaf(def))
    return true;
  auto it = heldRoot.find(v);
  return it != heldRoot.end() && !accepted.contains(it->second);
}

void Rematerializer::add(Chain &chain, Operation *op) const {
  chain.ops.push_back(op);
  chain.cost = std::max(chain.cost, costClass(op));
  chain.flops += flops(op);
  auto kernel = dyn_cast<rt::KernelOp>(op);
  if (!kernel)
    return;
  ++chain.calls;
  if (copies.conv && kernel.getKind() == rt::KernelKind::conv2d_fwd)
    chain.weightCopies += tensorBytes(kernel.getInputs()[1].getType());
  if (copies.bf16Gemm && kernel.getKind() == rt::KernelKind::matmul &&
      !kernel.getFlag("trans_a") &&
      cast<ShapedType>(kernel.getInputs()[1].getType()).getRank() == 2)
    chain.weightCopies += tensorBytes(kernel.getInputs()[1].getType()) / 2;
}

std::optional<Chain> Rematerializer::chainFor(const Group &g) const {
  Chain chain;
  DenseSet<Operation *> visited;
  // Depth-first over the values a member needs, stopping at available ones.
  std::function<bool(Value)> visit = [&](Value v) {
    if (available(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (!visited.insert(def).second)
      return true;
    if (!isMemoryEffectFree(def) || def->getNumResults() == 0)
      return false;
    for (Value operand : def->getOperands())
      if (!visit(operand))
        return false;
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(def->getRegions(), above);
    for (Value captured : above)
      if (!visit(captured))
        return false;
    add(chain, def);
    return true;
  };
  for (Value member : g.members) {
    // The members themselves are not available once their group is taken.
    Operation *def = member.getDefiningOp();
    if (visited.contains(def))
      continue;
    if (!isMemoryEffectFree(def))
      return std::nullopt;
    for (Value operand : def->getOperands())
      if (!visit(operand))
        return std::nullopt;
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(def->getRegions(), above);
    for (Value captured : above)
      if (!visit(captured))
        return std::nullopt;
    visited.insert(def);
    add(chain, def);
  }
  // At most one library call per chain: recomputing a value from the last
  // held values before it costs at most one more forward pass over all
  // candidates, where chains through several GEMMs would recompute early
  // layers once per later one.
  if (chain.calls > 1)
    return std::nullopt;
  llvm::sort(chain.ops, [&](Operation *a, Operation *b) {
    return position.lookup(a) < position.lookup(b);
  });
  return chain;
}

void Rematerializer::apply(const Group &g, const Chain &chain) {
  Operation *first = nullptr;
  for (Value member : g.members)
    for (OpOperand &use : member.getUses()) {
      if (!isBackwardUse(use))
        continue;
      Operation *top = body.findAncestorOpInBlock(*use.getOwner());
      if (!first || top->isBeforeInBlock(first))
        first = top;
    }
  OpBuilder builder(first);
  IRMapping mapping;
  for (Operation *op : chain.ops) {
    Operation *clone = builder.clone(*op, mapping);
    clone->setAttr("cleave.remat", builder.getUnitAttr());
  }
  for (Value member : g.members) {
    Value clone = mapping.lookup(member);
    member.replaceUsesWithIf(clone, [&](OpOperand &use) {
      Operation *top = body.findAncestorOpInBlock(*use.getOwner());
      return top && !forward.contains(top) && !top->hasAttr("cleave.remat");
    });
  }
}

DictionaryAttr Rematerializer::run(std::optional<double> target,
                                   double targetFraction, Builder &b) {
  int64_t before = 0;
  for (auto &[root, g] : groups)
    before += g.bytes;
  if (!target && targetFraction >= 0)
    target = targetFraction * before;
  // Drops the taken groups whose chains the latest choice broke (a chain
  // that now recomputes through a newly taken value and a second library
  // call) or made cost more than they save (a second copy of a weight), and
  // returns the held bytes of what remains. Dropping a group only makes its
  // values available to the other chains again.
  auto settle = [&]() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto &[root, g] : groups) {
        if (!accepted.contains(root))
          continue;
        std::optional<Chain> chain = chainFor(g);
        if (!chain || chain->weightCopies >= g.bytes) {
          accepted.erase(root);
          changed = true;
        }
      }
    }
    int64_t held = before;
    for (auto &[root, g] : groups)
      if (accepted.contains(root))
        held -= g.bytes - chainFor(g)->weightCopies;
    return held;
  };
  DenseSet<Value> rejected;
  int64_t held = before;
  while (!target || held > *target) {
    const Group *best = nullptr;
    std::pair<Cost, double> bestKey;
    for (auto &[root, g] : groups) {
      if (accepted.contains(root) || rejected.contains(root) || g.pinned ||
          g.bytes == 0)
        continue;
      std::optional<Chain> chain = chainFor(g);
      if (!chain || (!target && chain->cost != Cost::LoopNest))
        continue;
      int64_t saving = g.bytes - chain->weightCopies;
      if (saving <= 0)
        continue;
      std::pair<Cost, double> key = {chain->cost, chain->flops / saving};
      if (!best || key < bestKey) {
        best = &g;
        bestKey = key;
      }
    }
    if (!best)
      break;
    // Taken if the held bytes go down once the choice has settled.
    DenseSet<Value> previous = accepted;
    accepted.insert(best->root);
    int64_t now = settle();
    if (accepted.contains(best->root) && now < held) {
      held = now;
    } else {
      accepted = std::move(previous);
      rejected.insert(best->root);
    }
  }

  // Every chain is built against the final choice: a chain through a value
  // that is recomputed itself recomputes it as well.
  int64_t values = 0;
  double recomputed = 0;
  SmallVector<std::pair<const Group *, Chain>> plan;
  for (auto &[root, g] : groups) {
    if (!accepted.contains(root))
      continue;
    std::optional<Chain> chain = chainFor(g);
    if (!chain)
      continue;
    values += g.members.size();
    recomputed += chain->flops;
    plan.emplace_back(&g, std::move(*chain));
  }
  for (auto &[g, chain] : plan)
    apply(*g, chain);
  double forwardFlops = 0;
  for (Operation *op : forward)
    forwardFlops += flops(op);
  return b.getDictionaryAttr({
      b.getNamedAttr("values", b.getI64IntegerAttr(values)),
      b.getNamedAttr("forward_flops",
                     b.getI64IntegerAttr(int64_t(forwardFlops))),
      b.getNamedAttr("bytes", b.getI64IntegerAttr(before - held)),
      b.getNamedAttr("flops", b.getI64IntegerAttr(int64_t(recomputed))),
      b.getNamedAttr("before", b.getI64IntegerAttr(before)),
      b.getNamedAttr("after", b.getI64IntegerAttr(held)),
  });
}

/// The tensor the entry writes into its `loss` output, if it has one.
Value lossOf(func::FuncOp f) {
  if (BlockArgument loss = abiArgument(f, "output", "loss"))
    for (Operation *user : loss.getUsers())
      if (auto write =
              dyn_cast<bufferization::MaterializeInDestinationOp>(user))
        return write.getSource();
  return {};
}

struct RematerializePass
    : cleave::impl::CleaveRematerializeBase<RematerializePass> {
  using Base::Base;

  void runOnOperation() override {
    if (budget < -1 || (budgetFraction < 0 && budgetFraction != -1)) {
      getOperation().emitError("cleave-rematerialize: budget must be at least "
                               "0 bytes and budget-fraction at least 0");
      return signalPassFailure();
    }
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      auto entry =
          f->getAttrOfType<StringAttr>(train::TrainDialect::kEntryAttr);
      if (!entry || entry.getValue() != "micro_step" || f.isExternal())
        continue;
      Value loss = lossOf(f);
      if (!loss)
        continue;
      Builder b(f.getContext());
      std::optional<double> target;
      if (budget >= 0)
        target = budget;
      WeightCopies copies{convWeightCopies, bf16WeightCopies};
      DictionaryAttr summary =
          Rematerializer(f, loss, copies).run(target, budgetFraction, b);
      f->setAttr("cleave.remat", summary);
    }
  }
};

} // namespace

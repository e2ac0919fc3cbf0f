//===- PlanMemory.cpp - A static arena for every temporary buffer ---------===//
//
// After bufferization every activation, gradient and temporary of an entry
// point is a static memref.alloc. Packing them into one arena by liveness
// means a step allocates nothing and buffers whose lives do not overlap
// share memory (the activations of a micro-batch are reused by the backward
// pass's temporaries).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Abi/EntryAbi.h"
#include "compiler/Conversion/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <limits>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEPLANMEMORY
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

constexpr int64_t kAlignment = 64;

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // live range, in top-level op positions
  int64_t offset = -1;
};

int64_t alignTo(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

/// Storage size of one element once lowered to LLVM.
int64_t elementBytes(Type t) {
  if (t.isIndex())
    return 8;
  return std::max<int64_t>(1, (t.getIntOrFloatBitWidth() + 7) / 8);
}

/// The bytes of `buffers` live across the end of the forward pass, if the
/// entry has a `loss` output: the first top-level op that touches the
/// buffer holding the loss (the loss output, or the buffer copied into it)
/// computes the loss, and the backward pass starts after it from a constant
/// seed, never reading the loss back (docs/design/memory.md).
std::optional<int64_t>
heldAcrossLoss(func::FuncOp f, ArrayRef<Buffer> buffers,
               const llvm::DenseMap<Operation *, int64_t> &position) {
  Block &body = f.getBody().front();
  Value loss = abiArgument(f, "output", "loss");
  if (!loss)
    return std::nullopt;
  for (Operation *user : loss.getUsers())
    if (auto copy = dyn_cast<memref::CopyOp>(user);
        copy && copy.getTarget() == loss)
      loss = copy.getSource();
  while (Operation *def = loss.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    loss = view.getViewSource();
  }
  int64_t boundary = std::numeric_limits<int64_t>::max();
  SmallVector<Value> worklist = {loss};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v) {
        for (Value res : user->getResults())
          worklist.push_back(res);
        continue;
      }
      if (isa<memref::DeallocOp>(user))
        continue;
      if (Operation *top = body.findAncestorOpInBlock(*user))
        boundary = std::min(boundary, position.lookup(top));
    }
  }
  if (boundary == std::numeric_limits<int64_t>::max())
    return std::nullopt;
  int64_t bytes = 0;
  for (const Buffer &b : buffers)
    if (b.first < boundary && b.last > boundary)
      bytes += b.bytes;
  return bytes;
}

struct PlanMemoryPass : cleave::impl::CleavePlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr(rt::RtDialect::kAbiAttr) && failed(plan(f)))
        return signalPassFailure();
  }

  LogicalResult plan(func::FuncOp f) {
    Block &body = f.getBody().front();
    llvm::DenseMap<Operation *, int64_t> position;
    int64_t pos = 0;
    for (Operation &op : body)
      position[&op] = pos++;

    SmallVector<Buffer> buffers;
    WalkResult r = f.walk([&](memref::AllocOp alloc) {
      auto type = alloc.getType();
      if (alloc->getBlock() != &body || !type.hasStaticShape() ||
          !type.getLayout().isIdentity()) {
        alloc.emitOpError("is not a static top-level allocation; entry "
                          "points must not allocate dynamically");
        return WalkResult::interrupt();
      }
      Buffer buf;
      buf.alloc = alloc;
      buf.bytes = alignTo(type.getNumElements() *
                          elementBytes(type.getElementType()));
      buf.first = buf.last = position[alloc];
      // Follow view-like aliases to every use.
      SmallVector<Value> worklist = {alloc.getResult()};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          buf.last = std::max(buf.last, position[top]);
          if (auto view = dyn_cast<ViewLikeOpInterface>(user))
            if (view.getViewSource() == v)
              for (Value res : user->getResults())
                worklist.push_back(res);
        }
      }
      buffers.push_back(buf);
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return failure();

    // Greedy first fit, largest buffers first.
    SmallVector<Buffer *> order;
    for (Buffer &b : buffers)
      order.push_back(&b);
    llvm::stable_sort(order, [](Buffer *a, Buffer *b) {
      return a->bytes > b->bytes;
    });
    int64_t arena = 0;
    SmallVector<Buffer *> placed;
    for (Buffer *b : order) {
      SmallVector<std::pair<int64_t, int64_t>> busy;
      for (Buffer *p : placed)
        if (p->first <= b->last && b->first <= p->last)
          busy.push_back({p->offset, p->offset + p->bytes});
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [lo, hi] : busy) {
        if (offset + b->bytes <= lo)
          break;
        offset = std::max(offset, hi);
      }
      b->offset = offset;
      arena = std::max(arena, offset + b->bytes);
      placed.push_back(b);
    }

    // The activations a training step holds from its forward pass to its
    // backward pass: buffers live across the last write of the loss, which
    // ends the forward pass (the backward pass starts from a constant seed
    // and never reads the loss back). Reported, not planned differently
    // (docs/design/memory.md).
    std::optional<int64_t> held = heldAcrossLoss(f, buffers, position);

    // The arena becomes the last argument.
    MLIRContext *ctx = f.getContext();
    auto arenaType = MemRefType::get({arena}, IntegerType::get(ctx, 8));
    unsigned index = f.getNumArguments();
    if (failed(f.insertArgument(index, arenaType, DictionaryAttr::get(ctx),
                                f.getLoc())))
      return failure();
    Value arenaArg = f.getArgument(index);
    OpBuilder b(ctx);
    for (Buffer &buf : buffers) {
      b.setInsertionPoint(buf.alloc);
      Value offset =
          arith::ConstantIndexOp::create(b, buf.alloc.getLoc(), buf.offset);
      Value view = memref::ViewOp::create(b, buf.alloc.getLoc(),
                                          buf.alloc.getType(), arenaArg, offset,
                                          ValueRange{});
      for (Operation *user : llvm::make_early_inc_range(buf.alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      buf.alloc.replaceAllUsesWith(view);
      buf.alloc.erase();
    }
    SmallVector<Attribute> abi(
        f->getAttrOfType<ArrayAttr>(rt::RtDialect::kAbiAttr).getValue());
    Builder attrs(ctx);
    SmallVector<NamedAttribute> scratch = {
        attrs.getNamedAttr("role", attrs.getStringAttr("scratch")),
        attrs.getNamedAttr("bytes", attrs.getI64IntegerAttr(arena))};
    if (held)
      scratch.push_back(
          attrs.getNamedAttr("held_bytes", attrs.getI64IntegerAttr(*held)));
    abi.push_back(attrs.getDictionaryAttr(scratch));
    f->setAttr(rt::RtDialect::kAbiAttr, attrs.getArrayAttr(abi));
    return success();
  }
};

} // namespace

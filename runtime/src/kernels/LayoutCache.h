//===- LayoutCache.h - Blocked copies kept across kernel calls --*- C++ -*-===//
//
// oneDNN's convolutions run fastest on blocked layouts, while the session's
// parameters and accumulators are plain row-major tensors. Staging them
// through the arena costs a reorder per operand per call: for resnet18 that
// was more than a quarter of oneDNN's time, spent re-making copies of
// weights that change once per window and re-laying out weight gradients
// that nobody reads before the window ends. The cache keeps both across
// calls:
//
// * the blocked copy of a parameter read as weights, made again only when
//   the parameters' generation has moved on (an apply step or a write through
//   the session's API bumps it);
// * the window's sum of blocked weight gradients, which stands for `+=` into
//   a plain accumulator until `settle` adds it in, once, before anything but
//   a micro-step looks at the accumulators.
//
// docs/design/cpu-lowering.md ("The weight cache") states the rules the
// session keeps for this to be exact.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_LAYOUTCACHE_H
#define CLEAVE_RUNTIME_KERNELS_LAYOUTCACHE_H

#include "kernels/KernelLibrary.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace cleave::rt {

/// A window's weight gradients for one accumulator, summed in the layout the
/// backward-weights primitive writes.
class PartialSum {
public:
  /// Nothing was added since the last settle: the next gradient may be
  /// written straight into memory().
  bool empty() const { return empty_; }
  /// The sum, in the blocked layout.
  const dnnl::memory &memory() const { return sum_; }
  /// A primitive wrote a gradient into memory().
  void markWritten() { empty_ = false; }
  /// memory() += `gradient` (same layout).
  void add(dnnl::stream &stream, const dnnl::memory &gradient);

private:
  friend class LayoutCache;
  PartialSum() = default;
  /// accumulator += sum, and empty again.
  void settle(dnnl::stream &stream);

  dnnl::memory::desc plain_;
  dnnl::memory sum_;
  dnnl::primitive add_, flush_;
  std::unordered_map<int, dnnl::memory> addArgs_, flushArgs_;
  bool empty_ = true;
};

/// The cache of one kernel context. Off (every lookup returns null, and
/// kernels stage per call) until `enable` names the buffers it may cache:
/// graph executables, whose callers own every buffer, never enable it.
///
/// Copies are allocated when a kernel first asks for them and live as long
/// as the cache: one per (buffer, blocked layout), shared by every kernel
/// that asks for the same pair (the convolutions of `@micro_step` and
/// `@eval_step`, or two call sites of one weight). A lookup allocates
/// nothing after that.
class LayoutCache {
public:
  LayoutCache() = default;
  LayoutCache(const LayoutCache &) = delete;
  LayoutCache &operator=(const LayoutCache &) = delete;

  /// Turns the cache on. The caller promises that
  /// * `parameters` change only between a beginUpdate/endUpdate pair or
  ///   before a call to parametersChanged;
  /// * outside such a pair, the kernels' callers only ever add into
  ///   `accumulators`, and call settle before anything else reads or writes
  ///   them.
  void enable(const dnnl::engine &engine, std::vector<BufferRange> parameters,
              std::vector<BufferRange> accumulators);
  bool enabled() const { return enabled_; }

  /// The parameters were written: every weight copy made before is stale.
  void parametersChanged() { ++generation_; }
  /// Brackets an entry that may write parameters and read accumulators (an
  /// apply step): in between, lookups return null and kernels stage as
  /// without a cache. Settle before beginUpdate.
  void beginUpdate() {
    updating_ = true;
    ++generation_;
  }
  void endUpdate() {
    updating_ = false;
    ++generation_;
  }

  /// The current copy of the `plain` tensor at `source` in layout `blocked`,
  /// reordered on `stream` first if the parameters changed since it was
  /// made; null when `source` is not inside a parameter (or the cache is off
  /// or updating), and the caller must stage the tensor itself.
  const dnnl::memory *weights(dnnl::stream &stream, const void *source,
                              const dnnl::memory::desc &plain,
                              const dnnl::memory::desc &blocked);

  /// The partial sum that stands for `+=` into the `plain` tensor at
  /// `target` for gradients in layout `blocked`; null when `target` is not
  /// inside an accumulator (or the cache is off or updating), and the caller
  /// must add into `target` itself.
  PartialSum *partialSum(void *target, const dnnl::memory::desc &plain,
                         const dnnl::memory::desc &blocked);

  /// Adds every non-empty partial sum into its accumulator; all are empty
  /// afterwards. Waits for `stream`. Throws dnnl::error.
  void settle(dnnl::stream &stream);
  /// Empties every partial sum without adding it anywhere: for when the
  /// accumulators were overwritten.
  void discardPartialSums();
  /// Some partial sum holds gradients not yet in its accumulator.
  bool unsettled() const;

  /// Bytes of the copies and partial sums made so far.
  size_t bytes() const { return bytes_; }

private:
  struct Weights {
    dnnl::memory::desc plain;
    dnnl::memory copy;
    dnnl::primitive reorder;
    std::unordered_map<int, dnnl::memory> args;
    /// generation_ when `copy` was made; 0: never.
    uint64_t generation = 0;
  };
  /// The scratchpad of `pd` as an argument, allocated now when it has one.
  void addScratchpad(const dnnl::primitive_desc_base &pd,
                     std::unordered_map<int, dnnl::memory> &args);

  dnnl::engine engine_;
  bool enabled_ = false;
  bool updating_ = false;
  uint64_t generation_ = 1;
  /// Sorted by start address.
  std::vector<BufferRange> parameters_, accumulators_;
  /// Keyed by the tensor's address; a few layouts at most per address.
  std::unordered_map<const void *, std::vector<std::unique_ptr<Weights>>>
      weights_;
  std::unordered_map<const void *, std::vector<std::unique_ptr<PartialSum>>>
      sums_;
  size_t bytes_ = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_LAYOUTCACHE_H

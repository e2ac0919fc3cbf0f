//===- LayoutCache.cpp - Blocked copies kept across kernel calls ----------===//
//
// Lookups by address, copies made on first use, and the settling of partial
// sums into their accumulators.
//
//===----------------------------------------------------------------------===//

#include "kernels/LayoutCache.h"
#include "kernels/Kernel.h"

#include <algorithm>

namespace cleave::rt {

namespace {

bool byStart(const BufferRange &a, const BufferRange &b) {
  return std::less<const void *>()(a.data, b.data);
}

/// Whether the `bytes` bytes at `p` lie inside one of `ranges` (sorted by
/// start, not overlapping).
bool inside(const std::vector<BufferRange> &ranges, const void *p,
            size_t bytes) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), BufferRange{p, 0},
                             byStart);
  if (it == ranges.begin())
    return false;
  --it;
  auto begin = reinterpret_cast<uintptr_t>(it->data);
  auto at = reinterpret_cast<uintptr_t>(p);
  return at - begin <= it->bytes && bytes <= it->bytes - (at - begin);
}

} // namespace

void PartialSum::add(dnnl::stream &stream, const dnnl::memory &gradient) {
  addArgs_[DNNL_ARG_SRC_1] = gradient;
  add_.execute(stream, addArgs_);
}

void PartialSum::settle(dnnl::stream &stream) {
  if (empty_)
    return;
  flush_.execute(stream, flushArgs_);
  empty_ = true;
}

void LayoutCache::enable(const dnnl::engine &engine,
                         std::vector<BufferRange> parameters,
                         std::vector<BufferRange> accumulators) {
  engine_ = engine;
  parameters_ = std::move(parameters);
  accumulators_ = std::move(accumulators);
  std::sort(parameters_.begin(), parameters_.end(), byStart);
  std::sort(accumulators_.begin(), accumulators_.end(), byStart);
  enabled_ = true;
  ++generation_;
}

void LayoutCache::addScratchpad(const dnnl::primitive_desc_base &pd,
                                std::unordered_map<int, dnnl::memory> &args) {
  dnnl::memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() == 0)
    return;
  args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch, engine_);
  bytes_ += scratch.get_size();
}

const dnnl::memory *LayoutCache::weights(dnnl::stream &stream,
                                         const void *source,
                                         const dnnl::memory::desc &plain,
                                         const dnnl::memory::desc &blocked) {
  if (!enabled_ || updating_ ||
      !inside(parameters_, source, extentBytes(plain)))
    return nullptr;
  std::vector<std::unique_ptr<Weights>> &copies = weights_[source];
  Weights *entry = nullptr;
  for (const std::unique_ptr<Weights> &w : copies)
    if (w->plain == plain && w->copy.get_desc() == blocked) {
      entry = w.get();
      break;
    }
  if (!entry) {
    auto w = std::make_unique<Weights>();
    w->plain = plain;
    w->copy = dnnl::memory(blocked, engine_);
    bytes_ += blocked.get_size();
    dnnl::reorder::primitive_desc pd(engine_, plain, engine_, blocked,
                                     makeAttr());
    w->reorder = dnnl::reorder(pd);
    w->args[DNNL_ARG_FROM] =
        dnnl::memory(plain, engine_, const_cast<void *>(source));
    w->args[DNNL_ARG_TO] = w->copy;
    addScratchpad(pd, w->args);
    entry = w.get();
    copies.push_back(std::move(w));
  }
  if (entry->generation != generation_) {
    entry->reorder.execute(stream, entry->args);
    entry->generation = generation_;
  }
  return &entry->copy;
}

PartialSum *LayoutCache::partialSum(void *target,
                                    const dnnl::memory::desc &plain,
                                    const dnnl::memory::desc &blocked) {
  if (!enabled_ || updating_ ||
      !inside(accumulators_, target, extentBytes(plain)))
    return nullptr;
  std::vector<std::unique_ptr<PartialSum>> &sums = sums_[target];
  for (const std::unique_ptr<PartialSum> &s : sums)
    if (s->plain_ == plain && s->sum_.get_desc() == blocked)
      return s.get();

  std::unique_ptr<PartialSum> s(new PartialSum());
  s->plain_ = plain;
  s->sum_ = dnnl::memory(blocked, engine_);
  bytes_ += blocked.get_size();

  // sum += gradient, in place (a binary primitive may write its first
  // source).
  dnnl::binary::primitive_desc addPd(
      dnnl::binary::desc(dnnl::algorithm::binary_add, blocked, blocked,
                         blocked),
      makeAttr(), engine_);
  s->add_ = dnnl::binary(addPd);
  s->addArgs_[DNNL_ARG_SRC_0] = s->sum_;
  s->addArgs_[DNNL_ARG_SRC_1] = s->sum_; // the gradient, set per call
  s->addArgs_[DNNL_ARG_DST] = s->sum_;
  addScratchpad(addPd, s->addArgs_);

  // accumulator += sum: a reorder back to the plain layout with a sum
  // post-op.
  dnnl::primitive_attr attr = makeAttr();
  dnnl::post_ops ops;
  ops.append_sum(1.f);
  attr.set_post_ops(ops);
  dnnl::reorder::primitive_desc flushPd(engine_, blocked, engine_, plain, attr);
  s->flush_ = dnnl::reorder(flushPd);
  s->flushArgs_[DNNL_ARG_FROM] = s->sum_;
  s->flushArgs_[DNNL_ARG_TO] = dnnl::memory(plain, engine_, target);
  addScratchpad(flushPd, s->flushArgs_);

  PartialSum *out = s.get();
  sums.push_back(std::move(s));
  return out;
}

void LayoutCache::settle(dnnl::stream &stream) {
  bool ran = false;
  for (auto &[target, sums] : sums_)
    for (const std::unique_ptr<PartialSum> &s : sums) {
      ran = ran || !s->empty();
      s->settle(stream);
    }
  if (ran)
    stream.wait();
}

void LayoutCache::discardPartialSums() {
  for (auto &[target, sums] : sums_)
    for (const std::unique_ptr<PartialSum> &s : sums)
      s->empty_ = true;
}

bool LayoutCache::unsettled() const {
  for (const auto &[target, sums] : sums_)
    for (const std::unique_ptr<PartialSum> &s : sums)
      if (!s->empty())
        return true;
  return false;
}

} // namespace cleave::rt

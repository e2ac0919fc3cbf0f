//===- Executable.h - Running the entries of a graph artifact ---*- C++ -*-===//
//
// A graph artifact (manifest `"kind": "graph"`, written for the tracing
// frontend) is a set of entry points over caller-owned buffers: no window,
// no counters, no state of its own. An Executable holds what the caller
// cannot provide — the kernel context and the scratch arena — and calls an
// entry with the caller's pointers spliced around them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTABLE_H
#define CLEAVE_RUNTIME_EXECUTABLE_H

#include "Artifact.h"
#include "Session.h"
#include "Status.h"

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace cleave::rt {

class KernelContext;

/// The entries of one graph artifact, ready to run. Not thread-safe: one
/// thread at a time may call it (the kernel context and scratch are shared
/// by its entries).
class Executable {
public:
  struct Options {
    /// omp_set_num_threads before each entry call when positive.
    int numThreads = 0;
  };

  /// Builds the kernel context (every oneDNN primitive) and the scratch
  /// arena of a graph artifact.
  static Status create(std::shared_ptr<const Artifact> artifact,
                       const Options &options,
                       std::unique_ptr<Executable> &out);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const Artifact &artifact() const { return *artifact_; }
  size_t numEntries() const { return entries_.size(); }
  const GraphEntryDesc &entry(size_t index) const {
    return artifact_->manifest().graphEntries[index];
  }
  std::optional<size_t> findEntry(std::string_view name) const;

  /// The arguments of entry `index` a caller passes (every argument but
  /// scratch), in manifest order.
  const std::vector<const GraphArgDesc *> &callerArgs(size_t index) const {
    return entries_[index].callerArgs;
  }

  /// Runs entry `index` on `args`, one pointer per caller argument. Every
  /// pointer must be non-null and 64-byte aligned (the ABI), except that a
  /// buffer of zero bytes may be null. If a kernel call of the entry fails,
  /// returns its error; the caller's outputs and globals are then
  /// unspecified, and the executable stays usable.
  Status run(size_t index, void *const *args, size_t numArgs);

private:
  struct Binding {
    EntryFn fn = nullptr;
    std::vector<const GraphArgDesc *> callerArgs;
    /// The full argument array; scratch slots are filled once.
    std::vector<void *> args;
    /// For each caller argument, its position in `args`.
    std::vector<size_t> callerSlots;
  };

  explicit Executable(std::shared_ptr<const Artifact> artifact);

  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<KernelContext> kernelContext_;
  AlignedBuffer scratch_;
  /// Stands in for null pointers to empty buffers.
  AlignedBuffer empty_;
  std::vector<Binding> entries_;
  int numThreads_ = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_EXECUTABLE_H

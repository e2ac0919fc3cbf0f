//===- Executable.h - Running the entries of a graph artifact ---*- C++ -*-===//
//
// A graph artifact (manifest `"kind": "graph"`, written for the tracing
// frontend) is a set of entry points over caller-owned buffers: no window,
// no counters, no state of its own. An Executable holds what the caller
// cannot provide (the device, the kernel context, the scratch arena and,
// where the device does not address host memory, a device twin of each
// argument) and calls an entry with the caller's pointers spliced around
// them, through the EntryRunner a Session uses.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTABLE_H
#define CLEAVE_RUNTIME_EXECUTABLE_H

#include "Artifact.h"
#include "EntryRunner.h"
#include "Status.h"
#include "device/Device.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace cleave::rt {

class Collectives;
class Communicator;
class KernelContext;

/// The entries of one graph artifact, ready to run. Not thread-safe: one
/// thread at a time may call it (the kernel context and scratch are shared
/// by its entries).
class Executable {
public:
  /// The device, its ordinal and the thread count, as a Session's.
  struct Options : Placement {
    /// Join the data-parallel job over MPI_COMM_WORLD, whose ranks the
    /// entries' cross-rank reductions then run over.
    bool distributed = false;
  };

  /// Opens the artifact's device and builds the kernel context, the
  /// scratch arena and the argument arrays of a graph artifact.
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

  /// Runs entry `index` on `args`, one host pointer per caller argument.
  /// Every pointer must be non-null and 64-byte aligned (the ABI), except
  /// that a buffer of zero bytes may be null. Where the device does not
  /// address host memory, inputs and globals are copied to its twins
  /// before the entry and outputs and globals back after it, and the call
  /// returns when they are back. If a kernel call of the entry fails,
  /// returns its error; the caller's outputs and globals are then
  /// unspecified, and the executable stays usable. If the device fails, it
  /// does not.
  Status run(size_t index, void *const *args, size_t numArgs);

  /// Where it runs: "the CPU" or the GPU's description.
  std::string deviceDescription() const { return device_->description(); }
  /// What the device chose that changes speed but never results (an entry
  /// that runs without a CUDA graph, and why). Only ever grows.
  const std::deque<std::string> &notes() const { return notes_; }

private:
  struct Binding {
    /// The entry's index in runner_.
    size_t entry = 0;
    std::vector<const GraphArgDesc *> callerArgs;
    /// The full argument array; scratch slots (and twins) are filled once.
    std::vector<void *> args;
    /// For each caller argument, its position in `args`.
    std::vector<size_t> callerSlots;
    /// Where the device does not address host memory: for each caller
    /// argument, the device buffer the entry reads and writes instead.
    std::vector<void *> twins;
  };

  explicit Executable(std::shared_ptr<const Artifact> artifact);
  /// Allocates the twin of every caller argument: one per input and output
  /// of each entry, one per global name (entries share globals).
  Status makeTwins();
  /// Copies the caller's inputs and globals to the twins, runs the entry,
  /// and copies outputs and globals back, waiting for them.
  Status runOnTwins(size_t index, void *const *args, size_t numArgs);

  std::shared_ptr<const Artifact> artifact_;
  // Declared in the order they refer to each other, so that each is
  // destroyed before what it uses.
  std::deque<std::string> notes_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Collectives> collectives_;
  std::unique_ptr<KernelContext> kernelContext_;
  std::unique_ptr<EntryRunner> runner_;
  /// Stands in for null pointers to empty buffers.
  Buffer empty_;
  std::map<std::string, Buffer, std::less<>> globalTwins_;
  std::vector<Binding> entries_;
  /// The device failed (a wait returned its error): nothing on it can be
  /// trusted, and every later run returns this.
  Status deviceFault_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_EXECUTABLE_H

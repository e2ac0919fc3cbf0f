//===- EntryRunner.h - Running an artifact's entries on a device -*- C++
//-*-===//
//
// What a Session and an Executable share: refusing options that cannot run
// an artifact, opening the device it was compiled for (one per rank where
// devices are exclusive), joining the job's collectives, building the kernel
// context, and running entry points on the device, directly or, where the
// device captures, replayed from a graph captured once the entry is warm.
// docs/design/devices.md, "Executable after".
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_ENTRYRUNNER_H
#define CLEAVE_RUNTIME_ENTRYRUNNER_H

#include "Artifact.h"
#include "Status.h"
#include "device/Device.h"

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace cleave::rt {

class Collectives;
class Communicator;
class KernelContext;

/// Session::Options::deviceOrdinal and Executable::Options::deviceOrdinal:
/// one GPU per rank of the machine (CLEAVE_DEVICE_ORDINAL_AUTO of the C API).
inline constexpr int kAutoDeviceOrdinal = -1;

/// Where an artifact's entries run: the options a Session and an Executable
/// share.
struct Placement {
  /// Must be what the artifact was compiled for (its manifest's `device`).
  DeviceKind device = DeviceKind::cpu;
  /// Which device, where devices are numbered; kAutoDeviceOrdinal: the
  /// rank's index on its machine (Communicator::nodeRanks), 0 when not
  /// distributed, so that each rank of a job has a device of its own.
  int deviceOrdinal = 0;
  /// omp_set_num_threads before each entry call when positive.
  int numThreads = 0;
};

/// Who asks, for the words of checkPlacement's refusal.
enum class Holder { Session, Executable };

/// Refuses, before anything is opened, a placement that cannot run
/// `artifact`: a device it was not compiled for (saying how to choose the
/// right one), a negative ordinal other than kAutoDeviceOrdinal, a negative
/// thread count.
Status checkPlacement(const Artifact &artifact, const Placement &placement,
                      Holder holder);

/// Opens the device of `artifact`'s kind: device `ordinal`, or, where
/// devices are exclusive and `communicator` has several ranks, the rank's
/// own (kAutoDeviceOrdinal). Then checks that the model fits in it, adding
/// what it says to `notes`. Collective in that case: all ranks succeed or
/// all fail.
Status openDevice(const Artifact &artifact, int ordinal,
                  Communicator *communicator, std::deque<std::string> &notes,
                  std::unique_ptr<Device> &out);

/// Joins the data plane of `communicator`'s job on `device` when it has
/// several ranks (collective; `collectives` stays null otherwise), and
/// builds `artifact`'s kernel context on `device`, attached to it, adding
/// what its kernel library notes (KernelLibrary::notes) to `notes`.
Status connectKernels(const Artifact &artifact, Device &device,
                      Communicator *communicator,
                      std::unique_ptr<Collectives> &collectives,
                      std::unique_ptr<KernelContext> &context,
                      std::deque<std::string> &notes);

/// Runs the entry points of one artifact on its device, one at a time. An
/// entry is called with an argument array its owner keeps; where the
/// device captures (and CLEAVE_CUDA_GRAPHS is not 0), an entry that may be
/// captured is, after kWarmupRuns direct runs, captured once per argument
/// array (`set`) and replayed from then on as one launch. An entry that
/// cannot be captured runs directly from then on, said once in the notes.
class EntryRunner {
public:
  /// Direct runs of an entry before it is captured: the first runs load
  /// the kernel modules and let the libraries set themselves up.
  static constexpr int64_t kWarmupRuns = 2;
  /// Argument arrays an entry may be captured for.
  static constexpr int kSets = 2;

  /// `collectives` null: a job of one rank. `notes` outlives the runner.
  EntryRunner(const Artifact &artifact, Device &device, KernelContext &context,
              const Collectives *collectives, int numThreads,
              std::deque<std::string> &notes);

  /// Adds an entry and returns its index. `name` names it in errors and
  /// notes; `capture`: it only enqueues work, on argument arrays that never
  /// change for a set, so it may be captured.
  size_t add(std::string name, EntryFn fn, bool capture);

  /// Entries never run concurrently, so their scratch areas share one
  /// allocation, sized for the hungriest entry and owned by the device.
  /// `areas[i]` is the sizes of one entry's areas; `pointers[i]` receives
  /// where each is, aligned as the device aligns buffers.
  Status allocateScratch(const std::vector<std::vector<uint64_t>> &areas,
                         std::vector<std::vector<void *>> &pointers);

  /// Before an entry's work is enqueued (and anything it reads is copied):
  /// the thread count, and the device bound to the calling thread. An error
  /// is the device's.
  Status enter();

  /// Runs entry `index` on `args`, the argument array of set `set`:
  /// enqueues its work, captures it, or replays the graph captured for the
  /// set. Adds to `bytesSent` what its collectives sent (replayed: what
  /// they sent when it was captured). Returns the first error of a kernel
  /// call or of the launch, in the artifact's and entry's words; the
  /// kernel context is then cleared for the next run.
  Status run(size_t index, int set, void **args, uint64_t &bytesSent);

private:
  struct Entry {
    std::string name;
    EntryFn fn = nullptr;
    bool capture = false;
    /// The graph each set's work is replayed from once captured (owned by
    /// the device), and the bytes its collectives send per launch.
    std::array<Graph *, kSets> graphs{};
    std::array<uint64_t, kSets> graphBytes{};
    int64_t directRuns = 0;
    /// Capturing it failed: it runs directly from now on.
    bool noGraph = false;
  };

  /// Calls the entry; returns the bytes its collectives sent.
  uint64_t call(Entry &entry, void **args);
  /// The error of the entry's last kernel calls, in the entry's words.
  Status result(const Entry &entry);
  uint64_t bytesSent() const;

  const std::string &path_;
  Device &device_;
  KernelContext &context_;
  const Collectives *collectives_;
  int numThreads_;
  std::deque<std::string> &notes_;
  bool useGraphs_ = false;
  Buffer scratch_;
  std::vector<Entry> entries_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_ENTRYRUNNER_H

//===- Session.h - A training session on one artifact -----------*- C++ -*-===//
//
// The session owns the state of one training run of an artifact: its globals
// (parameters, accumulators, optimizer state, counters), hyperparameter
// values, the accumulation count N, the kernel context and the staging
// buffers. It runs micro_step on each micro-batch and apply_step whenever the
// window holds N micro-steps. docs/design/runtime.md has the state machine.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SESSION_H
#define CLEAVE_RUNTIME_SESSION_H

#include "Artifact.h"
#include "Checkpoint.h"
#include "EntryRunner.h"
#include "Status.h"
#include "device/Device.h"

#include "cleave/runtime.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cleave::rt {

class Communicator;
class Collectives;
class Device;
class Event;
class Graph;
class KernelContext;

/// Writes `samples` rows of `rowBytes` from `src` to `dst`, then repeats the
/// last row up to `rows` (a short batch padded to the micro-batch). Copies
/// of at least kParallelCopyBytes are split over up to `threads` OpenMP
/// threads (0: OpenMP's default): on a GPU every micro-batch passes through
/// this copy into pinned memory, and one thread's memcpy bounds a large
/// micro-batch's rate (bench/README.md, "bf16 on the GPU").
void copyRowsPadded(unsigned char *dst, const void *src, int64_t samples,
                    int64_t rows, size_t rowBytes, int threads);
inline constexpr size_t kParallelCopyBytes = size_t(1) << 20;

/// A zero-initialised, kBufferAlignment-aligned heap buffer.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  /// Allocates `bytes` bytes (at least one alignment unit, so that empty
  /// tensors still get a distinct valid pointer); false when out of memory.
  bool allocate(size_t bytes);

  unsigned char *data() const { return data_.get(); }
  size_t size() const { return size_; }

private:
  struct Free {
    void operator()(unsigned char *p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data_;
  size_t size_ = 0;
};

/// A training session. Not thread-safe: one thread at a time may call it.
class Session {
public:
  /// The device, its ordinal and the thread count (Placement), and what
  /// belongs to a training run.
  struct Options : Placement {
    uint64_t seed = 0;
    /// Accumulation count N; 0 means the manifest's `accumulate`.
    int64_t accumulate = 0;
    /// Attach a communicator over MPI_COMM_WORLD.
    bool distributed = false;
    /// A window that is not finite: skipped either way; false fails the
    /// call that applied it with CLEAVE_NON_FINITE.
    bool skipNonfinite = false;
  };

  static Status create(std::shared_ptr<const Artifact> artifact,
                       const Options &options, std::unique_ptr<Session> &out);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const Artifact &artifact() const { return *artifact_; }

  /// micro_step on one micro-batch of 1..B samples, then apply_step if the
  /// window is full.
  /// `memory` says where the batch's buffers are; each is the caller's
  /// again when the call returns.
  Status microStep(const cleave_batch &batch,
                   BatchMemory memory = BatchMemory::host);
  /// microStep on consecutive slices of `microSize` samples of `batch`.
  Status trainBatch(const cleave_batch &batch, int64_t microSize,
                    BatchMemory memory = BatchMemory::host);
  /// apply_step if the window holds at least one micro-step.
  Status flush();
  /// eval_step on one batch of 1..B samples.
  Status eval(const cleave_batch &batch,
              BatchMemory memory = BatchMemory::host);

  /// Sets N; applies at once if the window already holds N micro-steps.
  Status setAccumulation(int64_t n);
  int64_t accumulation() const { return accumulate_; }

  Status setHyperparameter(std::string_view name, double value);
  Status hyperparameter(std::string_view name, double &value) const;

  /// Makes hyperparameter `lr` follow `schedule` (null: stop following
  /// one); a NaN peak lr takes lr's current value.
  Status setLrSchedule(const cleave_lr_schedule *schedule);
  const std::optional<cleave_lr_schedule> &lrSchedule() const {
    return lrSchedule_;
  }

  /// What the device chose that changes the session's speed but never its
  /// results, one line each, in the order it happened (an entry that runs
  /// without a CUDA graph, and why). Only ever grows.
  const std::deque<std::string> &notes() const { return notes_; }

  int64_t microSteps() const { return *microSteps_; }
  int64_t step() const { return *step_; }
  /// Mean per-sample loss of the last microStep / trainBatch (NaN before).
  /// On a GPU the loss stays on the device until asked for: this waits for
  /// the GPU (and is NaN, the session unusable, if the GPU failed).
  double lastLoss() const;
  /// What lastLoss() is a mean over: real samples, or real tokens for token
  /// labels.
  int64_t lastCount() const { return lastCount_; }
  uint64_t seed() const { return seed_; }
  int rank() const;
  int numRanks() const;
  /// Payload bytes this rank's entry points sent during the last completed
  /// window (its micro-steps and its apply_step) and everything this rank
  /// sent since the session was created (the initial broadcast and
  /// sumAcrossRanks included). Both 0 with one rank.
  uint64_t lastWindowBytesSent() const { return lastWindowBytes_; }
  uint64_t totalBytesSent() const;
  /// Sums `count` doubles across ranks in place (unchanged with one rank).
  Status sumAcrossRanks(double *values, size_t count);

  Status readGlobal(std::string_view name, void *dst, size_t bytes) const;
  Status writeGlobal(std::string_view name, const void *src, size_t bytes);
  /// Where the session runs: "the CPU" or the GPU's description.
  std::string deviceDescription() const;

  /// The buffer of output `name` of entry `entry` as last written.
  Status output(std::string_view entry, std::string_view name,
                const void *&data, size_t &bytes) const;

  /// `value` null erases `key`.
  Status setUserState(std::string_view key, const void *value, size_t bytes);
  Status userState(std::string_view key, const void *&value,
                   size_t &bytes) const;

  /// In a data-parallel session both are collective, and rank 0 alone
  /// reads and writes `path` (docs/design/runtime.md, "Checkpoints").
  Status saveCheckpoint(const std::string &path) const;
  Status loadCheckpoint(const std::string &path);

private:
  /// A checked checkpoint, ready to be applied.
  struct Restore;
  /// The argument array of one entry point, built once at creation. Input
  /// arguments are the only ones that change between calls.
  struct Binding {
    /// The entry's index in runner_.
    size_t entry = 0;
    std::vector<void *> args;
    /// (position in `args`, index into Manifest::inputs).
    std::vector<std::pair<size_t, size_t>> inputArgs;
    /// Usage::Mirrored: on a GPU the host view is a copy, made when asked
    /// for.
    std::vector<Buffer> outputs;
  };

  explicit Session(std::shared_ptr<const Artifact> artifact);
  Status allocateAndInitialize(const Options &options);
  /// The events that order the input sets, and the first loss slot.
  Status prepareInputSets();
  /// Writes hyperparameter `index`'s value into its slot, in queue order.
  Status writeHyperSlot(size_t index);
  Status bindEntries();
  /// Tells the kernel context which globals are parameters and
  /// accumulators, so that convolutions keep blocked copies across calls
  /// (CPU sessions).
  void enableLayoutCache();
  /// Adds the gradients the kernel context holds back into the
  /// accumulators; a failure makes the session unusable. Logically const:
  /// the accumulators' meaning does not change, only where it is held.
  Status settleAccumulators() const;
  /// Token labels: fills one sample weight per token from `labels` (the
  /// staged micro-batch) into `weights` and sets lastCount_.
  Status fillTokenWeights(const void *labels, void *weights, int64_t samples,
                          EntryKind kind);
  /// The loss of the micro-step just enqueued, copied back asynchronously
  /// into the next loss slot (summed at once on a synchronous device).
  Status enqueueLossCopy();
  /// Waits for the losses in the slots and adds them to lossSum_, in order;
  /// lastLoss_ becomes their mean (NaN if the device failed).
  void foldLosses() const;
  /// Room for `slots` losses in lossSlots_.
  Status reserveLossSlots(size_t slots);
  /// Copies every global into its host view (nothing to copy on the CPU)
  /// and checks the counters the entries advanced against the session's
  /// bookkeeping.
  Status pullGlobals() const;
  /// Copies the globals' host views and the hyperparameter values to the
  /// device and waits.
  Status pushState();
  /// Records a failed device operation outside an entry point: the session
  /// becomes unusable, as after a failed entry, and nothing on the device
  /// can be read any more (deviceFault_).
  Status noteDeviceError(Status error) const;

  /// Checks `batch` against the inputs entry `kind` reads, copies what must
  /// be copied (short or unaligned batches, or all of it where the device
  /// does not address host memory) into the next input set, and makes the
  /// entry's input arguments point at the data.
  /// A batch in pinned or device memory goes from the caller's buffer to
  /// the input set without the host copy, and the call waits for its
  /// copies.
  Status stage(EntryKind kind, const cleave_batch &batch, BatchMemory memory);
  /// Validates the shape of a batch of `maxSamples` or fewer samples, and
  /// its index inputs unless the host cannot read them (`memory`).
  Status checkBatch(EntryKind kind, const cleave_batch &batch,
                    int64_t maxSamples, BatchMemory memory) const;
  /// checkIndices on the index inputs of a batch in device memory, after
  /// downloading them (one wait).
  Status checkDeviceIndices(EntryKind kind, const cleave_batch &batch);
  /// Whether the host cannot read a batch in `memory`.
  bool onlyDeviceReads(BatchMemory memory) const {
    return memory == BatchMemory::device && !device_->properties().hostMemory;
  }
  /// Checks that the `bytes` of input `in` at `data` are all in
  /// [0, in.indexBound).
  Status checkIndices(const InputDesc &in, const void *data,
                      size_t bytes) const;
  /// Calls entry `kind`, ordered after the copies of its input set and
  /// before the next copies into it. If a kernel call failed in it, the
  /// session becomes unusable (failure_) and the kernel's error is
  /// returned.
  Status run(EntryKind kind);
  /// Enqueues the entry's work (on input set `set`), or replays its graph
  /// for that set where the device captures; an error makes the session
  /// unusable.
  Status enqueue(EntryKind kind, int set);
  /// An error if an entry point failed since the session was created or
  /// last restored from a checkpoint.
  Status checkUsable() const;
  /// An error if the device failed (a wait returned its error) since the
  /// session was created or last restored: nothing on it can be read.
  Status checkDevice() const;
  /// Fails naming `what` on an inference artifact, which cannot train.
  Status checkTraining(const char *what) const;
  /// The CLEAVE_NON_FINITE status of a skipped window: the apply step's
  /// `verdict` and the optimizer step it would have taken after `step`.
  Status nonfiniteWindow(int64_t verdict, int64_t step) const;
  Status apply();
  /// The index of global `name`, which must have exactly `bytes` bytes.
  Status findGlobalOfSize(std::string_view name, size_t bytes,
                          size_t &index) const;
  void storeHyper(size_t index, double value);
  /// With a schedule, sets `lr` to its value at the current optimizer step:
  /// the step the next apply_step takes.
  void syncScheduledLr();
  /// What a checkpoint of this session holds (pointing into the session).
  CheckpointContents checkpointContents() const;
  /// Checks that `c` (read from `path`) is a state of this session, without
  /// changing anything.
  Status checkCheckpoint(const CheckpointContents &c, const std::string &path,
                         Restore &plan) const;
  void applyCheckpoint(const CheckpointContents &c, const Restore &plan);
  /// After a restore: the device's copy of the state becomes the restored
  /// host state (nothing on the CPU). Every rank of a job calls it.
  Status pushRestoredState();
  /// Collective: succeeds on every rank if `local` succeeded on every rank;
  /// otherwise a failed rank returns its own error and the others one
  /// naming the failed ranks.
  Status agreeOnStatus(const Status &local) const;
  /// Collective: every rank returns rank 0's `status`.
  Status rankZeroStatus(const Status &status) const;

  std::shared_ptr<const Artifact> artifact_;
  const Manifest &manifest_;

  // Declared in the order they refer to each other, so that each is
  // destroyed before what it uses.
  /// The job's ranks (the host control plane), with the distributed option.
  std::unique_ptr<Communicator> communicator_;
  /// What runs the entry points: its kernel library uses its queues and
  /// memory.
  std::unique_ptr<Device> device_;
  /// The collectives of generated code with several ranks (null: one rank):
  /// MPI over communicator_, or NCCL over device_ and communicator_.
  std::unique_ptr<Collectives> collectives_;
  std::unique_ptr<KernelContext> kernelContext_;
  /// Runs the entries (bindings_[k].entry), on device_ and kernelContext_,
  /// with the scratch area they share.
  std::unique_ptr<EntryRunner> runner_;

  // One set of buffers, on the device (owned by device_). `data` is what
  // entries receive, `host` the host's view: the buffer itself on the CPU.
  /// The globals (Usage::Mirrored). On a GPU the host view is current at
  /// creation, after a checkpoint is saved or loaded, and for the counters,
  /// which the session advances itself instead of reading them back.
  std::vector<Buffer> globals_;
  /// The input sets (Usage::Staged), properties().inputSets of them. A GPU
  /// has two, alternated, so that the copy of a batch into one overlaps the
  /// kernels that read the other, while the batch after it is written into
  /// the pinned host view of the first.
  std::array<std::vector<Buffer>, 2> inputs_;
  /// The hyperparameter slots (Usage::DeviceOnly).
  Buffer hypers_;
  /// Alignment of the buffers carved out of one allocation: the device's
  /// (DeviceProperties::alignment).
  size_t alignment_ = kBufferAlignment;

  /// The set of the last batch staged (the one the next entry reads), and
  /// the set the next batch goes into.
  int stagedSet_ = 0;

  int stagingSlot_ = 0;
  /// Per input set: its copies are done (recorded on the transfer queue),
  /// and the entry that read it is done (recorded on the compute queue).
  std::array<Event *, 2> copied_{};
  std::array<Event *, 2> consumed_{};
  /// The downloads of a device batch's inputs the host checks.
  Event *hostRead_ = nullptr;
  /// Host slots (page-locked where that matters) the micro-steps' losses
  /// are copied back into, 8 bytes each: one per micro-step of the last
  /// microStep / trainBatch not summed yet (one on a synchronous device,
  /// which sums each at once).
  unsigned char *lossSlots_ = nullptr;
  size_t lossCapacity_ = 0;
  mutable size_t lossCount_ = 0;
  /// The losses in lossSlots_ have not been summed into lossSum_ yet.
  mutable bool lossPending_ = false;
  /// The sum of the losses of the last microStep / trainBatch summed so
  /// far, and the samples (or tokens) lastLoss_ is the mean over.
  mutable double lossSum_ = 0.0;
  int64_t lossSamples_ = 0;
  bool inTrainBatch_ = false;
  /// A deque: the C API hands out pointers into the strings, which must
  /// not move as notes are added.
  std::deque<std::string> notes_;
  std::array<Binding, kNumEntryKinds> bindings_;
  /// Where each input's data is for the current call (the caller's memory
  /// or the staged set), for the entries and for the host.
  std::vector<void *> inputPtrs_;
  std::vector<const void *> hostInputs_;
  /// Per input set: the samples its sample weights mark as real (-1:
  /// unset).
  std::array<int64_t, 2> weightsSamples_{-1, -1};
  /// Per-user-input pointers and sizes of one slice, reused by trainBatch.
  std::vector<const void *> sliceData_;
  std::vector<size_t> sliceBytes_;

  /// train.micro_steps and train.step; an inference artifact has neither
  /// and they point at `noCounters_`, which stay zero.
  int64_t *microSteps_ = nullptr;
  int64_t *step_ = nullptr;
  int64_t noCounters_[2] = {0, 0};
  std::vector<double> hyperValues_;
  /// The index of hyperparameter `lr`, if the model has one.
  std::optional<size_t> lrHyper_;
  std::optional<cleave_lr_schedule> lrSchedule_;
  int64_t accumulate_ = 1;
  uint64_t seed_ = 0;
  bool skipNonfinite_ = false;
  int numThreads_ = 0;
  mutable double lastLoss_;
  /// What the last micro-step's (or train_batch's) loss is a mean over: its
  /// real samples, or its real tokens for token labels.
  int64_t lastCount_ = 0;
  /// Bytes sent by the entry points of the current window so far.
  uint64_t windowBytes_ = 0;
  uint64_t lastWindowBytes_ = 0;
  std::map<std::string, std::string, std::less<>> userState_;
  /// The error of the entry point that failed, which left the globals part
  /// updated; ok() while the session is usable. Cleared by loading a
  /// checkpoint, which replaces every global. Also set by a GPU failure
  /// seen while waiting for a result (in const members too).
  mutable Status failure_;
  /// The device itself failed (not just an entry): set with failure_.
  mutable bool deviceFault_ = false;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_SESSION_H

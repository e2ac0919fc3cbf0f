//===- Session.cpp - A training session on one artifact -------------------===//
//
// Everything that can be computed once is computed in create(): buffers,
// argument arrays, the positions of input arguments. A micro-step then checks
// the batch, copies inputs only when it must (short or unaligned batches),
// calls the entry point and reads two counters; it allocates nothing.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "Checkpoint.h"
#include "Initializers.h"
#include "LrSchedule.h"
#include "collectives/Agree.h"
#include "collectives/Communicator.h"
#include "gpu/Gpu.h"
#include "gpu/GpuArch.h"
#include "gpu/Modules.h"
#include "kernels/KernelContext.h"

#include <nlohmann/json.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <unistd.h>

namespace cleave::rt {

bool AlignedBuffer::allocate(size_t bytes) {
  size_t rounded = bytes == 0 ? kBufferAlignment : alignedSize(bytes);
  void *p = std::aligned_alloc(kBufferAlignment, rounded);
  if (!p)
    return false;
  std::memset(p, 0, rounded);
  data_.reset(static_cast<unsigned char *>(p));
  size_ = bytes;
  return true;
}

namespace {

bool isAligned(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % kBufferAlignment == 0;
}

Status outOfMemory(size_t bytes, const std::string &what) {
  return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate ", bytes,
                   " bytes for ", what);
}

double readScalar(DType dtype, const void *p) {
  return dtype == DType::F64 ? *static_cast<const double *>(p)
                             : double(*static_cast<const float *>(p));
}

/// The user-state key under which a checkpoint of a data-parallel session
/// records which rank of how many it holds the state of ("<rank>/<ranks>").
/// Keys starting with it are reserved: users cannot set them.
constexpr std::string_view kRankKey = "cleave.rank";

/// The user-state key under which rank 0's checkpoint of a data-parallel
/// session carries the checkpoint image of rank `rank`.
std::string peerKey(int rank) {
  return std::string(kRankKey) + "." + std::to_string(rank);
}

bool isReservedKey(std::string_view key) {
  return key.substr(0, kRankKey.size()) == kRankKey;
}

std::string rankTag(int rank, int ranks) {
  return std::to_string(rank) + "/" + std::to_string(ranks);
}

/// The ZeRO-1 collectives of generated code over a communicator.
class CommunicatorShards final : public ShardedCollectives {
public:
  explicit CommunicatorShards(Communicator &comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void reduceScatter(int64_t count, const float *const *inputs,
                     const int64_t *sizes, float *const *outputs) override {
    comm_.reduceScatterShards(count, inputs, sizes, outputs);
  }
  void allGather(int64_t count, const float *const *inputs,
                 const int64_t *sizes, float *const *outputs) override {
    comm_.allGatherShards(count, inputs, sizes, outputs);
  }

private:
  Communicator &comm_;
};

} // namespace

Session::Session(std::shared_ptr<const Artifact> artifact)
    : artifact_(std::move(artifact)), manifest_(artifact_->manifest()),
      lastLoss_(std::numeric_limits<double>::quiet_NaN()) {}

Session::~Session() = default;

namespace {
/// Refuses a model whose buffers cannot fit in the machine's memory: with
/// overcommit the allocations would succeed and the first touch of the
/// pages would get the process killed instead.
Status checkFootprint(const Manifest &m, const std::string &path) {
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return Status::success();
  // Saturating: sizes come from the manifest.
  uint64_t total = 0;
  auto add = [&](uint64_t bytes) {
    total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
  };
  for (const GlobalDesc &g : m.globals)
    add(g.bytes);
  for (const InputDesc &in : m.inputs)
    add(in.bytes);
  uint64_t scratch = 0;
  for (const EntryDesc &e : m.entries) {
    uint64_t entry = 0;
    for (const ArgDesc &a : e.args)
      entry += a.role == ArgRole::Scratch ? a.scratchBytes : 0;
    for (const TensorDesc &o : e.outputs)
      entry += o.bytes;
    scratch = std::max(scratch, entry);
  }
  add(scratch);
  const uint64_t physical = uint64_t(pages) * uint64_t(pageSize);
  if (total <= physical)
    return Status::success();
  return makeError(CLEAVE_OUT_OF_MEMORY, path, ": a session needs ",
                   total >> 20, " MiB (parameters, state, accumulators and "
                   "one micro-batch's inputs and activations), more than this "
                   "machine's ", physical >> 20,
                   " MiB of memory; compile with a smaller --micro-batch");
}
} // namespace

Status Session::create(std::shared_ptr<const Artifact> artifact,
                       const Options &options, std::unique_ptr<Session> &out) {
  if (!artifact)
    return makeError(CLEAVE_INVALID_ARGUMENT, "artifact is NULL");
  if (options.accumulate < 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, "options: accumulate is ",
                     options.accumulate,
                     ", expected 0 (the manifest's) or a positive count");
  if (options.numThreads < 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, "options: num_threads is ",
                     options.numThreads,
                     ", expected 0 (leave OpenMP alone) or a positive count");
  std::unique_ptr<Session> session(new Session(std::move(artifact)));
  const Manifest &m = session->manifest_;
  const std::string &path = session->artifact_->path();
  if (m.device != options.device) {
    if (m.device == DeviceKind::Cuda)
      return makeError(CLEAVE_FAILED_PRECONDITION, path,
                       ": compiled for CUDA GPUs (",
                       describeGpuCode(m.gpuArches, m.ptxArch),
                       "), but the session is on the CPU; create it on a "
                       "cuda device (cleave-train --device=cuda)");
    return makeError(CLEAVE_FAILED_PRECONDITION, path,
                     ": compiled for the CPU, but the session is on a CUDA "
                     "GPU; create it on the cpu device (cleave-train "
                     "--device=cpu) or compile with --target=cuda");
  }
  if (m.device == DeviceKind::Cuda) {
    // CLEAVE_CUDA_GRAPHS=0 turns graph replay off, for debugging (every
    // launch is then a driver call that a profiler sees).
    const char *graphs = std::getenv("CLEAVE_CUDA_GRAPHS");
    session->useGraphs_ = !graphs || std::string_view(graphs) != "0";
    if (options.deviceOrdinal < 0 &&
        options.deviceOrdinal != kAutoDeviceOrdinal)
      return makeError(CLEAVE_INVALID_ARGUMENT, "options: device ordinal is ",
                       options.deviceOrdinal,
                       ", expected 0 or more, or -1 (one GPU per rank)");
  }
  CLEAVE_RETURN_IF_ERROR(checkFootprint(m, path));
  session->seed_ = options.seed;
  session->numThreads_ = options.numThreads;
  session->skipNonfinite_ = options.skipNonfinite;
  session->accumulate_ =
      options.accumulate > 0 ? options.accumulate : m.accumulate;

  if (options.distributed) {
    std::string error;
    session->communicator_ = Communicator::world(error);
    if (!session->communicator_)
      return makeError(CLEAVE_FAILED_PRECONDITION,
                       "cannot join the data-parallel job: ", error);
    session->shardedCollectives_ =
        std::make_unique<CommunicatorShards>(*session->communicator_);
  }
  // Every rank sees the same manifest and job size, so all ranks fail here
  // together and none waits in a collective for the others.
  if (m.ranks > 0 && m.ranks != session->numRanks())
    return makeError(
        CLEAVE_FAILED_PRECONDITION, path, ": compiled for ", m.ranks,
        " data-parallel ranks",
        m.shardOptimizerState ? " (its optimizer state is sharded over them)"
                              : "",
        ", but this session has ", session->numRanks(),
        options.distributed ? " (the job's size)"
                            : " (not distributed: set the distributed option "
                              "and launch the job with mpirun -np ",
        options.distributed ? "" : std::to_string(m.ranks) + ")");
  if (m.device == DeviceKind::Cuda && m.shardOptimizerState &&
      session->numRanks() > 1)
    return makeError(CLEAVE_FAILED_PRECONDITION, path,
                     ": ZeRO-1 (sharded optimizer state) is not implemented "
                     "on GPUs; compile without --shard-optimizer-state");
  if (m.device == DeviceKind::Cuda)
    CLEAVE_RETURN_IF_ERROR(session->openGpu(options));
  if (session->gpu_) {
    std::unique_ptr<DeviceKernels> kernels;
    Status built = session->gpu_->createKernels(m.kernels, kernels);
    if (!built.ok())
      return built.withContext(path + ": kernels");
    session->kernelContext_ =
        KernelContext::createForDevice(std::move(kernels));
  } else {
    std::string error;
    session->kernelContext_ = KernelContext::create(m.kernels, error);
    if (!session->kernelContext_)
      return makeError(CLEAVE_INVALID_ARTIFACT, path, ": kernels: ", error);
  }
  {
    session->kernelContext_->setCommunicator(session->communicator_.get());
    session->kernelContext_->setShardedCollectives(
        session->shardedCollectives_.get());
    session->kernelContext_->setDeviceCollectives(
        session->deviceCollectives_.get());
  }
  CLEAVE_RETURN_IF_ERROR(session->allocateAndInitialize(options));
  CLEAVE_RETURN_IF_ERROR(session->bindEntries());
  if (!session->gpu_)
    session->enableLayoutCache();
  out = std::move(session);
  return Status::success();
}

Status Session::allocateAndInitialize(const Options &options) {
  const Manifest &m = manifest_;
  Generator gen(options.seed);
  globals_.resize(m.globals.size());
  for (size_t i = 0; i < m.globals.size(); ++i) {
    const GlobalDesc &g = m.globals[i];
    if (!globals_[i].allocate(g.bytes))
      return outOfMemory(g.bytes, "global '" + g.name + "'");
    initializeGlobal(g, globals_[i].data(), gen, artifact_->initData());
  }
  // Ranks that were seeded differently (or given different initial values)
  // still start from one model: rank 0's.
  if (communicator_ && communicator_->size() > 1)
    for (size_t i = 0; i < m.globals.size(); ++i)
      communicator_->broadcast(globals_[i].data(), int64_t(m.globals[i].bytes),
                               /*root=*/0);
  artifact_->releaseInitData();
  if (m.kind == ArtifactKind::Inference) {
    microSteps_ = &noCounters_[0];
    step_ = &noCounters_[1];
  } else {
    microSteps_ =
        reinterpret_cast<int64_t *>(globals_[m.microStepsGlobal].data());
    step_ = reinterpret_cast<int64_t *>(globals_[m.stepGlobal].data());
  }

  inputs_.resize(m.inputs.size());
  inputPtrs_.resize(m.inputs.size());
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    if (!inputs_[i].allocate(m.inputs[i].bytes))
      return outOfMemory(m.inputs[i].bytes, "input '" + m.inputs[i].name + "'");
    inputPtrs_[i] = inputs_[i].data();
  }
  sliceData_.resize(m.userInputs.size());
  sliceBytes_.resize(m.userInputs.size());

  if (!hyperSlots_.allocate(m.hypers.size() * alignment_))
    return outOfMemory(m.hypers.size() * alignment_, "hyperparameters");
  if (gpu_)
    CLEAVE_RETURN_IF_ERROR(allocateOnDevice());
  hyperValues_.resize(m.hypers.size());
  for (size_t i = 0; i < m.hypers.size(); ++i)
    storeHyper(i, m.hypers[i].defaultValue);
  lrHyper_ = m.findHyper("lr");
  if (gpu_) {
    // The initial values go up once; creation waits for them so that a GPU
    // failure is reported here.
    CLEAVE_RETURN_IF_ERROR(pushState());
  }
  return Status::success();
}

void Session::enableLayoutCache() {
  // The session keeps the cache's rules (KernelContext::enableLayoutCache):
  // parameters change only in apply_step (bracketed by run()) and through
  // writeGlobal and loadCheckpoint, which tell the context; micro_step only
  // adds into accumulators (train.accumulate), and everything else that
  // reads or writes them settles first.
  std::vector<BufferRange> parameters, accumulators;
  for (size_t i = 0; i < manifest_.globals.size(); ++i) {
    const GlobalDesc &g = manifest_.globals[i];
    BufferRange range{globals_[i].data(), g.bytes};
    if (g.kind == GlobalKind::Param)
      parameters.push_back(range);
    else if (g.kind == GlobalKind::Accumulator)
      accumulators.push_back(range);
  }
  kernelContext_->enableLayoutCache(std::move(parameters),
                                    std::move(accumulators));
}

Status Session::allocateOnDevice() {
  const Manifest &m = manifest_;
  deviceGlobals_.resize(m.globals.size());
  for (size_t i = 0; i < m.globals.size(); ++i)
    CLEAVE_RETURN_IF_ERROR(gpu_->allocate(m.globals[i].bytes,
                                          "global '" + m.globals[i].name + "'",
                                          deviceGlobals_[i]));
  for (int slot = 0; slot < 2; ++slot) {
    deviceInputs_[slot].resize(m.inputs.size());
    staging_[slot].resize(m.inputs.size());
  }
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const std::string what = "input '" + m.inputs[i].name + "'";
    for (int slot = 0; slot < 2; ++slot) {
      CLEAVE_RETURN_IF_ERROR(
          gpu_->allocate(m.inputs[i].bytes, what, deviceInputs_[slot][i]));
      void *p = nullptr;
      CLEAVE_RETURN_IF_ERROR(gpu_->allocatePinned(m.inputs[i].bytes, what, p));
      staging_[slot][i] = static_cast<unsigned char *>(p);
    }
  }
  CLEAVE_RETURN_IF_ERROR(gpu_->allocate(m.hypers.size() * alignment_,
                                        "hyperparameters", deviceHypers_));
  return reserveLossSlots(1);
}

Status Session::reserveLossSlots(size_t slots) {
  if (slots <= lossCapacity_)
    return Status::success();
  // The old slots stay allocated (the GPU owns them until the session
  // ends): a copy into them may still be in flight.
  size_t capacity = std::max(slots, 2 * lossCapacity_);
  void *p = nullptr;
  CLEAVE_RETURN_IF_ERROR(
      gpu_->allocatePinned(capacity * sizeof(double), "the losses", p));
  lossSlots_ = static_cast<unsigned char *>(p);
  lossCapacity_ = capacity;
  return Status::success();
}

Status Session::pushState() {
  const Manifest &m = manifest_;
  for (size_t i = 0; i < m.globals.size(); ++i)
    CLEAVE_RETURN_IF_ERROR(gpu_->upload(deviceGlobals_[i], globals_[i].data(),
                                        m.globals[i].bytes));
  CLEAVE_RETURN_IF_ERROR(gpu_->upload(deviceHypers_, hyperSlots_.data(),
                                      m.hypers.size() * alignment_));
  return gpu_->synchronize();
}

Status Session::pullGlobals() const {
  const Manifest &m = manifest_;
  const int64_t microSteps = *microSteps_, step = *step_;
  for (size_t i = 0; i < m.globals.size(); ++i)
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->download(
        globals_[i].data(), deviceGlobals_[i], m.globals[i].bytes)));
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->synchronize()));
  // The entries advance the counters on the device; the session counts
  // the same steps on the host. They must agree.
  if (*microSteps_ != microSteps || *step_ != step) {
    Status error = makeError(
        CLEAVE_INTERNAL, artifact_->path(), ": on ", gpu_->description(),
        " train.micro_steps is ", *microSteps_, " and train.step ", *step_,
        ", the session counted ", microSteps, " and ", step,
        " (the entry points do not advance them as the ABI says)");
    *microSteps_ = microSteps;
    *step_ = step;
    return noteDeviceError(error);
  }
  return Status::success();
}

Status Session::noteDeviceError(Status error) const {
  if (!error.ok() && failure_.ok())
    failure_ = error;
  return error;
}

std::string Session::deviceDescription() const {
  return gpu_ ? gpu_->description() : std::string("the CPU");
}

void Session::storeHyper(size_t index, double value) {
  hyperValues_[index] = value;
  void *slot = hyperSlots_.data() + index * alignment_;
  if (manifest_.dtype == DType::F64)
    *static_cast<double *>(slot) = value;
  else
    *static_cast<float *>(slot) = static_cast<float>(value);
  if (!gpu_ || !deviceHypers_)
    return;
  // A fill takes its value when it is enqueued, so the new value reaches
  // the device in stream order, after the work that read the old one.
  uint32_t words[2];
  size_t count = manifest_.dtype == DType::F64 ? 2 : 1;
  std::memcpy(words, slot, count * 4);
  auto *dst = static_cast<unsigned char *>(deviceHypers_) + index * alignment_;
  for (size_t w = 0; w < count; ++w)
    if (Status s = gpu_->fill32(dst + 4 * w, words[w], 1); !s.ok()) {
      // storeHyper has callers that cannot fail; the session is unusable
      // from here, and says why at its next call.
      (void)noteDeviceError(s);
      return;
    }
}

Status Session::bindEntries() {
  const Manifest &m = manifest_;
  // Entries never run concurrently, so they share one scratch area, sized for
  // the hungriest entry.
  auto aligned = [&](uint64_t bytes) {
    return gpu_ ? deviceAlignedSize(bytes) : alignedSize(bytes);
  };
  size_t scratchBytes = 0;
  for (const EntryDesc &e : m.entries) {
    size_t total = 0;
    for (const ArgDesc &a : e.args)
      if (a.role == ArgRole::Scratch)
        total += aligned(a.scratchBytes);
    scratchBytes = std::max(scratchBytes, total);
  }
  if (gpu_)
    CLEAVE_RETURN_IF_ERROR(
        gpu_->allocate(scratchBytes, "scratch", deviceScratch_));
  else if (!scratch_.allocate(scratchBytes))
    return outOfMemory(scratchBytes, "scratch");

  for (size_t k = 0; k < kNumEntryKinds; ++k) {
    auto kind = static_cast<EntryKind>(k);
    const EntryDesc &e = m.entry(kind);
    if (!e.present)
      continue;
    Binding &b = bindings_[k];
    b.fn = artifact_->entry(kind);
    b.outputs.resize(e.outputs.size());
    for (size_t i = 0; i < e.outputs.size(); ++i) {
      const std::string what = std::string("output '") + e.outputs[i].name +
                               "' of " + entryName(kind);
      if (!b.outputs[i].allocate(e.outputs[i].bytes))
        return outOfMemory(e.outputs[i].bytes, what);
      if (gpu_) {
        b.deviceOutputs.emplace_back();
        CLEAVE_RETURN_IF_ERROR(
            gpu_->allocate(e.outputs[i].bytes, what, b.deviceOutputs.back()));
      }
    }
    auto *hypers =
        static_cast<unsigned char *>(gpu_ ? deviceHypers_ : hyperSlots_.data());
    auto *scratch =
        static_cast<unsigned char *>(gpu_ ? deviceScratch_ : scratch_.data());
    size_t scratchOffset = 0;
    for (const ArgDesc &a : e.args) {
      void *ptr = nullptr;
      switch (a.role) {
      case ArgRole::Input:
        b.inputArgs.emplace_back(b.args.size(), a.index);
        ptr = gpu_ ? deviceInputs_[0][a.index] : inputs_[a.index].data();
        break;
      case ArgRole::Output:
        ptr = gpu_ ? b.deviceOutputs[a.index] : b.outputs[a.index].data();
        break;
      case ArgRole::Global:
        ptr = gpu_ ? deviceGlobals_[a.index] : globals_[a.index].data();
        break;
      case ArgRole::Hyper:
        ptr = hypers + a.index * alignment_;
        break;
      case ArgRole::Scratch:
        ptr = scratch + scratchOffset;
        scratchOffset += aligned(a.scratchBytes);
        break;
      }
      b.args.push_back(ptr);
    }
  }
  return Status::success();
}

int Session::rank() const { return communicator_ ? communicator_->rank() : 0; }
int Session::numRanks() const {
  return communicator_ ? communicator_->size() : 1;
}

uint64_t Session::totalBytesSent() const {
  return communicator_ ? communicator_->bytesSent() : 0;
}

Status Session::sumAcrossRanks(double *values, size_t count) {
  if (count > size_t(std::numeric_limits<int64_t>::max()))
    return makeError(CLEAVE_INVALID_ARGUMENT, "count ", count, " is too large");
  if (communicator_)
    communicator_->allreduceSum(values, int64_t(count));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Running entry points
//===----------------------------------------------------------------------===//

Status Session::checkBatch(EntryKind kind, const cleave_batch &batch,
                           int64_t maxSamples) const {
  const Manifest &m = manifest_;
  const EntryDesc &e = m.entry(kind);
  if (batch.num_inputs != m.userInputs.size()) {
    std::string names;
    for (size_t idx : m.userInputs)
      names += (names.empty() ? "" : ", ") + m.inputs[idx].name;
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: ", batch.num_inputs,
                     " inputs given, the artifact takes ", m.userInputs.size(),
                     " (", names, ")");
  }
  if (batch.samples < 1 || batch.samples > maxSamples)
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: samples is ",
                     batch.samples, ", expected 1 to ", maxSamples);
  if (batch.num_inputs > 0 && (!batch.data || !batch.bytes))
    return makeError(CLEAVE_INVALID_ARGUMENT,
                     "batch: data and bytes must not be NULL");
  for (size_t j = 0; j < m.userInputs.size(); ++j) {
    const InputDesc &in = m.inputs[m.userInputs[j]];
    if (!e.usesInput[m.userInputs[j]])
      continue;
    if (!batch.data[j])
      return makeError(CLEAVE_INVALID_ARGUMENT, "batch: data[", j, "] ('",
                       in.name, "') is NULL but ", entryName(kind),
                       " reads it");
    if (in.rowBytes != 0 &&
        uint64_t(batch.samples) >
            std::numeric_limits<uint64_t>::max() / in.rowBytes)
      return makeError(CLEAVE_INVALID_ARGUMENT, "batch: samples is ",
                       batch.samples, ", too many for input '", in.name, "'");
    uint64_t expected = uint64_t(batch.samples) * in.rowBytes;
    if (batch.bytes[j] != expected)
      return makeError(CLEAVE_INVALID_ARGUMENT, "batch: bytes[", j, "] ('",
                       in.name, "') is ", batch.bytes[j], ", expected ",
                       batch.samples, " samples x ", in.rowBytes,
                       " bytes = ", expected);
    if (in.indexBound > 0)
      CLEAVE_RETURN_IF_ERROR(checkIndices(in, batch.data[j], expected));
  }
  return Status::success();
}

namespace {
/// The position and value of the first element of `data` outside
/// [0, bound), if any.
template <typename T>
std::optional<std::pair<size_t, int64_t>>
firstOutOfRange(const void *data, size_t count, int64_t bound,
                std::optional<int64_t> ignore) {
  const T *v = static_cast<const T *>(data);
  for (size_t i = 0; i < count; ++i)
    if ((v[i] < 0 || int64_t(v[i]) >= bound) &&
        !(ignore && int64_t(v[i]) == *ignore))
      return std::make_pair(i, int64_t(v[i]));
  return std::nullopt;
}

/// Token weights: 1 for each token of the first `samples` rows whose label
/// is not `ignore`, 0 for the rest; returns how many are 1.
template <typename Label, typename Weight>
int64_t fillTokenWeightsOf(const void *labels, void *weights, int64_t rows,
                         int64_t tokensPerRow, int64_t samples,
                         int64_t ignore) {
  const Label *l = static_cast<const Label *>(labels);
  Weight *w = static_cast<Weight *>(weights);
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < tokensPerRow; ++t) {
      int64_t i = r * tokensPerRow + t;
      bool real = r < samples && int64_t(l[i]) != ignore;
      w[i] = real ? Weight(1) : Weight(0);
      count += real;
    }
  return count;
}
} // namespace

Status Session::checkIndices(const InputDesc &in, const void *data,
                             size_t bytes) const {
  // Generated code clamps indices (it never reads out of bounds); a value
  // outside the range would silently train on another class or row.
  auto bad = in.dtype == DType::I64
                 ? firstOutOfRange<int64_t>(data, bytes / 8, in.indexBound,
                                            in.ignoreIndex)
                 : firstOutOfRange<int32_t>(data, bytes / 4, in.indexBound,
                                            in.ignoreIndex);
  if (!bad)
    return Status::success();
  return makeError(CLEAVE_INVALID_ARGUMENT, "batch: input '", in.name,
                   "' element ", bad->first, " is ", bad->second,
                   ", expected 0 to ", in.indexBound - 1,
                   in.ignoreIndex
                       ? " or the ignore index " +
                             std::to_string(*in.ignoreIndex)
                       : std::string(),
                   " (a class label or an index into ", in.indexBound,
                   " rows)");
}

Status Session::fillTokenWeights(const void *labels, void *weights,
                                 int64_t samples, EntryKind kind) {
  const Manifest &m = manifest_;
  const InputDesc &l = m.inputs[*m.tokenLabelsInput];
  const InputDesc &w = m.inputs[*m.sampleWeightsInput];
  const int64_t b = m.microBatch, perRow = l.numElements / b;
  const int64_t ignore = *l.ignoreIndex;
  const bool wide = l.dtype == DType::I64, f64 = w.dtype == DType::F64;
  lastCount_ =
      wide ? (f64 ? fillTokenWeightsOf<int64_t, double>(
                        labels, weights, b, perRow, samples, ignore)
                  : fillTokenWeightsOf<int64_t, float>(labels, weights, b,
                                                       perRow, samples, ignore))
           : (f64 ? fillTokenWeightsOf<int32_t, double>(
                        labels, weights, b, perRow, samples, ignore)
                  : fillTokenWeightsOf<int32_t, float>(
                        labels, weights, b, perRow, samples, ignore));
  weightsSamples_ = -1;
  if (lastCount_ == 0 && kind == EntryKind::MicroStep)
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: every token of '",
                     l.name, "' is the ignore index ", ignore,
                     ": the micro-batch has nothing to learn from");
  return Status::success();
}

Status Session::stage(EntryKind kind, const cleave_batch &batch) {
  const Manifest &m = manifest_;
  int64_t samples = batch.samples;
  int64_t b = m.microBatch;
  CLEAVE_RETURN_IF_ERROR(checkBatch(kind, batch, b));
  if (kind == EntryKind::MicroStep && samples < b && !m.sampleWeightsInput)
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: samples is ", samples,
                     " but the artifact has no sample-weights input, so "
                     "every micro-batch must have exactly ",
                     b, " samples");
  if (gpu_)
    return stageOnDevice(kind, batch);
  const EntryDesc &e = m.entry(kind);
  for (size_t j = 0; j < m.userInputs.size(); ++j) {
    size_t idx = m.userInputs[j];
    if (!e.usesInput[idx])
      continue;
    const void *src = batch.data[j];
    if (samples == b && isAligned(src)) {
      // Entry points never write their inputs (ABI).
      inputPtrs_[idx] = const_cast<void *>(src);
      continue;
    }
    unsigned char *dst = inputs_[idx].data();
    if (batch.bytes[j] > 0)
      std::memcpy(dst, src, batch.bytes[j]);
    // Padding rows repeat the last real sample rather than being zero: a
    // model that is not finite on an all-zero row (a log or a division of
    // its input) would otherwise turn the whole micro-batch into NaN, since
    // the sample weight 0 multiplies, and 0 * NaN is NaN.
    size_t row = m.inputs[idx].rowBytes;
    const unsigned char *last =
        static_cast<const unsigned char *>(src) + size_t(samples - 1) * row;
    for (int64_t r = samples; r < b; ++r)
      std::memcpy(dst + size_t(r) * row, last, row);
    inputPtrs_[idx] = dst;
  }
  if (m.sampleWeightsInput && m.tokenLabelsInput &&
      e.usesInput[*m.sampleWeightsInput]) {
    // One weight per token, from this micro-batch's labels: the window is
    // normalised by its number of real tokens.
    CLEAVE_RETURN_IF_ERROR(
        fillTokenWeights(inputPtrs_[*m.tokenLabelsInput],
                         inputs_[*m.sampleWeightsInput].data(), samples, kind));
  } else if (m.sampleWeightsInput && e.usesInput[*m.sampleWeightsInput] &&
             weightsSamples_ != samples) {
    void *w = inputs_[*m.sampleWeightsInput].data();
    for (int64_t i = 0; i < b; ++i) {
      double v = i < samples ? 1.0 : 0.0;
      if (m.inputs[*m.sampleWeightsInput].dtype == DType::F64)
        static_cast<double *>(w)[i] = v;
      else
        static_cast<float *>(w)[i] = float(v);
    }
    weightsSamples_ = samples;
  }
  if (!m.tokenLabelsInput)
    lastCount_ = samples;
  Binding &binding = bindings_[static_cast<size_t>(kind)];
  for (const auto &[arg, input] : binding.inputArgs)
    binding.args[arg] = inputPtrs_[input];
  return Status::success();
}

void copyRowsPadded(unsigned char *dst, const void *src, int64_t samples,
                    int64_t rows, size_t rowBytes, int threads) {
  const auto *from = static_cast<const unsigned char *>(src);
  const size_t bytes = samples > 0 ? size_t(samples) * rowBytes : 0;
  if (bytes < kParallelCopyBytes) {
    if (bytes > 0)
      std::memcpy(dst, from, bytes);
  } else {
    // Chunks of 256 KiB, a static share each: a bandwidth-bound copy.
    constexpr size_t kChunk = size_t(256) << 10;
    const int64_t chunks = int64_t((bytes + kChunk - 1) / kChunk);
    const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const size_t begin = size_t(c) * kChunk;
      std::memcpy(dst + begin, from + begin, std::min(kChunk, bytes - begin));
    }
  }
  if (samples <= 0)
    return;
  const unsigned char *last = from + size_t(samples - 1) * rowBytes;
  for (int64_t r = samples; r < rows; ++r)
    std::memcpy(dst + size_t(r) * rowBytes, last, rowBytes);
}

Status Session::stageOnDevice(EntryKind kind, const cleave_batch &batch) {
  const Manifest &m = manifest_;
  const EntryDesc &e = m.entry(kind);
  const int64_t samples = batch.samples, b = m.microBatch;
  // The copies out of this set of pinned buffers were enqueued two batches
  // ago; usually they are long done and this does not wait.
  const int slot = stagingSlot_;
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->waitEvent(slot)));
  // The copies into the set's device buffers wait, on the GPU, for the
  // entry that read them two batches ago.
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->beginInputCopy(slot)));
  std::vector<void *> &device = deviceInputs_[slot];
  for (size_t j = 0; j < m.userInputs.size(); ++j) {
    size_t idx = m.userInputs[j];
    if (!e.usesInput[idx])
      continue;
    const InputDesc &in = m.inputs[idx];
    copyRowsPadded(staging_[slot][idx], batch.data[j], samples, b, in.rowBytes,
                   numThreads_);
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(
        gpu_->uploadInput(device[idx], staging_[slot][idx], in.bytes)));
  }
  if (m.sampleWeightsInput && m.tokenLabelsInput &&
      e.usesInput[*m.sampleWeightsInput]) {
    // One weight per token, from the staged labels (stage() says why).
    CLEAVE_RETURN_IF_ERROR(fillTokenWeights(
        staging_[slot][*m.tokenLabelsInput],
        staging_[slot][*m.sampleWeightsInput], samples, kind));
    size_t idx = *m.sampleWeightsInput;
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->uploadInput(
        device[idx], staging_[slot][idx], m.inputs[idx].bytes)));
    deviceWeightsSamples_[slot] = -1;
  } else if (m.sampleWeightsInput && e.usesInput[*m.sampleWeightsInput] &&
             deviceWeightsSamples_[slot] != samples) {
    size_t idx = *m.sampleWeightsInput;
    unsigned char *w = staging_[slot][idx];
    for (int64_t i = 0; i < b; ++i) {
      double v = i < samples ? 1.0 : 0.0;
      if (m.inputs[idx].dtype == DType::F64)
        reinterpret_cast<double *>(w)[i] = v;
      else
        reinterpret_cast<float *>(w)[i] = float(v);
    }
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(
        gpu_->uploadInput(device[idx], w, m.inputs[idx].bytes)));
    deviceWeightsSamples_[slot] = samples;
  }
  if (!m.tokenLabelsInput)
    lastCount_ = samples;
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->endInputCopy(slot)));
  stagedSet_ = slot;
  stagingSlot_ = 1 - slot;
  return Status::success();
}

Status Session::enqueueLossCopy() {
  const TensorDesc &loss =
      manifest_.entry(EntryKind::MicroStep).outputs[manifest_.lossOutput];
  if (lossCount_ >= lossCapacity_)
    CLEAVE_RETURN_IF_ERROR(reserveLossSlots(lossCount_ + 1));
  const Binding &b = bindings_[size_t(EntryKind::MicroStep)];
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(
      gpu_->download(lossSlots_ + lossCount_ * sizeof(double),
                     b.deviceOutputs[manifest_.lossOutput], loss.bytes)));
  ++lossCount_;
  lossPending_ = true;
  return Status::success();
}

double Session::lastLoss() const {
  if (!lossPending_)
    return lastLoss_;
  lossPending_ = false;
  if (!noteDeviceError(gpu_->synchronize()).ok()) {
    lastLoss_ = std::numeric_limits<double>::quiet_NaN();
    return lastLoss_;
  }
  const DType dtype =
      manifest_.entry(EntryKind::MicroStep).outputs[manifest_.lossOutput].dtype;
  double sum = 0.0;
  for (size_t i = 0; i < lossCount_; ++i)
    sum += readScalar(dtype, lossSlots_ + i * sizeof(double));
  lastLoss_ = sum / double(lossSamples_);
  return lastLoss_;
}

Status Session::run(EntryKind kind) {
  if (gpu_)
    return runOnDevice(kind);
  if (numThreads_ > 0)
    omp_set_num_threads(numThreads_);
  Binding &b = bindings_[static_cast<size_t>(kind)];
  // apply_step reads the accumulators and writes the parameters.
  const bool update = kind == EntryKind::ApplyStep;
  if (update) {
    Status settled = kernelContext_->beginParameterUpdate();
    if (!settled.ok()) {
      failure_ =
          settled.withContext(artifact_->path() + ": " + entryName(kind));
      return failure_;
    }
  }
  const uint64_t before = totalBytesSent();
  b.fn(kernelContext_.get(), b.args.data());
  windowBytes_ += totalBytesSent() - before;
  if (update)
    kernelContext_->endParameterUpdate();
  return entryResult(kind);
}

namespace {
std::string ordinalSuffix(int n) {
  const int tens = n % 100, units = n % 10;
  if (tens >= 11 && tens <= 13)
    return "th";
  return units == 1 ? "st" : units == 2 ? "nd" : units == 3 ? "rd" : "th";
}
} // namespace

Status Session::openGpu(const Options &options) {
  const std::string &path = artifact_->path();
  const Manifest &m = manifest_;
  int ordinal = options.deviceOrdinal;
  std::string placement;
  Status placed = Status::success();
  const bool several = communicator_ && numRanks() > 1;
  if (several) {
    // One GPU per process: a rank takes the GPU of its index among the
    // job's processes on the same machine.
    Communicator::NodeRanks node = communicator_->nodeRanks();
    if (ordinal == kAutoDeviceOrdinal) {
      ordinal = node.rank;
      placement = "rank " + std::to_string(communicator_->rank()) +
                  " is the " + std::to_string(node.rank + 1) +
                  ordinalSuffix(node.rank + 1) + " of " +
                  std::to_string(node.size) + " processes on " + node.host +
                  ", and each takes a GPU of its own";
    } else if (node.size > 1) {
      placed = makeError(
          CLEAVE_FAILED_PRECONDITION, path, ": ", node.size,
          " ranks of the job run on ", node.host,
          " and all would use GPU ", ordinal,
          "; NCCL needs one GPU per rank (cleave-train --device=cuda, or "
          "device ordinal -1 in the API, gives each rank its own)");
    }
  } else if (ordinal == kAutoDeviceOrdinal) {
    ordinal = 0;
  }
  // Before anything is allocated: on a machine without a driver, a GPU or
  // code for its architecture this is the one line the caller gets.
  Status opened = placed;
  if (opened.ok()) {
    opened = Gpu::open(ordinal, m.gpuArches, m.ptxArch, gpu_);
    if (opened.ok())
      opened = checkDeviceMemory();
    if (!opened.ok()) {
      opened = opened.withContext(path);
      if (!placement.empty())
        opened = Status(opened.code(),
                        opened.message() + " (" + placement + ")");
    }
  }
  if (several)
    opened = agreeAcrossRanks(*communicator_, opened, "opening a GPU");
  CLEAVE_RETURN_IF_ERROR(opened);
  alignment_ = kDeviceAlignment;
  if (several) {
    Status joined = gpu_->createCollectives(*communicator_,
                                            deviceCollectives_);
    if (!joined.ok())
      return joined.withContext(path + ": data-parallel training on " +
                                gpu_->description());
  }
  return Status::success();
}

/// A cuda session's memory budget is the device's free memory when it is
/// created (docs/design/memory.md): an artifact whose memory report needs
/// more is refused before anything is allocated, with both numbers; one
/// that fits says, in a note, how much of it it takes.
Status Session::checkDeviceMemory() {
  const Manifest &m = manifest_;
  // Hand-written artifacts (tests) have no report to check.
  if (!m.memoryTotal)
    return Status::success();
  size_t free = 0, total = 0;
  CLEAVE_RETURN_IF_ERROR(gpu_->memoryInfo(free, total));
  auto mib = [](uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / (1 << 20));
    return std::string(text);
  };
  const std::string available =
      mib(free) + " free of " + mib(total) + " on " + gpu_->description();
  const uint64_t need = uint64_t(*m.memoryTotal);
  if (need > free)
    return makeError(
        CLEAVE_OUT_OF_MEMORY, "a session needs ", mib(need),
        " of device memory (the artifact's memory report), more than the ",
        available,
        "; compile it to fit: cleave-compile --target=cuda --global-batch=G "
        "--memory-budget=",
        free >> 20, "MiB chooses the micro-batch and what to recompute");
  notes_.push_back("device memory: the session needs " + mib(need) +
                   " (the artifact's memory report, without the kernel "
                   "modules and the libraries' workspaces) of the " +
                   available + " when it was created");
  return Status::success();
}

Status Session::entryResult(EntryKind kind) {
  // A kernel that failed recorded why and turned the rest of the entry's
  // kernel calls into no-ops; the entry's own code ran on regardless, so
  // the globals are now part old, part new.
  Status error = kernelContext_->failed()
                     ? kernelContext_->error()
                     : KernelContext::takeErrorWithoutContext();
  if (error.ok())
    return Status::success();
  kernelContext_->clearError();
  failure_ = error.withContext(artifact_->path() + ": " + entryName(kind));
  return failure_;
}

Status Session::runOnDevice(EntryKind kind) {
  const size_t k = static_cast<size_t>(kind);
  Binding &b = bindings_[k];
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->makeCurrent()));
  // An entry that reads inputs reads the set of the batch staged last, once
  // its copies are done; the next copy into the set waits for the entry.
  const bool readsInputs = !b.inputArgs.empty();
  const int set = readsInputs ? stagedSet_ : 0;
  if (readsInputs) {
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->useInputs(set)));
    for (const auto &[arg, input] : b.inputArgs)
      b.args[arg] = deviceInputs_[set][input];
  }
  Status status = enqueueOnDevice(kind, set);
  if (readsInputs)
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->doneWithInputs(set)));
  return status;
}

Status Session::enqueueOnDevice(EntryKind kind, int set) {
  const size_t k = static_cast<size_t>(kind);
  Binding &b = bindings_[k];
  auto enqueue = [&] {
    // Launch errors of the artifact's kernels go to this context.
    GpuLaunchScope scope(kernelContext_.get());
    b.fn(kernelContext_.get(), b.args.data());
  };
  auto launchFailed = [&](const Status &status) {
    failure_ = status.withContext(artifact_->path() + ": " + entryName(kind));
    return failure_;
  };
  void *&graph = graphs_[k][size_t(set)];
  if (graph) {
    Status launched = gpu_->launchGraph(graph);
    return launched.ok() ? Status::success() : launchFailed(launched);
  }
  // The first runs load the kernel modules and let the libraries set
  // themselves up; then the entry's work (it only enqueues, on arguments
  // that never change for an input set) is captured once per set and
  // replayed as one graph launch. eval_step runs directly: it is not in the
  // training loop.
  const bool capture = useGraphs_ && kind != EntryKind::EvalStep &&
                       !noGraph_[k] && ++directRuns_[k] > kGraphWarmupRuns;
  // From now on the entry runs directly; said once, with the reason, since
  // it costs every step a launch per kernel.
  auto runWithoutGraph = [&](std::string_view reason) {
    noGraph_[k] = true;
    notes_.push_back(std::string(entryName(kind)) +
                     " could not be captured into a CUDA graph and runs "
                     "directly from now on (every kernel launched on each "
                     "step; a graph captured before still replays): " +
                     std::string(reason));
  };
  if (!capture) {
    enqueue();
    return entryResult(kind);
  }
  if (Status began = gpu_->beginCapture(); !began.ok()) {
    runWithoutGraph(began.message());
    enqueue();
    return entryResult(kind);
  }
  enqueue();
  void *captured = nullptr;
  Status ended = gpu_->endCapture(captured);
  if (ended.ok() && !kernelContext_->failed()) {
    graph = captured;
    Status launched = gpu_->launchGraph(graph);
    return launched.ok() ? Status::success() : launchFailed(launched);
  }
  // Nothing of the entry ran, and a call that failed during the capture
  // may have failed because of it: the entry runs directly, now and from
  // now on, and a real error shows again.
  std::string reason = !ended.ok() ? ended.message() : std::string();
  if (kernelContext_->failed())
    reason += std::string(reason.empty() ? "" : "; ") +
              "a library call failed while it was captured (" +
              kernelContext_->error().message() + ")";
  kernelContext_->clearError();
  (void)KernelContext::takeErrorWithoutContext();
  runWithoutGraph(reason);
  enqueue();
  return entryResult(kind);
}

Status Session::checkUsable() const {
  if (failure_.ok())
    return Status::success();
  return makeError(CLEAVE_FAILED_PRECONDITION,
                   "the session is unusable since an entry point failed (",
                   failure_.message(),
                   "); destroy it or load a checkpoint into it");
}

Status Session::checkTraining(const char *what) const {
  if (manifest_.kind != ArtifactKind::Inference)
    return Status::success();
  return makeError(CLEAVE_FAILED_PRECONDITION, artifact_->path(),
                   ": an inference artifact (compiled forward-only) cannot ",
                   what, "; it has eval_step alone");
}

Status Session::microStep(const cleave_batch &batch) {
  CLEAVE_RETURN_IF_ERROR(checkTraining("run a micro-step"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  CLEAVE_RETURN_IF_ERROR(stage(EntryKind::MicroStep, batch));
  int64_t before = *microSteps_;
  CLEAVE_RETURN_IF_ERROR(run(EntryKind::MicroStep));
  if (gpu_) {
    // The counters advance on the device; the session counts along rather
    // than waiting for them (pullGlobals checks they agree).
    ++*microSteps_;
    if (!inTrainBatch_) {
      lossCount_ = 0;
      lossSamples_ = 0;
    }
    lossSamples_ += lastCount_;
    CLEAVE_RETURN_IF_ERROR(enqueueLossCopy());
    if (*microSteps_ >= accumulate_)
      return apply();
    return Status::success();
  }
  if (*microSteps_ != before + 1)
    return makeError(CLEAVE_INTERNAL, artifact_->path(),
                     ": micro_step changed train.micro_steps from ", before,
                     " to ", *microSteps_, " (expected ", before + 1, ")");
  const Binding &b = bindings_[size_t(EntryKind::MicroStep)];
  lastLossSum_ = readScalar(
      manifest_.entry(EntryKind::MicroStep).outputs[manifest_.lossOutput].dtype,
      b.outputs[manifest_.lossOutput].data());
  lastLoss_ = lastLossSum_ / double(lastCount_);
  if (*microSteps_ >= accumulate_)
    return apply();
  return Status::success();
}

Status Session::apply() {
  int64_t stepBefore = *step_;
  // Also here, not only after each apply: train.step may have been written
  // through writeGlobal since.
  syncScheduledLr();
  CLEAVE_RETURN_IF_ERROR(run(EntryKind::ApplyStep));
  lastWindowBytes_ = windowBytes_;
  windowBytes_ = 0;
  // The apply step's verdict on the window: 0, or which sum was not finite
  // (its update was skipped and train.step left alone).
  int64_t verdict = 0;
  if (const std::optional<size_t> g = manifest_.nonfiniteGlobal) {
    if (gpu_) {
      CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->download(
          globals_[*g].data(), deviceGlobals_[*g], sizeof(int64_t))));
      CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->synchronize()));
    }
    std::memcpy(&verdict, globals_[*g].data(), sizeof(verdict));
  }
  const int64_t advance = verdict == 0 ? 1 : 0;
  if (gpu_) {
    *microSteps_ = 0;
    *step_ += advance;
  } else {
    if (*microSteps_ != 0)
      return makeError(CLEAVE_INTERNAL, artifact_->path(),
                       ": apply_step left train.micro_steps at ", *microSteps_,
                       " (expected 0)");
    if (*step_ != stepBefore + advance)
      return makeError(CLEAVE_INTERNAL, artifact_->path(),
                       ": apply_step changed train.step from ", stepBefore,
                       " to ", *step_, " (expected ", stepBefore + advance,
                       ")");
  }
  syncScheduledLr();
  if (verdict == 0 || skipNonfinite_)
    return Status::success();
  return nonfiniteWindow(verdict, stepBefore);
}

Status Session::nonfiniteWindow(int64_t verdict, int64_t step) const {
  const Manifest &m = manifest_;
  // The window sums are the accumulators, in manifest order.
  std::string what = "window sum #" + std::to_string(verdict);
  int64_t position = 0;
  for (const GlobalDesc &g : m.globals) {
    if (g.kind != GlobalKind::Accumulator || ++position != verdict)
      continue;
    if (!g.of.empty())
      what = "the gradient of '" + g.of + "'";
    else if (g.name == "train.loss")
      what = "the loss";
    else if (g.name == "train.samples")
      what = "the sample count";
    else
      what = "'" + g.name + "'";
    break;
  }
  // Windows applied so far, this one included: the steps taken and skipped
  // (both counters are checkpointed, so the count survives a resume).
  int64_t skipped = 0;
  if (m.skippedStepsGlobal) {
    if (gpu_) {
      CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->download(
          globals_[*m.skippedStepsGlobal].data(),
          deviceGlobals_[*m.skippedStepsGlobal], sizeof(int64_t))));
      CLEAVE_RETURN_IF_ERROR(noteDeviceError(gpu_->synchronize()));
    }
    std::memcpy(&skipped, globals_[*m.skippedStepsGlobal].data(),
                sizeof(skipped));
  }
  return makeError(CLEAVE_NON_FINITE, artifact_->path(), ": window ",
                   *step_ + skipped, " (optimizer step ", step + 1, "): ", what,
                   " is not finite (NaN or infinite); the step was skipped, "
                   "the parameters and optimizer state are unchanged");
}

Status Session::trainBatch(const cleave_batch &batch, int64_t microSize) {
  const Manifest &m = manifest_;
  CLEAVE_RETURN_IF_ERROR(checkTraining("train"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  if (microSize < 1 || microSize > m.microBatch)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro_size is ", microSize,
                     ", expected 1 to ", m.microBatch,
                     " (the micro-batch size)");
  // The whole batch is checked first so that a bad one trains nothing.
  CLEAVE_RETURN_IF_ERROR(checkBatch(EntryKind::MicroStep, batch,
                                    std::numeric_limits<int64_t>::max()));
  if (microSize < m.microBatch && !m.sampleWeightsInput)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro_size is ", microSize,
                     " but the artifact has no sample-weights input, so "
                     "micro-batches must have exactly ",
                     m.microBatch, " samples");
  if (batch.samples % microSize != 0 && !m.sampleWeightsInput)
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: samples is ",
                     batch.samples, ", not a multiple of micro_size ",
                     microSize,
                     ", and the artifact has no sample-weights "
                     "input to pad the last micro-batch");
  cleave_batch slice{0, batch.num_inputs, sliceData_.data(),
                     sliceBytes_.data()};
  if (gpu_) {
    // One loss slot per micro-batch; summed when the loss is asked for.
    CLEAVE_RETURN_IF_ERROR(
        reserveLossSlots(size_t((batch.samples + microSize - 1) / microSize)));
    lossCount_ = 0;
    lossSamples_ = 0;
    inTrainBatch_ = true;
    Status status;
    for (int64_t start = 0; status.ok() && start < batch.samples;
         start += slice.samples) {
      slice.samples = std::min(microSize, batch.samples - start);
      for (size_t j = 0; j < m.userInputs.size(); ++j) {
        size_t rowBytes = m.inputs[m.userInputs[j]].rowBytes;
        const auto *base = static_cast<const unsigned char *>(batch.data[j]);
        sliceData_[j] = base ? base + size_t(start) * rowBytes : nullptr;
        sliceBytes_[j] = size_t(slice.samples) * rowBytes;
      }
      status = microStep(slice);
    }
    inTrainBatch_ = false;
    lastCount_ = lossSamples_;
    return status;
  }
  double lossSum = 0.0;
  int64_t count = 0;
  // Advancing by the slice, not by microSize, keeps `start` <= samples: an
  // artifact without user inputs accepts any sample count, up to INT64_MAX.
  for (int64_t start = 0; start < batch.samples; start += slice.samples) {
    slice.samples = std::min(microSize, batch.samples - start);
    for (size_t j = 0; j < m.userInputs.size(); ++j) {
      size_t rowBytes = m.inputs[m.userInputs[j]].rowBytes;
      const auto *base = static_cast<const unsigned char *>(batch.data[j]);
      sliceData_[j] = base ? base + size_t(start) * rowBytes : nullptr;
      sliceBytes_[j] = size_t(slice.samples) * rowBytes;
    }
    CLEAVE_RETURN_IF_ERROR(microStep(slice));
    lossSum += lastLossSum_;
    count += lastCount_;
  }
  lastLossSum_ = lossSum;
  lastCount_ = count;
  lastLoss_ = lossSum / double(count);
  return Status::success();
}

Status Session::flush() {
  CLEAVE_RETURN_IF_ERROR(checkTraining("apply a window"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  if (*microSteps_ > 0)
    return apply();
  return Status::success();
}

Status Session::eval(const cleave_batch &batch) {
  if (!manifest_.entry(EntryKind::EvalStep).present)
    return makeError(CLEAVE_FAILED_PRECONDITION, artifact_->path(),
                     ": the artifact has no eval_step entry");
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  CLEAVE_RETURN_IF_ERROR(stage(EntryKind::EvalStep, batch));
  return run(EntryKind::EvalStep);
}

//===----------------------------------------------------------------------===//
// Settings and state
//===----------------------------------------------------------------------===//

Status Session::setAccumulation(int64_t n) {
  CLEAVE_RETURN_IF_ERROR(checkTraining("accumulate"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  if (n < 1)
    return makeError(CLEAVE_INVALID_ARGUMENT, "accumulation count is ", n,
                     ", expected a positive count");
  accumulate_ = n;
  if (*microSteps_ >= accumulate_)
    return apply();
  return Status::success();
}

Status Session::setHyperparameter(std::string_view name, double value) {
  std::optional<size_t> index = manifest_.findHyper(name);
  if (!index)
    return makeError(CLEAVE_NOT_FOUND, "unknown hyperparameter '", name, "'");
  if (!std::isfinite(value))
    return makeError(CLEAVE_INVALID_ARGUMENT, "hyperparameter '", name,
                     "': value must be finite");
  if (lrSchedule_ && index == lrHyper_)
    return makeError(CLEAVE_FAILED_PRECONDITION,
                     "hyperparameter 'lr' follows the session's ",
                     lrScheduleKindName(lrSchedule_->kind),
                     " learning-rate schedule; set a schedule with another "
                     "peak lr, or remove the schedule first");
  storeHyper(*index, value);
  return Status::success();
}

Status Session::setLrSchedule(const cleave_lr_schedule *schedule) {
  if (!schedule) {
    lrSchedule_.reset();
    return Status::success();
  }
  if (!lrHyper_)
    return makeError(CLEAVE_NOT_FOUND, artifact_->path(),
                     ": the model has no hyperparameter 'lr' for a "
                     "learning-rate schedule to set");
  cleave_lr_schedule s = *schedule;
  if (std::isnan(s.lr))
    s.lr = hyperValues_[*lrHyper_];
  CLEAVE_RETURN_IF_ERROR(validateLrSchedule(s));
  lrSchedule_ = s;
  syncScheduledLr();
  return Status::success();
}

void Session::syncScheduledLr() {
  if (lrSchedule_)
    storeHyper(*lrHyper_, lrScheduleValue(*lrSchedule_, *step_));
}

Status Session::hyperparameter(std::string_view name, double &value) const {
  std::optional<size_t> index = manifest_.findHyper(name);
  if (!index)
    return makeError(CLEAVE_NOT_FOUND, "unknown hyperparameter '", name, "'");
  value = hyperValues_[*index];
  return Status::success();
}

Status Session::findGlobalOfSize(std::string_view name, size_t bytes,
                                 size_t &index) const {
  std::optional<size_t> found = manifest_.findGlobal(name);
  if (!found)
    return makeError(CLEAVE_NOT_FOUND, "unknown global '", name, "'");
  const GlobalDesc &g = manifest_.globals[*found];
  if (bytes != g.bytes)
    return makeError(CLEAVE_INVALID_ARGUMENT, "global '", name, "' has ",
                     g.bytes, " bytes, not ", bytes);
  index = *found;
  return Status::success();
}

Status Session::readGlobal(std::string_view name, void *dst,
                           size_t bytes) const {
  size_t index = 0;
  CLEAVE_RETURN_IF_ERROR(findGlobalOfSize(name, bytes, index));
  if (gpu_ && bytes > 0) {
    CLEAVE_RETURN_IF_ERROR(checkUsable());
    CLEAVE_RETURN_IF_ERROR(
        noteDeviceError(gpu_->download(dst, deviceGlobals_[index], bytes)));
    return noteDeviceError(gpu_->synchronize());
  }
  if (manifest_.globals[index].kind == GlobalKind::Accumulator)
    CLEAVE_RETURN_IF_ERROR(settleAccumulators());
  if (bytes > 0)
    std::memcpy(dst, globals_[index].data(), bytes);
  return Status::success();
}

Status Session::settleAccumulators() const {
  Status settled = kernelContext_->settleAccumulators();
  if (!settled.ok())
    failure_ = settled.withContext(artifact_->path());
  return settled;
}

Status Session::writeGlobal(std::string_view name, const void *src,
                            size_t bytes) {
  size_t index = 0;
  CLEAVE_RETURN_IF_ERROR(findGlobalOfSize(name, bytes, index));
  if (gpu_)
    CLEAVE_RETURN_IF_ERROR(checkUsable());
  if (manifest_.globals[index].kind == GlobalKind::Accumulator)
    CLEAVE_RETURN_IF_ERROR(settleAccumulators());
  if (bytes > 0)
    std::memcpy(globals_[index].data(), src, bytes);
  kernelContext_->parametersChanged();
  if (gpu_ && bytes > 0) {
    // The host copy is what goes up (counters stay in step with it), and
    // it must not change before the copy is done.
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(
        gpu_->upload(deviceGlobals_[index], globals_[index].data(), bytes)));
    return noteDeviceError(gpu_->synchronize());
  }
  return Status::success();
}

Status Session::output(std::string_view entry, std::string_view name,
                       const void *&data, size_t &bytes) const {
  std::optional<EntryKind> kind = parseEntryName(entry);
  if (!kind || !manifest_.entry(*kind).present)
    return makeError(CLEAVE_NOT_FOUND, "the artifact has no entry '", entry,
                     "'");
  const EntryDesc &e = manifest_.entry(*kind);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (e.outputs[i].name == name) {
      const Binding &b = bindings_[size_t(*kind)];
      data = b.outputs[i].data();
      bytes = e.outputs[i].bytes;
      if (gpu_) {
        CLEAVE_RETURN_IF_ERROR(checkUsable());
        CLEAVE_RETURN_IF_ERROR(noteDeviceError(
            gpu_->download(b.outputs[i].data(), b.deviceOutputs[i], bytes)));
        return noteDeviceError(gpu_->synchronize());
      }
      return Status::success();
    }
  return makeError(CLEAVE_NOT_FOUND, "entry '", entry, "' has no output '",
                   name, "'");
}

Status Session::setUserState(std::string_view key, const void *value,
                             size_t bytes) {
  if (key.empty())
    return makeError(CLEAVE_INVALID_ARGUMENT, "user-state key is empty");
  if (isReservedKey(key))
    return makeError(CLEAVE_INVALID_ARGUMENT, "user-state key '", key,
                     "' is reserved for the session (keys starting with '",
                     kRankKey, "')");
  try {
    // Keys are stored in the checkpoint's JSON index, which must be UTF-8.
    (void)nlohmann::json(std::string(key)).dump();
  } catch (const nlohmann::json::exception &) {
    return makeError(CLEAVE_INVALID_ARGUMENT,
                     "user-state key is not valid UTF-8");
  }
  if (!value) {
    auto it = userState_.find(key);
    if (it != userState_.end())
      userState_.erase(it);
    return Status::success();
  }
  userState_[std::string(key)] =
      std::string(static_cast<const char *>(value), bytes);
  return Status::success();
}

Status Session::userState(std::string_view key, const void *&value,
                          size_t &bytes) const {
  auto it = userState_.find(key);
  if (it == userState_.end())
    return makeError(CLEAVE_NOT_FOUND, "no user state under key '", key, "'");
  value = it->second.data();
  bytes = it->second.size();
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

CheckpointContents Session::checkpointContents() const {
  const Manifest &m = manifest_;
  CheckpointContents c;
  c.manifestHash = m.hash;
  c.seed = seed_;
  c.accumulate = accumulate_;
  for (size_t i = 0; i < m.hypers.size(); ++i)
    c.hyperparameters.emplace_back(m.hypers[i].name, hyperValues_[i]);
  c.lrSchedule = lrSchedule_;
  for (size_t i = 0; i < m.globals.size(); ++i) {
    const GlobalDesc &g = m.globals[i];
    c.globals.push_back(
        {g.name, g.dtype, g.shape, globals_[i].data(), g.bytes});
  }
  c.userState.insert(userState_.begin(), userState_.end());
  if (numRanks() > 1)
    c.userState[std::string(kRankKey)] = rankTag(rank(), numRanks());
  return c;
}

Status Session::agreeOnStatus(const Status &local) const {
  if (numRanks() == 1)
    return local;
  return agreeAcrossRanks(*communicator_, local);
}

Status Session::rankZeroStatus(const Status &status) const {
  if (numRanks() == 1)
    return status;
  int64_t header[2] = {int64_t(status.code()),
                       int64_t(status.message().size())};
  communicator_->broadcast(header, sizeof(header), 0);
  std::string message = status.message();
  message.resize(size_t(header[1]));
  communicator_->broadcast(message.data(), header[1], 0);
  return Status(cleave_status(header[0]), std::move(message));
}

Status Session::saveCheckpoint(const std::string &path) const {
  CLEAVE_RETURN_IF_ERROR(checkTraining(
      "save a checkpoint (read its parameters with read_global)"));
  // A failed session's globals are half-updated: a checkpoint of them would
  // resume a run that never was.
  Status usable = checkUsable();
  if (numRanks() == 1 && !usable.ok())
    return usable;
  // A GPU session's state is on the device: bring it into the host copies
  // the checkpoint is written from (GPU sessions have one rank).
  if (gpu_)
    CLEAVE_RETURN_IF_ERROR(pullGlobals());
  // Mid-window, the accumulators lack the gradients the layout cache holds
  // back. Settling them here changes the order in which the rest of the
  // window is summed, so a run that saves and one resumed from its
  // checkpoint agree bit for bit (a run that never saved, to rounding).
  if (usable.ok())
    CLEAVE_RETURN_IF_ERROR(settleAccumulators());
  CheckpointContents c = checkpointContents();
  if (numRanks() == 1)
    return writeCheckpoint(path, c);
  // Accumulators and sharded optimizer state differ between ranks, yet rank
  // 0 alone writes: every other rank's checkpoint image travels to it and
  // goes into its file as the user state peerKey(rank).
  std::string image;
  Status encoded = !usable.ok()  ? usable
                   : rank() == 0 ? Status::success()
                                 : encodeCheckpoint(c, image);
  CLEAVE_RETURN_IF_ERROR(agreeOnStatus(encoded));
  std::vector<std::string> images;
  communicator_->gatherBytes(image, images, 0);
  Status written;
  if (rank() == 0) {
    for (int r = 1; r < numRanks(); ++r)
      c.userState[peerKey(r)] = std::move(images[size_t(r)]);
    written = writeCheckpoint(path, c);
  }
  return rankZeroStatus(written);
}

struct Session::Restore {
  std::vector<const CheckpointTensor *> sources;
  std::vector<double> hypers;
};

Status Session::checkCheckpoint(const CheckpointContents &c,
                                const std::string &path,
                                Restore &plan) const {
  const Manifest &m = manifest_;
  auto mismatch = [&](const std::string &why) {
    return makeError(CLEAVE_INVALID_CHECKPOINT, path, ": ", why);
  };
  if (c.manifestHash != m.hash) {
    char buf[96];
    std::snprintf(buf, sizeof(buf),
                  "manifest hash %016llx, this session's model has %016llx",
                  static_cast<unsigned long long>(c.manifestHash),
                  static_cast<unsigned long long>(m.hash));
    return mismatch(std::string("written by a session of a different model (") +
                    buf + ")");
  }
  if (c.accumulate < 1)
    return mismatch("accumulation count " + std::to_string(c.accumulate) +
                    " is not positive");
  {
    auto tag = c.userState.find(std::string(kRankKey));
    const std::string written =
        tag == c.userState.end() ? rankTag(0, 1) : tag->second;
    const std::string mine = rankTag(rank(), numRanks());
    if (written != mine) {
      auto who = [](const std::string &t) {
        return t == "0/1" ? std::string("a single-process session")
                          : "rank " + t.substr(0, t.find('/')) + " of " +
                                t.substr(t.find('/') + 1);
      };
      return mismatch("holds the state of " + who(written) +
                      ", this session is " + who(mine) +
                      "; a checkpoint restores on the number of ranks that "
                      "wrote it");
    }
  }

  // Everything is matched and checked before the session changes.
  if (c.globals.size() != m.globals.size())
    return mismatch("has " + std::to_string(c.globals.size()) +
                    " globals, the model has " +
                    std::to_string(m.globals.size()));
  std::vector<const CheckpointTensor *> sources(m.globals.size(), nullptr);
  for (const CheckpointTensor &t : c.globals) {
    std::optional<size_t> index = m.findGlobal(t.name);
    if (!index)
      return mismatch("global '" + t.name + "' is not a global of this model");
    const GlobalDesc &g = m.globals[*index];
    if (t.dtype != g.dtype || t.shape != g.shape || t.bytes != g.bytes)
      return mismatch("global '" + t.name +
                      "' has another dtype or shape than in this model");
    sources[*index] = &t;
  }
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i])
      return mismatch("has no global '" + m.globals[i].name + "'");
  std::vector<double> hypers(m.hypers.size());
  std::vector<bool> seen(m.hypers.size(), false);
  for (const auto &[name, value] : c.hyperparameters) {
    std::optional<size_t> index = m.findHyper(name);
    if (!index)
      return mismatch("hyperparameter '" + name +
                      "' is not a hyperparameter of this model");
    if (!std::isfinite(value))
      return mismatch("hyperparameter '" + name + "' is not finite");
    hypers[*index] = value;
    seen[*index] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      return mismatch("has no value for hyperparameter '" + m.hypers[i].name +
                      "'");
  if (c.lrSchedule && !lrHyper_)
    return mismatch("has a learning-rate schedule, but the model has no "
                    "hyperparameter 'lr'");
  // Between calls a session has 0 <= train.micro_steps < N and a
  // non-negative train.step; anything else (a negative micro_steps would
  // stretch the window silently) is not a state a session wrote.
  int64_t microSteps = 0, step = 0;
  std::memcpy(&microSteps, sources[m.microStepsGlobal]->data,
              sizeof(microSteps));
  std::memcpy(&step, sources[m.stepGlobal]->data, sizeof(step));
  if (microSteps < 0 || microSteps >= c.accumulate || step < 0)
    return mismatch("train.micro_steps is " + std::to_string(microSteps) +
                    " and train.step " + std::to_string(step) +
                    ", expected 0 to " + std::to_string(c.accumulate - 1) +
                    " micro-steps (the accumulation count is " +
                    std::to_string(c.accumulate) +
                    ") and a non-negative step");

  plan.sources = std::move(sources);
  plan.hypers = std::move(hypers);
  return Status::success();
}

void Session::applyCheckpoint(const CheckpointContents &c,
                              const Restore &plan) {
  for (size_t i = 0; i < plan.sources.size(); ++i)
    if (plan.sources[i]->bytes > 0)
      std::memcpy(globals_[i].data(), plan.sources[i]->data,
                  plan.sources[i]->bytes);
  kernelContext_->globalsReplaced();
  for (size_t i = 0; i < plan.hypers.size(); ++i)
    storeHyper(i, plan.hypers[i]);
  // A checkpoint without a schedule (also one written before schedules
  // existed) restores a session that has none.
  lrSchedule_ = c.lrSchedule;
  syncScheduledLr();
  accumulate_ = c.accumulate;
  seed_ = c.seed;
  userState_.clear();
  for (const auto &[key, value] : c.userState)
    if (!isReservedKey(key))
      userState_.emplace(key, value);
  // Traffic of the restored window before the checkpoint is not known.
  windowBytes_ = 0;
  // Every global an entry point writes was just overwritten: whatever state
  // a failed entry left behind is gone.
  failure_ = Status();
}

Status Session::loadCheckpoint(const std::string &path) {
  CLEAVE_RETURN_IF_ERROR(checkTraining(
      "load a checkpoint (write its parameters with write_global)"));
  LoadedCheckpoint loaded;
  Restore plan;
  if (numRanks() == 1) {
    CLEAVE_RETURN_IF_ERROR(readCheckpoint(path, loaded));
    CLEAVE_RETURN_IF_ERROR(checkCheckpoint(loaded.contents(), path, plan));
    applyCheckpoint(loaded.contents(), plan);
    if (gpu_) {
      // Whatever the GPU was doing is finished or failed; the restored
      // state replaces it.
      lossPending_ = false;
      Status pushed = pushState();
      if (!pushed.ok())
        failure_ = pushed;
      return pushed;
    }
    return Status::success();
  }
  // Rank 0 reads the job's file and hands every other rank its part; no
  // rank changes its state unless every rank's part checks out.
  Status read;
  std::vector<std::string> parts;
  if (rank() == 0) {
    read = readCheckpoint(path, loaded);
    parts.resize(size_t(numRanks()));
    for (int r = 1; read.ok() && r < numRanks(); ++r)
      if (auto it = loaded.contents().userState.find(peerKey(r));
          it != loaded.contents().userState.end())
        parts[size_t(r)] = it->second;
  }
  CLEAVE_RETURN_IF_ERROR(rankZeroStatus(read));
  std::string part;
  communicator_->scatterBytes(parts, part, 0);
  std::string name = path;
  Status local;
  if (rank() != 0) {
    name += " (the part of rank " + std::to_string(rank()) + ")";
    local = part.empty()
                ? makeError(CLEAVE_INVALID_CHECKPOINT, path,
                            ": holds no state for rank ", rank(), " of ",
                            numRanks(),
                            "; a data-parallel run resumes on the number "
                            "of ranks that wrote its checkpoint")
                : parseCheckpoint(name, std::move(part), loaded);
  }
  if (local.ok())
    local = checkCheckpoint(loaded.contents(), name, plan);
  CLEAVE_RETURN_IF_ERROR(agreeOnStatus(local));
  applyCheckpoint(loaded.contents(), plan);
  return Status::success();
}

} // namespace cleave::rt

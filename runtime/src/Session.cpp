//===- Session.cpp - A training session on one artifact -------------------===//
//
// Everything that can be computed once is computed in create(): buffers,
// argument arrays, the positions of input arguments, the device and the
// communicator. Running is SessionRun.cpp's; state and checkpoints are
// SessionState.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "Checkpoint.h"
#include "Initializers.h"
#include "collectives/Communicator.h"
#include "device/Device.h"
#include "kernels/KernelContext.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

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
      entry += a.role == ArgRole::scratch ? a.scratchBytes : 0;
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
  std::unique_ptr<Session> session(new Session(std::move(artifact)));
  const Manifest &m = session->manifest_;
  const std::string &path = session->artifact_->path();
  CLEAVE_RETURN_IF_ERROR(
      checkPlacement(*session->artifact_, options, Holder::Session));
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
  CLEAVE_RETURN_IF_ERROR(openDevice(*session->artifact_, options.deviceOrdinal,
                                    session->communicator_.get(),
                                    session->notes_, session->device_));
  Device &device = *session->device_;
  session->alignment_ = device.properties().alignment;
  CLEAVE_RETURN_IF_ERROR(connectKernels(
      *session->artifact_, device, session->communicator_.get(),
      session->collectives_, session->kernelContext_, session->notes_));
  session->runner_ = std::make_unique<EntryRunner>(
      *session->artifact_, device, *session->kernelContext_,
      session->collectives_.get(), options.numThreads, session->notes_);
  CLEAVE_RETURN_IF_ERROR(session->allocateAndInitialize(options));
  CLEAVE_RETURN_IF_ERROR(session->bindEntries());
  // Keeps blocked copies on the CPU; a GPU's library keeps none.
  session->enableLayoutCache();
  out = std::move(session);
  return Status::success();
}

Status Session::allocateAndInitialize(const Options &options) {
  const Manifest &m = manifest_;
  Device &device = *device_;
  Generator gen(options.seed);
  globals_.resize(m.globals.size());
  for (size_t i = 0; i < m.globals.size(); ++i) {
    const GlobalDesc &g = m.globals[i];
    CLEAVE_RETURN_IF_ERROR(device.allocate(
        g.bytes, Usage::Mirrored, "global '" + g.name + "'", globals_[i]));
    initializeGlobal(g, globals_[i].host, gen, artifact_->initData());
  }
  // Ranks that were seeded differently (or given different initial values)
  // still start from one model: rank 0's.
  if (communicator_ && communicator_->size() > 1)
    for (size_t i = 0; i < m.globals.size(); ++i)
      communicator_->broadcast(globals_[i].host, int64_t(m.globals[i].bytes),
                               /*root=*/0);
  artifact_->releaseInitData();
  if (m.kind == ArtifactKind::inference) {
    microSteps_ = &noCounters_[0];
    step_ = &noCounters_[1];
  } else {
    microSteps_ =
        reinterpret_cast<int64_t *>(globals_[m.microStepsGlobal].host);
    step_ = reinterpret_cast<int64_t *>(globals_[m.stepGlobal].host);
  }

  const int sets = device.properties().inputSets;
  for (int set = 0; set < sets; ++set) {
    inputs_[size_t(set)].resize(m.inputs.size());
    for (size_t i = 0; i < m.inputs.size(); ++i)
      CLEAVE_RETURN_IF_ERROR(device.allocate(m.inputs[i].bytes, Usage::Staged,
                                             "input '" + m.inputs[i].name + "'",
                                             inputs_[size_t(set)][i]));
  }
  inputPtrs_.resize(m.inputs.size());
  hostInputs_.resize(m.inputs.size());
  sliceData_.resize(m.userInputs.size());
  sliceBytes_.resize(m.userInputs.size());

  CLEAVE_RETURN_IF_ERROR(device.allocate(m.hypers.size() * alignment_,
                                         Usage::DeviceOnly, "hyperparameters",
                                         hypers_));
  CLEAVE_RETURN_IF_ERROR(prepareInputSets());
  hyperValues_.resize(m.hypers.size());
  for (size_t i = 0; i < m.hypers.size(); ++i)
    storeHyper(i, m.hypers[i].defaultValue);
  lrHyper_ = m.findHyper("lr");
  // The initial values go up once; creation waits for them so that a
  // device failure is reported here.
  return pushState();
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
    BufferRange range{globals_[i].data, g.bytes};
    if (g.kind == GlobalKind::param)
      parameters.push_back(range);
    else if (g.kind == GlobalKind::accumulator)
      accumulators.push_back(range);
  }
  kernelContext_->enableLayoutCache(std::move(parameters),
                                    std::move(accumulators));
}

Status Session::prepareInputSets() {
  for (int set = 0; set < 2; ++set) {
    CLEAVE_RETURN_IF_ERROR(device_->createEvent(copied_[set]));
    CLEAVE_RETURN_IF_ERROR(device_->createEvent(consumed_[set]));
  }
  CLEAVE_RETURN_IF_ERROR(device_->createEvent(hostRead_));
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
      device_->allocateHost(capacity * sizeof(double), "the losses", p));
  lossSlots_ = static_cast<unsigned char *>(p);
  lossCapacity_ = capacity;
  return Status::success();
}

Status Session::pushState() {
  const Manifest &m = manifest_;
  for (size_t i = 0; i < m.globals.size(); ++i)
    CLEAVE_RETURN_IF_ERROR(device_->compute().upload(
        globals_[i].data, globals_[i].host, m.globals[i].bytes));
  for (size_t i = 0; i < m.hypers.size(); ++i)
    CLEAVE_RETURN_IF_ERROR(writeHyperSlot(i));
  return device_->synchronize();
}

Status Session::pullGlobals() const {
  const Manifest &m = manifest_;
  const int64_t microSteps = *microSteps_, step = *step_;
  for (size_t i = 0; i < m.globals.size(); ++i)
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->compute().download(
        globals_[i].host, globals_[i].data, m.globals[i].bytes)));
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->synchronize()));
  // The entries advance the counters on the device; the session counts
  // the same steps on the host. They must agree.
  if (*microSteps_ != microSteps || *step_ != step) {
    Status error = makeError(
        CLEAVE_INTERNAL, artifact_->path(), ": on ", device_->description(),
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
  if (error.ok())
    return error;
  if (failure_.ok())
    failure_ = error;
  deviceFault_ = true;
  return error;
}

std::string Session::deviceDescription() const {
  return device_->description();
}

void Session::storeHyper(size_t index, double value) {
  hyperValues_[index] = value;
  // storeHyper has callers that cannot fail; the session is unusable from
  // here, and says why at its next call.
  if (Status written = writeHyperSlot(index); !written.ok())
    (void)noteDeviceError(written);
}

Status Session::writeHyperSlot(size_t index) {
  // A fill takes its value when it is enqueued, so the new value reaches
  // the device in queue order, after the work that read the old one.
  const double value = hyperValues_[index];
  uint32_t words[2];
  size_t count = 1;
  if (manifest_.dtype == DType::f64) {
    std::memcpy(words, &value, sizeof(value));
    count = 2;
  } else {
    const float single = static_cast<float>(value);
    std::memcpy(words, &single, sizeof(single));
  }
  auto *slot = static_cast<unsigned char *>(hypers_.data) + index * alignment_;
  for (size_t w = 0; w < count; ++w)
    CLEAVE_RETURN_IF_ERROR(
        device_->compute().fill32(slot + 4 * w, words[w], 1));
  return Status::success();
}

Status Session::bindEntries() {
  const Manifest &m = manifest_;
  std::vector<std::vector<uint64_t>> scratchAreas;
  for (size_t k = 0; k < kNumEntryKinds; ++k) {
    auto kind = static_cast<EntryKind>(k);
    const EntryDesc &e = m.entry(kind);
    if (!e.present)
      continue;
    Binding &b = bindings_[k];
    // eval_step runs directly: it is not in the training loop.
    b.entry = runner_->add(abi::name(kind), artifact_->entry(kind),
                           /*capture=*/kind != EntryKind::eval_step);
    std::vector<uint64_t> &areas = scratchAreas.emplace_back();
    for (const ArgDesc &a : e.args)
      if (a.role == ArgRole::scratch)
        areas.push_back(a.scratchBytes);
  }
  std::vector<std::vector<void *>> scratch;
  CLEAVE_RETURN_IF_ERROR(runner_->allocateScratch(scratchAreas, scratch));

  for (size_t k = 0; k < kNumEntryKinds; ++k) {
    auto kind = static_cast<EntryKind>(k);
    const EntryDesc &e = m.entry(kind);
    if (!e.present)
      continue;
    Binding &b = bindings_[k];
    b.outputs.resize(e.outputs.size());
    for (size_t i = 0; i < e.outputs.size(); ++i) {
      const std::string what = std::string("output '") + e.outputs[i].name +
                               "' of " + abi::name(kind);
      CLEAVE_RETURN_IF_ERROR(device_->allocate(
          e.outputs[i].bytes, Usage::Mirrored, what, b.outputs[i]));
    }
    auto *hypers = static_cast<unsigned char *>(hypers_.data);
    size_t area = 0;
    for (const ArgDesc &a : e.args) {
      void *ptr = nullptr;
      switch (a.role) {
      case ArgRole::input:
        b.inputArgs.emplace_back(b.args.size(), a.index);
        ptr = inputs_[0][a.index].data;
        break;
      case ArgRole::output:
        ptr = b.outputs[a.index].data;
        break;
      case ArgRole::global:
        ptr = globals_[a.index].data;
        break;
      case ArgRole::hyper:
        ptr = hypers + a.index * alignment_;
        break;
      case ArgRole::scratch:
        ptr = scratch[b.entry][area++];
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
  // The collectives count the host communicator's traffic too.
  return collectives_ ? collectives_->bytesSent() : 0;
}

Status Session::sumAcrossRanks(double *values, size_t count) {
  if (count > size_t(std::numeric_limits<int64_t>::max()))
    return makeError(CLEAVE_INVALID_ARGUMENT, "count ", count, " is too large");
  if (communicator_)
    communicator_->allreduceSum(values, int64_t(count));
  return Status::success();
}

} // namespace cleave::rt

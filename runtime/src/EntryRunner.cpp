//===- EntryRunner.cpp - Running an artifact's entries on a device --------===//

#include "EntryRunner.h"

#include "collectives/Agree.h"
#include "collectives/Collectives.h"
#include "collectives/Communicator.h"
#include "device/Modules.h"
#include "kernels/KernelContext.h"
#include "kernels/KernelLibrary.h"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

namespace cleave::rt {

Status checkPlacement(const Artifact &artifact, const Placement &placement,
                      Holder holder) {
  const Manifest &m = artifact.manifest();
  const std::string &path = artifact.path();
  if (placement.numThreads < 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, "options: num_threads is ",
                     placement.numThreads,
                     ", expected 0 (leave OpenMP alone) or a positive count");
  const DeviceDriver &driver = deviceDriver(m.device);
  if (m.device != placement.device) {
    const DeviceDriver &asked = deviceDriver(placement.device);
    if (holder == Holder::Session)
      return makeError(CLEAVE_FAILED_PRECONDITION, path, ": compiled for ",
                       driver.describeCode(m), ", but the session is ",
                       asked.where, "; create it on ", driver.howToChoose,
                       asked.compileOption ? std::string(" or compile with ") +
                                                 asked.compileOption
                                           : std::string());
    // The tracer compiles for the CPU only, so there is no compiler option
    // to suggest; the C API's name of the device is the fix.
    std::string constant = "CLEAVE_DEVICE_";
    for (const char *c = abi::name(m.device); *c; ++c)
      constant += char(std::toupper(static_cast<unsigned char>(*c)));
    return makeError(CLEAVE_FAILED_PRECONDITION, path, ": compiled for ",
                     driver.describeCode(m), ", but the executable is ",
                     asked.where, "; load it with device ", constant,
                     " in cleave_executable_options");
  }
  if (driver.exclusivePerRank && placement.deviceOrdinal < 0 &&
      placement.deviceOrdinal != kAutoDeviceOrdinal)
    return makeError(CLEAVE_INVALID_ARGUMENT, "options: device ordinal is ",
                     placement.deviceOrdinal,
                     ", expected 0 or more, or -1 (one device per rank)");
  return Status::success();
}

namespace {
std::string ordinalSuffix(int n) {
  const int tens = n % 100, units = n % 10;
  if (tens >= 11 && tens <= 13)
    return "th";
  return units == 1 ? "st" : units == 2 ? "nd" : units == 3 ? "rd" : "th";
}
} // namespace

Status openDevice(const Artifact &artifact, int ordinal,
                  Communicator *communicator, std::deque<std::string> &notes,
                  std::unique_ptr<Device> &out) {
  const std::string &path = artifact.path();
  const Manifest &m = artifact.manifest();
  const DeviceDriver &driver = deviceDriver(m.device);
  std::string placement;
  Status placed = Status::success();
  const bool several =
      driver.exclusivePerRank && communicator && communicator->size() > 1;
  if (several) {
    // One GPU per process: a rank takes the GPU of its index among the
    // job's processes on the same machine.
    Communicator::NodeRanks node = communicator->nodeRanks();
    if (ordinal == kAutoDeviceOrdinal) {
      ordinal = node.rank;
      placement = "rank " + std::to_string(communicator->rank()) + " is the " +
                  std::to_string(node.rank + 1) + ordinalSuffix(node.rank + 1) +
                  " of " + std::to_string(node.size) + " processes on " +
                  node.host + ", and each takes a GPU of its own";
    } else if (node.size > 1) {
      placed = makeError(
          CLEAVE_FAILED_PRECONDITION, path, ": ", node.size,
          " ranks of the job run on ", node.host, " and all would use GPU ",
          ordinal,
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
    opened = driver.open(ordinal, m, out);
    if (opened.ok())
      opened = out->admit(m, notes);
    if (!opened.ok()) {
      opened = opened.withContext(path);
      if (!placement.empty())
        opened =
            Status(opened.code(), opened.message() + " (" + placement + ")");
    }
  }
  if (several)
    opened = agreeAcrossRanks(*communicator, opened, "opening a GPU");
  return opened;
}

Status connectKernels(const Artifact &artifact, Device &device,
                      Communicator *communicator,
                      std::unique_ptr<Collectives> &collectives,
                      std::unique_ptr<KernelContext> &context,
                      std::deque<std::string> &notes) {
  const std::string &path = artifact.path();
  // The data plane of several ranks (one needs none): MPI on the CPU, NCCL
  // on a GPU. Collective: all ranks succeed or all fail.
  if (communicator && communicator->size() > 1) {
    Status joined = device.createCollectives(*communicator, collectives);
    if (!joined.ok())
      return joined.withContext(path + ": data-parallel training on " +
                                device.description());
    if (artifact.manifest().shardOptimizerState)
      CLEAVE_RETURN_IF_ERROR(collectives->supportsSharding().withContext(path));
  }
  std::unique_ptr<KernelLibrary> kernels;
  Status built =
      device.createKernelLibrary(artifact.manifest().kernels, kernels);
  if (!built.ok())
    return built.withContext(path + ": kernels");
  for (std::string &note : kernels->notes())
    notes.push_back(std::move(note));
  context = KernelContext::create(std::move(kernels), device.modules());
  context->setCollectives(collectives.get());
  return Status::success();
}

EntryRunner::EntryRunner(const Artifact &artifact, Device &device,
                         KernelContext &context, const Collectives *collectives,
                         int numThreads, std::deque<std::string> &notes)
    : path_(artifact.path()), device_(device), context_(context),
      collectives_(collectives), numThreads_(numThreads), notes_(notes) {
  // CLEAVE_CUDA_GRAPHS=0 turns graph replay off, for debugging (every
  // launch is then a driver call that a profiler sees).
  const char *graphs = std::getenv("CLEAVE_CUDA_GRAPHS");
  useGraphs_ = device.properties().capture &&
               (!graphs || std::string_view(graphs) != "0");
}

size_t EntryRunner::add(std::string name, EntryFn fn, bool capture) {
  Entry &e = entries_.emplace_back();
  e.name = std::move(name);
  e.fn = fn;
  e.capture = capture;
  return entries_.size() - 1;
}

Status
EntryRunner::allocateScratch(const std::vector<std::vector<uint64_t>> &areas,
                             std::vector<std::vector<void *>> &pointers) {
  const size_t alignment = device_.properties().alignment;
  auto aligned = [&](uint64_t bytes) {
    return size_t((bytes + alignment - 1) / alignment * alignment);
  };
  size_t bytes = 0;
  for (const std::vector<uint64_t> &entry : areas) {
    size_t total = 0;
    for (uint64_t area : entry)
      total += aligned(area);
    bytes = std::max(bytes, total);
  }
  CLEAVE_RETURN_IF_ERROR(
      device_.allocate(bytes, Usage::DeviceOnly, "scratch", scratch_));
  auto *base = static_cast<unsigned char *>(scratch_.data);
  pointers.assign(areas.size(), {});
  for (size_t e = 0; e < areas.size(); ++e) {
    size_t offset = 0;
    for (uint64_t area : areas[e]) {
      pointers[e].push_back(base + offset);
      offset += aligned(area);
    }
  }
  return Status::success();
}

Status EntryRunner::enter() {
  if (numThreads_ > 0)
    omp_set_num_threads(numThreads_);
  return device_.makeCurrent();
}

uint64_t EntryRunner::bytesSent() const {
  // The collectives count the host communicator's traffic too.
  return collectives_ ? collectives_->bytesSent() : 0;
}

uint64_t EntryRunner::call(Entry &entry, void **args) {
  const uint64_t before = bytesSent();
  // Launch errors of the artifact's kernels go to this context.
  EntryScope scope(&context_);
  entry.fn(&context_, args);
  return bytesSent() - before;
}

Status EntryRunner::result(const Entry &entry) {
  // A kernel that failed recorded why and turned the rest of the entry's
  // kernel calls into no-ops; the entry's own code ran on regardless.
  Status error = context_.failed() ? context_.error()
                                   : KernelContext::takeErrorWithoutContext();
  if (error.ok())
    return Status::success();
  context_.clearError();
  return error.withContext(path_ + ": " + entry.name);
}

Status EntryRunner::run(size_t index, int set, void **args,
                        uint64_t &bytesSent) {
  Entry &e = entries_[index];
  Graph *&graph = e.graphs[size_t(set)];
  uint64_t &graphBytes = e.graphBytes[size_t(set)];
  auto launch = [&] {
    Status launched = device_.compute().launch(*graph);
    if (!launched.ok())
      return launched.withContext(path_ + ": " + e.name);
    bytesSent += graphBytes;
    return Status::success();
  };
  auto runDirectly = [&] {
    bytesSent += call(e, args);
    return result(e);
  };
  if (graph)
    return launch();
  const bool capture =
      useGraphs_ && e.capture && !e.noGraph && ++e.directRuns > kWarmupRuns;
  // From now on the entry runs directly; said once, with the reason, since
  // it costs every run a launch per kernel.
  auto runWithoutGraph = [&](std::string_view reason) {
    e.noGraph = true;
    notes_.push_back(e.name +
                     " could not be captured into a CUDA graph and runs "
                     "directly from now on (every kernel launched on each "
                     "step; a graph captured before still replays): " +
                     std::string(reason));
  };
  if (!capture)
    return runDirectly();
  if (Status began = device_.compute().beginCapture(); !began.ok()) {
    runWithoutGraph(began.message());
    return runDirectly();
  }
  const uint64_t capturedBytes = call(e, args);
  Graph *captured = nullptr;
  Status ended = device_.compute().endCapture(captured);
  if (ended.ok() && !context_.failed()) {
    graph = captured;
    graphBytes = capturedBytes;
    return launch();
  }
  // Nothing of the entry ran, and a call that failed during the capture
  // may have failed because of it: the entry runs directly, now and from
  // now on, and a real error shows again.
  std::string reason = !ended.ok() ? ended.message() : std::string();
  if (context_.failed())
    reason += std::string(reason.empty() ? "" : "; ") +
              "a library call failed while it was captured (" +
              context_.error().message() + ")";
  context_.clearError();
  (void)KernelContext::takeErrorWithoutContext();
  runWithoutGraph(reason);
  return runDirectly();
}

} // namespace cleave::rt

//===- Executable.cpp - Running the entries of a graph artifact -----------===//
//
// Everything is prepared at creation: the device, the kernel context, one
// scratch arena shared by all entries (they never run concurrently), the
// twins of a device that does not address host memory, and per entry the
// argument array with its scratch (and twin) slots filled in. A call checks
// the caller's pointers, patches them into the array (or copies through the
// twins) and runs the entry; it allocates nothing. The twins never move, so
// on a device that captures an entry is replayed from a graph once warm.
//
//===----------------------------------------------------------------------===//

#include "Executable.h"

#include "collectives/Collectives.h"
#include "collectives/Communicator.h"
#include "kernels/KernelContext.h"

#include <cstdint>

namespace cleave::rt {

namespace {

const char *roleName(ArgRole role) {
  switch (role) {
  case ArgRole::input:
    return "input";
  case ArgRole::output:
    return "output";
  case ArgRole::global:
    return "global";
  case ArgRole::hyper:
    return "hyper";
  case ArgRole::scratch:
    return "scratch";
  }
  return "?";
}

} // namespace

Executable::Executable(std::shared_ptr<const Artifact> artifact)
    : artifact_(std::move(artifact)) {}

Executable::~Executable() = default;

Status Executable::create(std::shared_ptr<const Artifact> artifact,
                          const Options &options,
                          std::unique_ptr<Executable> &out) {
  if (!artifact)
    return makeError(CLEAVE_INVALID_ARGUMENT, "artifact is NULL");
  const Manifest &m = artifact->manifest();
  if (m.kind != ArtifactKind::graph)
    return makeError(CLEAVE_FAILED_PRECONDITION, artifact->path(),
                     ": not a graph artifact");
  CLEAVE_RETURN_IF_ERROR(
      checkPlacement(*artifact, options, Holder::Executable));
  std::unique_ptr<Executable> exe(new Executable(std::move(artifact)));
  const Artifact &a = *exe->artifact_;
  if (options.distributed) {
    std::string error;
    exe->communicator_ = Communicator::world(error);
    if (!exe->communicator_)
      return makeError(CLEAVE_FAILED_PRECONDITION,
                       "cannot join the data-parallel job: ", error);
  }
  CLEAVE_RETURN_IF_ERROR(openDevice(a, options.deviceOrdinal,
                                    exe->communicator_.get(), exe->notes_,
                                    exe->device_));
  Device &device = *exe->device_;
  CLEAVE_RETURN_IF_ERROR(connectKernels(a, device, exe->communicator_.get(),
                                        exe->collectives_, exe->kernelContext_,
                                        exe->notes_));
  exe->runner_ = std::make_unique<EntryRunner>(a, device, *exe->kernelContext_,
                                               exe->collectives_.get(),
                                               options.numThreads, exe->notes_);
  CLEAVE_RETURN_IF_ERROR(
      device.allocate(0, Usage::Mirrored, "an empty buffer", exe->empty_));

  std::vector<std::vector<uint64_t>> scratchAreas(m.graphEntries.size());
  exe->entries_.resize(m.graphEntries.size());
  for (size_t i = 0; i < m.graphEntries.size(); ++i) {
    // Errors name the entry as the caller does. Its argument arrays never
    // change where they point at twins, so it may then be captured; the
    // caller's own pointers change from run to run.
    exe->entries_[i].entry = exe->runner_->add(
        "entry '" + m.graphEntries[i].name + "'", a.graphEntry(i),
        /*capture=*/!device.properties().hostMemory);
    for (const GraphArgDesc &arg : m.graphEntries[i].args)
      if (arg.role == ArgRole::scratch)
        scratchAreas[i].push_back(arg.scratchBytes);
  }
  std::vector<std::vector<void *>> scratch;
  CLEAVE_RETURN_IF_ERROR(exe->runner_->allocateScratch(scratchAreas, scratch));
  for (size_t i = 0; i < m.graphEntries.size(); ++i) {
    Binding &b = exe->entries_[i];
    size_t area = 0;
    for (const GraphArgDesc &arg : m.graphEntries[i].args) {
      if (arg.role == ArgRole::scratch) {
        b.args.push_back(scratch[i][area++]);
        continue;
      }
      b.callerSlots.push_back(b.args.size());
      b.callerArgs.push_back(&arg);
      b.args.push_back(nullptr);
    }
  }
  if (!device.properties().hostMemory)
    CLEAVE_RETURN_IF_ERROR(exe->makeTwins());
  out = std::move(exe);
  return Status::success();
}

Status Executable::makeTwins() {
  for (size_t e = 0; e < entries_.size(); ++e) {
    Binding &b = entries_[e];
    for (size_t i = 0; i < b.callerArgs.size(); ++i) {
      const GraphArgDesc &a = *b.callerArgs[i];
      Buffer *twin = nullptr;
      Buffer own;
      if (a.role == ArgRole::global) {
        auto [it, added] = globalTwins_.try_emplace(a.tensor.name);
        if (added)
          CLEAVE_RETURN_IF_ERROR(
              device_->allocate(a.tensor.bytes, Usage::DeviceOnly,
                                "global '" + a.tensor.name + "'", it->second));
        twin = &it->second;
      } else {
        CLEAVE_RETURN_IF_ERROR(device_->allocate(
            a.tensor.bytes, Usage::DeviceOnly,
            std::string(roleName(a.role)) + " '" + a.tensor.name +
                "' of entry '" + entry(e).name + "'",
            own));
        twin = &own;
      }
      b.twins.push_back(twin->data);
      b.args[b.callerSlots[i]] = twin->data;
    }
  }
  return Status::success();
}

std::optional<size_t> Executable::findEntry(std::string_view name) const {
  const std::vector<GraphEntryDesc> &entries =
      artifact_->manifest().graphEntries;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].name == name)
      return i;
  return std::nullopt;
}

Status Executable::run(size_t index, void *const *args, size_t numArgs) {
  if (index >= entries_.size())
    return makeError(CLEAVE_INVALID_ARGUMENT, "entry index ", index,
                     " is out of range (the artifact has ", entries_.size(),
                     " entries)");
  Binding &b = entries_[index];
  const std::string &name = entry(index).name;
  if (numArgs != b.callerArgs.size())
    return makeError(CLEAVE_INVALID_ARGUMENT, "entry '", name, "' takes ",
                     b.callerArgs.size(), " arguments, ", numArgs, " given");
  if (numArgs > 0 && !args)
    return makeError(CLEAVE_INVALID_ARGUMENT, "entry '", name,
                     "': args is NULL");
  const bool hostMemory = device_->properties().hostMemory;
  for (size_t i = 0; i < numArgs; ++i) {
    const GraphArgDesc &a = *b.callerArgs[i];
    void *p = args[i];
    if (!p) {
      if (a.tensor.bytes != 0)
        return makeError(CLEAVE_INVALID_ARGUMENT, "entry '", name, "': args[",
                         i, "] (", roleName(a.role), " '", a.tensor.name,
                         "') is NULL");
      p = empty_.host;
    } else if (reinterpret_cast<uintptr_t>(p) % kBufferAlignment != 0) {
      return makeError(CLEAVE_INVALID_ARGUMENT, "entry '", name, "': args[", i,
                       "] (", roleName(a.role), " '", a.tensor.name,
                       "') is not ", kBufferAlignment, "-byte aligned");
    }
    if (hostMemory)
      b.args[b.callerSlots[i]] = p;
  }
  if (!deviceFault_.ok())
    return makeError(CLEAVE_FAILED_PRECONDITION,
                     "the executable is unusable since its device failed (",
                     deviceFault_.message(), "); destroy it");
  if (Status entered = runner_->enter(); !entered.ok()) {
    deviceFault_ = entered.withContext(artifact_->path());
    return deviceFault_;
  }
  if (!hostMemory)
    return runOnTwins(index, args, numArgs);
  // The executable keeps no state of its own between runs, so a failed run
  // leaves nothing to poison: the runner clears the context for the next.
  uint64_t bytesSent = 0;
  return runner_->run(b.entry, 0, b.args.data(), bytesSent);
}

Status Executable::runOnTwins(size_t index, void *const *args, size_t numArgs) {
  Binding &b = entries_[index];
  const std::string &name = entry(index).name;
  Queue &queue = device_->compute();
  // A wait that fails is the device's failure; a copy that fails may be
  // the caller's pointer (device memory, say), which leaves the device as
  // it was.
  auto copies = [&](bool in) {
    for (size_t i = 0; i < numArgs; ++i) {
      const GraphArgDesc &a = *b.callerArgs[i];
      const bool moves = a.role == ArgRole::global ||
                         a.role == (in ? ArgRole::input : ArgRole::output);
      if (!moves || a.tensor.bytes == 0)
        continue;
      Status copied = in ? queue.upload(b.twins[i], args[i], a.tensor.bytes)
                         : queue.download(args[i], b.twins[i], a.tensor.bytes);
      if (!copied.ok())
        return copied.withContext(artifact_->path() + ": entry '" + name +
                                  "': copying " + roleName(a.role) + " '" +
                                  a.tensor.name + (in ? "' to " : "' from ") +
                                  device_->description());
    }
    return Status::success();
  };
  CLEAVE_RETURN_IF_ERROR(copies(/*in=*/true));
  uint64_t bytesSent = 0;
  Status ran = runner_->run(b.entry, 0, b.args.data(), bytesSent);
  // Outputs and globals come back even after a failed kernel, as on the
  // CPU, where the entry wrote them in place.
  Status back = copies(/*in=*/false);
  if (Status waited = device_->synchronize(); !waited.ok()) {
    deviceFault_ =
        waited.withContext(artifact_->path() + ": entry '" + name + "'");
    return deviceFault_;
  }
  return ran.ok() ? back : ran;
}

} // namespace cleave::rt

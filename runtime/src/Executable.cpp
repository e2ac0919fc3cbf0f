//===- Executable.cpp - Running the entries of a graph artifact -----------===//
//
// Everything is prepared at creation: the kernel context, one scratch arena
// shared by all entries (they never run concurrently), and per entry the
// argument array with its scratch slots filled in. A call checks the
// caller's pointers, patches them into the array and calls the entry; it
// allocates nothing.
//
//===----------------------------------------------------------------------===//

#include "Executable.h"

#include "kernels/KernelContext.h"

#include <nlohmann/json.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

namespace {

const char *roleName(ArgRole role) {
  switch (role) {
  case ArgRole::Input:
    return "input";
  case ArgRole::Output:
    return "output";
  case ArgRole::Global:
    return "global";
  case ArgRole::Hyper:
    return "hyper";
  case ArgRole::Scratch:
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
  if (m.kind != ArtifactKind::Graph)
    return makeError(CLEAVE_FAILED_PRECONDITION, artifact->path(),
                     ": not a graph artifact");
  if (m.device != DeviceKind::Cpu)
    return makeError(CLEAVE_FAILED_PRECONDITION, artifact->path(),
                     ": graph artifacts run on the CPU only (this one is "
                     "compiled for ",
                     deviceKindName(m.device), ")");
  if (options.numThreads < 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, "options: num_threads is ",
                     options.numThreads,
                     ", expected 0 (leave OpenMP alone) or a positive count");
  std::unique_ptr<Executable> exe(new Executable(std::move(artifact)));
  exe->numThreads_ = options.numThreads;
  const std::string &path = exe->artifact_->path();
  {
    std::string error;
    exe->kernelContext_ = KernelContext::create(m.kernels, error);
    if (!exe->kernelContext_)
      return makeError(CLEAVE_INVALID_ARTIFACT, path, ": kernels: ", error);
  }

  size_t scratchBytes = 0;
  for (const GraphEntryDesc &e : m.graphEntries) {
    size_t total = 0;
    for (const GraphArgDesc &a : e.args)
      if (a.role == ArgRole::Scratch)
        total += alignedSize(a.scratchBytes);
    scratchBytes = std::max(scratchBytes, total);
  }
  if (!exe->scratch_.allocate(scratchBytes) || !exe->empty_.allocate(0))
    return makeError(CLEAVE_OUT_OF_MEMORY, "cannot allocate ", scratchBytes,
                     " bytes for scratch");

  exe->entries_.resize(m.graphEntries.size());
  for (size_t i = 0; i < m.graphEntries.size(); ++i) {
    Binding &b = exe->entries_[i];
    b.fn = exe->artifact_->graphEntry(i);
    size_t scratchOffset = 0;
    for (const GraphArgDesc &a : m.graphEntries[i].args) {
      if (a.role == ArgRole::Scratch) {
        b.args.push_back(exe->scratch_.data() + scratchOffset);
        scratchOffset += alignedSize(a.scratchBytes);
        continue;
      }
      b.callerSlots.push_back(b.args.size());
      b.callerArgs.push_back(&a);
      b.args.push_back(nullptr);
    }
  }
  out = std::move(exe);
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
  for (size_t i = 0; i < numArgs; ++i) {
    const GraphArgDesc &a = *b.callerArgs[i];
    void *p = args[i];
    if (!p) {
      if (a.tensor.bytes != 0)
        return makeError(CLEAVE_INVALID_ARGUMENT, "entry '", name, "': args[",
                         i, "] (", roleName(a.role), " '", a.tensor.name,
                         "') is NULL");
      p = empty_.data();
    } else if (reinterpret_cast<uintptr_t>(p) % kBufferAlignment != 0) {
      return makeError(CLEAVE_INVALID_ARGUMENT, "entry '", name, "': args[", i,
                       "] (", roleName(a.role), " '", a.tensor.name,
                       "') is not ", kBufferAlignment, "-byte aligned");
    }
    b.args[b.callerSlots[i]] = p;
  }
  if (numThreads_ > 0)
    omp_set_num_threads(numThreads_);
  b.fn(kernelContext_.get(), b.args.data());
  // The executable keeps no state of its own between runs, so a failed run
  // leaves nothing to poison: the next one starts with a clean context.
  Status error = kernelContext_->failed()
                     ? kernelContext_->error()
                     : KernelContext::takeErrorWithoutContext();
  if (error.ok())
    return Status::success();
  kernelContext_->clearError();
  return error.withContext(artifact_->path() + ": entry '" + name + "'");
}

} // namespace cleave::rt

//===- SessionState.cpp - Settings, state and checkpoints -----------------===//
//
// What a session holds between steps: accumulation, hyperparameters and the
// learning-rate schedule, globals read and written by name, user state, and
// checkpoints (one file per session; a data-parallel rank 0 carries every
// rank's image).
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "Checkpoint.h"
#include "LrSchedule.h"
#include "collectives/Agree.h"
#include "collectives/Communicator.h"
#include "device/Device.h"
#include "kernels/KernelContext.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <optional>

namespace cleave::rt {

namespace {

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

} // namespace

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
  // After an entry failed the globals are still readable (part updated);
  // after the device failed nothing on it is.
  CLEAVE_RETURN_IF_ERROR(checkDevice());
  if (manifest_.globals[index].kind == GlobalKind::accumulator)
    CLEAVE_RETURN_IF_ERROR(settleAccumulators());
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(
      device_->compute().download(dst, globals_[index].data, bytes)));
  return noteDeviceError(device_->synchronize());
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
  CLEAVE_RETURN_IF_ERROR(checkDevice());
  if (manifest_.globals[index].kind == GlobalKind::accumulator)
    CLEAVE_RETURN_IF_ERROR(settleAccumulators());
  if (bytes > 0)
    std::memcpy(globals_[index].host, src, bytes);
  kernelContext_->parametersChanged();
  // The host view is what goes up (counters stay in step with it), and it
  // must not change before the copy is done.
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->compute().upload(
      globals_[index].data, globals_[index].host, bytes)));
  return noteDeviceError(device_->synchronize());
}

Status Session::output(std::string_view entry, std::string_view name,
                       const void *&data, size_t &bytes) const {
  std::optional<EntryKind> kind = abi::parse<EntryKind>(entry);
  if (!kind || !manifest_.entry(*kind).present)
    return makeError(CLEAVE_NOT_FOUND, "the artifact has no entry '", entry,
                     "'");
  const EntryDesc &e = manifest_.entry(*kind);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (e.outputs[i].name == name) {
      const Binding &b = bindings_[size_t(*kind)];
      data = b.outputs[i].host;
      bytes = e.outputs[i].bytes;
      CLEAVE_RETURN_IF_ERROR(checkDevice());
      CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->compute().download(
          b.outputs[i].host, b.outputs[i].data, bytes)));
      return noteDeviceError(device_->synchronize());
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
    c.globals.push_back({g.name, g.dtype, g.shape, globals_[i].host, g.bytes});
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
  // The state is on the device: bring it into the host views the
  // checkpoint is written from (nothing to copy on the CPU).
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
      std::memcpy(globals_[i].host, plan.sources[i]->data,
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
  deviceFault_ = false;
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
    return pushRestoredState();
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
  return agreeOnStatus(pushRestoredState());
}

Status Session::pushRestoredState() {
  // Whatever the device was doing is finished or failed; the restored state
  // replaces it.
  lossPending_ = false;
  return noteDeviceError(pushState());
}

} // namespace cleave::rt

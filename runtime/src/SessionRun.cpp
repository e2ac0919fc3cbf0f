//===- SessionRun.cpp - Micro-steps, apply steps and evals ----------------===//
//
// A micro-step checks the batch, copies inputs only when it must (short or
// unaligned batches, or into a device's staging), calls the entry point and
// reads two counters; it allocates nothing. The apply step reads the
// window's verdict and loss; trainBatch cuts a large batch into micro-steps.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "collectives/Agree.h"
#include "collectives/Communicator.h"
#include "device/Device.h"
#include "kernels/KernelContext.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace cleave::rt {

namespace {

double readScalar(DType dtype, const void *p) {
  return dtype == DType::f64 ? *static_cast<const double *>(p)
                             : double(*static_cast<const float *>(p));
}

} // namespace

Status Session::checkBatch(EntryKind kind, const cleave_batch &batch,
                           int64_t maxSamples, BatchMemory memory) const {
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
                       in.name, "') is NULL but ", abi::name(kind),
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
    if (memory != BatchMemory::host)
      CLEAVE_RETURN_IF_ERROR(device_->checkBatchMemory(
          batch.data[j], size_t(expected), memory,
          "batch: data[" + std::to_string(j) + "] ('" + in.name + "')"));
    // A device batch's indices are checked once downloaded (stage).
    if (in.indexBound > 0 && !onlyDeviceReads(memory))
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
  auto bad = in.dtype == DType::i64
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
  const bool wide = l.dtype == DType::i64, f64 = w.dtype == DType::f64;
  lastCount_ =
      wide ? (f64 ? fillTokenWeightsOf<int64_t, double>(labels, weights, b,
                                                        perRow, samples, ignore)
                  : fillTokenWeightsOf<int64_t, float>(labels, weights, b,
                                                       perRow, samples, ignore))
           : (f64 ? fillTokenWeightsOf<int32_t, double>(labels, weights, b,
                                                        perRow, samples, ignore)
                  : fillTokenWeightsOf<int32_t, float>(
                        labels, weights, b, perRow, samples, ignore));
  if (lastCount_ == 0 && kind == EntryKind::micro_step)
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: every token of '",
                     l.name, "' is the ignore index ", ignore,
                     ": the micro-batch has nothing to learn from");
  return Status::success();
}

Status Session::checkDeviceIndices(EntryKind kind, const cleave_batch &batch) {
  const Manifest &m = manifest_;
  const EntryDesc &e = m.entry(kind);
  Queue &transfer = device_->transfer();
  std::vector<std::vector<unsigned char>> copies(m.userInputs.size());
  for (size_t j = 0; j < m.userInputs.size(); ++j) {
    const InputDesc &in = m.inputs[m.userInputs[j]];
    if (!e.usesInput[m.userInputs[j]] || in.indexBound == 0)
      continue;
    copies[j].resize(batch.bytes[j]);
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(
        transfer.download(copies[j].data(), batch.data[j], batch.bytes[j])));
  }
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(transfer.record(*hostRead_)));
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(hostRead_->synchronize()));
  for (size_t j = 0; j < m.userInputs.size(); ++j)
    if (!copies[j].empty())
      CLEAVE_RETURN_IF_ERROR(checkIndices(m.inputs[m.userInputs[j]],
                                          copies[j].data(), copies[j].size()));
  return Status::success();
}

namespace {
/// Rows [samples, rows) of `data` (device memory, `samples` real rows)
/// become copies of row samples - 1, by copies that double the filled part.
Status padRowsOnDevice(Queue &queue, unsigned char *data, int64_t samples,
                       int64_t rows, size_t rowBytes) {
  if (samples >= rows || samples < 1 || rowBytes == 0)
    return Status::success();
  unsigned char *first = data + size_t(samples) * rowBytes;
  CLEAVE_RETURN_IF_ERROR(queue.copy(first, first - rowBytes, rowBytes));
  for (int64_t filled = samples + 1; filled < rows;) {
    int64_t n = std::min(filled - samples, rows - filled);
    CLEAVE_RETURN_IF_ERROR(queue.copy(data + size_t(filled) * rowBytes, first,
                                      size_t(n) * rowBytes));
    filled += n;
  }
  return Status::success();
}
} // namespace

Status Session::stage(EntryKind kind, const cleave_batch &batch,
                      BatchMemory memory) {
  const Manifest &m = manifest_;
  int64_t samples = batch.samples;
  int64_t b = m.microBatch;
  CLEAVE_RETURN_IF_ERROR(checkBatch(kind, batch, b, memory));
  if (kind == EntryKind::micro_step && samples < b && !m.sampleWeightsInput)
    return makeError(CLEAVE_INVALID_ARGUMENT, "batch: samples is ", samples,
                     " but the artifact has no sample-weights input, so "
                     "every micro-batch must have exactly ",
                     b, " samples");
  const EntryDesc &e = m.entry(kind);
  const DeviceProperties &properties = device_->properties();
  Queue &transfer = device_->transfer();
  // Input sets alternate where the device has several. The copies out of
  // this set's host view were enqueued a set's turn ago, usually long done;
  // the copies into it wait, on the device, for the entry that read it.
  const int set = stagingSlot_;
  std::vector<Buffer> &buffers = inputs_[size_t(set)];
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(copied_[set]->synchronize()));
  CLEAVE_RETURN_IF_ERROR(
      noteDeviceError(transfer.wait(*consumed_[size_t(set)])));
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    inputPtrs_[i] = buffers[i].data;
    hostInputs_[i] = buffers[i].host;
  }
  // Pinned and device batches on a device that does not address host
  // memory: copied from where the caller has them, and waited for, also
  // when the call fails after enqueuing some of the copies.
  const bool direct = !properties.hostMemory && memory != BatchMemory::host;
  struct SettleCopies {
    Queue &queue;
    Event &copied;
    bool armed;
    ~SettleCopies() {
      if (armed && queue.record(copied).ok())
        (void)copied.synchronize();
    }
  } settle{transfer, *copied_[set], direct};
  bool downloads = false;
  for (size_t j = 0; j < m.userInputs.size(); ++j) {
    size_t idx = m.userInputs[j];
    if (!e.usesInput[idx])
      continue;
    const InputDesc &in = m.inputs[idx];
    const void *src = batch.data[j];
    if (direct) {
      auto *dst = static_cast<unsigned char *>(buffers[idx].data);
      const size_t real = size_t(samples) * in.rowBytes;
      const bool pinned = memory == BatchMemory::pinned;
      CLEAVE_RETURN_IF_ERROR(
          noteDeviceError(pinned ? transfer.upload(dst, src, real)
                                 : transfer.copy(dst, src, real)));
      CLEAVE_RETURN_IF_ERROR(noteDeviceError(
          padRowsOnDevice(transfer, dst, samples, b, in.rowBytes)));
      hostInputs_[idx] = pinned ? src : nullptr;
      // What the host reads of a device batch: its indices (checked, unless
      // trainBatch checked the whole batch) and token labels (the token
      // weights).
      if (!pinned && ((in.indexBound > 0 && !inTrainBatch_) ||
                      m.tokenLabelsInput == idx)) {
        CLEAVE_RETURN_IF_ERROR(
            noteDeviceError(transfer.download(buffers[idx].host, src, real)));
        hostInputs_[idx] = buffers[idx].host;
        downloads = true;
      }
      continue;
    }
    if (properties.hostMemory && samples == b &&
        reinterpret_cast<uintptr_t>(src) % properties.alignment == 0) {
      // A full batch the device addresses is used where it is. Entry points
      // never write their inputs (ABI).
      inputPtrs_[idx] = const_cast<void *>(src);
      hostInputs_[idx] = src;
      continue;
    }
    // Padding rows repeat the last real sample rather than being zero: a
    // model that is not finite on an all-zero row (a log or a division of
    // its input) would otherwise turn the whole micro-batch into NaN, since
    // the sample weight 0 multiplies, and 0 * NaN is NaN.
    copyRowsPadded(buffers[idx].host, src, samples, b, in.rowBytes,
                   numThreads_);
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(
        transfer.upload(buffers[idx].data, buffers[idx].host, in.bytes)));
  }
  if (downloads) {
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(transfer.record(*hostRead_)));
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(hostRead_->synchronize()));
    for (size_t j = 0; j < m.userInputs.size() && !inTrainBatch_; ++j) {
      const InputDesc &in = m.inputs[m.userInputs[j]];
      if (e.usesInput[m.userInputs[j]] && in.indexBound > 0)
        CLEAVE_RETURN_IF_ERROR(checkIndices(in, hostInputs_[m.userInputs[j]],
                                            size_t(samples) * in.rowBytes));
    }
  }
  if (m.sampleWeightsInput && m.tokenLabelsInput &&
      e.usesInput[*m.sampleWeightsInput]) {
    // One weight per token, from this micro-batch's labels: the window is
    // normalised by its number of real tokens.
    const size_t idx = *m.sampleWeightsInput;
    CLEAVE_RETURN_IF_ERROR(fillTokenWeights(hostInputs_[*m.tokenLabelsInput],
                                            buffers[idx].host, samples, kind));
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(transfer.upload(
        buffers[idx].data, buffers[idx].host, m.inputs[idx].bytes)));
    weightsSamples_[size_t(set)] = -1;
  } else if (m.sampleWeightsInput && e.usesInput[*m.sampleWeightsInput] &&
             weightsSamples_[size_t(set)] != samples) {
    const size_t idx = *m.sampleWeightsInput;
    unsigned char *w = buffers[idx].host;
    for (int64_t i = 0; i < b; ++i) {
      double v = i < samples ? 1.0 : 0.0;
      if (m.inputs[idx].dtype == DType::f64)
        reinterpret_cast<double *>(w)[i] = v;
      else
        reinterpret_cast<float *>(w)[i] = float(v);
    }
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(
        transfer.upload(buffers[idx].data, w, m.inputs[idx].bytes)));
    weightsSamples_[size_t(set)] = samples;
  }
  if (!m.tokenLabelsInput)
    lastCount_ = samples;
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(transfer.record(*copied_[set])));
  // The caller's buffers are theirs again when the call returns.
  settle.armed = false;
  if (direct)
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(copied_[set]->synchronize()));
  Binding &binding = bindings_[static_cast<size_t>(kind)];
  for (const auto &[arg, input] : binding.inputArgs)
    binding.args[arg] = inputPtrs_[input];
  stagedSet_ = set;
  stagingSlot_ = (set + 1) % properties.inputSets;
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
    [[maybe_unused]] const int team =
        threads > 0 ? threads : omp_get_max_threads();
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

Status Session::enqueueLossCopy() {
  const TensorDesc &loss =
      manifest_.entry(EntryKind::micro_step).outputs[manifest_.lossOutput];
  if (lossCount_ >= lossCapacity_)
    CLEAVE_RETURN_IF_ERROR(reserveLossSlots(lossCount_ + 1));
  const Binding &b = bindings_[size_t(EntryKind::micro_step)];
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->compute().download(
      lossSlots_ + lossCount_ * sizeof(double),
      b.outputs[manifest_.lossOutput].data, loss.bytes)));
  ++lossCount_;
  lossPending_ = true;
  // Where it costs no wait, the loss is summed at once, so that the slots
  // never grow.
  if (device_->properties().synchronous)
    foldLosses();
  return Status::success();
}

void Session::foldLosses() const {
  lossPending_ = false;
  if (!noteDeviceError(device_->synchronize()).ok()) {
    lastLoss_ = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const DType dtype = manifest_.entry(EntryKind::micro_step)
                          .outputs[manifest_.lossOutput]
                          .dtype;
  for (size_t i = 0; i < lossCount_; ++i)
    lossSum_ += readScalar(dtype, lossSlots_ + i * sizeof(double));
  lossCount_ = 0;
  lastLoss_ = lossSum_ / double(lossSamples_);
}

double Session::lastLoss() const {
  if (lossPending_)
    foldLosses();
  return lastLoss_;
}

Status Session::run(EntryKind kind) {
  const size_t k = static_cast<size_t>(kind);
  Binding &b = bindings_[k];
  CLEAVE_RETURN_IF_ERROR(noteDeviceError(runner_->enter()));
  // An entry that reads inputs reads the set of the batch staged last, once
  // its copies are done; the next copy into the set waits for the entry.
  const bool readsInputs = !b.inputArgs.empty();
  const int set = readsInputs ? stagedSet_ : 0;
  Queue &compute = device_->compute();
  if (readsInputs)
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(compute.wait(*copied_[set])));
  // apply_step reads the accumulators and writes the parameters.
  const bool update = kind == EntryKind::apply_step;
  if (update) {
    Status settled = kernelContext_->beginParameterUpdate();
    if (!settled.ok()) {
      failure_ =
          settled.withContext(artifact_->path() + ": " + abi::name(kind));
      return failure_;
    }
  }
  Status status = enqueue(kind, set);
  if (update)
    kernelContext_->endParameterUpdate();
  if (readsInputs)
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(compute.record(*consumed_[set])));
  return status;
}

Status Session::enqueue(EntryKind kind, int set) {
  Binding &b = bindings_[static_cast<size_t>(kind)];
  Status status = runner_->run(b.entry, set, b.args.data(), windowBytes_);
  // A kernel that failed left the globals part old, part new.
  if (!status.ok())
    failure_ = status;
  return status;
}

Status Session::checkUsable() const {
  if (failure_.ok())
    return Status::success();
  return makeError(CLEAVE_FAILED_PRECONDITION,
                   "the session is unusable since an entry point failed (",
                   failure_.message(),
                   "); destroy it or load a checkpoint into it");
}

Status Session::checkDevice() const {
  return deviceFault_ ? checkUsable() : Status::success();
}

Status Session::checkTraining(const char *what) const {
  if (manifest_.kind != ArtifactKind::inference)
    return Status::success();
  return makeError(CLEAVE_FAILED_PRECONDITION, artifact_->path(),
                   ": an inference artifact (compiled forward-only) cannot ",
                   what, "; it has eval_step alone");
}

Status Session::microStep(const cleave_batch &batch, BatchMemory memory) {
  CLEAVE_RETURN_IF_ERROR(checkTraining("run a micro-step"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  CLEAVE_RETURN_IF_ERROR(stage(EntryKind::micro_step, batch, memory));
  const int64_t before = *microSteps_;
  CLEAVE_RETURN_IF_ERROR(run(EntryKind::micro_step));
  if (device_->properties().synchronous) {
    // The entry advanced the counter, in the host view: check it did.
    if (*microSteps_ != before + 1)
      return makeError(CLEAVE_INTERNAL, artifact_->path(),
                       ": micro_step changed train.micro_steps from ", before,
                       " to ", *microSteps_, " (expected ", before + 1, ")");
  } else {
    // The counters advance on the device; the session counts along in the
    // host view rather than waiting for them (pullGlobals checks they
    // agree).
    ++*microSteps_;
  }
  if (!inTrainBatch_) {
    lossCount_ = 0;
    lossSamples_ = 0;
    lossSum_ = 0.0;
  }
  lossSamples_ += lastCount_;
  CLEAVE_RETURN_IF_ERROR(enqueueLossCopy());
  if (*microSteps_ >= accumulate_)
    return apply();
  return Status::success();
}

Status Session::apply() {
  int64_t stepBefore = *step_;
  // Also here, not only after each apply: train.step may have been written
  // through writeGlobal since.
  syncScheduledLr();
  CLEAVE_RETURN_IF_ERROR(run(EntryKind::apply_step));
  lastWindowBytes_ = windowBytes_;
  windowBytes_ = 0;
  // The apply step's verdict on the window: 0, or which sum was not finite
  // (its update was skipped and train.step left alone).
  int64_t verdict = 0;
  if (const std::optional<size_t> g = manifest_.nonfiniteGlobal) {
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->compute().download(
        globals_[*g].host, globals_[*g].data, sizeof(int64_t))));
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->synchronize()));
    std::memcpy(&verdict, globals_[*g].host, sizeof(verdict));
  }
  const int64_t advance = verdict == 0 ? 1 : 0;
  if (!device_->properties().synchronous) {
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
    if (g.kind != GlobalKind::accumulator || ++position != verdict)
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
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->compute().download(
        globals_[*m.skippedStepsGlobal].host,
        globals_[*m.skippedStepsGlobal].data, sizeof(int64_t))));
    CLEAVE_RETURN_IF_ERROR(noteDeviceError(device_->synchronize()));
    std::memcpy(&skipped, globals_[*m.skippedStepsGlobal].host,
                sizeof(skipped));
  }
  return makeError(CLEAVE_NON_FINITE, artifact_->path(), ": window ",
                   *step_ + skipped, " (optimizer step ", step + 1, "): ", what,
                   " is not finite (NaN or infinite); the step was skipped, "
                   "the parameters and optimizer state are unchanged");
}

Status Session::trainBatch(const cleave_batch &batch, int64_t microSize,
                           BatchMemory memory) {
  const Manifest &m = manifest_;
  CLEAVE_RETURN_IF_ERROR(checkTraining("train"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  if (microSize < 1 || microSize > m.microBatch)
    return makeError(CLEAVE_INVALID_ARGUMENT, "micro_size is ", microSize,
                     ", expected 1 to ", m.microBatch,
                     " (the micro-batch size)");
  // The whole batch is checked first so that a bad one trains nothing.
  CLEAVE_RETURN_IF_ERROR(checkBatch(EntryKind::micro_step, batch,
                                    std::numeric_limits<int64_t>::max(),
                                    memory));
  if (onlyDeviceReads(memory))
    CLEAVE_RETURN_IF_ERROR(checkDeviceIndices(EntryKind::micro_step, batch));
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
  // One loss slot per micro-batch where the losses are summed when asked
  // for; one where each is summed at once.
  if (!device_->properties().synchronous)
    CLEAVE_RETURN_IF_ERROR(
        reserveLossSlots(size_t((batch.samples + microSize - 1) / microSize)));
  lossCount_ = 0;
  lossSamples_ = 0;
  lossSum_ = 0.0;
  inTrainBatch_ = true;
  Status status;
  // Advancing by the slice, not by microSize, keeps `start` <= samples: an
  // artifact without user inputs accepts any sample count, up to INT64_MAX.
  for (int64_t start = 0; status.ok() && start < batch.samples;
       start += slice.samples) {
    slice.samples = std::min(microSize, batch.samples - start);
    for (size_t j = 0; j < m.userInputs.size(); ++j) {
      size_t rowBytes = m.inputs[m.userInputs[j]].rowBytes;
      const auto *base = static_cast<const unsigned char *>(batch.data[j]);
      sliceData_[j] = base ? base + size_t(start) * rowBytes : nullptr;
      sliceBytes_[j] = size_t(slice.samples) * rowBytes;
    }
    status = microStep(slice, memory);
  }
  inTrainBatch_ = false;
  lastCount_ = lossSamples_;
  return status;
}

Status Session::flush() {
  CLEAVE_RETURN_IF_ERROR(checkTraining("apply a window"));
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  if (*microSteps_ > 0)
    return apply();
  return Status::success();
}

Status Session::eval(const cleave_batch &batch, BatchMemory memory) {
  if (!manifest_.entry(EntryKind::eval_step).present)
    return makeError(CLEAVE_FAILED_PRECONDITION, artifact_->path(),
                     ": the artifact has no eval_step entry");
  CLEAVE_RETURN_IF_ERROR(checkUsable());
  CLEAVE_RETURN_IF_ERROR(stage(EntryKind::eval_step, batch, memory));
  return run(EntryKind::eval_step);
}

} // namespace cleave::rt

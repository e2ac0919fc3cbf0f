//===- runtime.hpp - C++ wrapper of the Cleave runtime C API ----*- C++ -*-===//
//
// Header-only RAII wrappers over cleave/runtime.h. Failures throw
// cleave::Error (status + message); the library underneath never throws, so
// exceptions exist only on this side of the C boundary.
//
//   cleave::Artifact model = cleave::Artifact::load("model.cleave");
//   cleave::SessionOptions options;
//   options.seed = 42;
//   cleave::Session session(model, options);
//   session.setHyperparameter("lr", 0.05);
//   cleave::Batch batch(k);
//   batch.add(images).add(labels);   // std::vector or pointer + bytes
//   session.microStep(batch);        // applies every N micro-steps
//   double loss = session.lastLoss();
//   session.flush();
//   session.saveCheckpoint("run.ckpt");
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_HPP
#define CLEAVE_RUNTIME_HPP

#include "cleave/runtime.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cleave {

/// A failed runtime call.
class Error : public std::runtime_error {
public:
  Error(cleave_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  cleave_status status() const { return status_; }

private:
  cleave_status status_;
};

/// Throws cleave::Error unless `status` is CLEAVE_OK.
inline void check(cleave_status status) {
  if (status != CLEAVE_OK)
    throw Error(status, cleave_last_error_message());
}

/// A description of a tensor, owning its strings.
struct TensorInfo {
  std::string name;
  cleave_dtype dtype = CLEAVE_DTYPE_F32;
  std::vector<int64_t> shape;
  size_t bytes = 0;

  static TensorInfo from(const cleave_tensor_info &info) {
    TensorInfo t;
    t.name = info.name;
    t.dtype = info.dtype;
    t.shape.assign(info.shape, info.shape + info.rank);
    t.bytes = info.bytes;
    return t;
  }
};

struct GlobalInfo {
  TensorInfo tensor;
  cleave_global_kind kind = CLEAVE_GLOBAL_PARAM;
  std::string of;
};

struct HyperparameterInfo {
  std::string name;
  double defaultValue = 0.0;
};

struct WarningInfo {
  std::string op, loc, message;
};

/// A loaded artifact (shared, reference-counted handle).
class Artifact {
public:
  static Artifact load(const std::string &path) {
    cleave_artifact *handle = nullptr;
    check(cleave_artifact_load(path.c_str(), &handle));
    return Artifact(handle);
  }
  /// Adopts one reference of `handle`.
  explicit Artifact(cleave_artifact *handle) : handle_(handle) {}
  Artifact(const Artifact &other) : handle_(other.handle_) {
    if (handle_)
      check(cleave_artifact_retain(handle_));
  }
  Artifact(Artifact &&other) noexcept : handle_(other.handle_) {
    other.handle_ = nullptr;
  }
  Artifact &operator=(Artifact other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Artifact() { cleave_artifact_release(handle_); }

  cleave_artifact *get() const { return handle_; }

  std::string path() const {
    const char *p = nullptr;
    check(cleave_artifact_path(handle_, &p));
    return p;
  }
  std::string manifest() const {
    const char *json = nullptr;
    check(cleave_artifact_manifest(handle_, &json));
    return json;
  }
  int64_t microBatch() const {
    int64_t b = 0;
    check(cleave_artifact_micro_batch(handle_, &b));
    return b;
  }
  int64_t accumulate() const {
    int64_t n = 0;
    check(cleave_artifact_accumulate(handle_, &n));
    return n;
  }
  int64_t windowSamples() const {
    int64_t w = 0;
    check(cleave_artifact_window_samples(handle_, &w));
    return w;
  }
  std::vector<TensorInfo> inputs() const {
    size_t n = 0;
    check(cleave_artifact_num_inputs(handle_, &n));
    std::vector<TensorInfo> out;
    for (size_t i = 0; i < n; ++i) {
      cleave_tensor_info info;
      check(cleave_artifact_input(handle_, i, &info));
      out.push_back(TensorInfo::from(info));
    }
    return out;
  }
  std::vector<GlobalInfo> globals() const {
    size_t n = 0;
    check(cleave_artifact_num_globals(handle_, &n));
    std::vector<GlobalInfo> out;
    for (size_t i = 0; i < n; ++i) {
      cleave_global_info info;
      check(cleave_artifact_global(handle_, i, &info));
      out.push_back({TensorInfo::from(info.tensor), info.kind, info.of});
    }
    return out;
  }
  std::vector<HyperparameterInfo> hyperparameters() const {
    size_t n = 0;
    check(cleave_artifact_num_hyperparameters(handle_, &n));
    std::vector<HyperparameterInfo> out;
    for (size_t i = 0; i < n; ++i) {
      cleave_hyperparameter_info info;
      check(cleave_artifact_hyperparameter(handle_, i, &info));
      out.push_back({info.name, info.default_value});
    }
    return out;
  }
  bool hasEntry(const std::string &entry) const {
    int present = 0;
    check(cleave_artifact_has_entry(handle_, entry.c_str(), &present));
    return present != 0;
  }
  std::vector<TensorInfo> outputs(const std::string &entry) const {
    size_t n = 0;
    check(cleave_artifact_num_outputs(handle_, entry.c_str(), &n));
    std::vector<TensorInfo> out;
    for (size_t i = 0; i < n; ++i) {
      cleave_tensor_info info;
      check(cleave_artifact_output(handle_, entry.c_str(), i, &info));
      out.push_back(TensorInfo::from(info));
    }
    return out;
  }
  std::vector<WarningInfo> warnings() const {
    size_t n = 0;
    check(cleave_artifact_num_warnings(handle_, &n));
    std::vector<WarningInfo> out;
    for (size_t i = 0; i < n; ++i) {
      cleave_warning_info info;
      check(cleave_artifact_warning(handle_, i, &info));
      out.push_back({info.op, info.loc, info.message});
    }
    return out;
  }

private:
  cleave_artifact *handle_ = nullptr;
};

/// A learning-rate schedule of `kind` with the C API's defaults for every
/// other field (peak lr NaN: the session's current lr).
inline cleave_lr_schedule makeLrSchedule(cleave_lr_schedule_kind kind) {
  cleave_lr_schedule s;
  cleave_lr_schedule_init(&s);
  s.kind = kind;
  return s;
}

/// The learning rate of optimizer step `step` under `schedule`.
inline double lrScheduleValue(const cleave_lr_schedule &schedule,
                              int64_t step) {
  double lr = 0;
  check(cleave_lr_schedule_value(&schedule, step, &lr));
  return lr;
}

/// Session options with the C API's defaults.
struct SessionOptions {
  uint64_t seed = 0;
  int64_t accumulate = 0;
  int32_t numThreads = 0;
  bool distributed = false;
  /// CLEAVE_DEVICE_CPU or CLEAVE_DEVICE_CUDA.
  int32_t device = CLEAVE_DEVICE_CPU;
  /// A GPU ordinal, or CLEAVE_DEVICE_ORDINAL_AUTO (one GPU per rank).
  int32_t deviceOrdinal = 0;
  /// CLEAVE_NONFINITE_STOP or CLEAVE_NONFINITE_SKIP.
  int32_t onNonfinite = CLEAVE_NONFINITE_STOP;
};

/// Pointers to `samples` rows of each user input, in artifact input order. A
/// Batch can be reused across calls; it does not own the data.
class Batch {
public:
  explicit Batch(int64_t samples = 0) : samples_(samples) {}

  Batch &add(const void *data, size_t bytes) {
    data_.push_back(data);
    bytes_.push_back(bytes);
    return *this;
  }
  template <typename T> Batch &add(const std::vector<T> &values) {
    return add(values.data(), values.size() * sizeof(T));
  }
  void setSamples(int64_t samples) { samples_ = samples; }
  void clear() {
    data_.clear();
    bytes_.clear();
  }

  cleave_batch view() const {
    return {samples_, data_.size(), data_.data(), bytes_.data()};
  }

private:
  int64_t samples_;
  std::vector<const void *> data_;
  std::vector<size_t> bytes_;
};

/// A training session (move-only).
class Session {
public:
  Session(const Artifact &artifact, const SessionOptions &options = {}) {
    cleave_session_options opts;
    cleave_session_options_init(&opts);
    opts.seed = options.seed;
    opts.accumulate = options.accumulate;
    opts.num_threads = options.numThreads;
    opts.distributed = options.distributed ? 1 : 0;
    opts.device = options.device;
    opts.device_ordinal = options.deviceOrdinal;
    opts.on_nonfinite = options.onNonfinite;
    check(cleave_session_create(artifact.get(), &opts, &handle_));
  }
  Session(Session &&other) noexcept : handle_(other.handle_) {
    other.handle_ = nullptr;
  }
  Session &operator=(Session &&other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session() { cleave_session_destroy(handle_); }

  cleave_session *get() const { return handle_; }

  Artifact artifact() const {
    cleave_artifact *a = nullptr;
    check(cleave_session_artifact(handle_, &a));
    check(cleave_artifact_retain(a));
    return Artifact(a);
  }

  /// `memory`: where the batch's buffers are (CLEAVE_MEMORY_*).
  void microStep(const Batch &batch, int memory = CLEAVE_MEMORY_HOST) {
    cleave_batch b = batch.view();
    check(cleave_session_micro_step_ex(handle_, &b, memory));
  }
  void trainBatch(const Batch &batch, int64_t microSize,
                  int memory = CLEAVE_MEMORY_HOST) {
    cleave_batch b = batch.view();
    check(cleave_session_train_batch_ex(handle_, &b, microSize, memory));
  }
  void flush() { check(cleave_session_flush(handle_)); }
  void eval(const Batch &batch, int memory = CLEAVE_MEMORY_HOST) {
    cleave_batch b = batch.view();
    check(cleave_session_eval_ex(handle_, &b, memory));
  }
  /// Output `name` of `entry` as the typed elements of its whole buffer.
  template <typename T>
  std::vector<T> output(const std::string &entry,
                        const std::string &name) const {
    const void *data = nullptr;
    size_t bytes = 0;
    check(cleave_session_output(handle_, entry.c_str(), name.c_str(), &data,
                                &bytes));
    const T *p = static_cast<const T *>(data);
    return std::vector<T>(p, p + bytes / sizeof(T));
  }

  double lastLoss() const {
    double loss = 0;
    check(cleave_session_last_loss(handle_, &loss));
    return loss;
  }
  /// What the device chose that changes speed but not results, one line
  /// each (cleave_session_note); the list only grows.
  std::vector<std::string> notes() const {
    size_t count = 0;
    check(cleave_session_num_notes(handle_, &count));
    std::vector<std::string> notes(count);
    for (size_t i = 0; i < count; ++i) {
      const char *note = nullptr;
      check(cleave_session_note(handle_, i, &note));
      notes[i] = note;
    }
    return notes;
  }
  /// What lastLoss() is a mean over: samples, or tokens for token labels.
  int64_t lastCount() const {
    int64_t count = 0;
    check(cleave_session_last_count(handle_, &count));
    return count;
  }
  /// Bytes this rank sent through the artifact's collectives in the last
  /// completed window (cleave_session_bytes_sent).
  uint64_t bytesSentLastWindow() const {
    uint64_t last = 0;
    check(cleave_session_bytes_sent(handle_, &last, nullptr));
    return last;
  }
  /// Bytes this rank sent since the session was created.
  uint64_t bytesSentTotal() const {
    uint64_t total = 0;
    check(cleave_session_bytes_sent(handle_, nullptr, &total));
    return total;
  }
  /// Sums `values` across the job's ranks, in place (a collective).
  void sumAcrossRanks(std::vector<double> &values) {
    check(cleave_session_sum_across_ranks(handle_, values.data(),
                                          values.size()));
  }
  void setAccumulation(int64_t n) {
    check(cleave_session_set_accumulation(handle_, n));
  }
  int64_t accumulation() const {
    int64_t n = 0;
    check(cleave_session_accumulation(handle_, &n));
    return n;
  }
  void setHyperparameter(const std::string &name, double value) {
    check(cleave_session_set_hyperparameter(handle_, name.c_str(), value));
  }
  double hyperparameter(const std::string &name) const {
    double v = 0;
    check(cleave_session_hyperparameter(handle_, name.c_str(), &v));
    return v;
  }
  /// Hyperparameter `lr` follows `schedule` (cleave_session_set_lr_schedule).
  void setLrSchedule(const cleave_lr_schedule &schedule) {
    check(cleave_session_set_lr_schedule(handle_, &schedule));
  }
  /// `lr` stops following a schedule and keeps its current value.
  void clearLrSchedule() {
    check(cleave_session_set_lr_schedule(handle_, nullptr));
  }
  std::optional<cleave_lr_schedule> lrSchedule() const {
    cleave_lr_schedule s;
    int active = 0;
    check(cleave_session_lr_schedule(handle_, &s, &active));
    if (!active)
      return std::nullopt;
    return s;
  }
  int64_t microSteps() const {
    int64_t n = 0;
    check(cleave_session_micro_steps(handle_, &n));
    return n;
  }
  int64_t step() const {
    int64_t n = 0;
    check(cleave_session_step(handle_, &n));
    return n;
  }
  uint64_t seed() const {
    uint64_t s = 0;
    check(cleave_session_seed(handle_, &s));
    return s;
  }
  std::pair<int, int> rank() const {
    int r = 0, n = 1;
    check(cleave_session_rank(handle_, &r, &n));
    return {r, n};
  }

  template <typename T>
  std::vector<T> readGlobal(const std::string &name) const {
    size_t bytes = globalBytes(name);
    std::vector<T> out(bytes / sizeof(T));
    check(cleave_session_read_global(handle_, name.c_str(), out.data(),
                                     out.size() * sizeof(T)));
    return out;
  }
  template <typename T>
  void writeGlobal(const std::string &name, const std::vector<T> &values) {
    check(cleave_session_write_global(handle_, name.c_str(), values.data(),
                                      values.size() * sizeof(T)));
  }

  void setUserState(const std::string &key, const std::string &value) {
    check(cleave_session_set_user_state(handle_, key.c_str(), value.data(),
                                        value.size()));
  }
  void eraseUserState(const std::string &key) {
    check(cleave_session_set_user_state(handle_, key.c_str(), nullptr, 0));
  }
  std::string userState(const std::string &key) const {
    const void *value = nullptr;
    size_t bytes = 0;
    check(cleave_session_user_state(handle_, key.c_str(), &value, &bytes));
    return std::string(static_cast<const char *>(value), bytes);
  }

  void saveCheckpoint(const std::string &path) const {
    check(cleave_session_save_checkpoint(handle_, path.c_str()));
  }
  void loadCheckpoint(const std::string &path) {
    check(cleave_session_load_checkpoint(handle_, path.c_str()));
  }

private:
  size_t globalBytes(const std::string &name) const {
    for (const GlobalInfo &g : artifact().globals())
      if (g.tensor.name == name)
        return g.tensor.bytes;
    throw Error(CLEAVE_NOT_FOUND, "unknown global '" + name + "'");
  }

  cleave_session *handle_ = nullptr;
};

} // namespace cleave

#endif // CLEAVE_RUNTIME_HPP

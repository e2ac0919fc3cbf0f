//===- Checker.cpp - N micro-batches against one batch of N*B -------------===//

#include "Checker.h"

#include "Error.h"
#include "ModelInterface.h"

#include "data/Dataset.h"
#include "data/MicroBatcher.h"
#include "data/Npy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <random>

namespace cleave::checker {

namespace {

using data::shapeString;

void check(const rt::Status &status) {
  if (!status.ok())
    throw tools::Error(status.message());
}

bool isModelState(cleave_global_kind kind) {
  return kind == CLEAVE_GLOBAL_PARAM || kind == CLEAVE_GLOBAL_BUFFER;
}

/// Reproducible random data. mt19937_64's sequence is fixed by the C++
/// standard; the distributions are written out here because the standard
/// library's are implementation-defined, so that one --seed gives the same
/// samples with any compiler.
class Random {
public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return double(engine_() >> 11) * 0x1p-53; }
  /// Standard normal (Box-Muller; 1 - uniform() is never 0).
  double normal() {
    double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    return r * std::cos(2.0 * M_PI * uniform());
  }
  /// Uniform in [0, bound).
  int64_t below(int64_t bound) {
    return std::min<int64_t>(int64_t(uniform() * double(bound)), bound - 1);
  }

private:
  std::mt19937_64 engine_;
};

/// A user input of the pair of artifacts, and the bound of its values if it
/// holds indices (class labels, embedding rows).
struct Input {
  cleave::TensorInfo info;
  int64_t indexBound = 0;
  /// Bytes of one sample.
  size_t rowBytes = 0;
};

/// The user inputs of `artifact` with the index bounds its manifest records.
std::vector<Input> inputsOf(const cleave::Artifact &artifact) {
  nlohmann::json manifest = nlohmann::json::parse(artifact.manifest());
  std::map<std::string, int64_t> bounds;
  for (const nlohmann::json &in : manifest.value("inputs", nlohmann::json()))
    if (in.contains("index_bound"))
      bounds[in.at("name").get<std::string>()] =
          in.at("index_bound").get<int64_t>();
  std::vector<Input> inputs;
  for (const cleave::TensorInfo &info : artifact.inputs()) {
    Input in;
    in.info = info;
    in.indexBound = bounds.count(info.name) ? bounds[info.name] : 0;
    int64_t rows = info.shape.empty() ? 1 : info.shape.front();
    in.rowBytes = rows > 0 ? info.bytes / size_t(rows) : 0;
    inputs.push_back(in);
  }
  return inputs;
}

std::vector<int64_t> sampleShape(const cleave::TensorInfo &info) {
  if (info.shape.empty())
    return {};
  return {info.shape.begin() + 1, info.shape.end()};
}

std::string describe(const cleave::TensorInfo &info) {
  return std::string(cleave_dtype_name(info.dtype)) + " " +
         shapeString(info.shape);
}

/// Checks that `reference` is the big-batch twin of `accumulating` (micro-
/// batch N*B, the same inputs per sample, the same parameters and buffers).
void checkPair(const cleave::Artifact &accumulating,
               const cleave::Artifact &reference, const CheckOptions &o) {
  const int64_t b = accumulating.microBatch(), n = accumulating.accumulate();
  if (o.kind == Reference::WithoutRemat &&
      (reference.microBatch() != b || reference.accumulate() != n))
    throw tools::Error(
        o.reference + " takes " + std::to_string(reference.accumulate()) +
        " micro-batches of " + std::to_string(reference.microBatch()) +
        " samples; " + o.accumulating + " takes " + std::to_string(n) + " of " +
        std::to_string(b) +
        ", and a rematerialisation check compares the same "
        "split");
  if (o.kind == Reference::BigBatch && reference.microBatch() != b * n)
    throw tools::Error(o.reference + " takes micro-batches of " +
                       std::to_string(reference.microBatch()) + " samples; " +
                       o.accumulating + " accumulates " + std::to_string(n) +
                       " of " + std::to_string(b) + ", so the reference must " +
                       "take " + std::to_string(b * n));
  std::vector<cleave::TensorInfo> a = accumulating.inputs(),
                                  r = reference.inputs();
  bool same = a.size() == r.size();
  for (size_t i = 0; same && i < a.size(); ++i)
    same = a[i].name == r[i].name && a[i].dtype == r[i].dtype &&
           sampleShape(a[i]) == sampleShape(r[i]);
  if (!same) {
    auto list = [](const std::vector<cleave::TensorInfo> &inputs) {
      std::string s;
      for (const cleave::TensorInfo &in : inputs)
        s += (s.empty() ? "" : ", ") + in.name + " " + describe(in);
      return s;
    };
    throw tools::Error(o.accumulating + " and " + o.reference +
                       " take different inputs (" + list(a) + " vs " + list(r) +
                       ")");
  }
  std::map<std::string, cleave::GlobalInfo> theirs;
  for (const cleave::GlobalInfo &g : reference.globals())
    if (isModelState(g.kind))
      theirs[g.tensor.name] = g;
  size_t ours = 0;
  for (const cleave::GlobalInfo &g : accumulating.globals()) {
    if (!isModelState(g.kind))
      continue;
    ++ours;
    auto it = theirs.find(g.tensor.name);
    if (it == theirs.end())
      throw tools::Error(o.reference + " has no parameter or buffer '" +
                         g.tensor.name + "' (" + o.accumulating + " has)");
    const cleave::TensorInfo &t = it->second.tensor;
    if (t.dtype != g.tensor.dtype || t.shape != g.tensor.shape)
      throw tools::Error("'" + g.tensor.name + "' is " + describe(g.tensor) +
                         " in " + o.accumulating + " but " + describe(t) +
                         " in " + o.reference);
  }
  if (ours != theirs.size())
    throw tools::Error(o.reference + " has " + std::to_string(theirs.size()) +
                       " parameters and buffers, " + o.accumulating + " " +
                       std::to_string(ours));
  if (ours == 0)
    throw tools::Error(o.accumulating + " has no parameters to compare");
}

/// A global's elements as doubles.
std::vector<double> readTensor(const cleave::Session &session,
                               const cleave::GlobalInfo &g) {
  switch (g.tensor.dtype) {
  case CLEAVE_DTYPE_F32: {
    std::vector<float> v = session.readGlobal<float>(g.tensor.name);
    return {v.begin(), v.end()};
  }
  case CLEAVE_DTYPE_F64:
    return session.readGlobal<double>(g.tensor.name);
  case CLEAVE_DTYPE_I32: {
    std::vector<int32_t> v = session.readGlobal<int32_t>(g.tensor.name);
    return {v.begin(), v.end()};
  }
  case CLEAVE_DTYPE_I64: {
    std::vector<int64_t> v = session.readGlobal<int64_t>(g.tensor.name);
    return {v.begin(), v.end()};
  }
  default: // Globals are f32, f64, i32 or i64 (runtime-abi.md).
    break;
  }
  throw tools::Error("global '" + g.tensor.name + "' has an unknown dtype");
}

} // namespace

double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i]))
      return std::numeric_limits<double>::quiet_NaN();
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max({scale, std::fabs(a[i]), std::fabs(b[i])});
  }
  return scale > 0 ? diff / scale : 0.0;
}

namespace {

/// NaN ranks above everything: a run that diverged does not agree.
double rank(double difference) {
  return std::isnan(difference) ? std::numeric_limits<double>::infinity()
                                : difference;
}

/// The samples of each window, as one buffer per user input.
class WindowSource {
public:
  virtual ~WindowSource() = default;
  /// Fills window `w` (0-based) into `batch`.
  virtual void fill(int64_t w, cleave::Batch &batch) = 0;
  virtual std::string describe() const = 0;
};

/// Inputs of f32/f64 drawn from N(0, 1) (standardised data), integer inputs
/// uniform below their index bound (class labels).
class RandomSource : public WindowSource {
public:
  RandomSource(std::vector<Input> inputs, int64_t samples, uint64_t seed,
               const std::string &artifact)
      : inputs_(std::move(inputs)), samples_(samples), seed_(seed),
        random_(seed) {
    for (const Input &in : inputs_) {
      bool integer = in.info.dtype == CLEAVE_DTYPE_I32 ||
                     in.info.dtype == CLEAVE_DTYPE_I64;
      // Narrow data (uint8 images, float16, ...): no distribution here
      // stands for it, and zeros would make a check that proves nothing.
      if (!integer && in.info.dtype != CLEAVE_DTYPE_F32 &&
          in.info.dtype != CLEAVE_DTYPE_F64)
        throw tools::Error(
            artifact + ": input '" + in.info.name + "' is " +
            cleave::checker::describe(in.info) +
            ", and cleave-check draws random values only for f32/f64 data "
            "and i32/i64 labels; give samples with --data");
      if (integer && in.indexBound <= 0)
        throw tools::Error(
            artifact + ": input '" + in.info.name + "' is " +
            cleave::checker::describe(in.info) +
            " without an index bound in the manifest, so cleave-check "
            "cannot draw valid values for it; give samples with --data");
      buffers_.emplace_back(in.rowBytes * size_t(samples_));
    }
  }

  void fill(int64_t, cleave::Batch &batch) override {
    batch.clear();
    batch.setSamples(samples_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      std::vector<unsigned char> &buffer = buffers_[i];
      const Input &in = inputs_[i];
      size_t bytes = buffer.size();
      switch (in.info.dtype) {
      case CLEAVE_DTYPE_F32:
        for (size_t k = 0; k < bytes / sizeof(float); ++k) {
          float v = float(random_.normal());
          std::memcpy(buffer.data() + k * sizeof(v), &v, sizeof(v));
        }
        break;
      case CLEAVE_DTYPE_F64:
        for (size_t k = 0; k < bytes / sizeof(double); ++k) {
          double v = random_.normal();
          std::memcpy(buffer.data() + k * sizeof(v), &v, sizeof(v));
        }
        break;
      case CLEAVE_DTYPE_I32:
        for (size_t k = 0; k < bytes / sizeof(int32_t); ++k) {
          int32_t v = int32_t(random_.below(in.indexBound));
          std::memcpy(buffer.data() + k * sizeof(v), &v, sizeof(v));
        }
        break;
      case CLEAVE_DTYPE_I64:
        for (size_t k = 0; k < bytes / sizeof(int64_t); ++k) {
          int64_t v = random_.below(in.indexBound);
          std::memcpy(buffer.data() + k * sizeof(v), &v, sizeof(v));
        }
        break;
      default: // Refused by the constructor.
        throw tools::Error("cleave-check: no random values for input '" +
                           in.info.name + "'");
      }
      batch.add(buffer.data(), bytes);
    }
  }

  std::string describe() const override {
    return "random (seed " + std::to_string(seed_) +
           "): floats from N(0, 1), labels uniform below their class count";
  }

private:
  std::vector<Input> inputs_;
  int64_t samples_;
  uint64_t seed_;
  Random random_;
  std::vector<std::vector<unsigned char>> buffers_;
};

/// Consecutive training samples of a dataset, read and standardised as
/// cleave-train reads them.
class DatasetSource : public WindowSource {
public:
  DatasetSource(const std::string &path, const cleave::Artifact &artifact,
                const std::string &artifactPath, int64_t samples,
                int64_t windows)
      : path_(path), samples_(samples) {
    model_ = train::inspectModel(artifact, artifactPath);
    data::DataFormat format;
    check(data::detectFormat(path, format));
    const int64_t needed = samples * windows;
    check(data::loadDataset(path, data::Split::Train,
                            train::datasetOptionsFor(model_, format, needed),
                            dataset_));
    train::checkData(model_, dataset_, artifactPath);
    if (dataset_.size() < needed)
      throw tools::Error(path + ": the training split has " +
                         std::to_string(dataset_.size()) + " samples; " +
                         std::to_string(windows) + " windows of " +
                         std::to_string(samples) + " need " +
                         std::to_string(needed) + " (fewer --windows?)");
    data::Normalization normalization;
    if (!dataset_.tokens) // token ids index an embedding: fed as they are
      check(data::standardization(dataset_, normalization));
    check(
        data::MicroBatcher::create(dataset_, samples, batcher_, normalization));
    format_ = data::formatName(format);
  }

  void fill(int64_t w, cleave::Batch &batch) override {
    check(batcher_->gatherRange(w * samples_, samples_));
    batch.clear();
    batch.setSamples(samples_);
    for (size_t i = 0; i < 2; ++i) {
      if (i == model_.inputIndex)
        batch.add(batcher_->inputData(), batcher_->inputBytes());
      else
        batch.add(batcher_->targets(), batcher_->targetBytes());
    }
  }

  std::string describe() const override {
    return path_ + " (" + format_ + ", training split from sample 0, " +
           (dataset_.tokens ? "token sequences" : "standardised") + ")";
  }

private:
  std::string path_, format_;
  int64_t samples_;
  train::ModelInterface model_;
  data::Dataset dataset_;
  std::unique_ptr<data::MicroBatcher> batcher_;
};

std::string format(double v) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.2e", v);
  return s;
}

} // namespace

CheckResult compareArtifacts(const CheckOptions &o) {
  if (o.windows < 1)
    throw tools::Error("windows must be at least 1, got " +
                       std::to_string(o.windows));
  cleave::Artifact accumulating = cleave::Artifact::load(o.accumulating);
  cleave::Artifact reference = cleave::Artifact::load(o.reference);
  checkPair(accumulating, reference, o);

  CheckResult result;
  result.kind = o.kind;
  result.microBatch = accumulating.microBatch();
  result.accumulate = accumulating.accumulate();
  const int64_t window = result.microBatch * result.accumulate;
  result.splitObservable = accumulating.warnings();

  std::unique_ptr<WindowSource> source;
  if (o.data.empty())
    source = std::make_unique<RandomSource>(inputsOf(accumulating), window,
                                            o.seed, o.accumulating);
  else
    source = std::make_unique<DatasetSource>(o.data, accumulating,
                                             o.accumulating, window, o.windows);
  result.data = source->describe();

  // Both sessions are seeded alike, and the reference then takes the
  // accumulating session's initial state outright: the comparison must not
  // rest on two artifacts drawing their initial values in the same order.
  cleave::SessionOptions options;
  options.seed = o.seed;
  options.accumulate = result.accumulate;
  cleave::Session a(accumulating, options);
  const bool sameSplit = o.kind == Reference::WithoutRemat;
  if (!sameSplit)
    options.accumulate = 1;
  cleave::Session b(reference, options);
  std::vector<cleave::GlobalInfo> compared;
  std::map<std::string, size_t> referenceBytes;
  for (const cleave::GlobalInfo &g : reference.globals())
    referenceBytes[g.tensor.name] = g.tensor.bytes;
  for (const cleave::GlobalInfo &g : accumulating.globals()) {
    bool copy = isModelState(g.kind) || g.kind == CLEAVE_GLOBAL_STATE;
    auto it = referenceBytes.find(g.tensor.name);
    if (copy && it != referenceBytes.end() && it->second == g.tensor.bytes)
      b.writeGlobal(g.tensor.name, a.readGlobal<unsigned char>(g.tensor.name));
    if (isModelState(g.kind))
      compared.push_back(g);
  }
  for (const cleave::HyperparameterInfo &h : accumulating.hyperparameters()) {
    if (h.name == "eps")
      result.eps = a.hyperparameter("eps");
    if (h.name == "lr")
      result.lr = a.hyperparameter("lr");
  }
  std::vector<std::vector<double>> initial;
  for (const cleave::GlobalInfo &g : compared)
    initial.push_back(readTensor(a, g));

  result.differences.push_back({"loss", {}});
  for (const cleave::GlobalInfo &g : compared)
    result.differences.push_back({g.tensor.name, {}});
  result.largest = -1;
  cleave::Batch batch;
  for (int64_t w = 0; w < o.windows; ++w) {
    source->fill(w, batch);
    a.trainBatch(batch, result.microBatch);
    b.trainBatch(batch, sameSplit ? result.microBatch : window);
    for (const cleave::Session *s : {&a, &b})
      if (s->step() != w + 1)
        throw tools::Error(
            (s == &a ? o.accumulating : o.reference) + " took " +
            std::to_string(s->step()) + " optimizer steps in " +
            std::to_string(w + 1) + " windows (a window is " +
            std::to_string(s == &a || sameSplit ? result.accumulate : 1) +
            " micro-steps there)");
    double lossA = a.lastLoss(), lossB = b.lastLoss();
    result.lossAccumulating.push_back(lossA);
    result.lossReference.push_back(lossB);
    result.differences[0].perWindow.push_back(relativeDifference(
        std::vector<double>{lossA}, std::vector<double>{lossB}));
    for (size_t i = 0; i < compared.size(); ++i)
      result.differences[i + 1].perWindow.push_back(relativeDifference(
          readTensor(a, compared[i]), readTensor(b, compared[i])));
    for (const Difference &d : result.differences)
      if (rank(d.perWindow.back()) > rank(result.largest)) {
        result.largest = d.perWindow.back();
        result.largestName = d.name;
        result.largestWindow = w;
      }
  }
  if (rank(result.largest) <= o.rtol)
    result.verdict = Verdict::Agree;
  else
    result.verdict = result.splitObservable.empty() || sameSplit
                         ? Verdict::Mismatch
                         : Verdict::SplitObservable;
  result.parametersMoved = false;
  for (size_t i = 0; i < compared.size(); ++i)
    if (readTensor(a, compared[i]) != initial[i])
      result.parametersMoved = true;
  return result;
}

void printReport(const CheckResult &r, double rtol, std::FILE *out) {
  const int64_t windows =
      r.differences.empty() ? 0 : int64_t(r.differences[0].perWindow.size());
  const bool remat = r.kind == Reference::WithoutRemat;
  if (remat)
    std::fprintf(out,
                 "rematerialised: micro-batch %lld, %lld micro-steps per "
                 "optimizer step, activations recomputed\n"
                 "reference:      the same, every activation held\n"
                 "data:           %lld window%s of %lld samples, %s\n",
                 (long long)r.microBatch, (long long)r.accumulate,
                 (long long)windows, windows == 1 ? "" : "s",
                 (long long)(r.microBatch * r.accumulate), r.data.c_str());
  else
    std::fprintf(out,
                 "accumulating: micro-batch %lld, %lld micro-steps per "
                 "optimizer step\n"
                 "reference:    micro-batch %lld, 1 micro-step per optimizer "
                 "step\n"
                 "data:         %lld window%s of %lld samples, %s\n",
                 (long long)r.microBatch, (long long)r.accumulate,
                 (long long)(r.microBatch * r.accumulate), (long long)windows,
                 windows == 1 ? "" : "s",
                 (long long)(r.microBatch * r.accumulate), r.data.c_str());
  for (const cleave::WarningInfo &w : r.splitObservable)
    if (!remat)
      std::fprintf(out, "split-observable: %s at %s: %s\n", w.op.c_str(),
                   w.loc.c_str(), w.message.c_str());

  // A table of fixed-width columns: the name, then one per window.
  size_t nameWidth = std::strlen("relative difference");
  for (const Difference &d : r.differences)
    nameWidth = std::max(nameWidth, d.name.size() + 2);
  auto cell = [](std::string &line, size_t width, const std::string &text) {
    line += text;
    line.append(width > text.size() ? width - text.size() : 1, ' ');
  };
  auto emit = [&](std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    std::fprintf(out, "%s\n", line.c_str());
  };
  std::string header;
  cell(header, nameWidth + 2, "relative difference");
  for (int64_t w = 0; w < windows; ++w)
    cell(header, 12, "window " + std::to_string(w + 1));
  emit(header);
  bool marked = false;
  for (const Difference &d : r.differences) {
    std::string line;
    cell(line, nameWidth + 2, "  " + d.name);
    for (double v : d.perWindow) {
      bool over = rank(v) > rtol;
      marked |= over;
      cell(line, 12, format(v) + (over ? "*" : ""));
    }
    emit(line);
  }
  if (marked && remat)
    std::fprintf(out, "(* not bit-identical)\n");
  else if (marked)
    std::fprintf(out, "(* exceeds --rtol=%s)\n", format(rtol).c_str());
  if (!r.parametersMoved)
    std::fprintf(out, "note: no parameter changed (a learning rate of 0?): "
                      "the agreement shows nothing\n");

  const std::string where =
      r.largestName + ", window " + std::to_string(r.largestWindow + 1);
  if (remat) {
    if (r.verdict == Verdict::Agree)
      std::fprintf(out, "agree: the rematerialised step gives bit-identical "
                        "losses, parameters and buffers in every window\n");
    else
      std::fprintf(out,
                   "mismatch: the rematerialised step is not bit-identical "
                   "to the step that holds its activations; largest "
                   "relative difference %s (%s)\n",
                   format(r.largest).c_str(), where.c_str());
    std::fflush(out);
    return;
  }
  switch (r.verdict) {
  case Verdict::Agree:
    std::fprintf(out,
                 "agree: %lld micro-batches of %lld give the update of one "
                 "batch of %lld; largest relative difference %s (%s), "
                 "within --rtol=%s\n",
                 (long long)r.accumulate, (long long)r.microBatch,
                 (long long)(r.microBatch * r.accumulate),
                 format(r.largest).c_str(), where.c_str(),
                 format(rtol).c_str());
    break;
  case Verdict::Mismatch:
    if (r.eps && r.lr && *r.eps > 0)
      std::fprintf(out,
                   "note: Adam moves a parameter by about lr*g/(|g| + eps): "
                   "near g = 0 it amplifies the float32 rounding of the "
                   "gradient by up to lr/eps = %s; if only Adam disagrees, "
                   "--eps=1e-4 checks the split without most of that "
                   "(docs/user/cleave-check.md)\n",
                   format(*r.lr / *r.eps).c_str());
    std::fprintf(out,
                 "mismatch: %lld micro-batches of %lld do not give the update "
                 "of one batch of %lld; largest relative difference %s (%s) "
                 "exceeds --rtol=%s\n",
                 (long long)r.accumulate, (long long)r.microBatch,
                 (long long)(r.microBatch * r.accumulate),
                 format(r.largest).c_str(), where.c_str(),
                 format(rtol).c_str());
    break;
  case Verdict::SplitObservable:
    std::fprintf(out,
                 "differ as expected: largest relative difference %s (%s) "
                 "exceeds --rtol=%s, and the model has %zu split-observable "
                 "op%s (above) whose results depend on the micro-batch; not "
                 "counted as a mismatch, and not a proof of equivalence\n",
                 format(r.largest).c_str(), where.c_str(), format(rtol).c_str(),
                 r.splitObservable.size(),
                 r.splitObservable.size() == 1 ? "" : "s");
    break;
  }
  std::fflush(out);
}

int exitStatus(Verdict verdict) {
  switch (verdict) {
  case Verdict::Agree:
    return 0;
  case Verdict::Mismatch:
    return 1;
  case Verdict::SplitObservable:
    return 3;
  }
  return 1;
}

int runCheck(const CheckOptions &options, std::FILE *out,
             std::FILE *err) noexcept {
  auto fail = [&](const char *message) {
    std::string line = message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::fprintf(err, "cleave-check: error: %s\n", line.c_str());
    return 2;
  };
  try {
    CheckResult result = compareArtifacts(options);
    printReport(result, options.rtol, out);
    return exitStatus(result.verdict);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}

} // namespace cleave::checker

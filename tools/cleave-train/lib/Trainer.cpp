//===- Trainer.cpp - cleave-train's training loop -------------------------===//

#include "Trainer.h"

#include "CheckpointDir.h"
#include "CommandLine.h"
#include "Error.h"
#include "Metrics.h"
#include "ModelInterface.h"
#include "Plot.h"
#include "Progress.h"

#include "data/Dataset.h"
#include "data/MicroBatcher.h"
#include "data/Npy.h"
#include "data/Shuffle.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <tuple>

namespace cleave::train {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using data::shapeString;

void check(const rt::Status &status) {
  if (!status.ok())
    throw tools::Error(status.message());
}

//===----------------------------------------------------------------------===//
// The trainer's position, saved in every checkpoint
//===----------------------------------------------------------------------===//

constexpr const char *kStateKey = "cleave-train";
constexpr uint64_t kStateVersion = 1;

struct Position {
  /// 0-based epoch in progress.
  int64_t epoch = 0;
  /// Samples of the epoch's order already trained.
  int64_t sample = 0;
  uint64_t shuffleSeed = 0;
  /// The size of the training set the position refers to.
  int64_t trainSamples = 0;
  /// Micro-steps since the start of the run.
  int64_t microSteps = 0;
  /// Sums of per-sample losses and sample counts (per-token losses and
  /// token counts for a language model): of the epoch so far and of the
  /// current window (for the metrics).
  double epochLossSum = 0;
  int64_t epochSamples = 0;
  double windowLossSum = 0;
  int64_t windowSamples = 0;
  /// The metrics file's length when the checkpoint was written.
  uint64_t metricsBytes = 0;
};

uint64_t doubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  return u;
}
double bitsDouble(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof(d));
  return d;
}

/// Eleven little-endian uint64: the version, then the fields in order
/// (doubles by their bits, so that a resumed run's sums are exact).
std::string encodePosition(const Position &p) {
  const uint64_t fields[] = {kStateVersion,
                             uint64_t(p.epoch),
                             uint64_t(p.sample),
                             p.shuffleSeed,
                             uint64_t(p.trainSamples),
                             uint64_t(p.microSteps),
                             doubleBits(p.epochLossSum),
                             uint64_t(p.epochSamples),
                             doubleBits(p.windowLossSum),
                             uint64_t(p.windowSamples),
                             p.metricsBytes};
  std::string bytes;
  for (uint64_t f : fields)
    for (int i = 0; i < 8; ++i)
      bytes.push_back(char((f >> (8 * i)) & 0xff));
  return bytes;
}

Position decodePosition(const std::string &bytes,
                        const std::string &checkpoint) {
  constexpr size_t kFields = 11;
  if (bytes.size() != kFields * 8)
    throw tools::Error(checkpoint + ": the trainer position is " +
                       std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(kFields * 8));
  uint64_t f[kFields];
  for (size_t i = 0; i < kFields; ++i) {
    f[i] = 0;
    for (int b = 0; b < 8; ++b)
      f[i] |= uint64_t(uint8_t(bytes[i * 8 + b])) << (8 * b);
  }
  if (f[0] != kStateVersion)
    throw tools::Error(checkpoint + ": trainer position version " +
                       std::to_string(f[0]) + ", this cleave-train reads " +
                       std::to_string(kStateVersion));
  Position p;
  p.epoch = int64_t(f[1]);
  p.sample = int64_t(f[2]);
  p.shuffleSeed = f[3];
  p.trainSamples = int64_t(f[4]);
  p.microSteps = int64_t(f[5]);
  p.epochLossSum = bitsDouble(f[6]);
  p.epochSamples = int64_t(f[7]);
  p.windowLossSum = bitsDouble(f[8]);
  p.windowSamples = int64_t(f[9]);
  p.metricsBytes = f[10];
  if (p.epoch < 0 || p.sample < 0 || p.trainSamples <= 0 ||
      p.sample >= p.trainSamples || p.microSteps < 0 || p.epochSamples < 0 ||
      p.windowSamples < 0)
    throw tools::Error(checkpoint + ": corrupt trainer position (epoch " +
                       std::to_string(p.epoch) + ", sample " +
                       std::to_string(p.sample) + " of " +
                       std::to_string(p.trainSamples) + ")");
  return p;
}

//===----------------------------------------------------------------------===//
// The trainer
//===----------------------------------------------------------------------===//

struct EvalResult {
  double accuracy = 0;
  double loss = 0;
  /// The tokens evaluated (a language model's, not ignored).
  int64_t tokens = 0;
};

class Trainer {
public:
  Trainer(const TrainOptions &options, std::FILE *out, std::FILE *err)
      : o_(options), out_(out), err_(err),
        checkpoints_(options.checkpointDir, options.keepCheckpoints),
        progress_(options.progress, err) {}

  /// Trains, then draws the metrics if --plot asks (also when training
  /// fails, to show what it got to).
  TrainSummary run();

private:
  /// Where the testing hook (kKillPointEnv) fires.
  enum class KillPoint { MicroStep, Checkpoint };

  TrainSummary trainAll();
  void load();
  void startOrResume();
  void resume(const std::string &checkpoint);
  void checkDataParallel() const;
  /// Sums `values` across the ranks (unchanged with one rank).
  void sumAcrossRanks(double *values, size_t count);
  /// Runs `step` on every rank; if it throws on any rank, every rank
  /// throws (a rank with its own error, the others saying that a peer
  /// failed), so that no rank waits for a failed one in a collective.
  void collectively(const std::function<void()> &step);
  void applyOverrides();
  /// Sets the schedule --lr-schedule asks for, or gives the checkpoint's a
  /// new peak --lr; false when neither applies.
  bool applySchedule();
  /// The optimizer steps of the whole run with N = `n`: those taken, plus
  /// one per window of N micro-batches (and per partial window at each
  /// epoch's end) until the last epoch ends.
  int64_t plannedSteps(int64_t n) const;
  void announce();
  void runEpoch();
  /// Trains on the `k` gathered samples: one micro-step, or (k above the
  /// micro-batch) consecutive micro-batches of one train_batch call.
  void microSteps(int64_t k);
  /// Throws for a failed call; a window that was not finite says so.
  void checkWindow(cleave_status status);
  /// Prints the session's notes not printed yet (rank 0).
  void printNotes();
  /// The learning rate of the next optimizer step (0 without `lr`).
  double nextLr() const;
  /// Records the optimizer step that just ended a window of `microSteps`
  /// micro-steps with learning rate `lr`.
  void windowClosed(int64_t microSteps, double rate, double lr,
                    bool skipped = false);
  /// The number of windows skipped for not being finite so far.
  int64_t skippedWindows() const;
  EvalResult evaluate();
  void checkpoint();
  /// Signals this process if the testing hook says so at `point`.
  void maybeKill(KillPoint point);
  void say(const char *fmt, ...) __attribute__((format(printf, 2, 3)));

  const TrainOptions &o_;
  std::FILE *out_, *err_;
  CheckpointDir checkpoints_;
  Progress progress_;
  MetricsFile metrics_;

  std::optional<cleave::Artifact> artifact_;
  std::optional<cleave::Session> session_;
  ModelInterface model_;
  data::Dataset train_, test_;
  std::unique_ptr<data::MicroBatcher> trainBatcher_, testBatcher_;
  /// The inputs' standardisation (identity unless --normalize=standard).
  data::Normalization normalization_;
  bool root_ = true;
  /// Session notes printed so far (cleave_session_note).
  size_t notesPrinted_ = 0;
  /// Whether the artifact checks its windows for NaN and infinity (it has
  /// train.skipped_steps; Adasum and ZeRO-1 artifacts do not).
  bool checksWindows_ = false;
  /// This process's rank and the job's size (0 and 1 without mpirun).
  int rank_ = 0, ranks_ = 1;
  /// Training samples each rank takes from every epoch: E / R.
  int64_t share_ = 0;
  bool hasLr_ = false;
  /// The testing hook (kKillAtEnv and friends).
  std::optional<int64_t> killAt_;
  std::optional<int64_t> killRank_;
  int killSignal_ = SIGKILL;
  KillPoint killPoint_ = KillPoint::MicroStep;
  /// The window a resumed run's --accumulate closed, if it did, and the
  /// learning rate of that optimizer step.
  std::optional<int64_t> closedOnResume_;
  double closedOnResumeLr_ = 0;

  Position pos_;
  TrainSummary summary_;
  Clock::time_point start_ = Clock::now();
  /// Throughput of the current epoch in this process.
  Clock::time_point epochTrainStart_;
  int64_t epochTrainedHere_ = 0;
};

void Trainer::say(const char *fmt, ...) {
  if (!root_ || o_.quiet)
    return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(out_, fmt, args);
  va_end(args);
  std::fflush(out_);
}

void Trainer::load() {
  artifact_ = cleave::Artifact::load(o_.artifact);
  if (o_.memoryBudget)
    checkMemoryBudget(*artifact_, o_.artifact, *o_.memoryBudget);
  model_ = inspectModel(*artifact_, o_.artifact);
  // Hyperparameter names are checked before the (slower) data loading.
  std::vector<std::string> names;
  for (const auto &h : artifact_->hyperparameters())
    names.push_back(h.name);
  auto known = [&](const std::string &name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  hasLr_ = known("lr");
  std::vector<std::string> given;
  if (o_.lr)
    given.push_back("lr");
  for (const auto &hyper : o_.hyperparameters)
    given.push_back(hyper.first);
  for (const std::string &name : given)
    if (!known(name)) {
      std::string list;
      for (const std::string &n : names)
        list += (list.empty() ? "" : ", ") + n;
      throw tools::Error(o_.artifact + " has no hyperparameter '" + name +
                         "' (it has: " + (list.empty() ? "none" : list) + ")");
    }

  data::DataFormat format;
  check(data::detectFormat(o_.dataDir, format));
  data::DatasetOptions trainOptions =
      datasetOptionsFor(model_, format, o_.limitTrain);
  data::DatasetOptions testOptions =
      datasetOptionsFor(model_, format, o_.limitTest);
  check(
      data::loadDataset(o_.dataDir, data::Split::Train, trainOptions, train_));
  checkData(model_, train_, o_.artifact);
  check(data::loadDataset(o_.dataDir, data::Split::Test, testOptions, test_));
  for (auto [a, b] : {std::pair(&test_.inputs, &train_.inputs),
                      std::pair(&test_.targets, &train_.targets)})
    if (a->type != b->type || a->sampleShape != b->sampleShape)
      throw tools::Error(a->source + ": " + data::elementTypeName(a->type) +
                         " samples of " + shapeString(a->sampleShape) +
                         ", the training split has " +
                         data::elementTypeName(b->type) + " " +
                         shapeString(b->sampleShape) + " (" + b->source + ")");
  if (train_.size() > int64_t(UINT32_MAX))
    throw tools::Error(train_.inputs.source + ": more than 2^32 samples");
  if (model_.ids && o_.normalizeGiven && o_.standardize)
    throw tools::Error("--normalize=standard: " + o_.artifact +
                       (model_.tokens ? " is a language model"
                                      : " classifies token sequences") +
                       ", whose token ids are not "
                       "normalised (they index an embedding); leave "
                       "--normalize out or give --normalize=none");
  // Test inputs are standardised with the training statistics.
  if (o_.standardize && !model_.ids)
    check(data::standardization(train_, normalization_));
  check(data::MicroBatcher::create(train_, model_.microBatch, trainBatcher_,
                                   normalization_));
  check(data::MicroBatcher::create(test_, model_.microBatch, testBatcher_,
                                   normalization_));

  if (const char *kill = std::getenv(kKillAtEnv)) {
    char *end = nullptr;
    long long k = std::strtoll(kill, &end, 10);
    if (*kill == '\0' || *end != '\0' || k < 1)
      throw tools::Error(std::string(kKillAtEnv) + "='" + kill +
                         "' is not a positive integer");
    killAt_ = k;
  }
  if (const char *rank = std::getenv(kKillRankEnv)) {
    char *end = nullptr;
    long long r = std::strtoll(rank, &end, 10);
    if (*rank == '\0' || *end != '\0' || r < 0)
      throw tools::Error(std::string(kKillRankEnv) + "='" + rank +
                         "' is not a rank");
    killRank_ = r;
  }
  if (const char *signal = std::getenv(kKillSignalEnv)) {
    if (std::strcmp(signal, "STOP") == 0)
      killSignal_ = SIGSTOP;
    else if (std::strcmp(signal, "KILL") != 0)
      throw tools::Error(std::string(kKillSignalEnv) + "='" + signal +
                         "' is not KILL or STOP");
  }
  if (const char *point = std::getenv(kKillPointEnv)) {
    if (std::strcmp(point, "checkpoint") == 0)
      killPoint_ = KillPoint::Checkpoint;
    else if (std::strcmp(point, "micro-step") != 0)
      throw tools::Error(std::string(kKillPointEnv) + "='" + point +
                         "' is not micro-step or checkpoint");
  }
}

void Trainer::maybeKill(KillPoint point) {
  if (killAt_ && point == killPoint_ && pos_.microSteps == *killAt_ &&
      (!killRank_ || *killRank_ == rank_))
    ::kill(::getpid(), killSignal_);
}

void Trainer::sumAcrossRanks(double *values, size_t count) {
  cleave::check(
      cleave_session_sum_across_ranks(session_->get(), values, count));
}

void Trainer::collectively(const std::function<void()> &step) {
  std::exception_ptr failure;
  try {
    step();
  } catch (...) {
    failure = std::current_exception();
  }
  double failedRanks = failure ? 1 : 0;
  sumAcrossRanks(&failedRanks, 1);
  if (failure)
    std::rethrow_exception(failure);
  if (failedRanks > 0)
    throw tools::Error("rank " + std::to_string(rank_) + ": stopping, " +
                       std::to_string(int64_t(failedRanks)) + " other rank" +
                       (failedRanks > 1 ? "s" : "") +
                       " failed (see their errors)");
}

void Trainer::checkDataParallel() const {
  if (ranks_ == 1)
    return;
  json manifest = json::parse(artifact_->manifest());
  const std::string reduce = manifest.value("reduce", "none");
  if (reduce == "none")
    throw tools::Error(o_.artifact +
                       " was compiled without a cross-rank "
                       "reduction (--reduce=none): its " +
                       std::to_string(ranks_) +
                       " ranks would train separate models; compile it with "
                       "--reduce=mean or --reduce=adasum");
  if (share_ < 1)
    throw tools::Error("the training set has " + std::to_string(train_.size()) +
                       " samples, fewer than "
                       "the " +
                       std::to_string(ranks_) + " ranks");
}

void Trainer::startOrResume() {
  cleave::SessionOptions options;
  options.seed = o_.seed;
  options.numThreads = o_.threads;
  options.device = o_.cuda ? CLEAVE_DEVICE_CUDA : CLEAVE_DEVICE_CPU;
  static_assert(TrainOptions::kOneGpuPerRank == CLEAVE_DEVICE_ORDINAL_AUTO);
  options.deviceOrdinal = o_.deviceOrdinal;
  options.onNonfinite =
      o_.skipNonfinite ? CLEAVE_NONFINITE_SKIP : CLEAVE_NONFINITE_STOP;
  if (o_.accumulate && model_.shortLastMicroBatch) {
    const int64_t n = artifact_->accumulate(), b = model_.microBatch;
    throw tools::Error(
        "--accumulate: " + o_.artifact + "'s windows are " +
        std::to_string(model_.windowSamples) + " samples, " +
        std::to_string(n - 1) + " micro-batches of " + std::to_string(b) +
        " and one of " + std::to_string(model_.windowSamples - (n - 1) * b) +
        ", so N = " + std::to_string(n) +
        " is fixed; compile it again for another window (cleave-compile "
        "--global-batch=G --micro-batch=B)");
  }
  if (o_.accumulate)
    options.accumulate = *o_.accumulate;
  // Under mpirun the ranks form one data-parallel job; otherwise this is a
  // single rank and MPI is not touched.
  options.distributed = true;
  session_.emplace(*artifact_, options);
  for (const cleave::GlobalInfo &g : artifact_->globals())
    checksWindows_ |= g.tensor.name == "train.skipped_steps";
  std::tie(rank_, ranks_) = session_->rank();
  root_ = rank_ == 0;
  printNotes();
  {
    const SamplerShare mine = samplerShare(train_.size(), rank_, ranks_);
    share_ = mine.end - mine.begin;
  }
  checkpoints_ = CheckpointDir(o_.checkpointDir, o_.keepCheckpoints, ranks_);

  pos_.shuffleSeed = o_.seed;
  pos_.trainSamples = train_.size();
  std::optional<std::string> newest;
  // Rank 0 alone reads and writes checkpoints (the runtime hands the other
  // ranks their part), so it alone looks at the directory.
  collectively([&] {
    checkDataParallel();
    if (o_.checkpointDir.empty() || !root_)
      return;
    newest = checkpoints_.newest();
    std::vector<int> others = checkpoints_.otherRunSizes();
    if (!o_.resume) {
      if (std::optional<std::string> any = checkpoints_.newestOfAnyRun())
        throw tools::Error(o_.checkpointDir + " already holds checkpoints (" +
                           *any +
                           "); pass --resume to continue that run, or use "
                           "another --checkpoint-dir");
      checkpoints_.create();
      return;
    }
    if (!newest && !others.empty())
      throw tools::Error(
          o_.checkpointDir + " holds checkpoints of a run on " +
          std::to_string(others.front()) + " rank" +
          (others.front() == 1 ? "" : "s") + ", this job has " +
          std::to_string(ranks_) + "; resume with the same number of ranks" +
          (others.front() == 1
               ? " (without mpirun)"
               : " (mpirun -np " + std::to_string(others.front()) + ")"));
    checkpoints_.create();
  });
  if (o_.checkpointDir.empty() || !o_.resume)
    return;

  // Rank 0 tells the others which checkpoint the job resumes from (its
  // micro-step count, or -1 for none); they only name it in messages.
  double picked =
      !root_   ? 0.0
      : newest ? double(CheckpointDir::parseAnyName(
                            std::filesystem::path(*newest).filename().string())
                            ->microSteps)
               : -1.0;
  sumAcrossRanks(&picked, 1);
  if (picked < 0) {
    say("no checkpoint in %s: starting a new run\n", o_.checkpointDir.c_str());
    return;
  }
  if (!root_)
    newest = checkpoints_.pathFor(int64_t(picked));
  collectively([&] { resume(*newest); });
}

void Trainer::resume(const std::string &checkpoint) {
  session_->loadCheckpoint(checkpoint);
  std::string state;
  try {
    state = session_->userState(kStateKey);
  } catch (const cleave::Error &) {
    throw tools::Error(checkpoint + ": not a cleave-train checkpoint (no "
                                    "trainer position in its user state)");
  }
  pos_ = decodePosition(state, checkpoint);
  if (pos_.trainSamples != train_.size())
    throw tools::Error(checkpoint + " was written by a run on " +
                       std::to_string(pos_.trainSamples) +
                       " training samples, this one has " +
                       std::to_string(train_.size()) +
                       " (resume with the same --data and --limit-train)");
  summary_.resumedFrom = checkpoint;
}

void Trainer::applyOverrides() {
  // On a resumed run only what the command line says explicitly replaces
  // the checkpoint's values; the rest continues as it was.
  if (!applySchedule() && o_.lr)
    session_->setHyperparameter("lr", *o_.lr);
  for (const auto &[name, value] : o_.hyperparameters)
    session_->setHyperparameter(name, value);
  if (o_.accumulate && summary_.resumedFrom) {
    int64_t stepBefore = session_->step();
    int64_t window = session_->microSteps();
    closedOnResumeLr_ = nextLr();
    session_->setAccumulation(*o_.accumulate);
    // A smaller N than the window already holds ends the window now; its
    // record is written once the metrics file is open.
    if (session_->step() != stepBefore)
      closedOnResume_ = window;
  }
}

int64_t Trainer::plannedSteps(int64_t n) const {
  if (pos_.epoch >= o_.epochs)
    return session_->step();
  const int64_t b = model_.microBatch;
  if (model_.shortLastMicroBatch) {
    // Windows of W samples (the artifact's N, which --accumulate cannot
    // change): every micro-batch of a window but its last is whole.
    const int64_t w = model_.windowSamples;
    auto windows = [&](int64_t samples) { return (samples + w - 1) / w; };
    return session_->step() +
           windows(session_->microSteps() * b + share_ - pos_.sample) +
           (o_.epochs - pos_.epoch - 1) * windows(share_);
  }
  const int64_t perEpoch = (share_ + b - 1) / b; // the last one short
  auto windows = [&](int64_t microSteps) { return (microSteps + n - 1) / n; };
  // Every micro-step of an epoch but its last is full, so the position
  // divides exactly; the current window continues with the new N (ending at
  // once if it already holds N or more).
  const int64_t window = session_->microSteps();
  const int64_t left = perEpoch - pos_.sample / b;
  const int64_t thisEpoch =
      window >= n ? 1 + windows(left) : windows(window + left);
  return session_->step() + thisEpoch +
         (o_.epochs - pos_.epoch - 1) * windows(perEpoch);
}

bool Trainer::applySchedule() {
  std::optional<cleave_lr_schedule> current =
      hasLr_ ? session_->lrSchedule() : std::nullopt;
  if (!o_.schedule) {
    // A resumed run keeps its checkpoint's schedule; --lr moves its peak.
    if (!current || !o_.lr)
      return false;
    current->lr = *o_.lr;
    session_->setLrSchedule(*current);
    return true;
  }
  if (!hasLr_)
    throw tools::Error(o_.artifact + " has no hyperparameter 'lr' for "
                                     "--lr-schedule to set");
  const TrainOptions::Schedule &flags = *o_.schedule;
  const std::string &kind = flags.kind;
  // --lr-schedule takes the runtime's kind names, and "linear" for a
  // polynomial of power 1 (its default).
  cleave_lr_schedule_kind parsed = CLEAVE_LR_POLYNOMIAL;
  for (cleave_lr_schedule_kind k :
       {CLEAVE_LR_CONSTANT, CLEAVE_LR_COSINE, CLEAVE_LR_STEP,
        CLEAVE_LR_POLYNOMIAL, CLEAVE_LR_ONE_CYCLE})
    if (kind == cleave_lr_schedule_kind_name(k))
      parsed = k;
  cleave_lr_schedule s = cleave::makeLrSchedule(parsed);
  // The peak: --lr, else the checkpoint's peak, else the current lr.
  s.lr = o_.lr     ? *o_.lr
         : current ? current->lr
                   : session_->hyperparameter("lr");
  s.total_steps = flags.totalSteps
                      ? *flags.totalSteps
                      : plannedSteps(o_.accumulate ? *o_.accumulate
                                                   : session_->accumulation());
  if (s.kind == CLEAVE_LR_ONE_CYCLE) {
    // PyTorch's OneCycleLR defaults: pct_start 0.3, div_factor 25,
    // final_div_factor 1e4.
    s.warmup_steps = std::llround(0.3 * double(s.total_steps));
    s.warmup_start_factor = 1.0 / 25;
    s.min_lr = s.lr / 25 / 1e4;
  }
  if (flags.warmupSteps)
    s.warmup_steps = *flags.warmupSteps;
  if (flags.warmupStartFactor)
    s.warmup_start_factor = *flags.warmupStartFactor;
  if (flags.minLr)
    s.min_lr = *flags.minLr;
  if (flags.stepSize)
    s.step_size = *flags.stepSize;
  if (flags.gamma)
    s.gamma = *flags.gamma;
  if (flags.power)
    s.power = *flags.power;
  // The schedule replaces the checkpoint's (if any) as a whole.
  session_->clearLrSchedule();
  try {
    session_->setLrSchedule(s);
  } catch (const cleave::Error &e) {
    throw tools::Error("--lr-schedule=" + kind + ": " + e.what());
  }
  return true;
}

double Trainer::nextLr() const {
  return hasLr_ ? session_->hyperparameter("lr") : 0.0;
}

/// The schedule as the metrics' start and resume records carry it.
json scheduleJson(const cleave_lr_schedule &s) {
  json j = {{"kind", cleave_lr_schedule_kind_name(s.kind)},
            {"lr", s.lr},
            {"warmup_steps", s.warmup_steps},
            {"warmup_start_factor", s.warmup_start_factor}};
  if (s.kind != CLEAVE_LR_CONSTANT)
    j["min_lr"] = s.min_lr;
  if (s.kind == CLEAVE_LR_COSINE || s.kind == CLEAVE_LR_POLYNOMIAL ||
      s.kind == CLEAVE_LR_ONE_CYCLE)
    j["total_steps"] = s.total_steps;
  if (s.kind == CLEAVE_LR_STEP) {
    j["step_size"] = s.step_size;
    j["gamma"] = s.gamma;
  }
  if (s.kind == CLEAVE_LR_POLYNOMIAL)
    j["power"] = s.power;
  return j;
}

void Trainer::announce() {
  if (!root_)
    return;
  for (const auto &w : artifact_->warnings())
    std::fprintf(err_, "cleave-train: warning: %s: %s: %s\n", w.loc.c_str(),
                 w.op.c_str(), w.message.c_str());
  if (!checksWindows_)
    std::fprintf(err_,
                 "cleave-train: warning: %s does not check its windows for "
                 "NaN and infinity (it was compiled without the check; "
                 "cleave-compile adds it): only a loss that is not finite "
                 "stops the run\n",
                 o_.artifact.c_str());
  int64_t n = session_->accumulation();
  // One rank's samples per optimizer step.
  const int64_t window =
      model_.shortLastMicroBatch ? model_.windowSamples : n * model_.microBatch;
  if (window == n * model_.microBatch)
    say("model %s: micro-batch %lld, accumulate %lld (%lld samples per "
        "optimizer step)\n",
        o_.artifact.c_str(), (long long)model_.microBatch, (long long)n,
        (long long)window);
  else
    say("model %s: micro-batch %lld, accumulate %lld (%lld samples per "
        "optimizer step: the last micro-batch of each window holds %lld)\n",
        o_.artifact.c_str(), (long long)model_.microBatch, (long long)n,
        (long long)window, (long long)(window - (n - 1) * model_.microBatch));
  std::string hypers;
  for (const auto &h : artifact_->hyperparameters()) {
    char value[64];
    std::snprintf(value, sizeof(value), "%g", session_->hyperparameter(h.name));
    hypers += " " + h.name + "=" + value;
  }
  say("hyperparameters:%s\n", hypers.empty() ? " none" : hypers.c_str());
  const std::optional<cleave_lr_schedule> schedule =
      hasLr_ ? session_->lrSchedule() : std::nullopt;
  if (schedule) {
    std::string text = scheduleJson(*schedule).dump();
    say("learning-rate schedule: %s\n", text.c_str());
    const bool hasTotal = schedule->kind == CLEAVE_LR_COSINE ||
                          schedule->kind == CLEAVE_LR_POLYNOMIAL ||
                          schedule->kind == CLEAVE_LR_ONE_CYCLE;
    const int64_t planned = plannedSteps(n);
    if (hasTotal && summary_.resumedFrom && !o_.schedule &&
        planned != schedule->total_steps)
      say("note: the schedule ends at optimizer step %lld, this run at "
          "%lld; the schedule counts optimizer steps and is kept as it was "
          "(give --lr-schedule again to recompute --total-steps)\n",
          (long long)schedule->total_steps, (long long)planned);
  }
  if (model_.tokens)
    say("data %s (%s): %lld training and %lld test sequences of %lld %s "
        "token ids, labels 0..%lld (ignore index %lld)\n",
        o_.dataDir.c_str(), train_.format.c_str(), (long long)train_.size(),
        (long long)test_.size(), (long long)model_.sequenceLength,
        data::elementTypeName(train_.inputs.type),
        (long long)train_.numClasses - 1, (long long)model_.ignoreIndex);
  else if (model_.ids)
    say("data %s (%s): %lld training and %lld test sequences of %lld %s "
        "token ids, one label 0..%lld per sequence\n",
        o_.dataDir.c_str(), train_.format.c_str(), (long long)train_.size(),
        (long long)test_.size(), (long long)model_.sequenceLength,
        data::elementTypeName(train_.inputs.type),
        (long long)train_.numClasses - 1);
  else
    say("data %s (%s): %lld training and %lld test samples of %s %s, %s\n",
        o_.dataDir.c_str(), train_.format.c_str(), (long long)train_.size(),
        (long long)test_.size(), data::elementTypeName(train_.inputs.type),
        shapeString(train_.inputs.sampleShape).c_str(),
        train_.hasClassLabels()
            ? ("labels 0.." + std::to_string(train_.numClasses - 1)).c_str()
            : ("float32 targets of " + shapeString(train_.targets.sampleShape))
                  .c_str());
  if (ranks_ > 1) {
    const std::string reduce =
        json::parse(artifact_->manifest()).value("reduce", "none");
    say("data-parallel: %d ranks (reduce %s), %lld training samples each per "
        "epoch%s; %lld samples per optimizer step\n",
        ranks_, reduce.c_str(), (long long)share_,
        train_.size() % ranks_
            ? (", " + std::to_string(train_.size() % ranks_) +
               " left out of each epoch's shuffled order")
                  .c_str()
            : "",
        (long long)(window * ranks_));
  }
  if (summary_.resumedFrom)
    say("resumed from %s: epoch %lld, sample %lld of %lld, optimizer step "
        "%lld\n",
        summary_.resumedFrom->c_str(), (long long)pos_.epoch + 1,
        (long long)pos_.sample, (long long)pos_.trainSamples,
        (long long)session_->step());

  if (o_.metricsPath.empty())
    return;
  json hyper = json::object();
  for (const auto &h : artifact_->hyperparameters())
    hyper[h.name] = session_->hyperparameter(h.name);
  // The learning rate of the next optimizer step, and the schedule that
  // gives it, if any.
  auto addLr = [&](json record) {
    if (hasLr_)
      record["lr"] = nextLr();
    if (schedule)
      record["lr_schedule"] = scheduleJson(*schedule);
    return record;
  };
  if (!summary_.resumedFrom) {
    metrics_.openNew(o_.metricsPath);
    json start = {{"event", "start"},
                  {"model", o_.artifact},
                  {"data", o_.dataDir},
                  {"micro_batch", model_.microBatch},
                  {"accumulate", n},
                  {"ranks", ranks_},
                  {"epochs", o_.epochs},
                  {"seed", o_.seed},
                  {"threads", o_.threads},
                  {"train_samples", train_.size()},
                  {"test_samples", test_.size()},
                  {"hyperparameters", hyper}};
    if (window != n * model_.microBatch)
      start["window_samples"] = window;
    metrics_.write(addLr(start));
    return;
  }
  if (!metrics_.openResumed(o_.metricsPath, pos_.metricsBytes))
    std::fprintf(err_,
                 "cleave-train: warning: %s is shorter than when %s was "
                 "written; appending to it\n",
                 o_.metricsPath.c_str(), summary_.resumedFrom->c_str());
  metrics_.write(addLr({{"event", "resume"},
                        {"checkpoint", *summary_.resumedFrom},
                        {"epoch", pos_.epoch + 1},
                        {"sample", pos_.sample},
                        {"micro_steps", pos_.microSteps},
                        {"step", session_->step()},
                        {"accumulate", n},
                        {"hyperparameters", hyper}}));
}

void Trainer::microSteps(int64_t k) {
  const void *data[2];
  size_t bytes[2];
  data[model_.inputIndex] = trainBatcher_->inputData();
  bytes[model_.inputIndex] = trainBatcher_->inputBytes();
  data[model_.targetIndex] = trainBatcher_->targets();
  bytes[model_.targetIndex] = trainBatcher_->targetBytes();
  cleave_batch batch{k, 2, data, bytes};
  cleave_status status =
      k <= model_.microBatch
          ? cleave_session_micro_step(session_->get(), &batch)
          : cleave_session_train_batch(session_->get(), &batch,
                                       model_.microBatch);
  checkWindow(status);
}

void Trainer::checkWindow(cleave_status status) {
  if (status == CLEAVE_NON_FINITE)
    throw tools::Error(std::string(cleave_last_error_message()) + " (epoch " +
                       std::to_string(pos_.epoch + 1) +
                       "): training diverged (try a smaller --lr) or the "
                       "data holds a NaN or infinity; checkpoints written so "
                       "far hold the parameters before it "
                       "(--on-nonfinite=skip would go on)");
  cleave::check(status);
  printNotes();
}

void Trainer::printNotes() {
  // Each note arises once (how much of the GPU's memory the session takes,
  // an entry that cannot run as a CUDA graph, and why): printed when it
  // does.
  size_t notes = 0;
  cleave::check(cleave_session_num_notes(session_->get(), &notes));
  for (; notesPrinted_ < notes; ++notesPrinted_) {
    const char *note = nullptr;
    cleave::check(cleave_session_note(session_->get(), notesPrinted_, &note));
    if (root_)
      std::fprintf(err_, "cleave-train: note: %s\n", note);
  }
}

int64_t Trainer::skippedWindows() const {
  return checksWindows_
             ? session_->readGlobal<int64_t>("train.skipped_steps").at(0)
             : 0;
}

void Trainer::windowClosed(int64_t microSteps, double rate, double lr,
                           bool skipped) {
  // Every rank knows whether there are metrics (the same flags), so they
  // all take part in combining the window's loss.
  if (!o_.metricsPath.empty()) {
    double window[2] = {pos_.windowLossSum, double(pos_.windowSamples)};
    sumAcrossRanks(window, 2);
    if (metrics_.isOpen()) {
      uint64_t windowBytes = 0;
      cleave::check(
          cleave_session_bytes_sent(session_->get(), &windowBytes, nullptr));
      json record = {{"event", "step"},
                     {"epoch", pos_.epoch + 1},
                     {"step", session_->step()},
                     {"micro_steps", pos_.microSteps},
                     {"window", microSteps},
                     {model_.tokens ? "window_tokens" : "window_samples",
                      int64_t(window[1])},
                     // A skipped window's losses are not finite: null.
                     {"loss", window[1] ? window[0] / window[1]
                              : skipped ? std::nan("")
                                        : 0.0}};
      if (skipped)
        record["skipped"] = true;
      if (ranks_ > 1)
        record["bytes_sent"] = windowBytes;
      if (hasLr_)
        record["lr"] = lr;
      record["samples_per_sec"] = rate;
      record["elapsed"] = secondsSince(start_);
      metrics_.write(record);
    }
  }
  pos_.windowLossSum = 0;
  pos_.windowSamples = 0;
}

EvalResult Trainer::evaluate() {
  // Each rank evaluates its part of the test set; the sums are combined.
  const int64_t b = model_.microBatch, n = test_.size();
  const int64_t begin = n * rank_ / ranks_, end = n * (rank_ + 1) / ranks_;
  const int64_t classes = model_.classes;
  const int64_t targetElements = test_.targets.sampleElements();
  int64_t correct = 0, tokens = 0;
  double lossSum = 0;
  // Cross-entropy of a row of logits, with the max subtracted; counts the
  // row as correct if its argmax is `label`.
  auto crossEntropy = [&](const float *row, int64_t label) {
    int64_t best = std::max_element(row, row + classes) - row;
    correct += best == label;
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(double(row[c]) - double(row[best]));
    lossSum += std::log(sum) + double(row[best]) - double(row[label]);
  };
  for (int64_t first = begin; first < end; first += b) {
    int64_t k = std::min(b, end - first);
    check(testBatcher_->gatherRange(first, k));
    const void *data[2];
    size_t bytes[2];
    data[model_.inputIndex] = testBatcher_->inputData();
    bytes[model_.inputIndex] = testBatcher_->inputBytes();
    data[model_.targetIndex] = testBatcher_->targets();
    bytes[model_.targetIndex] = testBatcher_->targetBytes();
    cleave_batch batch{k, 2, data, bytes};
    cleave::check(cleave_session_eval(session_->get(), &batch));
    const void *out = nullptr;
    size_t outBytes = 0;
    cleave::check(cleave_session_output(session_->get(), "eval_step",
                                        model_.prediction.c_str(), &out,
                                        &outBytes));
    const float *pred = static_cast<const float *>(out);
    if (!model_.classifier) {
      // The per-sample loss of nn.mse_loss: the mean squared difference
      // over the target's elements.
      const float *targets =
          static_cast<const float *>(testBatcher_->targets());
      for (int64_t r = 0; r < k; ++r) {
        double sum = 0;
        for (int64_t i = r * targetElements; i < (r + 1) * targetElements;
             ++i) {
          const double d = double(pred[i]) - double(targets[i]);
          sum += d * d;
        }
        lossSum += sum / double(targetElements);
      }
      continue;
    }
    const int64_t *labels = testBatcher_->labels();
    if (model_.tokens) {
      // A loss per token: the mean is over the tokens not ignored, as
      // training's (the window's count is its real tokens).
      const int64_t t = model_.sequenceLength;
      for (int64_t i = 0; i < k * t; ++i) {
        if (labels[i] == model_.ignoreIndex)
          continue;
        crossEntropy(pred + i * classes, labels[i]);
        ++tokens;
      }
      continue;
    }
    for (int64_t r = 0; r < k; ++r)
      crossEntropy(pred + r * classes, labels[r]);
  }
  double sums[3] = {double(correct), lossSum, double(tokens)};
  sumAcrossRanks(sums, 3);
  // The loader made sure the split has a token to predict.
  const double count = model_.tokens ? sums[2] : double(n);
  return {model_.classifier ? sums[0] / count : std::nan(""), sums[1] / count,
          int64_t(sums[2])};
}

void Trainer::checkpoint() {
  if (o_.checkpointDir.empty())
    return;
  // Collective: every rank's state (accumulators differ between ranks)
  // goes into the one file rank 0 writes. Older checkpoints go only once it
  // is complete, so that one always exists.
  collectively([&] {
    pos_.metricsBytes = metrics_.bytes();
    session_->setUserState(kStateKey, encodePosition(pos_));
    session_->saveCheckpoint(checkpoints_.pathFor(pos_.microSteps));
  });
  maybeKill(KillPoint::Checkpoint);
  if (root_)
    checkpoints_.prune();
}

void Trainer::runEpoch() {
  // A distributed sampler: every rank shuffles alike and takes its own
  // contiguous share of the order. Equal shares give every rank the same
  // micro-steps, so that they reach every window's collective together.
  const int64_t n = train_.size(), b = model_.microBatch;
  const std::vector<uint32_t> order =
      data::epochOrder(pos_.shuffleSeed, uint64_t(pos_.epoch), uint32_t(n));
  const uint32_t *share = order.data() + samplerShare(n, rank_, ranks_).begin;
  const Clock::time_point epochStart = Clock::now();
  epochTrainStart_ = epochStart;
  epochTrainedHere_ = 0;
  const int64_t skippedBefore = skippedWindows();
  double rate = 0;
  // Progress counts the samples of all ranks, which move in step.
  if (root_)
    progress_.beginEpoch(pos_.epoch + 1, o_.epochs, share_ * ranks_,
                         pos_.sample * ranks_);

  // On a GPU, reading the loss waits for the device to finish. So the rest
  // of a window goes to the session in one train_batch, whose micro-steps
  // the GPU runs back to back while the host stages the next micro-batch,
  // and the loss is read once per window (or per checkpoint interval,
  // whichever ends first). On the CPU each micro-step is a call of its own.
  const int64_t perCall = o_.cuda ? session_->accumulation() : 1;

  if (trainBatcher_->capacity() < perCall * b)
    check(data::MicroBatcher::create(train_, perCall * b, trainBatcher_,
                                     normalization_));
  while (pos_.sample < share_) {
    int64_t steps = 1;
    if (perCall > 1) {
      steps = perCall - session_->microSteps();
      if (o_.checkpointEvery > 0)
        steps = std::min(steps, o_.checkpointEvery -
                                    pos_.microSteps % o_.checkpointEvery);
    }
    int64_t k = std::min(steps * b, share_ - pos_.sample);
    // A window of W samples ends with a short micro-batch: every one
    // before it in the window is whole.
    // (--accumulate is refused with such an artifact: N is the artifact's.)
    if (model_.shortLastMicroBatch)
      k = std::min(k, model_.windowSamples - session_->microSteps() * b);
    steps = (k + b - 1) / b;
    check(trainBatcher_->gather(share + pos_.sample, k));
    const int64_t stepBefore = session_->step();
    const int64_t closes = session_->microSteps() + steps;
    const bool closesWindow = closes >= session_->accumulation();
    const double lr = nextLr();
    microSteps(k);
    const double loss = session_->lastLoss();
    // What the loss is a mean over: k samples, or their real tokens.
    const int64_t count = model_.tokens ? session_->lastCount() : k;
    const bool finite = std::isfinite(loss);
    // A loss that is not finite makes the window's sums not finite: the
    // window is never applied. Stopping here names it before the rest of
    // the window is computed.
    if (!finite && !o_.skipNonfinite)
      throw tools::Error(
          "the loss of micro-step" +
          (steps == 1 ? " " + std::to_string(pos_.microSteps + 1)
                      : "s " + std::to_string(pos_.microSteps + 1) + " to " +
                            std::to_string(pos_.microSteps + steps)) +
          " (epoch " + std::to_string(pos_.epoch + 1) + ", window " +
          std::to_string(stepBefore + skippedWindows() + 1) +
          ", which would be optimizer step " + std::to_string(stepBefore + 1) +
          ") is " + std::to_string(loss) +
          ": training diverged (try a smaller --lr) or the data holds a NaN "
          "or infinity; the window is not applied, checkpoints written so "
          "far hold the parameters before it (--on-nonfinite=skip would go "
          "on)");
    pos_.sample += k;
    pos_.microSteps += steps;
    // A skipped window's loss is left out of the means.
    if (finite) {
      pos_.epochLossSum += loss * double(count);
      pos_.epochSamples += count;
      pos_.windowLossSum += loss * double(count);
      pos_.windowSamples += count;
    }
    epochTrainedHere_ += k;
    rate = double(epochTrainedHere_ * ranks_) /
           std::max(secondsSince(epochTrainStart_), 1e-9);
    if (closesWindow)
      windowClosed(closes, rate, lr, session_->step() == stepBefore);
    maybeKill(KillPoint::MicroStep);
    if (root_)
      progress_.update(pos_.sample * ranks_,
                       pos_.epochLossSum / double(pos_.epochSamples), rate);
    if (o_.checkpointEvery > 0 && pos_.microSteps % o_.checkpointEvery == 0 &&
        pos_.sample < share_)
      checkpoint();
  }
  const double trainSeconds = secondsSince(epochTrainStart_);

  // The epoch's last window is usually partial: it becomes one optimizer
  // step of exactly its samples, so that every epoch ends with all of its
  // samples applied and the evaluation sees them.
  if (int64_t window = session_->microSteps(); window > 0) {
    const double lr = nextLr();
    const int64_t stepBefore = session_->step();
    checkWindow(cleave_session_flush(session_->get()));
    windowClosed(window, rate, lr, session_->step() == stepBefore);
  }
  if (root_)
    progress_.endEpoch();

  EvalResult eval = evaluate();
  // The epoch's loss over every rank's samples, and the job's throughput.
  double epoch[3] = {pos_.epochLossSum, double(pos_.epochSamples),
                     double(epochTrainedHere_) / std::max(trainSeconds, 1e-9)};
  sumAcrossRanks(epoch, 3);
  EpochResult r;
  r.epoch = pos_.epoch + 1;
  r.trainLoss = epoch[0] / std::max(epoch[1], 1.0);
  r.testAccuracy = eval.accuracy;
  r.testLoss = eval.loss;
  if (model_.tokens) {
    r.trainPerplexity = std::exp(r.trainLoss);
    r.testPerplexity = std::exp(r.testLoss);
  }
  r.samplesPerSecond = epoch[2];
  r.seconds = secondsSince(epochStart);
  r.steps = session_->step();
  summary_.epochs.push_back(r);

  if (root_) {
    char result[128];
    if (model_.tokens)
      std::snprintf(result, sizeof(result),
                    "test loss %.4f, test perplexity %.2f, test accuracy "
                    "%.2f%% (per token)",
                    r.testLoss, r.testPerplexity, 100.0 * r.testAccuracy);
    else if (model_.classifier)
      std::snprintf(result, sizeof(result), "test accuracy %.2f%%",
                    100.0 * r.testAccuracy);
    else
      std::snprintf(result, sizeof(result), "test loss %.4f", r.testLoss);
    std::fprintf(out_,
                 "epoch %lld/%lld: loss %.4f, %s, %.0f samples/s, %.1f s\n",
                 (long long)r.epoch, (long long)o_.epochs, r.trainLoss, result,
                 r.samplesPerSecond, r.seconds);
    if (int64_t skipped = skippedWindows() - skippedBefore; skipped > 0)
      std::fprintf(out_,
                   "epoch %lld/%lld: skipped %lld windows whose gradients or "
                   "loss were not finite (their losses are left out of the "
                   "epoch's)\n",
                   (long long)r.epoch, (long long)o_.epochs,
                   (long long)skipped);
    std::fflush(out_);
  }
  json epochRecord = {{"event", "epoch"},
                      {"epoch", r.epoch},
                      {"epochs", o_.epochs},
                      {"step", r.steps},
                      {"micro_steps", pos_.microSteps},
                      {"train_loss", r.trainLoss},
                      {"train_samples", share_ * ranks_},
                      {"test_loss", r.testLoss},
                      {"test_samples", test_.size()},
                      {"samples_per_sec", r.samplesPerSecond},
                      {"epoch_seconds", r.seconds},
                      {"elapsed", secondsSince(start_)}};
  if (model_.classifier)
    epochRecord["test_accuracy"] = r.testAccuracy;
  if (model_.tokens) {
    epochRecord["train_perplexity"] = r.trainPerplexity;
    epochRecord["train_tokens"] = int64_t(epoch[1]);
    epochRecord["test_perplexity"] = r.testPerplexity;
    epochRecord["test_tokens"] = eval.tokens;
  }
  if (hasLr_)
    epochRecord["lr"] = nextLr();
  metrics_.write(epochRecord);

  pos_.epoch += 1;
  pos_.sample = 0;
  pos_.epochLossSum = 0;
  pos_.epochSamples = 0;
  checkpoint();
}

TrainSummary Trainer::run() {
  TrainSummary summary;
  try {
    summary = trainAll();
  } catch (...) {
    if (root_ && !o_.plotPath.empty() && metrics_.isOpen()) {
      try {
        plotMetrics(o_.metricsPath, o_.plotPath);
        std::fprintf(err_, "cleave-train: plotted the metrics so far in %s\n",
                     o_.plotPath.c_str());
      } catch (const std::exception &e) {
        std::fprintf(err_, "cleave-train: warning: %s\n", e.what());
      }
    }
    throw;
  }
  if (root_ && !o_.plotPath.empty()) {
    plotMetrics(o_.metricsPath, o_.plotPath);
    say("plotted the metrics in %s\n", o_.plotPath.c_str());
  }
  return summary;
}

TrainSummary Trainer::trainAll() {
  load();
  startOrResume();
  applyOverrides();
  announce();
  if (closedOnResume_)
    windowClosed(*closedOnResume_, 0, closedOnResumeLr_);
  if (pos_.epoch >= o_.epochs)
    say("nothing to train: %s is at the end of epoch %lld (--epochs=%lld)\n",
        summary_.resumedFrom->c_str(), (long long)pos_.epoch,
        (long long)o_.epochs);
  while (pos_.epoch < o_.epochs)
    runEpoch();
  summary_.optimizerSteps = session_->step();
  if (root_ && !o_.saveParams.empty())
    saveParameters(*session_, o_.saveParams);
  if (!summary_.epochs.empty()) {
    const EpochResult &last = summary_.epochs.back();
    if (model_.tokens)
      say("trained %zu epoch%s in %.1f s (%lld optimizer steps); test loss "
          "%.4f, test perplexity %.2f\n",
          summary_.epochs.size(), summary_.epochs.size() == 1 ? "" : "s",
          secondsSince(start_), (long long)summary_.optimizerSteps,
          last.testLoss, last.testPerplexity);
    else
      say("trained %zu epoch%s in %.1f s (%lld optimizer steps); test %s "
          "%.*f%s\n",
          summary_.epochs.size(), summary_.epochs.size() == 1 ? "" : "s",
          secondsSince(start_), (long long)summary_.optimizerSteps,
          model_.classifier ? "accuracy" : "loss", model_.classifier ? 2 : 4,
          model_.classifier ? 100.0 * last.testAccuracy : last.testLoss,
          model_.classifier ? "%" : "");
  }
  return summary_;
}

} // namespace

SamplerShare samplerShare(int64_t samples, int rank, int ranks) {
  const int64_t share = samples / ranks;
  return {rank * share, (rank + 1) * share};
}

void saveParameters(const cleave::Session &session, const std::string &path) {
  const std::string tmp = path + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw tools::Error(path + ": cannot write the parameters (" +
                       std::strerror(errno) + ")");
  // Closes and removes the temporary file unless it was renamed into place,
  // also when reading a global throws.
  struct TempFile {
    std::FILE *&file;
    const std::string &path;
    bool renamed = false;
    ~TempFile() {
      if (file)
        std::fclose(file);
      if (!renamed)
        std::remove(path.c_str());
    }
  } guard{f, tmp};
  bool ok = true;
  std::vector<unsigned char> buffer;
  for (const cleave::GlobalInfo &g : session.artifact().globals()) {
    if (g.kind != CLEAVE_GLOBAL_PARAM && g.kind != CLEAVE_GLOBAL_BUFFER)
      continue;
    buffer.resize(g.tensor.bytes);
    cleave::check(cleave_session_read_global(
        session.get(), g.tensor.name.c_str(), buffer.data(), buffer.size()));
    ok = ok && std::fwrite(buffer.data(), 1, buffer.size(), f) == buffer.size();
  }
  // The bytes reach the disk before the rename makes them `path`, so that a
  // crash leaves the old file or the new one, never a torn one.
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  std::FILE *closing = f;
  f = nullptr;
  ok = std::fclose(closing) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    throw tools::Error(path + ": cannot write the parameters (" +
                       std::strerror(errno) + ")");
  guard.renamed = true;
}

TrainSummary train(const TrainOptions &options, std::FILE *out,
                   std::FILE *err) {
  Trainer trainer(options, out, err);
  return trainer.run();
}

int trainMain(int argc, char **argv) {
  return tools::runTool("cleave-train", [&] {
    TrainOptions options = parseTrainOptions(argc, argv);
    if (options.help) {
      std::fputs(trainUsage(), stdout);
      return 0;
    }
    train(options);
    return 0;
  });
}

} // namespace cleave::train

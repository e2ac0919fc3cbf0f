//===- TrainOptions.h - cleave-train's settings and flags -------*- C++ -*-===//
//
// docs/user/cleave-train.md is the reference of every flag.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_TRAINOPTIONS_H
#define CLEAVE_TOOLS_TRAINOPTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::train {

/// Where Debian's dataset-fashion-mnist package puts the data.
inline constexpr const char *kDefaultDataDir =
    "/usr/share/datasets/fashion-mnist";

/// How training progress is shown on stderr.
enum class ProgressMode {
  Auto,  ///< a bar if stderr is a terminal, plain lines otherwise
  Bar,   ///< a bar redrawn in place, at most ~10 times a second
  Lines, ///< a plain line at every tenth of an epoch
  None,  ///< nothing (per-epoch results still go to stdout)
};

struct TrainOptions {
  std::string artifact;
  /// A dataset directory or .npz file (data/Dataset.h lists the formats).
  std::string dataDir = kDefaultDataDir;
  int64_t epochs = 1;
  /// Seeds the parameter initialisers and the shuffle.
  uint64_t seed = 0;
  /// Unset: the artifact's (or, on resume, the checkpoint's) N.
  std::optional<int64_t> accumulate;
  std::optional<double> lr;
  /// --lr-schedule=KIND and the parameters of the schedule; only those
  /// given are set (defaults depend on the kind and the run: Trainer.cpp).
  struct Schedule {
    std::string kind;
    std::optional<int64_t> warmupSteps, totalSteps, stepSize;
    std::optional<double> warmupStartFactor, minLr, gamma, power;
  };
  std::optional<Schedule> schedule;
  /// `--hyper name=value`, in command-line order (applied after --lr).
  std::vector<std::pair<std::string, double>> hyperparameters;
  /// > 0: OpenMP threads of the kernels; 0: leave OpenMP's setting alone.
  int32_t threads = 0;
  /// --device=cpu (default) or cuda[:K]: where the artifact's entry points
  /// run; it must be what the artifact was compiled for.
  bool cuda = false;
  /// --device=cuda:K gives K; --device=cuda kOneGpuPerRank (GPU 0, or the
  /// GPU of the rank's index on its machine under mpirun), the runtime's
  /// CLEAVE_DEVICE_ORDINAL_AUTO.
  static constexpr int32_t kOneGpuPerRank = -1;
  int32_t deviceOrdinal = 0;
  std::string metricsPath;
  std::string checkpointDir;
  /// > 0: also checkpoint every this many micro-steps.
  int64_t checkpointEvery = 0;
  /// Checkpoints kept in checkpointDir (the newest ones).
  int64_t keepCheckpoints = 2;
  bool resume = false;
  /// Standardise inputs with the training split's mean and std per channel
  /// (else the model sees pixel / 255, or float inputs as they are).
  bool standardize = true;
  /// Whether --normalize was given (a language model's token ids refuse an
  /// explicit --normalize=standard; the default leaves them alone).
  bool normalizeGiven = false;
  /// --on-nonfinite=skip: a window that is not finite is skipped and the
  /// run goes on (stop, the default, ends it).
  bool skipNonfinite = false;
  /// > 0: use only the first K samples of the split.
  int64_t limitTrain = 0;
  int64_t limitTest = 0;
  ProgressMode progress = ProgressMode::Auto;
  /// No banner, no progress; per-epoch lines and errors only.
  bool quiet = false;
  /// Write the final parameters and buffers here (raw, manifest order).
  std::string saveParams;
  /// Draw the metrics into this .png or .svg when the run ends (cleave-plot).
  std::string plotPath;
  /// --memory-budget: refuse an artifact whose memory report (plus the
  /// runtime's fixed overhead, on the CPU) exceeds this many bytes.
  std::optional<int64_t> memoryBudget;
  bool help = false;
};

/// Parses a size: bytes, or with B, KiB, MiB, GiB (`1.5GiB`). Throws
/// tools::UsageError naming `flag`.
int64_t parseByteSize(const std::string &flag, const std::string &text);

/// Parses cleave-train's arguments. Throws tools::UsageError.
TrainOptions parseTrainOptions(int argc, char **argv);

/// The --help text.
const char *trainUsage();

} // namespace cleave::train

#endif // CLEAVE_TOOLS_TRAINOPTIONS_H

//===- Trainer.h - cleave-train's training loop -----------------*- C++ -*-===//
//
// Trains an artifact on a dataset (idx, CIFAR-10, .npy/.npz; data/Dataset.h)
// through the runtime's public API: loads and checks the artifact against the
// data, shuffles each epoch (data/Shuffle.h), feeds micro-batches of the
// artifact's size (the last one of an epoch short: the runtime pads it),
// flushes the partial window at each epoch's end, evaluates the test split
// (accuracy of a classifier, mean squared error of a regression, loss and
// perplexity of a language model over its tokens), writes
// metrics and checkpoints, and resumes from a checkpoint exactly where it
// stopped.
//
// The trainer's position is part of every checkpoint (the session's user
// state, key "cleave-train"), next to the session's own state, so that a
// resumed run continues mid-epoch and mid-window with bit-identical results.
//
// Under mpirun the ranks form one data-parallel job (docs/user/
// distributed.md): each rank trains on its own share of every epoch's
// shuffled order, evaluates its part of the test set, and writes its own
// checkpoint; only rank 0 prints, writes metrics and saves parameters. Losses,
// accuracies and throughput are combined over the ranks.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_TRAINER_H
#define CLEAVE_TOOLS_TRAINER_H

#include "TrainOptions.h"

#include "cleave/runtime.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace cleave::train {

/// The results of one epoch.
struct EpochResult {
  /// 1-based.
  int64_t epoch = 0;
  /// Mean per-sample training loss over the epoch, on every rank's samples
  /// (all of it, also the part trained before a resume); for a language
  /// model the mean per-token loss over the tokens not ignored.
  double trainLoss = 0;
  /// Fraction of test samples whose prediction's argmax is the label (NaN
  /// for a regression, which has no accuracy); for a language model, of
  /// test tokens (those not ignored).
  double testAccuracy = 0;
  /// Mean cross-entropy of the test predictions taken as logits (per token
  /// not ignored, for a language model), or for a regression the mean
  /// per-sample squared error (nn.mse_loss's).
  double testLoss = 0;
  /// A language model's exp(trainLoss) and exp(testLoss) (NaN otherwise).
  double trainPerplexity = std::nan("");
  double testPerplexity = std::nan("");
  /// Training samples per second of the job (all ranks) in this epoch
  /// (evaluation excluded).
  double samplesPerSecond = 0;
  /// Wall time of the epoch in this process, evaluation included.
  double seconds = 0;
  /// Optimizer steps taken when the epoch ended.
  int64_t steps = 0;
};

struct TrainSummary {
  /// The epochs this invocation completed.
  std::vector<EpochResult> epochs;
  /// The checkpoint the run resumed from, if any.
  std::optional<std::string> resumedFrom;
  int64_t optimizerSteps = 0;
};

/// Environment variable of a testing hook: when set to K, the process kills
/// itself with SIGKILL right after the run's K-th micro-step (counted from
/// the start of the run, across resumes), as `kill -9` would.
inline constexpr const char *kKillAtEnv =
    "CLEAVE_TRAIN_TEST_KILL_AT_MICRO_STEP";
/// With kKillAtEnv: only the rank given here kills itself (every rank
/// otherwise).
inline constexpr const char *kKillRankEnv = "CLEAVE_TRAIN_TEST_KILL_RANK";
/// With kKillAtEnv: "STOP" sends SIGSTOP instead of SIGKILL, a rank that
/// hangs rather than dies.
inline constexpr const char *kKillSignalEnv = "CLEAVE_TRAIN_TEST_KILL_SIGNAL";
/// With kKillAtEnv: where around micro-step K the signal comes.
/// "micro-step" (the default): right after micro-step K, before anything
/// else (its window's metrics record aside). "checkpoint": right after the
/// checkpoint taken at micro-step K is on disk, before older checkpoints are
/// pruned; the run must take one there (K a multiple of --checkpoint-every,
/// or the last micro-step of an epoch), or it is never signalled.
inline constexpr const char *kKillPointEnv = "CLEAVE_TRAIN_TEST_KILL_POINT";

/// The positions [begin, end) of an epoch's shuffled order that rank `rank`
/// of `ranks` trains on (the distributed sampler): equal, contiguous,
/// disjoint shares of `samples / ranks` positions in rank order. The last
/// `samples % ranks` positions are left out of that epoch, so that every
/// rank runs the same number of micro-steps and reaches every window's
/// collective.
struct SamplerShare {
  int64_t begin = 0, end = 0;
};
SamplerShare samplerShare(int64_t samples, int rank, int ranks);

/// Trains as `options` say; results go to `out`, progress and warnings to
/// `err`. Throws tools::Error or cleave::Error with a one-line message.
TrainSummary train(const TrainOptions &options, std::FILE *out = stdout,
                   std::FILE *err = stderr);

/// Writes what --save-params writes: every `param` and `buffer` global of
/// `session`, in manifest order, raw (little-endian) bytes back to back, to
/// `path` (through `path`.tmp and a rename). Throws tools::Error.
void saveParameters(const cleave::Session &session, const std::string &path);

/// cleave-train's main(): parses the command line, trains, and reports a
/// failure as one line on stderr ("cleave-train: error: ..."). Returns 0 on
/// success, 2 for a bad command line, 1 for any other error.
int trainMain(int argc, char **argv);

} // namespace cleave::train

#endif // CLEAVE_TOOLS_TRAINER_H

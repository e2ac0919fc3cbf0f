//===- TrainOptions.cpp - cleave-train's command line ---------------------===//

#include "TrainOptions.h"

#include "CommandLine.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits>

namespace cleave::train {

using tools::ArgumentReader;
using tools::Flag;
using tools::UsageError;

const char *trainUsage() {
  return R"(usage: cleave-train MODEL.cleave [options]

Trains a Cleave artifact (made by cleave-compile) on a dataset: shuffles,
feeds micro-batches, applies the optimizer every N micro-steps, evaluates
the test split after each epoch. Under `mpirun -np R` the R
processes train as one data-parallel job (an artifact compiled with
--reduce=mean or --reduce=adasum; see docs/user/distributed.md).

  --data=PATH            MNIST idx files or CIFAR-10 binary batches in a
                         directory, NumPy x/y arrays in .npy or .npz files
                         (token sequences for a language model)
                         (default /usr/share/datasets/fashion-mnist)
  --epochs=E             epochs to train (default 1)
  --seed=S               seeds the initial parameters and shuffle (default 0)
  --accumulate=N         micro-steps per optimizer step (default: artifact's)
  --lr=X                 learning rate (default: the artifact's)
  --hyper NAME=X         any other hyperparameter (repeatable)
  --lr-schedule=KIND     the learning rate per optimizer step: constant,
                         cosine, step, linear, polynomial or one-cycle
                         (default: --lr throughout); --lr is the peak
  --warmup-steps=K       linear warmup over the first K optimizer steps
                         (default 0; one-cycle: its rising phase, 30%)
  --warmup-start-factor=F  the warmup starts at F x lr (default 0;
                         one-cycle: 1/25)
  --total-steps=T        where cosine, linear, polynomial and one-cycle
                         decay ends (default: the run's optimizer steps)
  --min-lr=X             the floor they decay to (default 0; one-cycle:
                         lr/25e4)
  --lr-step-size=K --lr-gamma=G   step: lr x G every K steps (G default 0.1)
  --lr-power=P           polynomial: the exponent (default 1)
  --threads=T            OpenMP threads of the kernels (default: OpenMP's)
  --device=D             cpu (default) or cuda[:K] (GPU K; default GPU 0, and
                         under mpirun one GPU per rank, reduced with NCCL):
                         must be what the artifact was compiled for (--target)
  --metrics=FILE         JSON lines: one per optimizer step and per epoch
  --checkpoint-dir=DIR   checkpoint at every epoch end (and --checkpoint-every)
  --checkpoint-every=K   also checkpoint every K micro-steps
  --keep-checkpoints=K   checkpoints kept in the directory (default 2)
  --resume               continue from the newest checkpoint in --checkpoint-dir
  --normalize=MODE       standard (default): inputs standardised with the
                         training split's mean and std per channel; none:
                         pixel / 255, float inputs as they are (token ids
                         are never normalised)
  --on-nonfinite=MODE    a window whose gradients or loss are NaN or
                         infinite is never applied; stop (default): exit 1
                         naming the optimizer step, the window and the
                         tensor (checkpoints already written stay the last
                         good ones); skip: go on, counting it (the step's
                         metrics line says skipped)
  --limit-train=K        use only the first K training samples
  --limit-test=K         use only the first K test samples
  --memory-budget=SIZE   refuse the artifact if what a session of it holds
                         (its memory report, plus the runtime's fixed
                         overhead on the CPU) exceeds SIZE (bytes, or with
                         KiB, MiB, GiB); on cuda the device memory
  --save-params=FILE     write the final parameters (raw, manifest order)
  --plot=FILE            draw the metrics into FILE (.png or .svg) at the
                         end (needs --metrics and python3-matplotlib)
  --progress=MODE        auto (default), bar, lines or none
  --quiet                per-epoch results only
  --help                 this text

Reference: docs/user/cleave-train.md
)";
}

int64_t parseByteSize(const std::string &flag, const std::string &text) {
  std::string number = text;
  double scale = 1;
  for (auto [suffix, factor] : {std::pair<const char *, double>{"KiB", 1024.0},
                                {"MiB", 1024.0 * 1024},
                                {"GiB", 1024.0 * 1024 * 1024},
                                {"B", 1.0}}) {
    const std::string s = suffix;
    if (number.size() > s.size() &&
        number.compare(number.size() - s.size(), s.size(), s) == 0) {
      number.resize(number.size() - s.size());
      scale = factor;
      break;
    }
  }
  char *end = nullptr;
  double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !(value > 0) || value * scale > 9.2e18)
    throw UsageError("invalid value '" + text + "' for " + flag +
                     " (expected a size: bytes, or with KiB, MiB, GiB, such "
                     "as 1GiB)");
  return int64_t(value * scale);
}

namespace {

ProgressMode parseProgress(const std::string &text) {
  if (text == "auto")
    return ProgressMode::Auto;
  if (text == "bar")
    return ProgressMode::Bar;
  if (text == "lines")
    return ProgressMode::Lines;
  if (text == "none")
    return ProgressMode::None;
  throw UsageError("invalid value '" + text +
                   "' for --progress (expected auto, bar, lines or none)");
}

const char *const kScheduleKinds[] = {"constant", "cosine",     "step",
                                      "linear",   "polynomial", "one-cycle"};

/// Refuses schedule flags that the chosen kind does not use.
void checkSchedule(const TrainOptions::Schedule &s) {
  auto refuse = [&](bool given, const char *flag, const char *kinds) {
    if (given)
      throw UsageError(std::string(flag) + " does not apply to --lr-schedule=" +
                       s.kind + " (it applies to " + kinds + ")");
  };
  const bool decays = s.kind == "cosine" || s.kind == "linear" ||
                      s.kind == "polynomial" || s.kind == "one-cycle";
  refuse(s.totalSteps && !decays, "--total-steps",
         "cosine, linear, polynomial and one-cycle");
  refuse(s.minLr && s.kind == "constant", "--min-lr",
         "every kind but constant");
  refuse(s.stepSize && s.kind != "step", "--lr-step-size", "step");
  refuse(s.gamma && s.kind != "step", "--lr-gamma", "step");
  refuse(s.power && s.kind != "polynomial", "--lr-power", "polynomial");
}

void noValue(const Flag &flag) {
  if (flag.value)
    throw UsageError("option " + flag.name + " takes no value");
}

} // namespace

TrainOptions parseTrainOptions(int argc, char **argv) {
  using tools::parseInt;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  TrainOptions o;
  ArgumentReader args(argc, argv);
  std::vector<std::string> positional;
  while (args.more()) {
    if (!args.nextIsFlag()) {
      positional.push_back(args.positional());
      continue;
    }
    Flag f = args.flag();
    const std::string &n = f.name;
    if (n == "--help") {
      noValue(f);
      o.help = true;
      return o;
    } else if (n == "--data") {
      o.dataDir = args.value(f);
      if (o.dataDir.empty())
        throw UsageError("--data needs a directory or file");
    } else if (n == "--epochs") {
      o.epochs = parseInt(n, args.value(f), 1, 1000000);
    } else if (n == "--seed") {
      o.seed = tools::parseUnsigned(n, args.value(f));
    } else if (n == "--accumulate") {
      o.accumulate = parseInt(n, args.value(f), 1, kMax);
    } else if (n == "--lr") {
      std::string text = args.value(f);
      o.lr = tools::parseDouble(n, text);
      if (*o.lr < 0)
        throw UsageError("--lr must not be negative (got " + text + ")");
    } else if (n == "--lr-schedule" || n == "--warmup-steps" ||
               n == "--warmup-start-factor" || n == "--total-steps" ||
               n == "--min-lr" || n == "--lr-step-size" || n == "--lr-gamma" ||
               n == "--lr-power") {
      if (!o.schedule)
        o.schedule.emplace();
      TrainOptions::Schedule &s = *o.schedule;
      std::string text = args.value(f);
      auto nonNegative = [&] {
        double v = tools::parseDouble(n, text);
        if (v < 0)
          throw UsageError(n + " must not be negative (got " + text + ")");
        return v;
      };
      if (n == "--lr-schedule") {
        if (std::find(std::begin(kScheduleKinds), std::end(kScheduleKinds),
                      text) == std::end(kScheduleKinds))
          throw UsageError("invalid value '" + text +
                           "' for --lr-schedule (expected constant, cosine, "
                           "step, linear, polynomial or one-cycle)");
        s.kind = text;
      } else if (n == "--warmup-steps") {
        s.warmupSteps = parseInt(n, text, 0, kMax);
      } else if (n == "--total-steps") {
        s.totalSteps = parseInt(n, text, 1, kMax);
      } else if (n == "--lr-step-size") {
        s.stepSize = parseInt(n, text, 1, kMax);
      } else if (n == "--warmup-start-factor") {
        s.warmupStartFactor = nonNegative();
        if (*s.warmupStartFactor > 1)
          throw UsageError("--warmup-start-factor must be 0 to 1 (got " + text +
                           ")");
      } else if (n == "--min-lr") {
        s.minLr = nonNegative();
      } else if (n == "--lr-gamma") {
        s.gamma = nonNegative();
        if (*s.gamma == 0)
          throw UsageError("--lr-gamma must be positive (got " + text + ")");
      } else {
        s.power = nonNegative();
        if (*s.power == 0)
          throw UsageError("--lr-power must be positive (got " + text + ")");
      }
    } else if (n == "--plot") {
      o.plotPath = args.value(f);
      if (o.plotPath.empty())
        throw UsageError("--plot needs a file name (.png or .svg)");
    } else if (n == "--hyper") {
      o.hyperparameters.push_back(tools::parseNameValue(n, args.value(f)));
    } else if (n == "--device") {
      const std::string text = args.value(f);
      if (text == "cpu") {
        o.cuda = false;
      } else if (text == "cuda") {
        // GPU 0, or under mpirun the GPU of the rank's index on its
        // machine: one GPU per rank.
        o.cuda = true;
        o.deviceOrdinal = TrainOptions::kOneGpuPerRank;
      } else if (text.rfind("cuda:", 0) == 0) {
        o.cuda = true;
        o.deviceOrdinal = int32_t(parseInt(n, text.substr(5), 0, 1 << 20));
      } else {
        throw UsageError("invalid value '" + text +
                         "' for --device (expected cpu, cuda or cuda:K)");
      }
    } else if (n == "--threads") {
      o.threads = int32_t(parseInt(n, args.value(f), 1, 4096));
    } else if (n == "--metrics") {
      o.metricsPath = args.value(f);
      if (o.metricsPath.empty())
        throw UsageError("--metrics needs a file name");
    } else if (n == "--checkpoint-dir") {
      o.checkpointDir = args.value(f);
      if (o.checkpointDir.empty())
        throw UsageError("--checkpoint-dir needs a directory");
    } else if (n == "--checkpoint-every") {
      o.checkpointEvery = parseInt(n, args.value(f), 1, kMax);
    } else if (n == "--keep-checkpoints") {
      o.keepCheckpoints = parseInt(n, args.value(f), 1, 1000000);
    } else if (n == "--resume") {
      noValue(f);
      o.resume = true;
    } else if (n == "--normalize") {
      std::string mode = args.value(f);
      if (mode != "standard" && mode != "none")
        throw UsageError("invalid value '" + mode +
                         "' for --normalize (expected standard or none)");
      o.standardize = mode == "standard";
      o.normalizeGiven = true;
    } else if (n == "--on-nonfinite") {
      std::string mode = args.value(f);
      if (mode != "stop" && mode != "skip")
        throw UsageError("invalid value '" + mode +
                         "' for --on-nonfinite (expected stop or skip)");
      o.skipNonfinite = mode == "skip";
    } else if (n == "--limit-train") {
      o.limitTrain = parseInt(n, args.value(f), 1, kMax);
    } else if (n == "--limit-test") {
      o.limitTest = parseInt(n, args.value(f), 1, kMax);
    } else if (n == "--save-params") {
      o.saveParams = args.value(f);
      if (o.saveParams.empty())
        throw UsageError("--save-params needs a file name");
    } else if (n == "--memory-budget") {
      o.memoryBudget = parseByteSize(n, args.value(f));
    } else if (n == "--progress") {
      o.progress = parseProgress(args.value(f));
    } else if (n == "--quiet") {
      noValue(f);
      o.quiet = true;
    } else {
      throw UsageError("unknown option '" + n +
                       "' (cleave-train --help lists the options)");
    }
  }
  if (positional.empty())
    throw UsageError("no model given (usage: cleave-train MODEL.cleave "
                     "[options]; --help for more)");
  if (positional.size() > 1)
    throw UsageError("unexpected argument '" + positional[1] +
                     "' (cleave-train trains one MODEL.cleave)");
  o.artifact = positional[0];
  if (o.artifact.empty())
    throw UsageError("the model path is empty");
  if (o.resume && o.checkpointDir.empty())
    throw UsageError("--resume needs --checkpoint-dir=DIR (where to find the "
                     "checkpoints)");
  if (o.checkpointEvery > 0 && o.checkpointDir.empty())
    throw UsageError("--checkpoint-every needs --checkpoint-dir=DIR");
  if (o.schedule) {
    if (o.schedule->kind.empty())
      throw UsageError("--warmup-steps, --total-steps and the other schedule "
                       "options need --lr-schedule=KIND");
    checkSchedule(*o.schedule);
  }
  if (!o.plotPath.empty()) {
    auto endsWith = [&](const char *suffix) {
      const std::string s = suffix;
      return o.plotPath.size() > s.size() &&
             o.plotPath.compare(o.plotPath.size() - s.size(), s.size(), s) == 0;
    };
    if (!endsWith(".png") && !endsWith(".svg"))
      throw UsageError("--plot=" + o.plotPath +
                       ": the file must end in .png or .svg");
    if (o.metricsPath.empty())
      throw UsageError("--plot draws the metrics file: it needs "
                       "--metrics=FILE too");
  }
  if (o.quiet)
    o.progress = ProgressMode::None;
  return o;
}

} // namespace cleave::train

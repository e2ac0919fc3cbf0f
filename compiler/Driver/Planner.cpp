//===- Planner.cpp - The micro-batch, N and recomputation for a budget ----===//
//
// Every buffer of a step is static and any (micro-batch, N) with the same
// global batch gives the same update, so the plan that fits a memory budget
// can be chosen by compiling candidates to their memory plan and comparing
// the reports, before any code is generated or anything runs.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Planner.h"

#include "compiler/Driver/Driver.h"
#include "runtime/src/schema/Schema.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace mlir::cleave;

std::string mlir::cleave::humanBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  if (u == 0)
    os << bytes << " B";
  else
    os << llvm::format(v < 10    ? "%.2f"
                       : v < 100 ? "%.1f"
                                 : "%.0f",
                       v)
       << " " << units[u];
  return out;
}

namespace {

/// How much is recomputed, from none to all the cost model allows.
enum class Level { None, Auto, Max };

const char *levelName(Level l) {
  switch (l) {
  case Level::None:
    return "none";
  case Level::Auto:
    return "auto";
  case Level::Max:
    return "max";
  }
  return "";
}

/// One candidate plan, measured.
struct Candidate {
  int64_t microBatch = 0, accumulate = 0;
  Level level = Level::None;
  /// The memory report's total plus the runtime's fixed overhead.
  int64_t peak = 0;
  int64_t held = 0;
  /// What does not shrink with the micro-batch: the state, the kernels'
  /// weight copies and the fixed overhead.
  int64_t fixed = 0;
  double recomputedFlops = 0, forwardFlops = 0;
  /// The report's kinds, for the refusal.
  llvm::SmallVector<std::pair<std::string, int64_t>> kinds;
  bool fits = false;
  /// Modelled samples/s relative to micro-batch G without recomputation.
  double rate = 0;
};

double efficiency(int64_t microBatch) {
  return double(microBatch) / (double(microBatch) + kHalfRateMicroBatch);
}

/// Compiles `model` for `microBatch` samples per micro-step, N of them per
/// window of `window` samples (one rank's), to its memory plan.
FailureOr<Candidate> measure(ModuleOp model, TrainingPipelineOptions &o,
                             int64_t window, int64_t microBatch, Level level,
                             int64_t budget) {
  o.microBatch = microBatch;
  o.accumulate = (window + microBatch - 1) / microBatch;
  o.windowSamples = window;
  o.remat = level == Level::None ? Remat::none : Remat::automatic;
  o.rematBudget = level == Level::Max ? "0" : "";
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(model->clone()));
  // Every candidate would repeat the model's warnings; the chosen plan's
  // compile prints them once. Errors still go through.
  ScopedDiagnosticHandler quiet(model->getContext(), [](Diagnostic &d) {
    return success(d.getSeverity() == DiagnosticSeverity::Warning ||
                   d.getSeverity() == DiagnosticSeverity::Remark);
  });
  std::string manifest;
  if (failed(lowerModel(*module, o, Phase::Bufferize, /*verbose=*/false,
                        &manifest)))
    return failure();
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(manifest);
  if (!json) {
    llvm::consumeError(json.takeError());
    return failure();
  }
  namespace key = ::cleave::abi::keys::Memory;
  const llvm::json::Object *memory =
      json->getAsObject() ? json->getAsObject()->getObject(
                                ::cleave::abi::keys::Manifest::memory)
                          : nullptr;
  if (!memory)
    return failure();
  auto get = [&](llvm::StringRef k) {
    return memory->getInteger(k).value_or(0);
  };
  Candidate c;
  c.microBatch = microBatch;
  c.accumulate = o.accumulate;
  c.level = level;
  c.peak = get(key::total) + get(key::fixedOverhead);
  c.held = get(key::heldActivations);
  c.fixed = get(key::parameters) + get(key::optimizerState) +
            get(key::accumulators) + get(key::buffers) + get(key::counters) +
            get(key::kernelCaches) + get(key::fixedOverhead);
  for (const char *kind :
       {key::parameters, key::optimizerState, key::accumulators, key::buffers,
        key::inputs, key::outputs, key::scratch, key::kernelCaches,
        key::kernelArena, key::fixedOverhead}) {
    std::string name = kind;
    std::replace(name.begin(), name.end(), '_', ' ');
    c.kinds.push_back({name, get(kind)});
  }
  if (const llvm::json::Object *entries = memory->getObject(key::entries))
    if (const llvm::json::Object *step = entries->getObject(
            ::cleave::abi::name(::cleave::abi::EntryName::micro_step)))
      if (const llvm::json::Object *r =
              step->getObject(::cleave::abi::keys::MemoryEntry::recomputed)) {
        namespace rkey = ::cleave::abi::keys::Recomputed;
        c.recomputedFlops = double(r->getInteger(rkey::flops).value_or(0));
        c.forwardFlops = double(r->getInteger(rkey::forwardFlops).value_or(0));
      }
  c.fits = c.peak <= budget;
  // A micro-step runs the forward pass, about twice its work backward, and
  // what is recomputed; a short last micro-batch computes its padding too
  // (N B samples' work for W).
  double extra =
      c.forwardFlops > 0 ? c.recomputedFlops / (3 * c.forwardFlops) : 0;
  c.rate = efficiency(microBatch) / (1 + extra) / efficiency(window) *
           double(window) / double(c.accumulate * microBatch);
  return c;
}

void printRow(llvm::raw_ostream &os, const Candidate &c) {
  std::string extra =
      c.forwardFlops > 0
          ? llvm::formatv("{0:P0}", c.recomputedFlops / (3 * c.forwardFlops))
                .str()
          : std::string("-");
  os << llvm::formatv("  {0,11} {1,6}  {2,-5} {3,10} {4,10} {5,11}   {6}\n",
                      c.microBatch, c.accumulate, levelName(c.level),
                      humanBytes(c.held), humanBytes(c.peak), extra,
                      c.fits ? llvm::formatv("{0:F2}x", c.rate).str()
                             : std::string("does not fit"));
  os.flush();
}

} // namespace

FailureOr<int64_t>
mlir::cleave::windowOfOneRank(const TrainingPipelineOptions &options,
                              int64_t globalBatch, std::string &error) {
  // Data-parallel: the global batch is every rank's samples, and each rank
  // runs its window of G / R.
  if (options.reduce == train::RankReduction::none)
    return globalBatch;
  if (options.ranks <= 0) {
    error = "--global-batch counts the samples of every data-parallel "
            "rank: give --ranks=R with --reduce";
    return failure();
  }
  if (globalBatch % options.ranks != 0) {
    error = llvm::formatv("--global-batch={0} is not a multiple of "
                          "--ranks={1}: every rank's window must hold as "
                          "many samples",
                          globalBatch, options.ranks)
                .str();
    return failure();
  }
  return globalBatch / options.ranks;
}

LogicalResult mlir::cleave::planForMemoryBudget(
    ModuleOp model, TrainingPipelineOptions &options, int64_t globalBatch,
    int64_t budget, llvm::raw_ostream &os, std::string &error) {
  const bool device = options.target == rt::Device::cuda;
  // The budget is one rank's memory (its memory report counts its shard of
  // ZeRO-1's optimizer state).
  FailureOr<int64_t> perRank = windowOfOneRank(options, globalBatch, error);
  if (failed(perRank))
    return failure();
  const int64_t window = *perRank;
  const int64_t ranks = globalBatch / window;
  os << "plan for a global batch of " << globalBatch;
  if (ranks > 1)
    os << " (" << window << " per rank on " << ranks << " ranks)";
  os << " in " << humanBytes(budget) << " of " << (device ? "device" : "host")
     << " memory" << (ranks > 1 ? " per rank" : "")
     << " (peak: the memory report"
     << (device ? "" : " plus the runtime's fixed overhead")
     << "; rate: modelled samples/s against micro-batch " << window
     << " without recomputation, docs/design/memory.md):\n";
  os << llvm::formatv("  {0,11} {1,6}  {2,-5} {3,10} {4,10} {5,11}   {6}\n",
                      "micro-batch", "N", "remat", "held", "peak", "recomputed",
                      "rate");
  os.flush();

  // For each N the smallest micro-batch that covers the window, B =
  // ceil(W / N) (a larger B with the same N only pads more), largest first:
  // every divisor of W, and between them the micro-batches whose last one
  // per window is short.
  llvm::SmallVector<int64_t> microBatches;
  for (int64_t n = 1; n <= window; ++n) {
    int64_t b = (window + n - 1) / n;
    if (microBatches.empty() || b < microBatches.back())
      microBatches.push_back(b);
  }
  const int64_t last = int64_t(microBatches.size()) - 1;

  std::optional<Candidate> best, smallest;
  std::string failedCompile;
  // A level whose recomputation costs `extra` of a micro-step runs at most
  // at 1 / (1 + extra), with the largest micro-batch: no better than the
  // best plan so far, the level need not be searched.
  auto cannotWin = [&](const Candidate &c) {
    double extra =
        c.forwardFlops > 0 ? c.recomputedFlops / (3 * c.forwardFlops) : 0;
    return best && 1 / (1 + extra) <= best->rate;
  };
  auto measureAt = [&](int64_t index, Level level) -> std::optional<Candidate> {
    int64_t b = microBatches[index];
    FailureOr<Candidate> c = measure(model, options, window, b, level, budget);
    if (failed(c)) {
      failedCompile = llvm::formatv("cannot compile the model for micro-batch "
                                    "{0} with remat {1} (see above)",
                                    b, levelName(level))
                          .str();
      return std::nullopt;
    }
    printRow(os, *c);
    if (!smallest || c->peak < smallest->peak)
      smallest = *c;
    return *c;
  };
  // At a given recomputation level the peak grows with the micro-batch, so
  // the largest that fits is found by bisection; it is the level's best
  // plan (a smaller one pads less than a sample per micro-step but runs at
  // a lower rate). More recomputation only pays with a larger micro-batch
  // than the best plan so far, so each level searches above it.
  int64_t bound = last; // the smallest index (largest B) worth trying
  for (Level level : {Level::None, Level::Auto, Level::Max}) {
    if (best) {
      bound =
          llvm::find(microBatches, best->microBatch) - microBatches.begin() - 1;
      if (bound < 0)
        break;
    }
    // The largest micro-batch first (it is the best plan if it fits), then
    // the largest worth trying, then bisection between them: [lo, hi]
    // holds the largest fitting one's index, hi fits, nothing before lo
    // does.
    std::optional<Candidate> fit;
    bool hopeless = false, losing = false;
    int64_t lo = 0, hi = bound;
    for (int64_t index : {int64_t(0), bound}) {
      if (fit || hopeless || losing || (index == bound && lo > bound))
        break;
      std::optional<Candidate> c = measureAt(index, level);
      if (!c) {
        error = failedCompile;
        return failure();
      }
      losing = cannotWin(*c);
      if (c->fits) {
        fit = c;
        hi = index;
      } else {
        lo = index + 1;
        // What does not shrink with the micro-batch does not fit: no plan
        // can.
        hopeless = c->fixed > budget;
      }
    }
    if (hopeless)
      break;
    if (!fit || losing)
      continue;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      std::optional<Candidate> c = measureAt(mid, level);
      if (!c) {
        error = failedCompile;
        return failure();
      }
      if (c->fits) {
        fit = c;
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (!best || fit->rate > best->rate)
      best = fit;
  }

  if (!best) {
    std::string kinds;
    auto sorted = smallest->kinds;
    llvm::stable_sort(sorted, [](const auto &x, const auto &y) {
      return x.second > y.second;
    });
    for (auto &[kind, bytes] : sorted)
      if (bytes > 0)
        kinds += (kinds.empty() ? "" : ", ") + kind + " " + humanBytes(bytes);
    error = llvm::formatv("nothing fits in --memory-budget={0}: the smallest "
                          "plan measured (micro-batch {1}, N = {2}, remat "
                          "{3}) needs {4} ({5})",
                          humanBytes(budget), smallest->microBatch,
                          smallest->accumulate, levelName(smallest->level),
                          humanBytes(smallest->peak), kinds)
                .str();
    return failure();
  }
  const int64_t shortOne = window - (best->accumulate - 1) * best->microBatch;
  os << llvm::formatv("chosen: micro-batch {0}, N = {1}", best->microBatch,
                      best->accumulate);
  if (shortOne != best->microBatch)
    os << " (the last of each window " << shortOne << ")";
  os << llvm::formatv(", remat {0}: peak {1} of {2}, modelled rate {3:F2}x\n",
                      levelName(best->level), humanBytes(best->peak),
                      humanBytes(budget), best->rate);
  os.flush();
  options.microBatch = best->microBatch;
  options.accumulate = best->accumulate;
  options.windowSamples = window;
  options.remat = best->level == Level::None ? Remat::none : Remat::automatic;
  options.rematBudget = best->level == Level::Max ? "0" : "";
  return success();
}

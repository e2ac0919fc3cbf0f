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

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace mlir::cleave;

std::string cleave::humanBytes(int64_t bytes) {
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
  o.accumulate = window / microBatch;
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
  const llvm::json::Object *memory =
      json->getAsObject() ? json->getAsObject()->getObject("memory") : nullptr;
  if (!memory)
    return failure();
  auto get = [&](llvm::StringRef key) {
    return memory->getInteger(key).value_or(0);
  };
  Candidate c;
  c.microBatch = microBatch;
  c.accumulate = window / microBatch;
  c.level = level;
  c.peak = get("total") + get("fixed_overhead");
  c.held = get("held_activations");
  c.fixed = get("parameters") + get("optimizer_state") + get("accumulators") +
            get("buffers") + get("counters") + get("kernel_caches") +
            get("fixed_overhead");
  for (const char *kind : {"parameters", "optimizer_state", "accumulators",
                           "buffers", "inputs", "outputs", "scratch",
                           "kernel_caches", "kernel_arena", "fixed_overhead"}) {
    std::string name = kind;
    std::replace(name.begin(), name.end(), '_', ' ');
    c.kinds.push_back({name, get(kind)});
  }
  if (const llvm::json::Object *entries = memory->getObject("entries"))
    if (const llvm::json::Object *step = entries->getObject("micro_step"))
      if (const llvm::json::Object *r = step->getObject("recomputed")) {
        c.recomputedFlops = double(r->getInteger("flops").value_or(0));
        c.forwardFlops = double(r->getInteger("forward_flops").value_or(0));
      }
  c.fits = c.peak <= budget;
  // A micro-step runs the forward pass, about twice its work backward, and
  // what is recomputed.
  double extra =
      c.forwardFlops > 0 ? c.recomputedFlops / (3 * c.forwardFlops) : 0;
  c.rate = efficiency(microBatch) / (1 + extra) / efficiency(window);
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

LogicalResult cleave::planForMemoryBudget(ModuleOp model,
                                          TrainingPipelineOptions &options,
                                          int64_t globalBatch, int64_t budget,
                                          llvm::raw_ostream &os,
                                          std::string &error) {
  const bool device = options.target == rt::Device::cuda;
  // Data-parallel: the global batch is every rank's samples, and each rank
  // runs its window of G / R; the budget is one rank's (its memory report
  // counts its shard of ZeRO-1's optimizer state).
  int64_t ranks = 1;
  if (options.reduce != train::RankReduction::none) {
    if (options.ranks <= 0) {
      error = "--global-batch counts the samples of every data-parallel "
              "rank: give --ranks=R with --reduce";
      return failure();
    }
    ranks = options.ranks;
    if (globalBatch % ranks != 0) {
      error = llvm::formatv("--global-batch={0} is not a multiple of "
                            "--ranks={1}: every rank's window must hold as "
                            "many samples",
                            globalBatch, ranks)
                  .str();
      return failure();
    }
  }
  const int64_t window = globalBatch / ranks;
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

  // Micro-batches that divide the window, so that it is N whole ones.
  llvm::SmallVector<int64_t> microBatches;
  for (int64_t b = window; b >= 1; --b)
    if (window % b == 0)
      microBatches.push_back(b);

  std::optional<Candidate> best, smallest;
  bool hopeless = false;
  for (int64_t b : microBatches) {
    if (hopeless)
      break;
    // A smaller micro-batch cannot beat the best plan: even without
    // recomputation its modelled rate is lower.
    if (best && efficiency(b) / efficiency(window) <= best->rate)
      break;
    for (Level level : {Level::None, Level::Auto, Level::Max}) {
      FailureOr<Candidate> c =
          measure(model, options, window, b, level, budget);
      if (failed(c)) {
        error = llvm::formatv("cannot compile the model for micro-batch {0} "
                              "with remat {1} (see above)",
                              b, levelName(level))
                    .str();
        return failure();
      }
      printRow(os, *c);
      if (!smallest || c->peak < smallest->peak)
        smallest = *c;
      if (c->fits) {
        if (!best || c->rate > best->rate)
          best = *c;
        // More recomputation only lowers the rate at this micro-batch.
        break;
      }
      // What does not shrink with the micro-batch does not fit: no plan can.
      if (c->fixed > budget) {
        hopeless = true;
        break;
      }
    }
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
  os << llvm::formatv("chosen: micro-batch {0}, N = {1}, remat {2}: peak {3} "
                      "of {4}, modelled rate {5:F2}x\n",
                      best->microBatch, best->accumulate,
                      levelName(best->level), humanBytes(best->peak),
                      humanBytes(budget), best->rate);
  os.flush();
  options.microBatch = best->microBatch;
  options.accumulate = best->accumulate;
  options.remat = best->level == Level::None ? Remat::none : Remat::automatic;
  options.rematBudget = best->level == Level::Max ? "0" : "";
  return success();
}

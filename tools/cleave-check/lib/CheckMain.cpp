//===- CheckMain.cpp - cleave-check's command line and compilation --------===//
//
// The one file of cleave-check that sees MLIR: it binds the training options
// (TrainingPipelineOptions, as cleave-compile does), compiles the model twice
// through the compiler driver, and hands the two artifacts to the runtime
// half (Checker.cpp). Nothing here throws: the checker's exceptions stay
// inside runCheck.
//
//===----------------------------------------------------------------------===//

#include "CheckMain.h"

#include "Checker.h"

#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/Driver/Driver.h"
#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"
#include "runtime/src/schema/SchemaRead.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

namespace cl = llvm::cl;

namespace cleave::checker {

namespace {

/// cleave-check's own flags; the training options come from
/// TrainingPipelineOptions.
struct CheckCommandLine {
  cl::OptionCategory category{"cleave-check options"};
  cl::opt<std::string> model{cl::Positional,
                             cl::desc("<model.mlir|model.onnx>"), cl::Required,
                             cl::cat(category)};
  cl::opt<int64_t> windows{
      "windows", cl::desc("Windows (optimizer steps) to train and compare"),
      cl::value_desc("K"), cl::init(3), cl::cat(category)};
  cl::opt<double> rtol{
      "rtol",
      cl::desc("The largest relative difference that counts as agreement"),
      cl::init(kDefaultRtol), cl::cat(category)};
  cl::opt<uint64_t> seed{
      "seed", cl::desc("Seeds the random data and the initial parameters"),
      cl::init(0), cl::cat(category)};
  cl::opt<std::string> data{
      "data",
      cl::desc("Train on this dataset (idx, CIFAR-10, .npz, .npy, as "
               "cleave-train reads them) instead of random data"),
      cl::value_desc("path"), cl::cat(category)};
  cl::opt<std::string> artifacts{
      "artifacts",
      cl::desc("Write the two artifacts into this directory and keep them "
               "(a temporary directory otherwise)"),
      cl::value_desc("dir"), cl::cat(category)};
  cl::opt<bool> verbose{
      "v", cl::desc("Report the compilations and the compiler's warnings"),
      cl::cat(category)};
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "cleave-check: error: " << message << "\n";
  return 2;
}

/// Where the two artifacts go: the --artifacts directory, or a temporary one
/// removed again when this dies.
class ArtifactDir {
public:
  ~ArtifactDir() {
    if (!temporary_)
      return;
    for (const std::string &file : files_)
      llvm::sys::fs::remove(file);
    llvm::sys::fs::remove(path_);
  }

  /// Creates the directory; an error message if it cannot.
  std::string open(const std::string &requested) {
    std::error_code ec;
    if (requested.empty()) {
      llvm::SmallString<128> dir;
      ec = llvm::sys::fs::createUniqueDirectory("cleave-check", dir);
      path_ = dir.str().str();
      temporary_ = !ec;
    } else {
      path_ = requested;
      ec = llvm::sys::fs::create_directories(path_);
    }
    return ec ? "cannot create " + path_ + ": " + ec.message() : "";
  }

  std::string file(const std::string &name) {
    llvm::SmallString<128> p(path_);
    llvm::sys::path::append(p, name);
    files_.push_back(p.str().str());
    return files_.back();
  }

private:
  std::string path_;
  bool temporary_ = false;
  std::vector<std::string> files_;
};

std::string kib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f KiB", double(bytes) / 1024);
  return text;
}

/// "arena X KiB, of which Y KiB held from forward to backward (N values
/// recomputed, F MFLOP)" from a manifest's memory report.
std::string describeHeld(const std::string &manifest) {
  namespace abi = ::cleave::abi;
  abi::Manifest doc;
  std::string error;
  if (!abi::readManifestText(manifest, doc, error, abi::Kernels::Defer) ||
      !doc.memory || !doc.memory->entries)
    return "(no memory report)";
  const abi::MemoryEntry *step = nullptr;
  for (const auto &[name, entry] : *doc.memory->entries)
    if (name == abi::name(abi::EntryName::micro_step))
      step = &entry;
  if (!step)
    return "(no memory report)";
  std::string line = "arena " + kib(step->scratch.value_or(0)) + ", of which " +
                     kib(step->heldActivations.value_or(0)) +
                     " held from forward to backward";
  if (const std::optional<abi::Recomputed> &r = step->recomputed) {
    char more[96];
    std::snprintf(
        more, sizeof(more), " (%lld values recomputed, %.1f MFLOP more)",
        (long long)r->values.value_or(0), double(r->flops.value_or(0)) / 1e6);
    line += more;
  }
  return line;
}

} // namespace

int checkMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  CheckCommandLine opts;
  // cleave-compile's training options, bound the same way: cleave-check
  // accepts exactly its flags (--optimizer, --loss, --lr, ...) with the
  // same checks.
  mlir::cleave::TrainingPipelineOptions training;
  training.addToCommandLine(opts.category);
  llvm::scope_exit unbind([&] { training.removeFromCommandLine(); });
  cl::HideUnrelatedOptions(opts.category);
  std::string parseErrors;
  llvm::raw_string_ostream parseStream(parseErrors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "Cleave equivalence checker: N micro-batches of B against one "
          "batch of N*B\n\n"
          "  cleave-check model.mlir --micro-batch=32 --accumulate=4\n"
          "  cleave-check model.onnx --micro-batch=8 --accumulate=8 "
          "--optimizer=adam --windows=5 --data=/usr/share/datasets/"
          "fashion-mnist\n\n"
          "Compiles the model for micro-batch B accumulating N micro-steps "
          "per optimizer step and for micro-batch N*B stepping on each, "
          "trains both from the same initial parameters on the same K "
          "windows of N*B samples, and prints the relative difference of the "
          "loss and of every parameter after each window.\n"
          "Exit status: 0 agree, 1 mismatch, 2 the check could not run, 3 "
          "they differ and the model has split-observable ops (batch norm in "
          "training mode, dropout).\n\n"
          "With --remat=auto or --remat-budget=SIZE it checks "
          "rematerialisation instead: the model compiled for micro-batch B "
          "and N with activations recomputed against the same without, "
          "trained alike; they must agree bit for bit.\n",
          &parseStream)) {
    // cl's messages already start with the tool's name.
    llvm::errs() << parseErrors;
    return 2;
  }

  const int64_t b = training.microBatch, n = training.accumulate;
  const bool remat = training.remat != mlir::cleave::Remat::none ||
                     !training.rematBudget.empty();
  if (b <= 0)
    return fail("--micro-batch=B is required (B >= 1)");
  if (remat && opts.rtol.getNumOccurrences())
    return fail("--rtol: a rematerialised step recomputes the same ops on "
                "the same values, so the check requires the same bits");
  if (n < 1 || (!remat && n < 2))
    return fail("--accumulate=N must be at least 2 (with N = 1 both runs "
                "are the same artifact), got " +
                llvm::Twine(n));
  if (b > std::numeric_limits<int64_t>::max() / n)
    return fail("--micro-batch=" + llvm::Twine(b) +
                " times --accumulate=" + llvm::Twine(n) + " overflows");
  if (opts.windows < 1)
    return fail("--windows=K must be at least 1, got " +
                llvm::Twine(int64_t(opts.windows)));
  if (!(opts.rtol > 0) || !std::isfinite(opts.rtol)) {
    char value[32];
    std::snprintf(value, sizeof(value), "%g", double(opts.rtol));
    return fail(llvm::Twine("--rtol must be a positive number, got ") + value);
  }
  if (training.ranks > 1)
    return fail("--ranks=" + llvm::Twine(int64_t(training.ranks)) +
                ": cleave-check runs both artifacts in one process; check "
                "the split with --ranks=0 (the cross-rank reduction is "
                "the same for both runs)");
  if (training.target != mlir::cleave::rt::Device::cpu)
    return fail("--target=" +
                mlir::cleave::rt::stringifyDevice(training.target) +
                ": cleave-check runs both artifacts on this machine's CPU; "
                "the split it checks is the same for every target");
  std::string invalid;
  if (failed(training.verify([&](const llvm::Twine &m) { invalid = m.str(); })))
    return fail(invalid);

  ArtifactDir dir;
  if (std::string error = dir.open(opts.artifacts); !error.empty())
    return fail(error);
  const std::string stem = llvm::sys::path::stem(opts.model).str();
  auto name = [&](int64_t microBatch, int64_t accumulate) {
    return dir.file(stem + "-b" + std::to_string(microBatch) + "-n" +
                    std::to_string(accumulate) + ".cleave");
  };
  CheckOptions check;
  check.accumulating = name(b, n);
  check.reference = remat ? dir.file(stem + "-b" + std::to_string(b) + "-n" +
                                     std::to_string(n) + "-no-remat.cleave")
                          : name(b * n, 1);
  check.kind = remat ? Reference::WithoutRemat : Reference::BigBatch;
  check.windows = opts.windows;
  check.seed = opts.seed;
  check.rtol = remat ? 0.0 : double(opts.rtol);
  check.data = opts.data;

  // In a rematerialisation check: each artifact's micro-step scratch, held
  // bytes and what was recomputed, from its manifest's memory report.
  std::string heldLine[2];
  {
    mlir::DialectRegistry registry;
    mlir::cleave::registerAllDialects(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
    // The compiler's warnings would come twice (two compilations); the ones
    // that matter here, the split-observable ops, are reported from the
    // artifact's manifest instead.
    mlir::ScopedDiagnosticHandler quiet(&context, [&](mlir::Diagnostic &d) {
      return mlir::success(!opts.verbose &&
                           d.getSeverity() ==
                               mlir::DiagnosticSeverity::Warning);
    });

    mlir::OwningOpRef<mlir::ModuleOp> model =
        mlir::cleave::loadModel(context, opts.model);
    if (!model)
      return 2;
    const mlir::cleave::Remat rematMode = training.remat;
    const std::string rematBudget = training.rematBudget;
    for (auto [path, microBatch, accumulate, recompute] :
         {std::tuple(check.accumulating, b, n, true),
          remat ? std::tuple(check.reference, b, n, false)
                : std::tuple(check.reference, b * n, int64_t(1), true)}) {
      auto start = std::chrono::steady_clock::now();
      training.microBatch = microBatch;
      training.accumulate = accumulate;
      training.remat = recompute ? rematMode : mlir::cleave::Remat::none;
      training.rematBudget = recompute ? rematBudget : std::string();
      mlir::OwningOpRef<mlir::ModuleOp> module = model->clone();
      std::string error, manifest;
      if (failed(mlir::cleave::lowerModel(*module, training, std::nullopt,
                                          /*verbose=*/false, &manifest)))
        return fail("cannot compile " + opts.model + " for micro-batch " +
                    llvm::Twine(microBatch) + " (see above)");
      if (failed(mlir::cleave::writeArtifact(*module, path, error)))
        return fail(error);
      if (remat)
        heldLine[recompute ? 0 : 1] = describeHeld(manifest);
      if (opts.verbose)
        llvm::errs() << "cleave-check: compiled " << path << " in "
                     << llvm::format(
                            "%.2f",
                            std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count())
                     << " s\n";
    }
  }

  std::printf("model:        %s\n", opts.model.c_str());
  if (remat)
    std::printf("micro-step:     %s rematerialised\n"
                "                %s without\n",
                heldLine[0].c_str(), heldLine[1].c_str());
  return runCheck(check, stdout, stderr);
}

} // namespace cleave::checker

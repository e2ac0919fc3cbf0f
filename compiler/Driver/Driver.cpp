//===- Driver.cpp - Compiling a model file to an artifact -----------------===//
//
// cleave-compile: read a model, run the pipeline (or stop at a phase and
// print it), write the artifact.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/Frontend/Onnx/OnnxImporter.h"
#include "compiler/InitAll.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <unistd.h>

using namespace mlir;
using namespace mlir::cleave;
namespace cl = llvm::cl;

OwningOpRef<ModuleOp> cleave::loadModel(MLIRContext &context, StringRef path) {
  if (path.ends_with(".onnx"))
    return importOnnx(context, path);
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (std::error_code ec = file.getError()) {
    emitError(UnknownLoc::get(&context))
        << "cannot open '" << path << "': " << ec.message();
    return {};
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*file), SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
}

LogicalResult cleave::lowerModel(ModuleOp module,
                                 const TrainingOptions &options,
                                 std::optional<Phase> stopAfter, bool verbose) {
  PassManager pm(module.getContext());
  if (verbose)
    pm.enableTiming();
  buildCpuPipeline(pm, options, stopAfter.value_or(Phase::LLVM));
  return pm.run(module);
}

LogicalResult cleave::writeArtifact(ModuleOp module, StringRef output,
                                    bool verbose) {
  SmallString<128> object;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("cleave", "o", fd, object)) {
    llvm::errs() << "cleave-compile: error: cannot create a temporary file: "
                 << ec.message() << "\n";
    return failure();
  }
  ::close(fd);
  auto start = std::chrono::steady_clock::now();
  std::string error;
  LogicalResult ok = emitObject(module, object, error);
  if (succeeded(ok) && verbose)
    llvm::errs() << "cleave-compile: machine code in "
                 << std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count()
                 << " s\n";
  if (succeeded(ok))
    ok = linkSharedObject(object, output, error);
  llvm::sys::fs::remove(object);
  if (failed(ok))
    llvm::errs() << "cleave-compile: error: " << error << "\n";
  return ok;
}

LogicalResult cleave::writeDot(ModuleOp module, raw_ostream &os) {
  bool any = false;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto entry = f->getAttrOfType<StringAttr>(train::TrainDialect::kEntryAttr);
    if (!entry ||
        (entry.getValue() != "micro_step" && entry.getValue() != "apply_step"))
      continue;
    any = true;
    os << "digraph " << entry.getValue() << " {\n"
       << "  label=\"@" << f.getSymName() << "\"; labelloc=t;\n"
       << "  node [shape=box, fontname=\"monospace\"];\n";
    llvm::DenseMap<Value, std::string> names;
    for (BlockArgument a : f.getArguments()) {
      std::string id = "arg" + std::to_string(a.getArgNumber());
      names[a] = id;
      StringRef label = "argument";
      for (StringRef attr :
           {train::TrainDialect::kInputAttr, train::TrainDialect::kHyperAttr})
        if (auto n = f.getArgAttrOfType<StringAttr>(a.getArgNumber(), attr))
          label = n.getValue();
      os << "  " << id << " [shape=ellipse, label=\"" << label << "\"];\n";
    }
    int n = 0;
    f.walk([&](Operation *op) {
      if (op == f.getOperation())
        return;
      std::string id = "op" + std::to_string(n++);
      std::string label = op->getName().getStringRef().str();
      if (auto sym = op->getAttrOfType<FlatSymbolRefAttr>("global"))
        label += " @" + sym.getValue().str();
      os << "  " << id << " [label=\"" << label << "\"];\n";
      for (Value v : op->getOperands())
        if (auto it = names.find(v); it != names.end())
          os << "  " << it->second << " -> " << id << ";\n";
      for (Value r : op->getResults())
        names[r] = id;
    });
    os << "}\n";
  }
  if (!any)
    return module.emitError("no @micro_step or @apply_step to draw");
  return success();
}

namespace {
/// cleave-compile's command line.
struct CompileOptions {
  cl::OptionCategory category{"cleave-compile options"};
  cl::opt<std::string> input{cl::Positional,
                             cl::desc("<model.mlir|model.onnx>"), cl::Required,
                             cl::cat(category)};
  cl::opt<std::string> output{
      "o",
      cl::desc("Output file (the artifact, or the IR/dot with "
               "--compile-to/--emit)"),
      cl::value_desc("file"), cl::init("-"), cl::cat(category)};
  cl::opt<std::string> model{"model", cl::desc("Model function in MLIR input"),
                             cl::init("forward"), cl::cat(category)};
  cl::opt<std::string> loss{"loss", cl::desc("cross-entropy, mse or none"),
                            cl::init("cross-entropy"), cl::cat(category)};
  cl::opt<std::string> optimizer{
      "optimizer", cl::desc("sgd, momentum, nesterov, adam or adamw"),
      cl::init("sgd"), cl::cat(category)};
  cl::opt<int64_t> microBatch{"micro-batch",
                              cl::desc("Samples per micro-step (required)"),
                              cl::init(0), cl::cat(category)};
  cl::opt<int64_t> accumulate{
      "accumulate",
      cl::desc("Default micro-steps per optimizer step (changeable at run "
               "time)"),
      cl::init(1), cl::cat(category)};
  cl::opt<std::string> reduce{
      "reduce",
      cl::desc("How data-parallel ranks combine their windows: none (one "
               "process), mean (sum the gradients and sample counts once per "
               "window: R ranks give the update of one batch of all their "
               "samples) or adasum (each rank steps on its own window, the "
               "parameter deltas are Adasum-combined)"),
      cl::value_desc("none|mean|adasum"), cl::init("none"), cl::cat(category)};
  cl::opt<int64_t> ranks{
      "ranks",
      cl::desc("Number of data-parallel ranks the artifact runs on (0: any); "
               "the runtime refuses another job size"),
      cl::value_desc("R"), cl::init(0), cl::cat(category)};
  cl::opt<bool> shardOptimizerState{
      "shard-optimizer-state",
      cl::desc("ZeRO-1: each rank keeps 1/R of the optimizer state and "
               "updates 1/R of the parameters (needs --reduce=mean and "
               "--ranks=R)"),
      cl::init(false), cl::cat(category)};
  cl::opt<bool> reduceEveryMicroStep{
      "reduce-every-micro-step",
      cl::desc("Reduce the gradients across ranks in every micro-step instead "
               "of once per window (N times the traffic; a baseline for "
               "benchmarks, needs --reduce=mean)"),
      cl::init(false), cl::cat(category)};
  cl::opt<double> lr{"lr", cl::desc("Default learning rate"), cl::init(0.01),
                     cl::cat(category)};
  cl::opt<double> momentum{"momentum", cl::desc("Default momentum"),
                           cl::init(0.9), cl::cat(category)};
  cl::opt<double> beta1{"beta1", cl::desc("Default Adam beta1"), cl::init(0.9),
                        cl::cat(category)};
  cl::opt<double> beta2{"beta2", cl::desc("Default Adam beta2"),
                        cl::init(0.999), cl::cat(category)};
  cl::opt<double> eps{"eps", cl::desc("Default Adam epsilon"), cl::init(1e-8),
                      cl::cat(category)};
  cl::opt<double> weightDecay{"weight-decay", cl::desc("Default weight decay"),
                              cl::init(0.0), cl::cat(category)};
  cl::opt<double> clipNorm{
      "clip-norm",
      cl::desc("Compile in clipping by global norm with this default max "
               "norm (0: no clipping)"),
      cl::init(0.0), cl::cat(category)};
  cl::opt<std::string> compileTo{
      "compile-to",
      cl::desc("Stop after a phase and print its IR: loss, grad, step, split, "
               "linalg, bufferize, llvm"),
      cl::value_desc("phase"), cl::cat(category)};
  cl::opt<std::string> emit{
      "emit",
      cl::desc("dot: write Graphviz of the micro-step and apply graphs"),
      cl::cat(category)};
  cl::opt<bool> verbose{"v", cl::desc("Report phase timings on stderr"),
                        cl::cat(category)};
};

int fail(const Twine &message) {
  llvm::errs() << "cleave-compile: error: " << message << "\n";
  return 1;
}
} // namespace

int cleave::compileMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  CompileOptions opts;
  cl::HideUnrelatedOptions(opts.category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Cleave compiler: a model to an artifact with a micro-step graph and an "
      "apply graph\n\n"
      "  cleave-compile model.mlir --loss=cross-entropy --optimizer=adam "
      "--micro-batch=32 --accumulate=4 -o model.cleave\n"
      "  cleave-compile model.mlir --micro-batch=32 --accumulate=4 "
      "--reduce=mean --ranks=4 --shard-optimizer-state -o model.cleave\n"
      "    (data-parallel: mpirun -np 4 cleave-train model.cleave ...)\n");

  if (opts.microBatch <= 0)
    return fail("--micro-batch=B is required (B >= 1)");
  if (opts.accumulate < 1)
    return fail("--accumulate must be >= 1");
  if (!llvm::is_contained({"sgd", "momentum", "nesterov", "adam", "adamw"},
                          StringRef(opts.optimizer)))
    return fail("unknown --optimizer value '" + opts.optimizer +
                "'; expected sgd, momentum, nesterov, adam or adamw");
  // The defaults of the hyperparameters, with PyTorch's optimizers' rules:
  // each is finite and >= 0, and the Adam betas are < 1.
  for (auto [flag, value, below] :
       {std::tuple{"--lr", opts.lr.getValue(), HUGE_VAL},
        std::tuple{"--momentum", opts.momentum.getValue(), HUGE_VAL},
        std::tuple{"--beta1", opts.beta1.getValue(), 1.0},
        std::tuple{"--beta2", opts.beta2.getValue(), 1.0},
        std::tuple{"--eps", opts.eps.getValue(), HUGE_VAL},
        std::tuple{"--weight-decay", opts.weightDecay.getValue(), HUGE_VAL},
        std::tuple{"--clip-norm", opts.clipNorm.getValue(), HUGE_VAL}})
    if (!(value >= 0 && value < below)) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", value);
      return fail(Twine(flag) + "=" + text + " is out of range; " +
                  (below == 1.0 ? "expected 0 <= value < 1"
                                : "expected a finite value >= 0"));
    }
  if (!llvm::is_contained({"cross-entropy", "mse", "none"}, StringRef(opts.loss)))
    return fail("unknown --loss value '" + opts.loss +
                "'; expected cross-entropy, mse or none");
  if (opts.reduce != "none" && opts.reduce != "mean" && opts.reduce != "adasum")
    return fail("unknown --reduce value '" + opts.reduce +
                "'; expected none, mean or adasum");
  if (opts.ranks < 0)
    return fail("--ranks must be >= 0 (0: any number of ranks)");
  if (opts.shardOptimizerState && (opts.reduce != "mean" || opts.ranks < 1))
    return fail("--shard-optimizer-state needs --reduce=mean and --ranks=R "
                "(the shards' size depends on R; Adasum steps each rank's "
                "whole optimizer state)");
  if (opts.reduceEveryMicroStep &&
      (opts.reduce != "mean" || opts.shardOptimizerState))
    return fail("--reduce-every-micro-step needs --reduce=mean without "
                "--shard-optimizer-state");
  std::optional<Phase> stopAfter;
  if (!opts.compileTo.empty()) {
    stopAfter = parsePhase(opts.compileTo);
    if (!stopAfter)
      return fail("unknown phase '" + opts.compileTo + "'; expected one of " +
                  phaseNames());
  }
  if (!opts.emit.empty() && opts.emit != "dot")
    return fail("unknown --emit value '" + opts.emit + "'; expected dot");
  bool toArtifact = !stopAfter && opts.emit.empty();
  if (toArtifact && opts.output == "-")
    return fail("-o <file> is required to write an artifact");
  // Checked before compiling, so that a typo in -o is not reported by the
  // linker after all the work.
  if (opts.output != "-") {
    StringRef dir = llvm::sys::path::parent_path(opts.output);
    if (dir.empty())
      dir = ".";
    if (!llvm::sys::fs::is_directory(dir))
      return fail("cannot write " + opts.output + ": directory " + dir.str() +
                  " does not exist");
    if (::access(dir.str().c_str(), W_OK) != 0)
      return fail("cannot write " + opts.output + ": directory " + dir.str() +
                  " is not writable");
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics name the file, line and op; dumping the whole module after
  // each of them buries the message.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module = loadModel(context, opts.input);
  if (!module)
    return 1;

  TrainingOptions training;
  training.model = opts.model;
  training.loss = opts.loss;
  training.microBatch = opts.microBatch;
  training.optimizer = opts.optimizer;
  training.lr = opts.lr;
  training.momentum = opts.momentum;
  training.beta1 = opts.beta1;
  training.beta2 = opts.beta2;
  training.eps = opts.eps;
  training.weightDecay = opts.weightDecay;
  training.clipNorm = opts.clipNorm;
  training.accumulate = opts.accumulate;
  training.reduce = opts.reduce;
  training.ranks = opts.ranks;
  training.shardOptimizerState = opts.shardOptimizerState;
  training.reduceEveryMicroStep = opts.reduceEveryMicroStep;

  auto start = std::chrono::steady_clock::now();
  std::optional<Phase> runTo = stopAfter;
  if (!opts.emit.empty())
    runTo = Phase::Split;
  if (failed(lowerModel(*module, training, runTo, opts.verbose)))
    return 1;

  if (!toArtifact) {
    std::string error;
    auto out = openOutputFile(opts.output, &error);
    if (!out)
      return fail(error);
    if (!opts.emit.empty()) {
      if (failed(writeDot(*module, out->os())))
        return 1;
    } else {
      module->print(out->os());
    }
    out->keep();
    return 0;
  }
  if (failed(writeArtifact(*module, opts.output, opts.verbose)))
    return 1;
  if (opts.verbose)
    llvm::errs() << "cleave-compile: wrote " << opts.output << " in "
                 << std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count()
                 << " s\n";
  return 0;
}

//===- Driver.cpp - Compiling a model file to an artifact -----------------===//
//
// cleave-compile: read a model, run the pipeline (or stop at a phase and
// print it), write the artifact.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"
#include "compiler/Driver/Planner.h"

#include "compiler/Artifact/GpuTarget.h"
#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/Frontend/Onnx/OnnxImporter.h"
#include "compiler/InitAll.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "runtime/src/schema/Schema.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <ctime>
#include <unistd.h>

using namespace mlir;
using namespace mlir::cleave;
namespace cl = llvm::cl;

OwningOpRef<ModuleOp> mlir::cleave::loadModel(MLIRContext &context,
                                              StringRef path) {
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

namespace {
/// CPU seconds this process has used.
double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/// Reports the CPU time of each top-level pass on stderr. MLIR's timing
/// report is wall time, which on a loaded machine measures the neighbours
/// as much as the compiler; CPU time is what bench/compile_time.py tables.
struct CpuTimePerPass : PassInstrumentation {
  void runBeforePass(Pass *pass, Operation *op) override {
    if (depth++ == 0)
      start = cpuSeconds();
  }
  void runAfterPass(Pass *pass, Operation *op) override { report(pass); }
  void runAfterPassFailed(Pass *pass, Operation *op) override { report(pass); }
  void report(Pass *pass) {
    if (--depth == 0)
      llvm::errs() << "cleave-compile: cpu " << pass->getName() << " "
                   << cpuSeconds() - start << " s\n";
  }
  int depth = 0;
  double start = 0;
};

/// Keeps the manifest cleave-write-manifest puts on the module, which the
/// artifact's ABI pass then moves into the object code.
struct KeepManifest : PassInstrumentation {
  explicit KeepManifest(std::string &out) : out(out) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    if (auto text =
            op->getAttrOfType<StringAttr>(rt::RtDialect::kManifestJsonAttr))
      out = text.str();
  }
  std::string &out;
};
} // namespace

LogicalResult mlir::cleave::lowerModel(ModuleOp module,
                                       const TrainingPipelineOptions &options,
                                       std::optional<Phase> stopAfter,
                                       bool verbose, std::string *manifest) {
  PassManager pm(module.getContext());
  if (verbose) {
    pm.enableTiming();
    pm.addInstrumentation(std::make_unique<CpuTimePerPass>());
  }
  if (manifest)
    pm.addInstrumentation(std::make_unique<KeepManifest>(*manifest));
  buildTargetPipeline(pm, options, stopAfter.value_or(Phase::LLVM));
  return pm.run(module);
}

LogicalResult mlir::cleave::writeDot(ModuleOp module, raw_ostream &os) {
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
  cl::opt<std::string> compileTo{
      "compile-to",
      cl::desc("Stop after a phase and print its IR: loss, grad, step, split, "
               "linalg, bufferize, gpu and nvvm (target=cuda), llvm"),
      cl::value_desc("phase"), cl::cat(category)};
  cl::opt<std::string> emit{
      "emit",
      cl::desc("dot: write Graphviz of the micro-step and apply graphs"),
      cl::cat(category)};
  cl::opt<bool> verbose{
      "v", cl::desc("Report phase timings and the memory report on stderr"),
      cl::cat(category)};
  cl::opt<std::string> report{
      "report",
      cl::desc("memory: print what a session of the artifact holds in "
               "memory, by kind (stdout)"),
      cl::value_desc("what"), cl::cat(category)};
  cl::opt<int64_t> globalBatch{
      "global-batch",
      cl::desc("Samples per optimizer step, of all data-parallel ranks "
               "(--ranks=R with --reduce; each rank's window is W = G / R): "
               "with --micro-batch=B, N = ceil(W / B) and the last "
               "micro-batch of each window holds the rest; with "
               "--memory-budget, cleave-compile chooses B, N and the "
               "recomputation (--remat) that fit the budget with the best "
               "modelled throughput, and prints the candidates it compared"),
      cl::value_desc("G"), cl::init(0), cl::cat(category)};
  cl::opt<std::string> memoryBudget{
      "memory-budget",
      cl::desc("With --global-batch: the memory a session (one rank's) may "
               "use (the memory report plus the runtime's fixed overhead; "
               "device memory with --target=cuda): bytes, or with KiB, MiB, "
               "GiB"),
      cl::value_desc("size"), cl::cat(category)};
};

/// Prints the manifest's memory report (docs/design/memory.md).
void printMemoryReport(const llvm::json::Object &memory, raw_ostream &os) {
  namespace key = ::cleave::abi::keys::Memory;
  namespace entryKey = ::cleave::abi::keys::MemoryEntry;
  namespace recomputedKey = ::cleave::abi::keys::Recomputed;
  auto get = [&](StringRef key) { return memory.getInteger(key).value_or(0); };
  os << "memory of one session ("
     << memory.getString(key::space).value_or("host") << ", per rank):\n";
  auto row = [&](StringRef label, int64_t bytes, StringRef note = "") {
    os << llvm::formatv("  {0,-18} {1,12}", label, humanBytes(bytes));
    if (!note.empty())
      os << "  " << note;
    os << "\n";
  };
  row("parameters", get(key::parameters));
  row("optimizer state", get(key::optimizerState));
  row("accumulators", get(key::accumulators));
  row("buffers", get(key::buffers),
      "non-trainable state (batch-norm statistics)");
  row("counters", get(key::counters));
  const bool host = memory.getString(key::space).value_or("host") == "host";
  row("inputs", get(key::inputs),
      host ? "one micro-batch" : "two micro-batches (double-buffered)");
  row("outputs", get(key::outputs));
  row("scratch", get(key::scratch),
      "the largest entry's arena, shared by the entries");
  if (const llvm::json::Object *entries = memory.getObject(key::entries)) {
    SmallVector<std::string> names;
    for (const auto &e : *entries)
      names.push_back(e.first.str());
    llvm::sort(names);
    for (const std::string &name : names) {
      const llvm::json::Object *e = entries->getObject(name);
      std::string note;
      if (auto held = e->getInteger(entryKey::heldActivations))
        note = "of which " + humanBytes(*held) +
               " activations held from forward to backward";
      if (const llvm::json::Object *r = e->getObject(entryKey::recomputed)) {
        double flops = double(r->getInteger(recomputedKey::flops).value_or(0));
        std::string work =
            flops < 1e6   ? llvm::formatv("{0:F1} kFLOP", flops / 1e3).str()
            : flops < 1e9 ? llvm::formatv("{0:F1} MFLOP", flops / 1e6).str()
                          : llvm::formatv("{0:F2} GFLOP", flops / 1e9).str();
        note += llvm::formatv(
                    "; {0} values recomputed in the backward pass "
                    "instead (about {1} fewer held, {2} more per "
                    "micro-step)",
                    r->getInteger(recomputedKey::values).value_or(0),
                    humanBytes(r->getInteger(recomputedKey::bytes).value_or(0)),
                    work)
                    .str();
      }
      row("  " + name, e->getInteger(entryKey::scratch).value_or(0), note);
    }
  }
  row("kernel caches", get(key::kernelCaches),
      "copies of convolution weights and gradients in oneDNN's layouts, "
      "and bf16 copies of GEMM weights (CPU)");
  row("kernel arena", get(key::kernelArena),
      "the largest kernel's staging copies in blocked layouts and pooling "
      "workspace, shared by the kernels (CPU; estimated)");
  row("total", get(key::total));
  if (host)
    os << "  not counted: the runtime's fixed overhead, about "
       << humanBytes(get(key::fixedOverhead))
       << " with one thread (code pages, oneDNN's JIT kernels and "
          "scratchpads, OpenMP; measured, docs/design/memory.md)\n";
  else
    os << "  not counted: the runtime's hyperparameters (a few KiB), the "
          "kernel modules (code and constants), the libraries' workspaces "
          "(cuBLASLt's up to 32 MiB) and the CUDA context (not measured on "
          "a GPU yet)\n";
}

int fail(const Twine &message) {
  llvm::errs() << "cleave-compile: error: " << message << "\n";
  return 1;
}
} // namespace

int mlir::cleave::compileMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  CompileOptions opts;
  // The training options are the pipeline's own: one definition, one set
  // of checks, for this tool and for `cleave-opt --cleave-cpu-pipeline`.
  TrainingPipelineOptions training;
  training.addToCommandLine(opts.category);
  llvm::scope_exit unbind([&] { training.removeFromCommandLine(); });
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

  const bool planning = opts.memoryBudget.getNumOccurrences() > 0;
  if (opts.globalBatch.getNumOccurrences() && opts.globalBatch <= 0)
    return fail("--global-batch=G needs G >= 1, got " +
                std::to_string(opts.globalBatch));
  int64_t budget = 0;
  if (opts.globalBatch.getNumOccurrences() && !planning) {
    // The user's micro-batch: N = ceil(W / B), the last micro-batch of each
    // window short when B does not divide the window W = G / R.
    if (training.microBatch <= 0)
      return fail("--global-batch=G needs --micro-batch=B (N = ceil(G / B) "
                  "micro-steps per window) or --memory-budget=SIZE (then "
                  "cleave-compile chooses B, N and the recomputation)");
    for (const llvm::cl::Option *chosen :
         std::initializer_list<const llvm::cl::Option *>{
             &training.accumulate, &training.windowSamples})
      if (chosen->getNumOccurrences())
        return fail("--" + chosen->ArgStr +
                    " is what --global-batch and --micro-batch give; drop "
                    "it");
    std::string error;
    FailureOr<int64_t> window =
        windowOfOneRank(training, opts.globalBatch, error);
    if (failed(window))
      return fail(error);
    training.accumulate =
        (*window + training.microBatch - 1) / training.microBatch;
    training.windowSamples = *window;
  }
  if (planning) {
    if (opts.globalBatch <= 0)
      return fail("--memory-budget=SIZE plans for a global batch: give "
                  "--global-batch=G too (G >= 1); cleave-compile then "
                  "chooses the micro-batch, N and the recomputation");
    std::string message;
    FailureOr<RematBudget> size = parseRematBudget(opts.memoryBudget, message);
    if (failed(size) || !size->bytes || *size->bytes <= 0)
      return fail("invalid --memory-budget '" + opts.memoryBudget +
                  "' (expected a size: bytes, or with KiB, MiB, GiB, such as "
                  "1GiB)");
    budget = *size->bytes;
    for (const llvm::cl::Option *chosen :
         std::initializer_list<const llvm::cl::Option *>{
             &training.microBatch, &training.accumulate, &training.remat,
             &training.rematBudget, &training.windowSamples})
      if (chosen->getNumOccurrences())
        return fail("--" + chosen->ArgStr +
                    " is what --global-batch and --memory-budget choose; "
                    "drop it");
    if (training.inference)
      return fail("--global-batch plans a training step; an --inference "
                  "artifact has none");
  } else if (training.microBatch <= 0) {
    return fail("--micro-batch=B is required (B >= 1)");
  }
  std::string invalid;
  if (failed(training.verify([&](const Twine &m) { invalid = m.str(); })))
    return fail(invalid);
  std::optional<Phase> stopAfter;
  if (!opts.compileTo.empty()) {
    stopAfter = parsePhase(opts.compileTo);
    if (!stopAfter)
      return fail("unknown phase '" + opts.compileTo + "'; expected one of " +
                  phaseNames());
    if (!phaseExists(*stopAfter, training.target))
      return fail("phase '" + opts.compileTo + "' exists only with --target=cuda");
  }
  // The toolkit is needed from the kernels' machine code on; the IR of the
  // earlier phases can be inspected without it.
  if (training.target == rt::Device::cuda &&
      (!stopAfter || *stopAfter > Phase::Nvvm) && opts.emit.empty() &&
      failed(checkCudaToolkit(invalid)))
    return fail(invalid);
  if (!opts.emit.empty() && opts.emit != "dot")
    return fail("unknown --emit value '" + opts.emit + "'; expected dot");
  if (!opts.report.empty() && opts.report != "memory")
    return fail("unknown --report value '" + opts.report +
                "'; expected memory");
  bool toArtifact = !stopAfter && opts.emit.empty();
  if (!opts.report.empty() && !toArtifact)
    return fail("--report=memory describes an artifact; it does not go with "
                "--compile-to or --emit");
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

  auto importStart = std::chrono::steady_clock::now();
  double importCpu = cpuSeconds();
  OwningOpRef<ModuleOp> module = loadModel(context, opts.input);
  if (!module)
    return 1;
  if (opts.verbose)
    llvm::errs() << "cleave-compile: import in "
                 << std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - importStart)
                        .count()
                 << " s (cpu " << cpuSeconds() - importCpu << " s)\n";

  // A model without trainable parameters has nothing to train: with
  // loss=none (its prediction is all there is) it is compiled forward-only,
  // with a loss it is refused with the way out.
  auto model = module->lookupSymbol<func::FuncOp>(training.model);
  if (!training.inference && model &&
      llvm::none_of(llvm::seq(model.getNumArguments()), [&](unsigned i) {
        return model.getArgAttr(i, train::TrainDialect::kParamAttr);
      })) {
    if (training.loss != nn::LossKind::none) {
      model.emitError("@")
          << training.model
          << " has no trainable parameter, so there is nothing to train; "
             "compile it forward-only (--inference, or --loss=none) to "
             "evaluate it";
      return 1;
    }
    training.inference = true;
    if (opts.verbose)
      llvm::errs() << "cleave-compile: @" << training.model
                   << " has no trainable parameter and loss=none: a "
                      "forward-only artifact (--inference)\n";
  }

  if (planning) {
    std::string error;
    if (failed(planForMemoryBudget(*module, training, opts.globalBatch, budget,
                                   llvm::outs(), error)))
      return fail(error);
  }

  auto start = std::chrono::steady_clock::now();
  std::optional<Phase> runTo = stopAfter;
  if (!opts.emit.empty())
    runTo = Phase::Split;
  std::string manifestText;
  if (failed(lowerModel(*module, training, runTo, opts.verbose, &manifestText)))
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
  if (opts.report == "memory" || opts.verbose) {
    llvm::Expected<llvm::json::Value> manifest =
        llvm::json::parse(manifestText);
    const llvm::json::Object *memory =
        manifest && manifest->getAsObject()
            ? manifest->getAsObject()->getObject(
                  ::cleave::abi::keys::Manifest::memory)
            : nullptr;
    if (!manifest)
      llvm::consumeError(manifest.takeError());
    if (memory)
      printMemoryReport(*memory, opts.verbose && opts.report != "memory"
                                     ? llvm::errs()
                                     : llvm::outs());
  }
  std::string error;
  double codegenSeconds = 0;
  double codegenCpu = cpuSeconds();
  if (failed(writeArtifact(*module, opts.output, error, &codegenSeconds)))
    return fail(error);
  if (opts.verbose)
    llvm::errs() << "cleave-compile: machine code in " << codegenSeconds
                 << " s (cpu " << cpuSeconds() - codegenCpu
                 << " s, the linker not counted)\n";
  if (opts.verbose)
    llvm::errs() << "cleave-compile: wrote " << opts.output << " in "
                 << std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count()
                 << " s\n";
  return 0;
}

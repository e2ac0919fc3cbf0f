//===- ObjectWriter.cpp - LLVM dialect to a shared object -----------------===//
//
// Translates the final module to LLVM IR, optimises it for the target CPU
// (LLVM's O3 pipeline: this is where elementwise loops get vectorised; a
// cuda artifact's host code, which only enqueues work, gets a cheaper one),
// emits position-independent object code and links a shared object with the
// host linker, then seals it with a checksum. The output appears atomically:
// written beside, then renamed.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/Artifact/Target.h"
#include "runtime/include/cleave/kernel_abi.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>

using namespace mlir;

namespace {

/// The machine for the CPU and features the manifest records.
std::unique_ptr<llvm::TargetMachine>
targetMachine(ModuleOp module, llvm::CodeGenOptLevel level,
              std::string &error) {
  FailureOr<cleave::CpuTarget> target = cleave::targetOf(module, error);
  if (failed(target))
    return nullptr;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(llvmTarget->createTargetMachine(
      triple, target->cpu, target->featureString(), options, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, level));
}

/// The functions of MLIR's CUDA runtime wrappers a cuda artifact may call:
/// those the runtime defines (docs/design/gpu.md). Kernels launch on the
/// runtime's stream, so the stream, memory and JIT wrappers are absent.
bool isContractGpuRuntimeCall(StringRef name) {
  return llvm::is_contained({"mgpuModuleLoad", "mgpuModuleUnload",
                             "mgpuModuleGetFunction", "mgpuLaunchKernel"},
                            name);
}

/// Whether the loaded artifact can resolve `name`: the runtime's ABI
/// (`cleave_*`, and in a cuda artifact the contract's `mgpu*` functions) or
/// the C and math libraries. Anything else (MLIR's runner library, say)
/// would make the artifact fail only when it is loaded.
bool resolvableAtLoad(StringRef name, bool cuda) {
  if (name.starts_with(CLEAVE_SYMBOL_PREFIX))
    return true;
  if (name.starts_with("mgpu"))
    return cuda && isContractGpuRuntimeCall(name);
  static void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  static void *libm = dlopen("libm.so.6", RTLD_LAZY);
  std::string symbol = name.str();
  return (libc && dlsym(libc, symbol.c_str())) ||
         (libm && dlsym(libm, symbol.c_str()));
}

/// LLVM's O2 without the vectorisers, for the host code of a cuda
/// artifact: per entry one long straight line of kernel launches and library
/// calls, nothing to vectorise. The SLP vectoriser's scheduling is quadratic
/// in the length of a basic block: on such a line it took two of the
/// three minutes efficientnet_b0 spent in LLVM. (Its machine code is
/// selected and allocated by the fast, -O0, code generator: the greedy
/// register allocator and the DAG selector took another 10 s on it, to save
/// nanoseconds on launches that take microseconds each and are replayed
/// from a CUDA graph after the first steps.)
llvm::Error optimizeLaunchSequence(llvm::Module &module,
                                   llvm::TargetMachine *machine) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  llvm::PassBuilder builder(machine, tuning);
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, modules);
  return llvm::Error::success();
}

} // namespace

LogicalResult cleave::emitObject(ModuleOp module, StringRef objectPath,
                                 std::string &error) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  // A cuda artifact's gpu.binary and gpu.launch_func: embedded fatbins, a
  // global constructor that registers them, mgpuLaunchKernel calls.
  bool cuda = !module.getOps<gpu::BinaryOp>().empty();
  if (cuda) {
    DialectRegistry registry;
    registerGPUDialectTranslation(registry);
    gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
    module.getContext()->appendDialectRegistry(registry);
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "cleave_artifact");
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine = targetMachine(
      module,
      cuda ? llvm::CodeGenOptLevel::None : llvm::CodeGenOptLevel::Aggressive,
      error);
  if (!machine)
    return failure();
  for (llvm::Function &f : *llvmModule)
    if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty() &&
        !resolvableAtLoad(f.getName(), cuda)) {
      error = "the generated code calls '" + f.getName().str() + "', which " +
              (f.getName().starts_with("mgpu")
                   ? "is outside the CUDA artifact contract (only "
                     "mgpuModuleLoad, mgpuModuleUnload, "
                     "mgpuModuleGetFunction and mgpuLaunchKernel; "
                     "docs/design/gpu.md)"
                   : "neither the Cleave runtime nor the C library provides "
                     "(a lowering left a library call behind)");
      return failure();
    }
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  if (llvm::Error e =
          cuda ? optimizeLaunchSequence(*llvmModule, machine.get())
               : makeOptimizingTransformer(3, 0, machine.get())(
                     llvmModule.get())) {
    error = llvm::toString(std::move(e));
    return failure();
  }
  std::error_code ec;
  llvm::ToolOutputFile out(objectPath, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = objectPath.str() + ": " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager pm;
  if (machine->addPassesToEmitFile(pm, out.os(), nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    error = "the host target cannot emit object files";
    return failure();
  }
  pm.run(*llvmModule);
  out.keep();
  return success();
}

namespace {
/// Appends the seal of docs/design/runtime-abi.md to the file at `path`: the
/// magic "CLVSEAL2", the number of bytes before the seal and their CRC-32,
/// both little-endian u64. The runtime refuses a sealed artifact whose bytes
/// no longer match it (a damaged file) before dlopen runs any of it.
LogicalResult seal(StringRef path, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = path.str() + ": " + buffer.getError().message();
    return failure();
  }
  StringRef bytes = (*buffer)->getBuffer();
  char trailer[24] = {'C', 'L', 'V', 'S', 'E', 'A', 'L', '2'};
  llvm::support::endian::write64le(trailer + 8, bytes.size());
  llvm::support::endian::write64le(
      trailer + 16, llvm::crc32(llvm::arrayRefFromStringRef(bytes)));
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Append);
  if (!ec) {
    os.write(trailer, sizeof(trailer));
    os.close();
    ec = os.error();
  }
  if (ec) {
    error = path.str() + ": " + ec.message();
    return failure();
  }
  return success();
}
} // namespace

LogicalResult cleave::linkSharedObject(StringRef objectPath,
                                       StringRef outputPath,
                                       std::string &error) {
  // CLEAVE_LINKER overrides the driver configured at build time (a machine
  // whose compiler lives elsewhere than where Cleave was built).
  std::string linker = CLEAVE_ARTIFACT_LINKER;
  if (const char *env = std::getenv("CLEAVE_LINKER"); env && *env)
    linker = env;
  auto cc = llvm::sys::findProgramByName(linker);
  if (!cc) {
    error = "no linker '" + linker +
            "' to link the artifact (set CLEAVE_LINKER to a C compiler "
            "driver)";
    return failure();
  }
  std::string tmp = (outputPath + ".tmp").str();
  SmallVector<StringRef> args = {*cc, "-shared", "-o", tmp, objectPath, "-lm"};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0) {
    error = "linking " + outputPath.str() + " failed" +
            (message.empty() ? "" : ": " + message);
    llvm::sys::fs::remove(tmp);
    return failure();
  }
  if (failed(seal(tmp, error))) {
    llvm::sys::fs::remove(tmp);
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, outputPath)) {
    error = outputPath.str() + ": " + ec.message();
    return failure();
  }
  return success();
}

LogicalResult cleave::writeArtifact(ModuleOp module, StringRef outputPath,
                                    std::string &error,
                                    double *codegenSeconds) {
  SmallString<128> object;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("cleave", "o", fd, object)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  ::close(fd);
  auto start = std::chrono::steady_clock::now();
  LogicalResult ok = emitObject(module, object, error);
  if (codegenSeconds)
    *codegenSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  if (succeeded(ok))
    ok = linkSharedObject(object, outputPath, error);
  llvm::sys::fs::remove(object);
  return ok;
}

//===- GpuTarget.cpp - The GPUs a cuda artifact's kernels are built for ---===//

#include "compiler/Artifact/GpuTarget.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"
#include <cstdlib>

using namespace mlir;

namespace {
/// LLVM's NVPTX subtarget table: the architectures it can generate PTX for.
const llvm::MCSubtargetInfo *nvptxSubtarget() {
  static const llvm::MCSubtargetInfo *info = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    llvm::Triple triple("nvptx64-nvidia-cuda");
    std::string error;
    const llvm::Target *target =
        llvm::TargetRegistry::lookupTarget(triple, error);
    return target ? target->createMCSubtargetInfo(triple, "", "") : nullptr;
  }();
  return info;
}
} // namespace

FailureOr<SmallVector<std::string>>
cleave::parseGpuArches(StringRef list, std::string &error) {
  SmallVector<StringRef> parts;
  list.split(parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  SmallVector<std::string> arches;
  llvm::StringSet<> seen;
  const llvm::MCSubtargetInfo *nvptx = nvptxSubtarget();
  for (StringRef part : parts) {
    StringRef arch = part.trim();
    unsigned sm;
    StringRef digits = arch;
    bool wellFormed = digits.consume_front("sm_") &&
                      !digits.rtrim("af").getAsInteger(10, sm);
    if (!wellFormed || !nvptx || !nvptx->isCPUStringValid(arch)) {
      error = ("unknown GPU architecture '" + arch +
               "' in gpu-arch; expected SM architectures that LLVM's NVPTX "
               "back end knows, such as sm_80,sm_90")
                  .str();
      return failure();
    }
    if (arch.ends_with("f")) {
      error = ("GPU architecture '" + arch +
               "' in gpu-arch is family-specific, which the runtime cannot "
               "match to a GPU yet; use " +
               arch.drop_back() + " (any newer GPU) or " + arch.drop_back() +
               "a (that GPU only)")
                  .str();
      return failure();
    }
    if (!seen.insert(arch).second) {
      error = ("gpu-arch lists '" + arch + "' twice").str();
      return failure();
    }
    arches.push_back(arch.str());
  }
  if (arches.empty()) {
    error = "gpu-arch is empty; expected SM architectures such as sm_80,sm_90";
    return failure();
  }
  return arches;
}

unsigned cleave::smNumber(StringRef arch) {
  unsigned sm = 0;
  arch.consume_front("sm_");
  (void)arch.rtrim("af").getAsInteger(10, sm);
  return sm;
}

std::optional<std::string> cleave::ptxGpuArch(ArrayRef<std::string> arches) {
  std::optional<std::string> lowest;
  for (const std::string &arch : arches)
    if (!StringRef(arch).ends_with("a") &&
        (!lowest || smNumber(arch) < smNumber(*lowest)))
      lowest = arch;
  return lowest;
}

std::optional<std::string> cleave::findCudaToolkit() {
  auto hasPtxas = [](StringRef dir) {
    SmallString<256> path(dir);
    llvm::sys::path::append(path, "bin", "ptxas");
    return llvm::sys::fs::can_execute(path);
  };
  // An environment variable that is set is the user's choice: no fallback
  // behind it, or a wrong CUDA_HOME would go unnoticed.
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir)
      return hasPtxas(dir) ? std::optional<std::string>(dir) : std::nullopt;
  if (std::optional<std::string> ptxas =
          llvm::sys::Process::FindInEnvPath("PATH", "ptxas")) {
    SmallString<256> real;
    if (!llvm::sys::fs::real_path(*ptxas, real))
      return llvm::sys::path::parent_path(llvm::sys::path::parent_path(real))
          .str();
  }
  if (hasPtxas("/usr/local/cuda"))
    return std::string("/usr/local/cuda");
  return std::nullopt;
}

std::optional<std::string> cleave::findCudaTool(StringRef tool) {
  std::optional<std::string> toolkit = findCudaToolkit();
  if (!toolkit)
    return std::nullopt;
  SmallString<256> path(*toolkit);
  llvm::sys::path::append(path, "bin", tool);
  if (!llvm::sys::fs::can_execute(path))
    return std::nullopt;
  return path.str().str();
}

LogicalResult cleave::checkCudaToolkit(std::string &error) {
  std::optional<std::string> toolkit = findCudaToolkit();
  if (!toolkit) {
    std::string set;
    for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
      if (const char *dir = std::getenv(var); dir && *dir && set.empty())
        set = std::string(" (") + var + "=" + dir + " has no bin/ptxas)";
    error = "target=cuda needs the CUDA toolkit's ptxas: set CUDA_HOME to "
            "the toolkit's directory (the one with bin/ptxas, e.g. "
            "/usr/local/cuda) or put ptxas on PATH" +
            set;
    return failure();
  }
  if (!findCudaTool("fatbinary")) {
    error = "target=cuda needs the CUDA toolkit's fatbinary, which " +
            *toolkit + "/bin lacks";
    return failure();
  }
  return success();
}

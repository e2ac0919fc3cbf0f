//===- Fatbin.cpp - NVVM gpu.modules to one CUDA fatbin each --------------===//
//
// Upstream `gpu-module-to-binary` serializes a module once per target into
// separate objects, of which `#gpu.select_object` embeds one. A cuda
// artifact must run on every architecture it lists, so its blob is a
// fatbin: one cubin per architecture plus the PTX of the lowest one without
// the `a` suffix (which newer GPUs can JIT; none if every one is specific).
// The cubins come from MLIR's own NVVM serializer (the same code path and
// ptxas call as gpu-module-to-binary); only the combination is done here,
// with the CUDA toolkit's `fatbinary`, as MLIR's serializer itself does for
// one target.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/GpuTarget.h"
#include "compiler/Artifact/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Threading.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEGPUMODULETOFATBIN
#include "compiler/Artifact/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Temporary files removed when the pass is done with them.
class TempFiles {
public:
  /// A new temporary file holding `bytes`, or nullopt (and `error`).
  std::optional<std::string> write(StringRef prefix, StringRef suffix,
                                   StringRef bytes, std::string &error) {
    SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(prefix, suffix, path)) {
      error = "cannot create a temporary file: " + ec.message();
      return std::nullopt;
    }
    removers.emplace_back(std::make_unique<llvm::FileRemover>(path));
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec) {
      os << bytes;
      os.close();
      ec = os.error();
    }
    if (ec) {
      error = path.str().str() + ": " + ec.message();
      return std::nullopt;
    }
    return path.str().str();
  }

private:
  std::vector<std::unique_ptr<llvm::FileRemover>> removers;
};

struct GpuModuleToFatbinPass
    : cleave::impl::CleaveGpuModuleToFatbinBase<GpuModuleToFatbinPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(
        module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.empty())
      return;
    std::optional<std::string> toolkit = findCudaToolkit();
    std::optional<std::string> fatbinary = findCudaTool("fatbinary");
    if (!toolkit || !fatbinary) {
      std::string error;
      (void)checkCudaToolkit(error);
      module.emitError(error);
      return signalPassFailure();
    }
    // Modules compile independently (each in an LLVM context of its own,
    // ptxas and fatbinary in processes of their own), one per thread of the
    // context's pool; errors are reported in module order. Only the IR
    // changes afterwards, here.
    MLIRContext *ctx = &getContext();
    SmallVector<std::string> fatbins(gpuModules.size());
    ParallelDiagnosticHandler diagnostics(ctx);
    LogicalResult compiled = failableParallelForEach(
        ctx, llvm::seq<size_t>(0, gpuModules.size()), [&](size_t i) {
          diagnostics.setOrderIDForThread(i);
          LogicalResult result =
              compile(gpuModules[i], *toolkit, *fatbinary, fatbins[i]);
          diagnostics.eraseOrderIDForThread();
          return result;
        });
    if (failed(compiled))
      return signalPassFailure();
    for (auto [gpuModule, fatbin] : llvm::zip_equal(gpuModules, fatbins)) {
      OpBuilder b(gpuModule);
      auto object = gpu::ObjectAttr::get(
          ctx, lowestTarget(gpuModule), gpu::CompilationTarget::Fatbin,
          StringAttr::get(ctx, fatbin), /*properties=*/nullptr,
          /*kernels=*/nullptr);
      gpu::BinaryOp::create(
          b, gpuModule.getLoc(), gpuModule.getName(),
          gpu::SelectObjectAttr::get(ctx, b.getI64IntegerAttr(0)),
          ArrayRef<Attribute>{object});
      gpuModule.erase();
    }
  }

  /// The module's NVVM targets, or an empty list if it has another kind.
  static SmallVector<NVVM::NVVMTargetAttr> nvvmTargets(gpu::GPUModuleOp m) {
    ArrayAttr targets = m.getTargetsAttr();
    SmallVector<NVVM::NVVMTargetAttr> nvvm;
    if (!targets)
      return nvvm;
    for (Attribute t : targets)
      if (auto target = dyn_cast<NVVM::NVVMTargetAttr>(t))
        nvvm.push_back(target);
    if (nvvm.size() != targets.size())
      nvvm.clear();
    return nvvm;
  }

  /// The lowest architecture, which names the fatbin's object.
  static NVVM::NVVMTargetAttr lowestTarget(gpu::GPUModuleOp gpuModule) {
    return *llvm::min_element(
        nvvmTargets(gpuModule),
        [](NVVM::NVVMTargetAttr a, NVVM::NVVMTargetAttr b) {
          return smNumber(a.getChip()) < smNumber(b.getChip());
        });
  }

  /// The target whose PTX the fatbin carries (ptxGpuArch's rule: the
  /// lowest without the `a` suffix), or none.
  static NVVM::NVVMTargetAttr ptxTarget(gpu::GPUModuleOp gpuModule) {
    SmallVector<NVVM::NVVMTargetAttr> targets = nvvmTargets(gpuModule);
    SmallVector<std::string> chips;
    for (NVVM::NVVMTargetAttr t : targets)
      chips.push_back(t.getChip().str());
    std::optional<std::string> chip = ptxGpuArch(chips);
    for (NVVM::NVVMTargetAttr t : targets)
      if (chip && t.getChip() == *chip)
        return t;
    return {};
  }

  /// `gpuModule`'s fatbin in `fatbin`. Reads the IR only.
  LogicalResult compile(gpu::GPUModuleOp gpuModule, StringRef toolkit,
                        StringRef fatbinary, std::string &fatbin) {
    SmallVector<NVVM::NVVMTargetAttr> targets = nvvmTargets(gpuModule);
    if (targets.empty())
      return gpuModule.emitError(
          "expected #nvvm.target attributes only (run nvvm-attach-target)");
    NVVM::NVVMTargetAttr withPtx = ptxTarget(gpuModule);

    TempFiles temps;
    std::string error;
    std::string base = ("cleave-" + gpuModule.getName()).str();
    std::optional<std::string> output = temps.write(base, "fatbin", "", error);
    if (!output)
      return gpuModule.emitError(error);
    SmallVector<std::string> args = {"fatbinary", "-64", "--create", *output};
    for (NVVM::NVVMTargetAttr target : targets) {
      std::string ptx;
      // TargetOptions keeps a function_ref: the callable must outlive it.
      auto keepPtx = [&](StringRef isa) { ptx = isa.str(); };
      gpu::TargetOptions options(
          toolkit, /*librariesToLink=*/{}, /*cmdOptions=*/{},
          /*elfSection=*/{}, gpu::CompilationTarget::Binary,
          /*getSymbolTableCallback=*/{}, /*initialLlvmIRCallback=*/{},
          /*linkedLlvmIRCallback=*/{}, /*optimizedLlvmIRCallback=*/{},
          /*isaCallback=*/keepPtx);
      std::optional<SmallVector<char, 0>> cubin =
          cast<gpu::TargetAttrInterface>(target).serializeToObject(gpuModule,
                                                                   options);
      if (!cubin)
        return gpuModule.emitError("cannot compile the kernels for ")
               << target.getChip();
      StringRef chip = target.getChip();
      std::string sm = chip.drop_front(chip.starts_with("sm_") ? 3 : 0).str();
      std::optional<std::string> cubinPath = temps.write(
          base, "cubin", StringRef(cubin->data(), cubin->size()), error);
      if (!cubinPath)
        return gpuModule.emitError(error);
      args.push_back(
          llvm::formatv("--image3=kind=elf,sm={0},file={1}", sm, *cubinPath));
      if (target == withPtx) {
        std::optional<std::string> ptxPath =
            temps.write(base, "ptx", ptx, error);
        if (!ptxPath)
          return gpuModule.emitError(error);
        args.push_back(
            llvm::formatv("--image3=kind=ptx,sm={0},file={1}", sm, *ptxPath));
      }
    }

    std::optional<std::string> log = temps.write(base, "log", "", error);
    if (!log)
      return gpuModule.emitError(error);
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(*log),
                                            StringRef(*log)};
    SmallVector<StringRef> argRefs(args.begin(), args.end());
    std::string message;
    if (llvm::sys::ExecuteAndWait(fatbinary, argRefs, std::nullopt, redirects,
                                  0, 0, &message) != 0) {
      auto text = llvm::MemoryBuffer::getFile(*log);
      return gpuModule.emitError("fatbinary failed: ")
             << (message.empty() && text ? (*text)->getBuffer().trim()
                                         : StringRef(message));
    }
    auto blob = llvm::MemoryBuffer::getFile(*output, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!blob)
      return gpuModule.emitError("cannot read the fatbin: ")
             << blob.getError().message();
    fatbin = (*blob)->getBuffer().str();
    return success();
  }
};

} // namespace

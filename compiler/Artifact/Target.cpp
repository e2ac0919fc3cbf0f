//===- Target.cpp - The CPU an artifact's code is generated for -----------===//
//
// LLVM knows which features a CPU name implies (its subtarget tables); the
// list it gives is what the manifest records and code generation uses.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/Target.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"
#include <algorithm>

using namespace mlir;
using namespace mlir::cleave;

std::string CpuTarget::featureString() const {
  std::string out;
  for (const std::string &f : features) {
    if (!out.empty())
      out += ',';
    out += '+' + f;
  }
  return out;
}

FailureOr<CpuTarget> cleave::resolveCpuTarget(StringRef cpu, StringRef features,
                                              std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return failure();

  llvm::SubtargetFeatures requested;
  CpuTarget out;
  if (cpu.empty() || cpu == "host") {
    out.cpu = llvm::sys::getHostCPUName().str();
    for (auto &f : llvm::sys::getHostCPUFeatures())
      requested.AddFeature(f.first(), f.second);
  } else {
    out.cpu = cpu.str();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> probe(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!probe->isCPUStringValid(out.cpu)) {
    error = "unknown target CPU '" + out.cpu + "' (LLVM's names: x86-64, " +
            "x86-64-v2, x86-64-v3, x86-64-v4, skylake-avx512, znver4, ...; " +
            "or host)";
    return failure();
  }
  ArrayRef<llvm::SubtargetFeatureKV> known = probe->getAllProcessorFeatures();
  auto isKnown = [&](StringRef name) {
    return llvm::any_of(known, [&](const llvm::SubtargetFeatureKV &kv) {
      return name == kv.Key;
    });
  };
  SmallVector<StringRef> extra;
  features.split(extra, ',', -1, /*KeepEmpty=*/false);
  for (StringRef f : extra) {
    f = f.trim();
    if (f.size() < 2 || (f[0] != '+' && f[0] != '-') ||
        !isKnown(f.drop_front())) {
      error = "unknown target feature '" + f.str() +
              "'; expected +name or -name with an LLVM feature name "
              "(+avx2, -avx512f, ...)";
      return failure();
    }
    requested.AddFeature(f);
  }

  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, out.cpu, requested.getString()));
  for (const llvm::SubtargetFeatureKV &kv : known)
    if (sti->getFeatureBits().test(kv.Value))
      out.features.push_back(kv.Key);
  llvm::sort(out.features);
  return out;
}

FailureOr<CpuTarget> cleave::targetOf(ModuleOp module, std::string &error) {
  auto attr = module->getAttrOfType<DictionaryAttr>(rt::RtDialect::kTargetAttr);
  if (!attr)
    return resolveCpuTarget("host", "", error);
  auto cpu = attr.getAs<StringAttr>("cpu");
  auto features = attr.getAs<ArrayAttr>("features");
  if (!cpu || !features) {
    error = std::string(rt::RtDialect::kTargetAttr) +
            " needs a string 'cpu' and an array of strings 'features'";
    return failure();
  }
  CpuTarget out;
  out.cpu = cpu.str();
  for (Attribute f : features) {
    auto s = dyn_cast<StringAttr>(f);
    if (!s) {
      error =
          std::string(rt::RtDialect::kTargetAttr) + " features must be strings";
      return failure();
    }
    out.features.push_back(s.str());
  }
  return out;
}

//===- Target.cpp - The CPU an artifact's code is generated for -----------===//
//
// LLVM knows which features a CPU name implies (its subtarget tables); the
// list it gives is what the manifest records and code generation uses.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/Target.h"

#ifdef CLEAVE_CHECK_MANIFEST
#include "runtime/src/CpuFeatures.h"
#endif

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

/// LLVM's subtarget of the CPU name alone: the features the name implies.
static std::unique_ptr<llvm::MCSubtargetInfo> subtargetOfName(StringRef cpu) {
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target->createMCSubtargetInfo(triple, cpu, ""));
}

std::string CpuTarget::featureString() const {
  SmallVector<std::string> parts;
  for (const std::string &f : features)
    parts.push_back('+' + f);
  // The CPU name implies features of its own: one that `features` leaves
  // out (turned off by --target-features, or a host feature the kernel does
  // not enable) is turned off explicitly, or the name would turn it back on.
  if (std::unique_ptr<llvm::MCSubtargetInfo> sti = subtargetOfName(cpu))
    for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
      if (sti->getFeatureBits().test(kv.Value) &&
          !llvm::is_contained(features, kv.Key))
        parts.push_back("-" + std::string(kv.Key));
  return llvm::join(parts, ",");
}

bool CpuTarget::lacksFeatureOfItsCpu(StringRef feature) const {
  if (llvm::is_contained(features, feature))
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> sti = subtargetOfName(cpu);
  return sti && llvm::any_of(sti->getAllProcessorFeatures(),
                             [&](const llvm::SubtargetFeatureKV &kv) {
                               return kv.Key == feature &&
                                      sti->getFeatureBits().test(kv.Value);
                             });
}

FailureOr<CpuTarget> mlir::cleave::resolveCpuTarget(StringRef cpu,
                                                    StringRef features,
                                                    std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return failure();

  // What the CPU name leaves to features: the host's (CPUID), then those
  // the kernel does not enable (below), then the user's, which win.
  llvm::SubtargetFeatures hostFeatures;
  std::vector<std::string> withheld;
  CpuTarget out;
  bool host = cpu.empty() || cpu == "host";
  if (host) {
    out.cpu = llvm::sys::getHostCPUName().str();
    for (auto &f : llvm::sys::getHostCPUFeatures())
      hostFeatures.AddFeature(f.first(), f.second);
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
  for (StringRef &f : extra) {
    f = f.trim();
    if (f.size() < 2 || (f[0] != '+' && f[0] != '-') ||
        !isKnown(f.drop_front())) {
      error = "unknown target feature '" + f.str() +
              "'; expected +name or -name with an LLVM feature name "
              "(+avx2, -avx512f, ...)";
      return failure();
    }
  }

  auto enabled = [&] {
    llvm::SubtargetFeatures requested = hostFeatures;
    for (const std::string &f : withheld)
      requested.AddFeature(f, /*Enable=*/false);
    for (StringRef f : extra)
      requested.AddFeature(f);
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(triple, out.cpu, requested.getString()));
    std::vector<std::string> list;
    for (const llvm::SubtargetFeatureKV &kv : known)
      if (sti->getFeatureBits().test(kv.Value))
        list.push_back(kv.Key);
    llvm::sort(list);
    return list;
  };
  out.features = enabled();
#ifdef CLEAVE_CHECK_MANIFEST
  // The host's own code must load on the host. LLVM reads CPUID, which a
  // hypervisor may report more generously than the kernel enables (seen: a
  // KVM guest whose CPUID names fsgsbase, lzcnt and sse4a that its
  // /proc/cpuinfo lacks); the runtime checks /proc/cpuinfo, so code for the
  // host withholds what the runtime's check would refuse, unless the user
  // asked for it (--target-features=+xop builds code for another machine).
  // Turning a feature off turns off those that imply it: repeat until
  // nothing new is missing.
  if (host) {
    std::string flags = ::cleave::rt::hostCpuFlags();
    while (!flags.empty()) {
      bool grew = false;
      for (const std::string &f :
           ::cleave::rt::missingCpuFeatures(out.features, flags))
        if (!llvm::is_contained(withheld, f)) {
          withheld.push_back(f);
          grew = true;
        }
      if (!grew)
        break;
      out.features = enabled();
    }
  }
#endif
  return out;
}

FailureOr<CpuTarget> mlir::cleave::targetOf(ModuleOp module,
                                            std::string &error) {
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

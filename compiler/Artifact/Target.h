//===- Target.h - The CPU an artifact's code is generated for ---*- C++ -*-===//
//
// `--target-cpu` / `--target-features` resolved once, in
// cleave-write-manifest, to an LLVM CPU name and the complete list of the
// features it enables: the manifest records them (so the runtime can refuse
// an artifact the machine cannot run), and code generation uses exactly
// them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_TARGET_H
#define CLEAVE_COMPILER_ARTIFACT_TARGET_H

#include "dialects/Runtime/IR/RtOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include <string>
#include <vector>

namespace mlir::cleave {

/// A resolved CPU target.
struct CpuTarget {
  /// The LLVM CPU name (`skylake-avx512`, `x86-64-v3`), never "host".
  std::string cpu;
  /// Every feature enabled, the CPU's own and those implied, by LLVM name
  /// without a sign (`avx2`, `avx512f`), sorted.
  std::vector<std::string> features;

  /// The features as an LLVM feature string (`+avx2,+avx512f,...`), with
  /// `-name` for each feature the CPU name implies that `features` lacks.
  std::string featureString() const;

  /// Whether the CPU name implies `feature` (an LLVM feature name) that
  /// `features` lacks: turned off by --target-features, or, for the host, a
  /// feature of the CPU model that CPUID does not report (AMX hidden by a
  /// hypervisor, say).
  bool lacksFeatureOfItsCpu(StringRef feature) const;
};

/// Resolves `cpu` ("host": this machine's CPU, as LLVM names it) and
/// `features` (LLVM's `+a,-b` syntax, on top of the CPU's; with "host" the
/// base is the machine's features as CPUID reports them, less those the
/// runtime's check would find missing from the kernel's /proc/cpuinfo,
/// where the build has the runtime). Fails with `error` for a CPU or a
/// feature LLVM does not know.
FailureOr<CpuTarget> resolveCpuTarget(StringRef cpu, StringRef features,
                                      std::string &error);

/// The target recorded on `module`, or the host when there is none (IR that
/// did not come through cleave-write-manifest).
FailureOr<CpuTarget> targetOf(ModuleOp module, std::string &error);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_TARGET_H

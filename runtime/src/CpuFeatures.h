//===- CpuFeatures.h - Can this machine run an artifact's code? -*- C++ -*-===//
//
// An artifact's manifest records the CPU its code was generated for and the
// features that CPU enables, by LLVM's names. Code that uses an instruction
// the machine lacks dies with SIGILL in the middle of a step; the loader
// compares the recorded instruction-set extensions with what the kernel
// reports (/proc/cpuinfo) and refuses such an artifact with one line.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CPUFEATURES_H
#define CLEAVE_RUNTIME_CPUFEATURES_H

#include <string>
#include <string_view>
#include <vector>

namespace cleave::rt {

/// The `flags` of the first processor in /proc/cpuinfo (space-separated
/// Linux names), or an empty string when it cannot be read; plus, under
/// their Linux names, the extensions that need no kernel support (lzcnt,
/// sse4a, bmi, ...) where CPUID reports them, which some guest kernels leave
/// out of cpuinfo.
std::string hostCpuFlags();

/// Of `required` (LLVM feature names, as the manifest lists them), the
/// instruction-set extensions that `cpuFlags` (a /proc/cpuinfo `flags`
/// line) does not have. Features that are not instruction sets (LLVM's
/// tuning flags such as `slow-unaligned-mem-16`) are never missing.
std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required,
                   std::string_view cpuFlags);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CPUFEATURES_H

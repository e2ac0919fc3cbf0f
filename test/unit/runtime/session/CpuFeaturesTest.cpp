//===- CpuFeaturesTest.cpp - Refusing code for another CPU ----------------===//
//
// missingCpuFeatures maps LLVM's feature names (as the manifest lists them)
// to /proc/cpuinfo's and reports the instruction sets a machine lacks.
//
//===----------------------------------------------------------------------===//

#include "CpuFeatures.h"

#include <gtest/gtest.h>

namespace cleave::rt {
namespace {

using Features = std::vector<std::string>;

// A Zen 4-like flags line: AVX-512 with BF16, no FP16, no AMX.
constexpr const char *kZen4 =
    " fpu cmov cx8 mmx fxsr sse sse2 pni ssse3 sse4_1 sse4_2 popcnt "
    "lahf_lm abm movbe bmi1 bmi2 fma f16c avx avx2 avx512f avx512dq "
    "avx512cd avx512bw avx512vl avx512_bf16 avx512_vnni sha_ni";

TEST(CpuFeaturesTest, NothingMissingForWhatTheCpuHas) {
  EXPECT_EQ(missingCpuFeatures({"sse4.2", "sse3", "lzcnt", "bmi", "sahf",
                                "avx512bf16", "avx512vnni", "sha"},
                               kZen4),
            Features{});
}

TEST(CpuFeaturesTest, ReportsMissingInstructionSetsInOrder) {
  EXPECT_EQ(
      missingCpuFeatures({"avx2", "avx512fp16", "amx-tile", "avx512f"}, kZen4),
      (Features{"avx512fp16", "amx-tile"}));
}

TEST(CpuFeaturesTest, TuningFlagsAreNotRequirements) {
  // LLVM lists tuning features beside instruction sets; no machine "has"
  // them, and none can make code fault.
  EXPECT_EQ(missingCpuFeatures({"slow-unaligned-mem-16", "64bit",
                                "fast-variable-crosslane-shuffle"},
                               kZen4),
            Features{});
}

TEST(CpuFeaturesTest, MatchesWholeWordsOnly) {
  // "avx512f" must not be found inside "avx512fp16".
  EXPECT_EQ(missingCpuFeatures({"avx512f"}, " avx512fp16 avx512_fp16"),
            Features{"avx512f"});
}

TEST(CpuFeaturesTest, ThisMachineRunsBaselineCode) {
  std::string flags = hostCpuFlags();
  ASSERT_FALSE(flags.empty()) << "cannot read /proc/cpuinfo";
  EXPECT_EQ(missingCpuFeatures({"sse", "sse2", "cx8", "cmov"}, flags),
            Features{});
}

TEST(CpuFeaturesTest, ThisMachineRunsX86_64_v3CodeWhereItHasAvx2) {
  // Every CPU with AVX2 (Haswell, Zen and later) has x86-64-v3's scalar
  // extensions too, which need no kernel support: they count where CPUID
  // reports them even if the kernel's cpuinfo omits them (abm, seen).
  std::string flags = hostCpuFlags();
  if ((flags + " ").find(" avx2 ") == std::string::npos)
    GTEST_SKIP() << "no AVX2 on this machine: pre-Haswell CPUs may lack "
                    "lzcnt and bmi, so there is no claim to check";
  EXPECT_EQ(
      missingCpuFeatures(
          {"lzcnt", "bmi", "bmi2", "movbe", "popcnt", "cx16", "sahf"}, flags),
      Features{});
}

} // namespace
} // namespace cleave::rt

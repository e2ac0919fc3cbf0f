//===- TargetTest.cpp - The CPU an artifact is compiled for ---------------===//
//
// Code compiled for the host loads on the host: its features pass the
// runtime's check against /proc/cpuinfo even where CPUID (which LLVM reads)
// reports more than the kernel enables. A feature the CPU name implies but
// the target leaves out is turned off explicitly in the code generator's
// feature string.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/Target.h"
#include "runtime/src/CpuFeatures.h"

#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

namespace {

TEST(TargetTest, HostCodePassesTheRuntimesCheck) {
  std::string error;
  auto host = mlir::cleave::resolveCpuTarget("host", "", error);
  ASSERT_TRUE(mlir::succeeded(host)) << error;
  EXPECT_NE(host->cpu, "host");
  std::vector<std::string> missing = ::cleave::rt::missingCpuFeatures(
      host->features, ::cleave::rt::hostCpuFlags());
  EXPECT_TRUE(missing.empty())
      << "host code needs " << llvm::join(missing, ", ");
}

TEST(TargetTest, HostKeepsWhatTheUserAsksFor) {
  // Code for another machine: a feature this one lacks, asked for, stays.
  std::string flags = " " + ::cleave::rt::hostCpuFlags() + " ";
  ASSERT_EQ(flags.find(" xop "), std::string::npos) << "an AMD Bulldozer?";
  std::string error;
  auto target = mlir::cleave::resolveCpuTarget("host", "+xop", error);
  ASSERT_TRUE(mlir::succeeded(target)) << error;
  EXPECT_TRUE(llvm::is_contained(target->features, "xop"));
  // The runtime will refuse it here, naming xop.
  EXPECT_TRUE(
      llvm::is_contained(::cleave::rt::missingCpuFeatures(
                             target->features, ::cleave::rt::hostCpuFlags()),
                         "xop"));
}

TEST(TargetTest, FeaturesTurnedOffStayOffUnderTheCpuName) {
  std::string error;
  auto target = mlir::cleave::resolveCpuTarget("znver4", "-avx512f", error);
  ASSERT_TRUE(mlir::succeeded(target)) << error;
  EXPECT_FALSE(llvm::is_contained(target->features, "avx512f"));
  // avx512bw implies avx512f: turning one off turns off the other.
  EXPECT_FALSE(llvm::is_contained(target->features, "avx512bw"));
  EXPECT_TRUE(llvm::is_contained(target->features, "avx2"));
  std::string features = target->featureString();
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(features).split(parts, ',');
  EXPECT_TRUE(llvm::is_contained(parts, "-avx512f")) << features;
  EXPECT_TRUE(llvm::is_contained(parts, "-avx512bw")) << features;
  EXPECT_TRUE(llvm::is_contained(parts, "+avx2")) << features;
  EXPECT_FALSE(llvm::is_contained(parts, "+avx512f")) << features;
}

} // namespace

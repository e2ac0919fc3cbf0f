//===- GpuArchTest.cpp - Which GPU code of an artifact a device runs ------===//
//
// checkGpuCode decides, without a driver, whether a GPU can run a cuda
// artifact's cubins or JIT its PTX; its error is the one line a session on
// such a GPU fails with.
//
//===----------------------------------------------------------------------===//

#include "device/GpuArch.h"

#include <gtest/gtest.h>

using namespace cleave::rt;

namespace {

GpuArch sm(const char *name) {
  std::optional<GpuArch> arch = parseGpuArch(name);
  EXPECT_TRUE(arch) << name;
  return arch.value_or(GpuArch{});
}

std::vector<GpuArch> arches(std::initializer_list<const char *> names) {
  std::vector<GpuArch> out;
  for (const char *n : names)
    out.push_back(sm(n));
  return out;
}

/// "ok", or the error of checkGpuCode.
std::string check(const char *device,
                  std::initializer_list<const char *> cubins, const char *ptx) {
  Status s = checkGpuCode(sm(device), arches(cubins),
                          ptx ? std::optional<GpuArch>(sm(ptx)) : std::nullopt);
  if (s.ok())
    return "ok";
  EXPECT_EQ(s.code(), CLEAVE_FAILED_PRECONDITION);
  return s.message();
}

TEST(GpuArchTest, Parses) {
  EXPECT_EQ(sm("sm_80").major, 8);
  EXPECT_EQ(sm("sm_86").minor, 6);
  EXPECT_TRUE(sm("sm_90a").specific);
  EXPECT_EQ(sm("sm_120").major, 12);
  EXPECT_EQ(sm("sm_120").minor, 0);
  EXPECT_EQ(sm("sm_120").name(), "sm_120");
  for (const char *bad : {"", "sm_", "sm_8", "sm_0", "sm_08", "compute_80",
                          "SM_80", "sm_80b", "sm_1000", "sm_8x"})
    EXPECT_FALSE(parseGpuArch(bad)) << bad;
}

TEST(GpuArchTest, ExactCubinRuns) {
  EXPECT_EQ(check("sm_80", {"sm_80", "sm_90"}, "sm_80"), "ok");
  EXPECT_EQ(check("sm_90", {"sm_80", "sm_90"}, nullptr), "ok");
}

TEST(GpuArchTest, CubinRunsOnLaterMinorOfItsMajorOnly) {
  EXPECT_EQ(check("sm_86", {"sm_80"}, nullptr), "ok");
  EXPECT_EQ(check("sm_89", {"sm_80"}, nullptr), "ok");
  EXPECT_EQ(check("sm_90", {"sm_80"}, nullptr),
            "the GPU is sm_90 but the artifact has sm_80 only");
  EXPECT_EQ(check("sm_80", {"sm_86"}, nullptr),
            "the GPU is sm_80 but the artifact has sm_86 only");
}

TEST(GpuArchTest, ArchSpecificCubinRunsOnItsGpuOnly) {
  EXPECT_EQ(check("sm_90", {"sm_90a"}, nullptr), "ok");
  EXPECT_EQ(check("sm_91", {"sm_90a"}, nullptr),
            "the GPU is sm_91 but the artifact has sm_90a only");
}

TEST(GpuArchTest, PtxJitsOnAnyLaterGpu) {
  EXPECT_EQ(check("sm_90", {"sm_80"}, "sm_80"), "ok");
  EXPECT_EQ(check("sm_120", {"sm_80", "sm_90"}, "sm_80"), "ok");
  EXPECT_EQ(check("sm_75", {"sm_80", "sm_90"}, "sm_80"),
            "the GPU is sm_75 but the artifact has sm_80, sm_90 and PTX for "
            "sm_80 only");
}

/// "ok", or the error of checkDriverVersion.
std::string driver(int driverVersion, int headersVersion) {
  Status s = checkDriverVersion(driverVersion, headersVersion);
  return s.ok() ? "ok" : s.message();
}

TEST(GpuArchTest, DriversOfTheHeadersMajorVersionRunTheRuntime) {
  // Minor-version compatibility: a 13.0 driver runs a runtime built with
  // the 13.1 or 13.2 toolkit.
  EXPECT_EQ(driver(13000, 13010), "ok");
  EXPECT_EQ(driver(13000, 13020), "ok");
  EXPECT_EQ(driver(13020, 13000), "ok");
  EXPECT_EQ(driver(14000, 13010), "ok");
  EXPECT_EQ(driver(12090, 13000),
            "the CUDA driver supports CUDA 12.9, this runtime needs CUDA 13.x "
            "(built with 13.0); update the NVIDIA driver");
  EXPECT_EQ(driver(0, 13010),
            "the CUDA driver supports CUDA 0.0, this runtime needs CUDA 13.x "
            "(built with 13.1); update the NVIDIA driver");
}

} // namespace

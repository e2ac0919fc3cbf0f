//===- CudaArtifactTest.cpp - cuda artifacts where there is no GPU --------===//
//
// A `"device": "cuda"` artifact (FakeArtifact.c built with FAKE_CUDA, whose
// constructor hands a module to mgpuModuleLoad as compiled ones do) loads on
// any machine, and a session of it is refused with one line: by a CPU
// session, and by a cuda session where the driver is missing (this test's
// machine) or where the runtime was built without CUDA. A CPU artifact is
// refused by a cuda session. FakeGpuTest.cpp runs cuda sessions on a fake
// driver.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>

using namespace cleave::test;

namespace {

std::string path(const char *p) { return std::string(p); }

/// cleave_session_create on `artifact` with the given device.
CallResult createOn(cleave_artifact *artifact, int32_t device,
                    int32_t ordinal = 0) {
  cleave_session_options options;
  cleave_session_options_init(&options);
  options.device = device;
  options.device_ordinal = ordinal;
  cleave_session *session = nullptr;
  CallResult r = result(cleave_session_create(artifact, &options, &session));
  EXPECT_EQ(session == nullptr, r.status != CLEAVE_OK);
  cleave_session_destroy(session);
  return r;
}

class CudaArtifactTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cleave_artifact_load(CLEAVE_FAKE_SGD_CUDA, &cuda), CLEAVE_OK)
        << cleave_last_error_message();
    ASSERT_EQ(cleave_artifact_load(CLEAVE_FAKE_SGD, &cpu), CLEAVE_OK)
        << cleave_last_error_message();
  }
  void TearDown() override {
    cleave_artifact_release(cuda);
    cleave_artifact_release(cpu);
  }
  cleave_artifact *cuda = nullptr;
  cleave_artifact *cpu = nullptr;
};

TEST_F(CudaArtifactTest, DefaultsAreTheCpu) {
  cleave_session_options options;
  cleave_session_options_init(&options);
  EXPECT_EQ(options.device, CLEAVE_DEVICE_CPU);
  EXPECT_EQ(options.device_ordinal, 0);
}

TEST_F(CudaArtifactTest, CpuSessionRefusesCudaArtifact) {
  CallResult r = createOn(cuda, CLEAVE_DEVICE_CPU);
  EXPECT_EQ(r.status, CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(r.message,
            path(CLEAVE_FAKE_SGD_CUDA) +
                ": compiled for CUDA GPUs (sm_80, sm_90 and PTX for sm_80), "
                "but the session is on the CPU; create it on a cuda device "
                "(cleave-train --device=cuda)");
  // NULL options are the CPU's too.
  cleave_session *session = nullptr;
  EXPECT_EQ(cleave_session_create(cuda, nullptr, &session),
            CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(session, nullptr);
}

TEST_F(CudaArtifactTest, CudaSessionRefusesCpuArtifact) {
  CallResult r = createOn(cpu, CLEAVE_DEVICE_CUDA);
  EXPECT_EQ(r.status, CLEAVE_FAILED_PRECONDITION);
  EXPECT_EQ(r.message,
            path(CLEAVE_FAKE_SGD) +
                ": compiled for the CPU, but the session is on a CUDA GPU; "
                "create it on the cpu device (cleave-train --device=cpu) or "
                "compile with --target=cuda");
}

TEST_F(CudaArtifactTest, UnknownDeviceIsAnArgumentError) {
  CallResult r = createOn(cuda, 7);
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "options: device is 7, "
                       "expected CLEAVE_DEVICE_CPU (0) or CLEAVE_DEVICE_CUDA "
                       "(1)");
}

TEST_F(CudaArtifactTest, NoDriverIsOneLine) {
  std::optional<std::string> reason = noCudaReason();
  if (!reason)
    GTEST_SKIP() << "this machine has a CUDA driver, so the driverless "
                    "refusal cannot happen here (FakeGpuTest and "
                    "scripts/gpu-check.sh cover the driver path)";
  const std::string why = *reason;
  for (int32_t ordinal : {0, 3}) {
    CallResult r = createOn(cuda, CLEAVE_DEVICE_CUDA, ordinal);
    EXPECT_EQ(r.status, CLEAVE_FAILED_PRECONDITION);
    EXPECT_EQ(r.message, path(CLEAVE_FAKE_SGD_CUDA) + ": " + why);
  }
  // Through the C++ API, as cleave-train creates sessions.
  cleave::Artifact artifact = cleave::Artifact::load(CLEAVE_FAKE_SGD_CUDA);
  cleave::SessionOptions options;
  options.device = CLEAVE_DEVICE_CUDA;
  try {
    cleave::Session session(artifact, options);
    ADD_FAILURE() << "a cuda session was created without a driver";
  } catch (const cleave::Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST_F(CudaArtifactTest, ManifestSaysCuda) {
  const char *manifest = nullptr;
  ASSERT_EQ(cleave_artifact_manifest(cuda, &manifest), CLEAVE_OK);
  EXPECT_NE(std::string(manifest).find("\"device\": \"cuda\""),
            std::string::npos);
}

} // namespace

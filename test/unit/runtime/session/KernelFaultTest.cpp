//===- KernelFaultTest.cpp - A kernel that fails inside an entry point ----===//
//
// Kernel calls cannot return errors, so a failing one records its error in
// the kernel context and the session returns it from the call that ran the
// entry point, with the process alive. The session is then unusable (every
// call that would run an entry or write a checkpoint refuses, with the
// original message) until a checkpoint is loaded into it. The artifact is
// KernelFaultArtifact.c, whose kernel calls break the ABI on demand.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

using namespace cleave::test;

namespace {

// KernelFaultArtifact.c's fault_set() arguments.
enum { kNoFault, kFaultMicroStep, kFaultApplyStep, kFaultEvalStep };

class KernelFaultTest : public ::testing::Test {
protected:
  void SetUp() override {
    handle = ::dlopen(CLEAVE_KERNEL_FAULT_ARTIFACT, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    setFault = reinterpret_cast<void (*)(int)>(::dlsym(handle, "fault_set"));
    ASSERT_NE(setFault, nullptr);
    setFault(kNoFault);
    ASSERT_EQ(cleave_artifact_load(CLEAVE_KERNEL_FAULT_ARTIFACT, &artifact),
              CLEAVE_OK)
        << cleave_last_error_message();
    session = newSession();
  }
  void TearDown() override {
    cleave_session_destroy(session);
    cleave_artifact_release(artifact);
    if (setFault)
      setFault(kNoFault);
    if (handle)
      ::dlclose(handle);
  }

  cleave_session *newSession() {
    cleave_session *s = nullptr;
    EXPECT_EQ(cleave_session_create(artifact, nullptr, &s), CLEAVE_OK)
        << cleave_last_error_message();
    return s;
  }

  /// micro_step on `x` (2 samples of 3 features).
  CallResult microStep(cleave_session *s, const std::vector<float> &x) {
    const void *data[] = {x.data()};
    size_t bytes[] = {x.size() * sizeof(float)};
    cleave_batch batch{2, 1, data, bytes};
    return result(cleave_session_micro_step(s, &batch));
  }
  CallResult eval(cleave_session *s, const std::vector<float> &x) {
    const void *data[] = {x.data()};
    size_t bytes[] = {x.size() * sizeof(float)};
    cleave_batch batch{2, 1, data, bytes};
    return result(cleave_session_eval(s, &batch));
  }
  std::vector<float> readW(cleave_session *s) {
    std::vector<float> w(6);
    EXPECT_EQ(cleave_session_read_global(s, "w", w.data(), 24), CLEAVE_OK)
        << cleave_last_error_message();
    return w;
  }
  /// The message a kernel failure in `entry` reports.
  static std::string kernelError(const std::string &entry,
                                 const std::string &what) {
    return std::string(CLEAVE_KERNEL_FAULT_ARTIFACT) + ": " + entry + ": " +
           what;
  }
  /// Expects `r` to be the refusal of a session that failed with `original`.
  static void expectUnusable(const CallResult &r, const std::string &original) {
    EXPECT_EQ(r.status, CLEAVE_FAILED_PRECONDITION) << r.message;
    EXPECT_EQ(r.message,
              "the session is unusable since an entry point failed (" +
                  original + "); destroy it or load a checkpoint into it");
  }

  void *handle = nullptr;
  void (*setFault)(int) = nullptr;
  cleave_artifact *artifact = nullptr;
  cleave_session *session = nullptr;
  const std::vector<float> x1 = {1, 2, 3, 4, 5, 6};
  const std::vector<float> x2 = {-1, 0.5f, 2, 0, 1, -3};
};

TEST_F(KernelFaultTest,
       MicroStepReturnsTheKernelErrorAndTheSessionRefusesMore) {
  // A good micro-step runs the kernel: y = x w + b with w = 0.5, b = 0.25,
  // loss = sum(y) = 2 * 0.5 * (6 + 15) + 4 * 0.25.
  ASSERT_EQ(microStep(session, x1).status, CLEAVE_OK);
  double loss = 0;
  ASSERT_EQ(cleave_session_last_loss(session, &loss), CLEAVE_OK);
  EXPECT_DOUBLE_EQ(loss * 2, 22.0);
  const std::string dir = makeTempDir("KernelFault");
  ASSERT_EQ(
      cleave_session_save_checkpoint(session, (dir + "/good.ckpt").c_str()),
      CLEAVE_OK)
      << cleave_last_error_message();

  setFault(kFaultMicroStep);
  CallResult failed = microStep(session, x2);
  const std::string original =
      kernelError("micro_step", "cleave_kernel_matmul: kernel 0 (matmul): "
                                "the entry has a bias but NULL was passed");
  EXPECT_EQ(failed.status, CLEAVE_INTERNAL);
  EXPECT_EQ(failed.message, original);
  setFault(kNoFault);

  // Nothing that runs an entry point or writes a checkpoint works any more,
  // even with the kernels healthy again.
  expectUnusable(microStep(session, x2), original);
  expectUnusable(eval(session, x2), original);
  expectUnusable(result(cleave_session_flush(session)), original);
  expectUnusable(result(cleave_session_set_accumulation(session, 1)), original);
  {
    const void *data[] = {x2.data()};
    size_t bytes[] = {x2.size() * sizeof(float)};
    cleave_batch batch{2, 1, data, bytes};
    expectUnusable(result(cleave_session_train_batch(session, &batch, 2)),
                   original);
  }
  const std::string bad = dir + "/bad.ckpt";
  expectUnusable(result(cleave_session_save_checkpoint(session, bad.c_str())),
                 original);
  EXPECT_FALSE(fileExists(bad));
  // Accessors still answer: the failed micro-step's code ran on and counted
  // itself.
  int64_t microSteps = -1;
  ASSERT_EQ(cleave_session_micro_steps(session, &microSteps), CLEAVE_OK);
  EXPECT_EQ(microSteps, 2);

  // Loading a checkpoint restores every global: the session continues as if
  // the failed call had never been made.
  ASSERT_EQ(
      cleave_session_load_checkpoint(session, (dir + "/good.ckpt").c_str()),
      CLEAVE_OK)
      << cleave_last_error_message();
  ASSERT_EQ(microStep(session, x2).status, CLEAVE_OK)
      << cleave_last_error_message();
  cleave_session *reference = newSession();
  ASSERT_EQ(microStep(reference, x1).status, CLEAVE_OK);
  ASSERT_EQ(microStep(reference, x2).status, CLEAVE_OK);
  int64_t steps = 0;
  ASSERT_EQ(cleave_session_step(session, &steps), CLEAVE_OK);
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(readW(session), readW(reference));
  EXPECT_NE(readW(session), std::vector<float>(6, 0.5f));
  cleave_session_destroy(reference);
}

TEST_F(KernelFaultTest, ApplyStepFailureIsReturnedByTheMicroStepThatRanIt) {
  ASSERT_EQ(microStep(session, x1).status, CLEAVE_OK);
  setFault(kFaultApplyStep);
  // The second micro-step fills the window (N = 2) and runs apply_step.
  CallResult failed = microStep(session, x2);
  const std::string original =
      kernelError("apply_step", "cleave_cross_rank_reduce: unknown reduction "
                                "kind 9 (expected 0 = sum, 1 = mean, 2 = "
                                "adasum)");
  EXPECT_EQ(failed.status, CLEAVE_INTERNAL);
  EXPECT_EQ(failed.message, original);
  setFault(kNoFault);
  expectUnusable(microStep(session, x1), original);
}

TEST_F(KernelFaultTest, FlushAndEvalReturnTheirKernelErrors) {
  ASSERT_EQ(microStep(session, x1).status, CLEAVE_OK);
  setFault(kFaultApplyStep);
  CallResult flushed = result(cleave_session_flush(session));
  EXPECT_EQ(flushed.status, CLEAVE_INTERNAL);
  EXPECT_EQ(flushed.message.rfind(kernelError("apply_step", ""), 0), 0u)
      << flushed.message;

  cleave_session *other = newSession();
  setFault(kFaultEvalStep);
  CallResult evaluated = eval(other, x1);
  EXPECT_EQ(evaluated.status, CLEAVE_INTERNAL);
  EXPECT_EQ(evaluated.message,
            kernelError("eval_step", "cleave_kernel_matmul: kernel 0 "
                                     "(matmul): the entry has a bias but "
                                     "NULL was passed"));
  cleave_session_destroy(other);
}

TEST_F(KernelFaultTest, AHealthySessionIsNotAffected) {
  // Sessions have their own kernel contexts: one failing leaves the other
  // usable.
  cleave_session *other = newSession();
  setFault(kFaultMicroStep);
  EXPECT_EQ(microStep(session, x1).status, CLEAVE_INTERNAL);
  setFault(kNoFault);
  EXPECT_EQ(microStep(other, x1).status, CLEAVE_OK)
      << cleave_last_error_message();
  EXPECT_EQ(eval(other, x1).status, CLEAVE_OK) << cleave_last_error_message();
  cleave_session_destroy(other);
}

} // namespace

//===- CApiTest.cpp - Bad input at the C boundary -------------------------===//
//
// Every kind of bad input gives a status and a one-line message, never a
// crash: NULL pointers, wrong counts and sizes, out-of-range values, unknown
// names.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace cleave;
using namespace cleave::test;

namespace {

class CApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cleave_artifact_load(CLEAVE_FAKE_SGD, &artifact), CLEAVE_OK);
    ASSERT_EQ(cleave_session_create(artifact, nullptr, &session), CLEAVE_OK);
  }
  void TearDown() override {
    cleave_session_destroy(session);
    cleave_artifact_release(artifact);
  }

  /// Expects `status` with exactly `message`.
  static void expectError(cleave_status status, cleave_status expected,
                          const std::string &message) {
    EXPECT_EQ(status, expected) << cleave_status_string(status);
    EXPECT_EQ(std::string(cleave_last_error_message()), message);
  }

  cleave_artifact *artifact = nullptr;
  cleave_session *session = nullptr;
  Data data = makeData(kMicroBatch, 1);
};

TEST_F(CApiTest, NullPointersAreRefused) {
  cleave_artifact *a = nullptr;
  expectError(cleave_artifact_load(nullptr, &a), CLEAVE_INVALID_ARGUMENT,
              "cleave_artifact_load: path is NULL");
  expectError(cleave_artifact_load(CLEAVE_FAKE_SGD, nullptr),
              CLEAVE_INVALID_ARGUMENT, "cleave_artifact_load: out is NULL");
  int64_t n = 0;
  expectError(cleave_artifact_micro_batch(nullptr, &n), CLEAVE_INVALID_ARGUMENT,
              "cleave_artifact_micro_batch: artifact is NULL");
  cleave_session *s = nullptr;
  expectError(cleave_session_create(nullptr, nullptr, &s),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_create: artifact is NULL");
  expectError(cleave_session_micro_step(nullptr, nullptr),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_micro_step: session is NULL");
  expectError(cleave_session_micro_step(session, nullptr),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_micro_step: batch is NULL");
  expectError(cleave_session_train_batch(session, nullptr, 4),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_train_batch: batch is NULL");
  expectError(cleave_session_eval(session, nullptr), CLEAVE_INVALID_ARGUMENT,
              "cleave_session_eval: batch is NULL");
  expectError(cleave_session_flush(nullptr), CLEAVE_INVALID_ARGUMENT,
              "cleave_session_flush: session is NULL");
  expectError(cleave_session_set_hyperparameter(session, nullptr, 1.0),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_set_hyperparameter: name is NULL");
  expectError(cleave_session_read_global(session, "fc.bias", nullptr, 12),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_read_global: dst is NULL");
  expectError(cleave_session_save_checkpoint(session, nullptr),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_save_checkpoint: path is NULL");
  expectError(cleave_session_load_checkpoint(nullptr, "x"),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_session_load_checkpoint: session is NULL");
  const void *p = nullptr;
  size_t bytes = 0;
  expectError(
      cleave_session_output(session, "eval_step", "prediction", &p, nullptr),
      CLEAVE_INVALID_ARGUMENT, "cleave_session_output: bytes is NULL");
  // Destroying and releasing NULL is allowed; so is NULL options.
  cleave_session_destroy(nullptr);
  cleave_artifact_release(nullptr);
  cleave_session_options_init(nullptr);
  (void)bytes;
}

TEST_F(CApiTest, BatchesOfTheWrongShapeAreRefused) {
  const void *ptrs[2] = {data.x.data(), data.labels.data()};
  size_t sizes[2] = {data.x.size() * 4, data.labels.size() * 8};
  cleave_batch b = {kMicroBatch, 2, ptrs, sizes};

  b.num_inputs = 3;
  expectError(cleave_session_micro_step(session, &b), CLEAVE_INVALID_ARGUMENT,
              "batch: 3 inputs given, the artifact takes 2 (x, labels)");
  b.num_inputs = 2;
  b.samples = 0;
  expectError(cleave_session_micro_step(session, &b), CLEAVE_INVALID_ARGUMENT,
              "batch: samples is 0, expected 1 to 8");
  b.samples = 9; // k > micro_batch
  expectError(cleave_session_micro_step(session, &b), CLEAVE_INVALID_ARGUMENT,
              "batch: samples is 9, expected 1 to 8");
  b.samples = kMicroBatch;
  sizes[1] = 7 * 8;
  expectError(cleave_session_micro_step(session, &b), CLEAVE_INVALID_ARGUMENT,
              "batch: bytes[1] ('labels') is 56, expected 8 samples x 8 bytes "
              "= 64");
  sizes[1] = 64;
  ptrs[0] = nullptr;
  expectError(cleave_session_micro_step(session, &b), CLEAVE_INVALID_ARGUMENT,
              "batch: data[0] ('x') is NULL but micro_step reads it");
  ptrs[0] = data.x.data();
  b.data = nullptr;
  expectError(cleave_session_micro_step(session, &b), CLEAVE_INVALID_ARGUMENT,
              "batch: data and bytes must not be NULL");
  b.data = ptrs;

  // train_batch checks the micro-batch size and the whole batch up front.
  expectError(cleave_session_train_batch(session, &b, 0),
              CLEAVE_INVALID_ARGUMENT,
              "micro_size is 0, expected 1 to 8 (the micro-batch size)");
  expectError(cleave_session_train_batch(session, &b, 9),
              CLEAVE_INVALID_ARGUMENT,
              "micro_size is 9, expected 1 to 8 (the micro-batch size)");
  b.samples = 16; // the sizes still describe 8 samples
  expectError(cleave_session_train_batch(session, &b, 4),
              CLEAVE_INVALID_ARGUMENT,
              "batch: bytes[0] ('x') is 160, expected 16 samples x 20 bytes = "
              "320");
  b.samples = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(cleave_session_train_batch(session, &b, 4),
            CLEAVE_INVALID_ARGUMENT);

  // Where the batch is must be one of the three kinds.
  b.samples = kMicroBatch;
  for (int memory : {-1, 3})
    expectError(cleave_session_micro_step_ex(session, &b, memory),
                CLEAVE_INVALID_ARGUMENT,
                std::string("cleave_session_micro_step_ex: memory is ") +
                    std::to_string(memory) +
                    ", expected CLEAVE_MEMORY_HOST (0), CLEAVE_MEMORY_PINNED "
                    "(1) or CLEAVE_MEMORY_DEVICE (2)");
  EXPECT_EQ(cleave_session_train_batch_ex(session, &b, 4, 3),
            CLEAVE_INVALID_ARGUMENT);
  EXPECT_EQ(cleave_session_eval_ex(session, &b, 3), CLEAVE_INVALID_ARGUMENT);
  // A device batch on the CPU is host memory, checked as one.
  data.labels[2] = 9;
  expectError(cleave_session_micro_step_ex(session, &b, CLEAVE_MEMORY_DEVICE),
              CLEAVE_INVALID_ARGUMENT,
              "batch: input 'labels' element 2 "
              "is 9, expected 0 to 2 (a class label or an index into 3 rows)");
  data.labels[2] = 0;

  // Nothing was trained by any of these.
  int64_t count = -1;
  ASSERT_EQ(cleave_session_micro_steps(session, &count), CLEAVE_OK);
  EXPECT_EQ(count, 0);
}

TEST_F(CApiTest, UnknownNamesAreNotFound) {
  expectError(cleave_session_set_hyperparameter(session, "learning_rate", 0.1),
              CLEAVE_NOT_FOUND, "unknown hyperparameter 'learning_rate'");
  double v = 0;
  expectError(cleave_session_hyperparameter(session, "beta1", &v),
              CLEAVE_NOT_FOUND, "unknown hyperparameter 'beta1'");
  float buf[16];
  expectError(cleave_session_read_global(session, "fc2.weight", buf, 4),
              CLEAVE_NOT_FOUND, "unknown global 'fc2.weight'");
  expectError(cleave_session_write_global(session, "fc2.weight", buf, 4),
              CLEAVE_NOT_FOUND, "unknown global 'fc2.weight'");
  const void *p = nullptr;
  size_t bytes = 0;
  expectError(cleave_session_output(session, "predict", "y", &p, &bytes),
              CLEAVE_NOT_FOUND, "the artifact has no entry 'predict'");
  expectError(cleave_session_output(session, "eval_step", "logits", &p, &bytes),
              CLEAVE_NOT_FOUND, "entry 'eval_step' has no output 'logits'");
  size_t count = 0;
  expectError(cleave_artifact_num_outputs(artifact, "train_step", &count),
              CLEAVE_NOT_FOUND,
              "cleave_artifact_num_outputs: the artifact has no entry "
              "'train_step'");
}

TEST_F(CApiTest, ValuesOutOfRangeAreRefused) {
  expectError(cleave_session_set_accumulation(session, 0),
              CLEAVE_INVALID_ARGUMENT,
              "accumulation count is 0, expected a positive count");
  expectError(cleave_session_set_hyperparameter(
                  session, "lr", std::numeric_limits<double>::quiet_NaN()),
              CLEAVE_INVALID_ARGUMENT,
              "hyperparameter 'lr': value must be finite");
  float bias[3];
  expectError(cleave_session_read_global(session, "fc.bias", bias, 8),
              CLEAVE_INVALID_ARGUMENT, "global 'fc.bias' has 12 bytes, not 8");
  expectError(cleave_session_write_global(session, "fc.bias", bias, 16),
              CLEAVE_INVALID_ARGUMENT, "global 'fc.bias' has 12 bytes, not 16");
  cleave_tensor_info info;
  expectError(cleave_artifact_input(artifact, 2, &info),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_artifact_input: index 2 is out of range (the artifact "
              "has 2 inputs)");
  cleave_global_info g;
  expectError(cleave_artifact_global(artifact, 100, &g),
              CLEAVE_INVALID_ARGUMENT,
              "cleave_artifact_global: index 100 is out of range (the "
              "artifact has 9 globals)");
  expectError(cleave_session_set_user_state(session, "", "x", 1),
              CLEAVE_INVALID_ARGUMENT, "user-state key is empty");
  expectError(cleave_session_set_user_state(session, "\xff\xfe", "x", 1),
              CLEAVE_INVALID_ARGUMENT, "user-state key is not valid UTF-8");

  cleave_session_options options;
  cleave_session_options_init(&options);
  options.accumulate = -2;
  cleave_session *s = nullptr;
  expectError(cleave_session_create(artifact, &options, &s),
              CLEAVE_INVALID_ARGUMENT,
              "options: accumulate is -2, expected 0 (the manifest's) or a "
              "positive count");
  EXPECT_EQ(s, nullptr);
  cleave_session_options_init(&options);
  EXPECT_EQ(options.on_nonfinite, CLEAVE_NONFINITE_STOP);
  options.on_nonfinite = 2;
  expectError(cleave_session_create(artifact, &options, &s),
              CLEAVE_INVALID_ARGUMENT,
              "options: on_nonfinite is 2, expected CLEAVE_NONFINITE_STOP (0) "
              "or CLEAVE_NONFINITE_SKIP (1)");
  EXPECT_EQ(s, nullptr);
}

TEST(CApiDTypeTest, NamesAndSizesOfEveryDType) {
  EXPECT_STREQ(cleave_dtype_name(CLEAVE_DTYPE_U8), "u8");
  EXPECT_EQ(cleave_dtype_size(CLEAVE_DTYPE_U8), 1u);
  EXPECT_STREQ(cleave_dtype_name(CLEAVE_DTYPE_U32), "u32");
  EXPECT_EQ(cleave_dtype_size(CLEAVE_DTYPE_I16), 2u);
  EXPECT_STREQ(cleave_dtype_name(CLEAVE_DTYPE_BF16), "bf16");
  EXPECT_EQ(cleave_dtype_size(CLEAVE_DTYPE_F16), 2u);
  EXPECT_STREQ(cleave_dtype_name(CLEAVE_DTYPE_I64), "i64");
  // Values that name no dtype (within the enum's range of values: C++
  // leaves converting others to it undefined, which UBSan reports).
  EXPECT_STREQ(cleave_dtype_name(static_cast<cleave_dtype>(11)), "?");
  EXPECT_EQ(cleave_dtype_size(static_cast<cleave_dtype>(15)), 0u);
}

TEST_F(CApiTest, SuccessLeavesTheLastErrorAlone) {
  int64_t n = 0;
  EXPECT_EQ(cleave_session_set_accumulation(session, 0),
            CLEAVE_INVALID_ARGUMENT);
  std::string message = cleave_last_error_message();
  EXPECT_EQ(cleave_session_accumulation(session, &n), CLEAVE_OK);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(message, cleave_last_error_message());
}

TEST_F(CApiTest, StatusNames) {
  EXPECT_STREQ(cleave_status_string(CLEAVE_OK), "ok");
  EXPECT_STREQ(cleave_status_string(CLEAVE_INVALID_CHECKPOINT),
               "invalid checkpoint");
  EXPECT_STREQ(cleave_status_string(CLEAVE_NON_FINITE), "not finite");
  // 15: no enumerator, yet a value of the enum (its range is that of a
  // 4-bit field). A cast of 1234 would be undefined behaviour in C++, which
  // UBSan reports.
  EXPECT_STREQ(cleave_status_string(static_cast<cleave_status>(15)),
               "unknown status");
}

TEST_F(CApiTest, TheWrapperThrowsErrorsWithStatusAndMessage) {
  Artifact a = Artifact::load(CLEAVE_FAKE_SGD);
  Session s(a);
  try {
    s.setHyperparameter("nope", 1.0);
    FAIL() << "no exception";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_NOT_FOUND);
    EXPECT_STREQ(e.what(), "unknown hyperparameter 'nope'");
  }
  EXPECT_THROW(Artifact::load("/nonexistent/model.cleave"), Error);
}

} // namespace

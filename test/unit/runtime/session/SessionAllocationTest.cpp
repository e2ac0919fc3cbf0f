//===- SessionAllocationTest.cpp - The training loop allocates nothing ----===//
//
// Everything a micro-step needs is built when the session is created, so
// micro_step, train_batch, flush, eval and the accessors a training loop
// calls make no heap allocation at all, including the applies they trigger
// and the input copies of short or misaligned batches. The fake artifacts
// have no kernels, so every allocation counted here would be the runtime's.
//
// The counting replaces the C allocation functions (which operator new uses)
// of this executable only, which is why this test is its own binary.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void note() {
  if (counting.load(std::memory_order_relaxed))
    allocations.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

// glibc's own entry points, which the replacements forward to.
extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void *__libc_memalign(size_t, size_t);

extern "C" void *malloc(size_t bytes) {
  note();
  return __libc_malloc(bytes);
}
extern "C" void *calloc(size_t count, size_t bytes) {
  note();
  return __libc_calloc(count, bytes);
}
extern "C" void *realloc(void *p, size_t bytes) {
  note();
  return __libc_realloc(p, bytes);
}
extern "C" void *aligned_alloc(size_t alignment, size_t bytes) {
  note();
  return __libc_memalign(alignment, bytes);
}
extern "C" int posix_memalign(void **out, size_t alignment, size_t bytes) {
  note();
  void *p = __libc_memalign(alignment, bytes);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

using namespace cleave;
using namespace cleave::test;

namespace {

TEST(SessionAllocation, TheTrainingLoopAllocatesNothing) {
  Artifact artifact = Artifact::load(CLEAVE_FAKE_SGD);
  Session session(artifact);
  Data data = makeData(3 * kMicroBatch + 5, 1);
  Data full = data.slice(0, kMicroBatch), part = data.slice(0, 3);
  Batch fullBatch = full.batch(), shortBatch = part.batch(), all = data.batch();
  cleave_batch f = fullBatch.view(), s = shortBatch.view(), a = all.view();
  cleave_session *h = session.get();
  // Misaligned rows: the session has to copy them.
  Batch misaligned(kMicroBatch - 1);
  misaligned.add(full.x.data() + kFeatures, (kMicroBatch - 1) * kFeatures * 4)
      .add(full.labels.data() + 1, (kMicroBatch - 1) * 8);
  cleave_batch m = misaligned.view();
  ASSERT_EQ(cleave_session_micro_step(h, &f), CLEAVE_OK); // warm-up

  double loss = 0;
  int64_t count = 0;
  const void *out = nullptr;
  size_t bytes = 0;
  float bias[3];
  counting = true;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(cleave_session_micro_step(h, i % 2 ? &f : &s), CLEAVE_OK);
    ASSERT_EQ(cleave_session_micro_step(h, &m), CLEAVE_OK);
    ASSERT_EQ(cleave_session_train_batch(h, &a, 4), CLEAVE_OK);
    ASSERT_EQ(cleave_session_last_loss(h, &loss), CLEAVE_OK);
    ASSERT_EQ(cleave_session_step(h, &count), CLEAVE_OK);
    ASSERT_EQ(cleave_session_micro_steps(h, &count), CLEAVE_OK);
    ASSERT_EQ(cleave_session_set_hyperparameter(h, "lr", 0.01 * i), CLEAVE_OK);
    ASSERT_EQ(cleave_session_set_accumulation(h, 1 + i % 4), CLEAVE_OK);
    ASSERT_EQ(cleave_session_flush(h), CLEAVE_OK);
    ASSERT_EQ(cleave_session_eval(h, &s), CLEAVE_OK);
    ASSERT_EQ(cleave_session_output(h, "eval_step", "prediction", &out, &bytes),
              CLEAVE_OK);
    ASSERT_EQ(cleave_session_read_global(h, "fc.bias", bias, sizeof(bias)),
              CLEAVE_OK);
  }
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  ASSERT_EQ(cleave_session_step(h, &count), CLEAVE_OK);
  EXPECT_GT(count, 20);
}

TEST(SessionAllocation, ALearningRateScheduleAllocatesNothing) {
  Artifact artifact = Artifact::load(CLEAVE_FAKE_SGD);
  Session session(artifact, {/*seed=*/0, /*accumulate=*/2});
  cleave_lr_schedule cosine = makeLrSchedule(CLEAVE_LR_COSINE);
  cosine.warmup_steps = 5;
  cosine.total_steps = 30;
  session.setLrSchedule(cosine);
  Data data = makeData(kMicroBatch, 2);
  Batch batch = data.batch();
  cleave_batch b = batch.view();
  cleave_session *h = session.get();
  double lr = 0;
  ASSERT_EQ(cleave_session_micro_step(h, &b), CLEAVE_OK); // warm-up
  allocations = 0;
  counting = true;
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(cleave_session_micro_step(h, &b), CLEAVE_OK);
    ASSERT_EQ(cleave_session_hyperparameter(h, "lr", &lr), CLEAVE_OK);
  }
  ASSERT_EQ(cleave_session_flush(h), CLEAVE_OK);
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(session.step(), 21);
}

} // namespace

//===- AllocationTest.cpp - Kernel calls allocate no buffers --------------===//
//
// Primitives, staging copies, workspaces and scratchpads are all created by
// KernelContext::create; a kernel call only binds pointers. This test counts
// the heap allocations of at least kBufferBytes made while every kind of
// kernel runs repeatedly, and expects none: a kernel that allocated its
// workspace or a staging copy per call would be caught, since all of those
// are far larger here. (oneDNN itself makes a few small allocations per
// execute for its argument map; they are below the threshold.)
//
// The counting replaces the C allocation functions of this executable only,
// which is why this test is its own binary.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>

namespace {
constexpr size_t kBufferBytes = 4096;
std::atomic<bool> counting{false};
std::atomic<long> largeAllocations{0};

void note(size_t bytes) {
  if (bytes >= kBufferBytes && counting.load(std::memory_order_relaxed))
    largeAllocations.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

// glibc's own entry points, which the replacements forward to.
extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void *__libc_memalign(size_t, size_t);

extern "C" void *malloc(size_t bytes) {
  note(bytes);
  return __libc_malloc(bytes);
}
extern "C" void *calloc(size_t count, size_t bytes) {
  note(count * bytes);
  return __libc_calloc(count, bytes);
}
extern "C" void *realloc(void *p, size_t bytes) {
  note(bytes);
  return __libc_realloc(p, bytes);
}
extern "C" void *aligned_alloc(size_t alignment, size_t bytes) {
  note(bytes);
  return __libc_memalign(alignment, bytes);
}
extern "C" int posix_memalign(void **out, size_t alignment, size_t bytes) {
  note(bytes);
  void *p = __libc_memalign(alignment, bytes);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

using namespace cleave::rt;
using namespace cleave::rt::test;
using json = nlohmann::json;

namespace {

TEST(Allocation, RepeatedCallsAllocateNoBuffers) {
  const json conv = {{"n", 2},
                     {"c", 16},
                     {"h", 16},
                     {"w", 16},
                     {"o", 16},
                     {"kh", 3},
                     {"kw", 3},
                     {"oh", 16},
                     {"ow", 16},
                     {"strides", {1, 1}},
                     {"padding", {1, 1, 1, 1}},
                     {"dilations", {1, 1}},
                     {"groups", 1}};
  const json pool = {{"n", 2},
                     {"c", 16},
                     {"h", 16},
                     {"w", 16},
                     {"oh", 8},
                     {"ow", 8},
                     {"kernel", {2, 2}},
                     {"strides", {2, 2}},
                     {"padding", {0, 0, 0, 0}},
                     {"dilations", {1, 1}},
                     {"count_include_pad", false}};
  auto entry = [](json base, int64_t id, const char *op) {
    base["id"] = id;
    base["op"] = op;
    return base;
  };
  json fwd = entry(conv, 1, "conv2d_fwd");
  fwd["bias"] = true;
  fwd["activation"] = "relu";
  json bwdW = entry(conv, 3, "conv2d_bwd_weights");
  bwdW["accumulate"] = true;
  json kernels = {
      {{"id", 0},
       {"op", "matmul"},
       {"batch", 1},
       {"m", 64},
       {"k", 32},
       {"n", 48},
       {"trans_a", true},
       {"trans_b", false},
       {"b_batched", false},
       {"bias", false},
       {"activation", "none"},
       {"accumulate", true}},
      fwd,
      entry(conv, 2, "conv2d_bwd_data"),
      bwdW,
      entry(pool, 4, "max_pool2d_fwd"),
      entry(pool, 5, "max_pool2d_bwd"),
      entry(pool, 6, "avg_pool2d_bwd"),
  };
  auto ctx = makeContext(kernels);
  ASSERT_NE(ctx, nullptr);
  // Staging copies and the pooling workspace exist, so there is something a
  // careless kernel could allocate per call.
  ASSERT_GE(ctx->arenaBytes(), 2u * 16 * 16 * 16 * sizeof(float));

  std::vector<float> a(64 * 48, 0.5f), b(64 * 48, 0.5f), c(64 * 48, 0.f);
  std::vector<float> src(2 * 16 * 16 * 16, 0.25f), dst(src.size());
  std::vector<float> wei(16 * 16 * 9, 0.1f), bias(16, 0.f);
  std::vector<float> pooled(2 * 16 * 8 * 8, 1.f);
  auto callAll = [&] {
    cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(), nullptr, c.data());
    cleave_kernel_conv2d_fwd(ctx.get(), 1, src.data(), wei.data(), bias.data(),
                             dst.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 2, dst.data(), wei.data(),
                                  src.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 3, src.data(), dst.data(),
                                     wei.data());
    cleave_kernel_pool_fwd(ctx.get(), 4, src.data(), pooled.data());
    cleave_kernel_pool_bwd(ctx.get(), 5, src.data(), pooled.data(), dst.data());
    cleave_kernel_pool_bwd(ctx.get(), 6, src.data(), pooled.data(), dst.data());
  };
  // The first calls may initialise oneDNN's and OpenMP's global state.
  callAll();
  counting = true;
  for (int i = 0; i < 20; ++i)
    callAll();
  counting = false;
  EXPECT_EQ(largeAllocations.load(), 0);
}

TEST(Allocation, TheLayoutCacheAllocatesOnFirstUseOnly) {
  json conv = {{"n", 2},
               {"c", 16},
               {"h", 16},
               {"w", 16},
               {"o", 32},
               {"kh", 3},
               {"kw", 3},
               {"oh", 16},
               {"ow", 16},
               {"strides", {1, 1}},
               {"padding", {1, 1, 1, 1}},
               {"dilations", {1, 1}},
               {"groups", 1}};
  json fwd = conv, bwdData = conv, bwdW = conv;
  fwd["id"] = 0, fwd["op"] = "conv2d_fwd";
  fwd["bias"] = false, fwd["activation"] = "none";
  bwdData["id"] = 1, bwdData["op"] = "conv2d_bwd_data";
  bwdW["id"] = 2, bwdW["op"] = "conv2d_bwd_weights";
  bwdW["accumulate"] = true;
  auto ctx = makeContext(json::array({fwd, bwdData, bwdW}));
  ASSERT_NE(ctx, nullptr);
  std::vector<float> src(2 * 16 * 16 * 16, 0.25f), dst(2 * 32 * 16 * 16, 0.5f);
  std::vector<float> wei(32 * 16 * 9, 0.1f), grad(wei.size(), 0.f);
  ctx->enableLayoutCache({{wei.data(), wei.size() * sizeof(float)}},
                         {{grad.data(), grad.size() * sizeof(float)}});
  auto window = [&] {
    for (int i = 0; i < 4; ++i) {
      cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), wei.data(), nullptr,
                               dst.data());
      cleave_kernel_conv2d_bwd_data(ctx.get(), 1, dst.data(), wei.data(),
                                    src.data());
      cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src.data(), dst.data(),
                                       grad.data());
    }
    // An apply step: settles the gradients, then the parameters change.
    EXPECT_TRUE(ctx->beginParameterUpdate().ok());
    ctx->endParameterUpdate();
  };
  // The first window makes the copies and the partial sum.
  window();
  ASSERT_GE(ctx->layoutCacheBytes(), 3 * wei.size() * sizeof(float));
  counting = true;
  for (int i = 0; i < 5; ++i) {
    window();
    ctx->parametersChanged();
  }
  counting = false;
  EXPECT_FALSE(ctx->failed()) << ctx->error().message();
  EXPECT_EQ(largeAllocations.load(), 0);
}

} // namespace

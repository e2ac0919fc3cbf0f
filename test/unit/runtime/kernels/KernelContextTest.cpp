//===- KernelContextTest.cpp - Creation, errors and dispatch --------------===//
//
// KernelContext::create on valid and malformed manifests (every error names
// the kernel), cleave_cross_rank_reduce with and without a communicator, and
// the errors of failing and misused kernel calls, which the context records.
//
//===----------------------------------------------------------------------===//

#include "FakeCollectives.h"
#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"
#include "kernels/Kernel.h"
#include "kernels/OneDnnKernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <thread>

using namespace cleave::rt;
using namespace cleave::rt::test;
using json = nlohmann::json;

namespace {

/// The oneDNN library behind a CPU context, for what only it has.
OneDnnKernels &oneDnn(KernelContext &ctx) {
  return static_cast<OneDnnKernels &>(ctx.library());
}

json matmulEntry(int64_t id = 0) {
  return {{"id", id},
          {"op", "matmul"},
          {"batch", 1},
          {"m", 4},
          {"k", 5},
          {"n", 6},
          {"trans_a", false},
          {"trans_b", false},
          {"b_batched", false},
          {"bias", false},
          {"activation", "none"},
          {"accumulate", false}};
}

json convEntry(const char *op = "conv2d_fwd") {
  json e = {{"id", 0},
            {"op", op},
            {"n", 1},
            {"c", 2},
            {"h", 5},
            {"w", 5},
            {"o", 3},
            {"kh", 3},
            {"kw", 3},
            {"oh", 5},
            {"ow", 5},
            {"strides", {1, 1}},
            {"padding", {1, 1, 1, 1}},
            {"dilations", {1, 1}},
            {"groups", 1}};
  if (std::string(op) == "conv2d_fwd") {
    e["bias"] = false;
    e["activation"] = "none";
  }
  if (std::string(op) == "conv2d_bwd_weights")
    e["accumulate"] = false;
  return e;
}

json poolEntry(const char *op = "max_pool2d_fwd") {
  return {{"id", 0},
          {"op", op},
          {"n", 1},
          {"c", 2},
          {"h", 6},
          {"w", 6},
          {"oh", 3},
          {"ow", 3},
          {"kernel", {2, 2}},
          {"strides", {2, 2}},
          {"padding", {0, 0, 0, 0}},
          {"dilations", {1, 1}},
          {"count_include_pad", false}};
}

struct ErrorCase {
  const char *name;
  std::function<json()> kernels;
  /// The message must contain this (which names the kernel).
  const char *expected;
};

json one(json entry) { return json::array({std::move(entry)}); }
template <typename Fn> json with(json entry, Fn &&edit) {
  edit(entry);
  return one(std::move(entry));
}

const ErrorCase kErrorCases[] = {
    {"NotAnArray", [] { return json::object(); },
     "manifest field 'kernels' must be an array, got object"},
    {"EntryNotObject", [] { return json::array({json::array()}); },
     "kernels[0]: must be an object, got array"},
    {"MissingId",
     [] { return with(matmulEntry(), [](json &e) { e.erase("id"); }); },
     "kernels[0]: missing field 'id'"},
    {"IdNotInteger",
     [] { return with(matmulEntry(), [](json &e) { e["id"] = "0"; }); },
     "kernels[0]: field 'id' must be an integer, got string"},
    {"IdOutOfRange", [] { return one(matmulEntry(5)); },
     "kernels[0]: id 5 is out of range: the manifest has 1 kernels"},
    {"NegativeId", [] { return one(matmulEntry(-1)); },
     "kernels[0]: id -1 is out of range"},
    {"DuplicateId",
     [] {
       return json::array({matmulEntry(0), matmulEntry(0)});
     },
     "kernel 0: duplicate id (kernels[1] reuses it)"},
    {"MissingOp",
     [] { return with(matmulEntry(), [](json &e) { e.erase("op"); }); },
     "kernel 0: missing field 'op'"},
    {"UnknownOp",
     [] { return with(matmulEntry(), [](json &e) { e["op"] = "conv3d"; }); },
     "kernel 0: unknown op 'conv3d' (expected one of matmul, conv2d_fwd"},
    {"MissingField",
     [] { return with(matmulEntry(), [](json &e) { e.erase("m"); }); },
     "kernel 0 (matmul): missing field 'm'"},
    {"ErrorNamesItsKernel",
     [] {
       json bad = matmulEntry(1);
       bad["k"] = 0;
       return json::array({matmulEntry(0), bad});
     },
     "kernel 1 (matmul): field 'k' is 0, expected at least 1"},
    {"BooleanAsString",
     [] { return with(matmulEntry(), [](json &e) { e["trans_a"] = "yes"; }); },
     "kernel 0 (matmul): field 'trans_a' must be a boolean, got string"},
    {"IntegerAsFloat",
     [] { return with(matmulEntry(), [](json &e) { e["m"] = 2.5; }); },
     "kernel 0 (matmul): field 'm' must be an integer, got non-integer number"},
    {"IntegerTooLarge",
     [] {
       return with(matmulEntry(), [](json &e) { e["n"] = 10000000000LL; });
     },
     "kernel 0 (matmul): field 'n' is 10000000000, expected at most "
     "2147483647"},
    {"TensorTooLarge",
     [] {
       return with(matmulEntry(), [](json &e) {
         e["batch"] = 2147483647;
         e["m"] = 2147483647;
         e["k"] = 2147483647;
       });
     },
     "kernel 0 (matmul): tensor 'a' is too large"},
    {"UnknownActivation",
     [] {
       return with(matmulEntry(), [](json &e) { e["activation"] = "gelu"; });
     },
     "kernel 0 (matmul): field 'activation' is 'gelu', expected one of 'none', "
     "'relu'"},
    {"AccumulateWithRelu",
     [] {
       return with(matmulEntry(), [](json &e) {
         e["accumulate"] = true;
         e["activation"] = "relu";
       });
     },
     "kernel 0 (matmul): 'accumulate' requires 'activation': 'none' and "
     "'bias': false"},
    {"UnexpectedField",
     [] { return with(matmulEntry(), [](json &e) { e["alpha"] = 1; }); },
     "kernel 0 (matmul): unexpected field 'alpha' (not an attribute of "
     "matmul)"},
    {"ConvOutputSizeMismatch",
     [] { return with(convEntry(), [](json &e) { e["oh"] = 6; }); },
     "kernel 0 (conv2d_fwd): field 'oh' is 6, expected 5 = (h + pad_top + "
     "pad_bottom - dilation*(kernel-1) - 1) / stride + 1"},
    {"ConvWidthMismatchWithStride",
     [] { return with(convEntry(), [](json &e) {
            e["strides"] = {1, 2};
          }); },
     "kernel 0 (conv2d_fwd): field 'ow' is 5, expected 3"},
    {"ConvWindowLargerThanInput",
     [] { return with(convEntry(), [](json &e) { e["kh"] = 9; }); },
     "kernel 0 (conv2d_fwd): the window (9 taps, dilation 1) is larger than "
     "the padded input along h (7)"},
    {"ConvGroupsDoNotDivide",
     [] { return with(convEntry(), [](json &e) { e["groups"] = 2; }); },
     "kernel 0 (conv2d_fwd): 'groups' (2) must divide both 'c' (2) and 'o' "
     "(3)"},
    {"ConvStridesWrongLength",
     [] { return with(convEntry(), [](json &e) { e["strides"] = {1}; }); },
     "kernel 0 (conv2d_fwd): field 'strides' has 1 elements, expected 2"},
    {"ConvStridesNotArray",
     [] { return with(convEntry(), [](json &e) { e["strides"] = 1; }); },
     "kernel 0 (conv2d_fwd): field 'strides' must be an array of 2 integers, "
     "got integer"},
    {"ConvNegativePadding",
     [] {
       return with(convEntry(), [](json &e) { e["padding"] = {-1, 1, 1, 1}; });
     },
     "kernel 0 (conv2d_fwd): field 'padding'[0] is -1, expected at least 0"},
    {"ConvZeroDilation",
     [] { return with(convEntry(), [](json &e) {
            e["dilations"] = {1, 0};
          }); },
     "kernel 0 (conv2d_fwd): field 'dilations'[1] is 0, expected at least 1"},
    {"ConvBwdDataTakesNoBias",
     [] {
       return with(convEntry("conv2d_bwd_data"),
                   [](json &e) { e["bias"] = false; });
     },
     "kernel 0 (conv2d_bwd_data): unexpected field 'bias'"},
    {"ConvBwdWeightsNeedsAccumulate",
     [] {
       return with(convEntry("conv2d_bwd_weights"),
                   [](json &e) { e.erase("accumulate"); });
     },
     "kernel 0 (conv2d_bwd_weights): missing field 'accumulate'"},
    {"AvgPoolNeedsCountIncludePad",
     [] {
       return with(poolEntry("avg_pool2d_fwd"),
                   [](json &e) { e.erase("count_include_pad"); });
     },
     "kernel 0 (avg_pool2d_fwd): missing field 'count_include_pad'"},
    {"PoolKernelWrongLength",
     [] { return with(poolEntry(), [](json &e) { e["kernel"] = {2}; }); },
     "kernel 0 (max_pool2d_fwd): field 'kernel' has 1 elements, expected 2"},
    {"PoolOutputSizeMismatch",
     [] {
       return with(poolEntry("max_pool2d_bwd"), [](json &e) { e["ow"] = 4; });
     },
     "kernel 0 (max_pool2d_bwd): field 'ow' is 4, expected 3"},
    {"PoolWindowOnlyPadding",
     [] {
       return with(poolEntry("avg_pool2d_bwd"), [](json &e) {
         e["padding"] = {2, 0, 0, 0};
         e["oh"] = 4;
       });
     },
     "kernel 0 (avg_pool2d_bwd): output position 0 along h pools only "
     "padding"},
    {"PoolDilatedWindowOnlyPadding",
     [] {
       // Taps at -3 and 0 for the first window would be fine; with padding 4
       // and dilation 3 the first window's taps are -4 and -1.
       return with(poolEntry(), [](json &e) {
         e["padding"] = {0, 4, 0, 0};
         e["dilations"] = {1, 3};
         e["strides"] = {2, 1};
         e["ow"] = 7;
       });
     },
     "kernel 0 (max_pool2d_fwd): output position 0 along w pools only "
     "padding"},
    {"AvgExcludePadDilationBeyondInput",
     [] {
       // h = 2 with two taps 3 apart: taps -2 and 1 (pad_top 2), valid but
       // unsupported by oneDNN without count_include_pad.
       return with(poolEntry("avg_pool2d_fwd"), [](json &e) {
         e["h"] = 2;
         e["oh"] = 1;
         e["padding"] = {2, 0, 0, 0};
         e["dilations"] = {3, 1};
       });
     },
     "kernel 0 (avg_pool2d_fwd): dilation 3 along h exceeds the input size "
     "(2): average pooling without count_include_pad does not support it"},
};

/// Names the case in gtest's output instead of dumping its bytes.
void PrintTo(const ErrorCase &c, std::ostream *os) { *os << c.name; }

class CreateErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(CreateErrors, ReportsOneClearLine) {
  const ErrorCase &c = GetParam();
  json kernels = c.kernels();
  std::string error;
  std::unique_ptr<KernelContext> ctx = KernelContext::create(kernels, error);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(error.find(c.expected), std::string::npos)
      << "message: " << error << "\nexpected to contain: " << c.expected;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(KernelContext, CreateErrors,
                         ::testing::ValuesIn(kErrorCases),
                         [](const ::testing::TestParamInfo<ErrorCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(KernelContext, EmptyManifest) {
  auto ctx = makeContext(json::array());
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->numKernels(), 0u);
  EXPECT_EQ(ctx->arenaBytes(), 0u);
  EXPECT_EQ(oneDnn(*ctx).kernel(0), nullptr);
  EXPECT_EQ(ctx->describeKernel(0), "");
}

TEST(KernelContext, IdsInAnyOrder) {
  json pool = poolEntry();
  pool["id"] = 0;
  json conv = convEntry("conv2d_bwd_data");
  conv["id"] = 2;
  auto ctx = makeContext({matmulEntry(1), conv, pool});
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->numKernels(), 3u);
  ASSERT_NE(oneDnn(*ctx).kernel(0), nullptr);
  EXPECT_EQ(oneDnn(*ctx).kernel(0)->op(), "max_pool2d_fwd");
  EXPECT_EQ(oneDnn(*ctx).kernel(1)->op(), "matmul");
  EXPECT_EQ(oneDnn(*ctx).kernel(2)->op(), "conv2d_bwd_data");
  EXPECT_EQ(ctx->describeKernel(1).rfind("matmul ", 0), 0u)
      << ctx->describeKernel(1);
}

/// Max pooling may carry count_include_pad (it is ignored there).
TEST(KernelContext, MaxPoolAcceptsCountIncludePad) {
  json withField = poolEntry("max_pool2d_bwd");
  json without = poolEntry("max_pool2d_fwd");
  without.erase("count_include_pad");
  without["id"] = 1;
  auto ctx = makeContext({withField, without});
  EXPECT_NE(ctx, nullptr);
}

TEST(CrossRankReduce, SingleRankIsIdentity) {
  auto ctx = makeContext(json::array());
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->collectives().size(), 1);
  std::vector<float> a = {1.f, -2.f, 3.f}, b = {4.f};
  float *buffers[] = {a.data(), b.data()};
  int64_t sizes[] = {3, 1};
  for (int32_t kind :
       {CLEAVE_REDUCE_SUM, CLEAVE_REDUCE_MEAN, CLEAVE_REDUCE_ADASUM})
    cleave_cross_rank_reduce(ctx.get(), kind, 2, buffers, sizes);
  EXPECT_EQ(a, (std::vector<float>{1.f, -2.f, 3.f}));
  EXPECT_EQ(b, (std::vector<float>{4.f}));
}

TEST(CrossRankReduce, ForwardsToTheCollectives) {
  auto ctx = makeContext(json::array());
  ASSERT_NE(ctx, nullptr);
  FakeCollectives ranks(3);
  ctx->setCollectives(&ranks);
  EXPECT_EQ(&ctx->collectives(), &ranks);
  std::vector<float> a = {1.f, -2.f, 3.f}, b = {4.f};
  float *buffers[] = {a.data(), b.data()};
  int64_t sizes[] = {3, 1};
  cleave_cross_rank_reduce(ctx.get(), CLEAVE_REDUCE_SUM, 2, buffers, sizes);
  cleave_cross_rank_reduce(ctx.get(), CLEAVE_REDUCE_ADASUM, 1, buffers, sizes);
  ASSERT_EQ(ranks.calls.size(), 2u);
  EXPECT_EQ(ranks.calls[0].kind, ReduceKind::Sum);
  EXPECT_EQ(ranks.calls[0].count, 2);
  EXPECT_EQ(ranks.calls[0].buffers, buffers);
  EXPECT_EQ(ranks.calls[0].sizes, sizes);
  EXPECT_EQ(ranks.calls[1].kind, ReduceKind::Adasum);
  EXPECT_EQ(ranks.calls[1].count, 1);
  EXPECT_EQ(a, (std::vector<float>{3.f, -6.f, 9.f}));
  EXPECT_EQ(b, (std::vector<float>{12.f}));
  // Detaching returns to a single rank.
  ctx->setCollectives(nullptr);
  EXPECT_EQ(ctx->collectives().size(), 1);
  cleave_cross_rank_reduce(ctx.get(), CLEAVE_REDUCE_SUM, 2, buffers, sizes);
  EXPECT_EQ(ranks.calls.size(), 2u);
}

/// ZeRO-1 with two ranks: cleave_shard copies this rank's shard (the second
/// one, shorter, zero-padded) through the kernel library, the pair of
/// collectives goes to the job's collectives.
TEST(Sharding, ShardsAreThisRanksAndCollectivesGoToTheJob) {
  auto ctx = makeContext(json::array());
  ASSERT_NE(ctx, nullptr);
  FakeCollectives ranks(/*ranks=*/2, /*rank=*/1);
  ctx->setCollectives(&ranks);
  std::vector<float> whole = {1.f, 2.f, 3.f, 4.f, 5.f};
  std::vector<float> shard(3, -1.f);
  const float *in = whole.data();
  float *out = shard.data();
  const int64_t size = 5;
  cleave_shard(ctx.get(), 2, 1, &in, &size, &out);
  EXPECT_FALSE(ctx->failed()) << ctx->error().message();
  EXPECT_EQ(shard, (std::vector<float>{4.f, 5.f, 0.f}));
  cleave_reduce_scatter(ctx.get(), 2, 1, &in, &size, &out);
  cleave_all_gather(ctx.get(), 2, 1, &in, &size, &out);
  ASSERT_EQ(ranks.shardCalls.size(), 2u);
  EXPECT_STREQ(ranks.shardCalls[0].what, "reduce_scatter");
  EXPECT_STREQ(ranks.shardCalls[1].what, "all_gather");
  EXPECT_FALSE(ctx->failed()) << ctx->error().message();
}

/// With one rank a shard is the whole tensor: all three calls are copies.
TEST(Sharding, OneRankCopies) {
  auto ctx = makeContext(json::array());
  ASSERT_NE(ctx, nullptr);
  std::vector<float> whole = {1.f, 2.f, 3.f};
  for (auto *call :
       {&cleave_shard, &cleave_reduce_scatter, &cleave_all_gather}) {
    std::vector<float> out(3, -1.f);
    const float *in = whole.data();
    float *o = out.data();
    const int64_t size = 3;
    call(ctx.get(), 1, 1, &in, &size, &o);
    EXPECT_EQ(out, whole);
  }
  EXPECT_FALSE(ctx->failed()) << ctx->error().message();
}

/// Runs `call` on a fresh context of `kernels` and returns the error it
/// recorded.
template <typename Call> Status errorOf(const json &kernels, Call &&call) {
  auto ctx = makeContext(kernels);
  EXPECT_NE(ctx, nullptr);
  if (!ctx)
    return Status();
  EXPECT_FALSE(ctx->failed());
  call(ctx.get());
  return ctx->error();
}

/// A call that breaks the ABI cannot return an error: it records one line
/// naming the function and the kernel in the context, and the process lives
/// on.
TEST(KernelErrors, MisusedCallsAreRecordedInTheContext) {
  json pool = poolEntry("max_pool2d_bwd");
  pool["id"] = 1;
  json bias = matmulEntry(2);
  bias["bias"] = true;
  const json kernels = {matmulEntry(0), pool, bias};
  std::vector<float> buf(256, 1.f);
  float *p = buf.data();
  int64_t size = 4;
  const struct {
    std::function<void(KernelContext *)> call;
    const char *message;
  } cases[] = {
      {[&](KernelContext *ctx) {
         cleave_kernel_matmul(ctx, 7, p, p, nullptr, p);
       },
       "cleave_kernel_matmul: no kernel 7 (the context has 3)"},
      {[&](KernelContext *ctx) {
         cleave_kernel_matmul(ctx, 1, p, p, nullptr, p);
       },
       "cleave_kernel_matmul: kernel 1 (max_pool2d_bwd) is not a matmul "
       "kernel"},
      {[&](KernelContext *ctx) { cleave_kernel_pool_fwd(ctx, 1, p, p); },
       "cleave_kernel_pool_fwd: kernel 1 (max_pool2d_bwd) is not a "
       "max_pool2d_fwd or avg_pool2d_fwd kernel"},
      {[&](KernelContext *ctx) {
         cleave_kernel_pool_bwd(ctx, 1, nullptr, p, p);
       },
       "cleave_kernel_pool_bwd: kernel 1 (max_pool2d_bwd): a NULL tensor was "
       "passed for src, diff_dst or diff_src"},
      {[&](KernelContext *ctx) {
         cleave_kernel_matmul(ctx, 2, p, p, nullptr, p);
       },
       "cleave_kernel_matmul: kernel 2 (matmul): the entry has a bias but "
       "NULL was passed"},
      {[&](KernelContext *ctx) {
         cleave_cross_rank_reduce(ctx, 3, 1, &p, &size);
       },
       "cleave_cross_rank_reduce: unknown reduction kind 3 (expected 0 = sum, "
       "1 = mean, 2 = adasum)"},
      {[&](KernelContext *ctx) {
         cleave_cross_rank_reduce(ctx, CLEAVE_REDUCE_SUM, 1, &p, nullptr);
       },
       "cleave_cross_rank_reduce: NULL buffer or size array for 1 buffers"},
      {[&](KernelContext *ctx) {
         const float *in = p;
         cleave_shard(ctx, 2, 1, &in, &size, &p);
       },
       "cleave_shard: the artifact shards its optimizer state over 2 ranks, "
       "the job has 1"},
      {[&](KernelContext *ctx) {
         const float *in = p;
         cleave_all_gather(ctx, 0, 1, &in, &size, &p);
       },
       "cleave_all_gather: ranks is 0, expected >= 1"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.message);
    Status error = errorOf(kernels, c.call);
    EXPECT_EQ(error.code(), CLEAVE_INTERNAL);
    EXPECT_EQ(error.message(), c.message);
  }
}

/// After a failure every call on the context is a no-op until the error is
/// cleared, and the first error is the one kept.
TEST(KernelErrors, AFailedContextDoesNothingAndKeepsTheFirstError) {
  auto ctx = makeContext(json::array({matmulEntry(0)}));
  ASSERT_NE(ctx, nullptr);
  std::vector<float> a(4 * 5, 1.f), b(5 * 6, 2.f), c(4 * 6, -1.f);
  cleave_kernel_matmul(ctx.get(), 9, a.data(), b.data(), nullptr, c.data());
  ASSERT_TRUE(ctx->failed());
  const std::string first = ctx->error().message();
  EXPECT_EQ(first, "cleave_kernel_matmul: no kernel 9 (the context has 1)");

  // A valid call writes nothing; a second bad call does not replace the
  // first error.
  cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(), nullptr, c.data());
  EXPECT_EQ(c, std::vector<float>(4 * 6, -1.f));
  cleave_kernel_matmul(ctx.get(), 0, nullptr, b.data(), nullptr, c.data());
  int64_t size = 1;
  float *buffer = c.data();
  cleave_cross_rank_reduce(ctx.get(), 7, 1, &buffer, &size);
  EXPECT_EQ(ctx->error().message(), first);

  // Cleared, the context works again.
  ctx->clearError();
  EXPECT_FALSE(ctx->failed());
  cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(), nullptr, c.data());
  EXPECT_FALSE(ctx->failed()) << ctx->error().message();
  EXPECT_EQ(c, std::vector<float>(4 * 6, 10.f));
}

/// A real oneDNN failure at execution, not one of the runtime's own checks:
/// executing a primitive on a stream of another engine is refused by oneDNN
/// with invalid_arguments. The error is recorded with oneDNN's status and
/// the implementation, the output is untouched, and the process lives on.
TEST(KernelErrors, OneDnnExecutionErrorIsRecorded) {
  auto ctx = makeContext(json::array({matmulEntry(0)}));
  ASSERT_NE(ctx, nullptr);
  std::vector<float> a(4 * 5, 1.f), b(5 * 6, 2.f), c(4 * 6, -1.f);
  dnnl::stream own = oneDnn(*ctx).stream();
  oneDnn(*ctx).stream() =
      dnnl::stream(dnnl::engine(dnnl::engine::kind::cpu, 0));
  cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(), nullptr, c.data());
  ASSERT_TRUE(ctx->failed());
  EXPECT_EQ(ctx->error().code(), CLEAVE_INTERNAL);
  const std::string &message = ctx->error().message();
  EXPECT_EQ(message.rfind("cleave_kernel_matmul: kernel 0 (matmul): oneDNN "
                          "error: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("(invalid_arguments) in matmul "), std::string::npos)
      << message;
  EXPECT_EQ(c, std::vector<float>(4 * 6, -1.f));

  // The primitives are intact: back on its own stream, the kernel runs.
  oneDnn(*ctx).stream() = own;
  ctx->clearError();
  cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(), nullptr, c.data());
  EXPECT_FALSE(ctx->failed()) << ctx->error().message();
  EXPECT_EQ(c, std::vector<float>(4 * 6, 10.f));
}

/// With no context to record it in, the error is kept for the calling
/// thread, first error first, until taken.
TEST(KernelErrors, NullContextRecordsTheErrorForTheThread) {
  EXPECT_TRUE(KernelContext::takeErrorWithoutContext().ok());
  std::vector<float> buf(64, 1.f);
  float *p = buf.data();
  cleave_kernel_matmul(nullptr, 4, p, p, nullptr, p);
  int64_t size = 1;
  cleave_cross_rank_reduce(nullptr, CLEAVE_REDUCE_SUM, 1, &p, &size);
  Status error = KernelContext::takeErrorWithoutContext();
  EXPECT_EQ(error.code(), CLEAVE_INTERNAL);
  EXPECT_EQ(error.message(),
            "cleave_kernel_matmul: kernel 4: the context is NULL");
  EXPECT_TRUE(KernelContext::takeErrorWithoutContext().ok());

  // Per thread: another thread's error is not this one's.
  std::thread([&] {
    cleave_cross_rank_reduce(nullptr, CLEAVE_REDUCE_SUM, 1, &p, &size);
    EXPECT_EQ(KernelContext::takeErrorWithoutContext().message(),
              "cleave_cross_rank_reduce: the context is NULL");
  }).join();
  EXPECT_TRUE(KernelContext::takeErrorWithoutContext().ok());
}

} // namespace

//===- DeviceDispatchTest.cpp - Kernel calls on a GPU context -------------===//
//
// A context made by KernelContext::createForDevice sends every kernel call of
// kernel_abi.h to its KernelLibrary (the cuBLASLt/cuDNN library of a cuda
// session) instead of oneDNN, and keeps the CPU path's error rules: a call
// that fails records one line naming the entry point, and every later call
// on the context does nothing. cleave_gpu_stream hands out the device's
// stream, and is an ABI error on a CPU context. Here the device kernels are
// a recorder, so this runs without a GPU.
//
//===----------------------------------------------------------------------===//

#include "cleave/kernel_abi.h"
#include "kernels/Kernel.h"
#include "kernels/KernelContext.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace cleave::rt;

namespace {

/// Records every call; fails the calls to kernel `failId`.
class RecordingKernels final : public KernelLibrary {
public:
  void *queue() const override { return const_cast<int *>(&streamToken); }
  size_t numKernels() const override { return 0; }
  Status matmul(int64_t id, const void *a, const void *b, const float *bias,
                float *c) override {
    return record("matmul", id, {a, b, bias, c});
  }
  Status convolution(KernelKind kind, int64_t id, const void *in0,
                     const void *in1, const float *bias, void *out) override {
    return record("conv" + std::to_string(int(kind)), id,
                  {in0, in1, bias, out});
  }
  Status poolForward(int64_t id, const float *src, float *dst) override {
    return record("pool_fwd", id, {src, dst});
  }
  Status poolBackward(int64_t id, const float *src, const float *diffDst,
                      float *diffSrc) override {
    return record("pool_bwd", id, {src, diffDst, diffSrc});
  }
  Status attentionForward(int64_t id, const void *q, const void *k,
                          const void *v, const void *mask, const void *keep,
                          void *o, float *lse) override {
    return record("sdpa_fwd", id, {q, k, v, mask, keep, o, lse});
  }
  Status attentionBackward(int64_t id, const AttentionGradients &x) override {
    return record(
        "sdpa_bwd", id,
        {x.q, x.k, x.v, x.mask, x.keep, x.o, x.lse, x.dO, x.dq, x.dk, x.dv});
  }
  Status copy(float *dst, const float *src, int64_t floats) override {
    copies.push_back({dst, src, floats});
    return Status::success();
  }
  Status zero(float *, int64_t) override { return Status::success(); }

  struct Call {
    std::string what;
    int64_t id;
    std::vector<const void *> pointers;
  };
  struct Copy {
    float *dst;
    const float *src;
    int64_t floats;
  };
  std::vector<Call> calls;
  std::vector<Copy> copies;
  int64_t failId = -1;
  int streamToken = 0;

private:
  Status record(std::string what, int64_t id,
                std::vector<const void *> pointers) {
    calls.push_back({std::move(what), id, std::move(pointers)});
    if (id == failId)
      return Status(CLEAVE_INTERNAL, "kernel " + std::to_string(id) +
                                         " (matmul): cublasLtMatmul failed");
    return Status::success();
  }
};

class DeviceDispatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto kernels = std::make_unique<RecordingKernels>();
    device = kernels.get();
    context = KernelContext::create(std::move(kernels), nullptr);
    ASSERT_NE(context, nullptr);
  }

  RecordingKernels *device = nullptr;
  std::unique_ptr<KernelContext> context;
  // Stand-ins for device pointers: the calls only pass them on.
  float a[4], b[4], bias[4], c[4];
};

TEST_F(DeviceDispatchTest, EveryKernelCallGoesToTheDevice) {
  void *ctx = context.get();
  EXPECT_EQ(&context->library(), device);
  EXPECT_EQ(context->numKernels(), 0u);
  cleave_kernel_matmul(ctx, 0, a, b, bias, c);
  cleave_kernel_conv2d_fwd(ctx, 1, a, b, bias, c);
  cleave_kernel_conv2d_bwd_data(ctx, 2, a, b, c);
  cleave_kernel_conv2d_bwd_weights(ctx, 3, a, b, c);
  cleave_kernel_pool_fwd(ctx, 4, a, c);
  cleave_kernel_pool_bwd(ctx, 5, a, b, c);
  ASSERT_FALSE(context->failed()) << context->error().message();
  ASSERT_EQ(device->calls.size(), 6u);
  const std::string conv = "conv";
  EXPECT_EQ(device->calls[0].what, "matmul");
  EXPECT_EQ(device->calls[0].pointers,
            (std::vector<const void *>{a, b, bias, c}));
  EXPECT_EQ(device->calls[1].what,
            conv + std::to_string(int(KernelKind::ConvolutionForward)));
  EXPECT_EQ(device->calls[2].what,
            conv + std::to_string(int(KernelKind::ConvolutionBackwardData)));
  EXPECT_EQ(device->calls[2].pointers,
            (std::vector<const void *>{a, b, nullptr, c}));
  EXPECT_EQ(device->calls[3].what,
            conv + std::to_string(int(KernelKind::ConvolutionBackwardWeights)));
  EXPECT_EQ(device->calls[4].what, "pool_fwd");
  EXPECT_EQ(device->calls[5].what, "pool_bwd");
  for (size_t i = 0; i < device->calls.size(); ++i)
    EXPECT_EQ(device->calls[i].id, int64_t(i));
}

TEST_F(DeviceDispatchTest, AFailedCallIsStickyAndNamed) {
  void *ctx = context.get();
  device->failId = 7;
  cleave_kernel_matmul(ctx, 7, a, b, nullptr, c);
  ASSERT_TRUE(context->failed());
  EXPECT_EQ(context->error().code(), CLEAVE_INTERNAL);
  EXPECT_EQ(context->error().message(),
            "cleave_kernel_matmul: kernel 7 (matmul): cublasLtMatmul failed");
  // Nothing more reaches the device, and the first error stays.
  cleave_kernel_matmul(ctx, 0, a, b, nullptr, c);
  cleave_kernel_pool_fwd(ctx, 1, a, c);
  EXPECT_EQ(device->calls.size(), 1u);
  EXPECT_EQ(context->error().message(),
            "cleave_kernel_matmul: kernel 7 (matmul): cublasLtMatmul failed");
  context->clearError();
  cleave_kernel_pool_fwd(ctx, 1, a, c);
  EXPECT_EQ(device->calls.size(), 2u);
}

TEST_F(DeviceDispatchTest, StreamOfTheContext) {
  EXPECT_EQ(cleave_gpu_stream(context.get()), &device->streamToken);
  EXPECT_FALSE(context->failed());

  std::string error;
  std::unique_ptr<KernelContext> cpu =
      KernelContext::create(nlohmann::json::array(), error);
  ASSERT_NE(cpu, nullptr) << error;
  EXPECT_EQ(cleave_gpu_stream(cpu.get()), nullptr);
  ASSERT_TRUE(cpu->failed());
  EXPECT_EQ(cpu->error().code(), CLEAVE_INTERNAL);
  EXPECT_EQ(cpu->error().message(),
            "cleave_gpu_stream: the session runs on the CPU (a cuda artifact "
            "in a CPU session; the session refuses those)");
}

TEST_F(DeviceDispatchTest, SingleRankShardingCopiesOnTheDevice) {
  void *ctx = context.get();
  const float *inputs[] = {a, b};
  float *outputs[] = {c, bias};
  const int64_t sizes[] = {4, 3};
  cleave_shard(ctx, 1, 2, inputs, sizes, outputs);
  cleave_reduce_scatter(ctx, 1, 2, inputs, sizes, outputs);
  cleave_all_gather(ctx, 1, 2, inputs, sizes, outputs);
  ASSERT_FALSE(context->failed()) << context->error().message();
  ASSERT_EQ(device->copies.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(device->copies[i].dst, outputs[i % 2]);
    EXPECT_EQ(device->copies[i].src, inputs[i % 2]);
    EXPECT_EQ(device->copies[i].floats, sizes[i % 2]);
  }
  // A reduction over one rank is the identity: nothing to do on the device.
  float *buffers[] = {c};
  const int64_t one[] = {4};
  cleave_cross_rank_reduce(ctx, CLEAVE_REDUCE_MEAN, 1, buffers, one);
  EXPECT_FALSE(context->failed());
  EXPECT_EQ(device->copies.size(), 6u);
}

} // namespace

/*===- ConvArtifact.c - Convolutions and pooling on the fake GPU --*- C -*-===//
 *
 * A hand-written `"device": "cuda"` graph artifact whose entries call the
 * runtime's convolution and pooling kernels, for the fake CUDA driver and
 * its cuDNN (FakeCudnn.c): what a compiled CNN's entry points pass to the
 * kernel ABI, without a GPU.
 *
 * The convolution: src [2, 4, 6, 6], weights [6, 2, 3, 2] (two groups),
 * strides (2, 1), dilations (1, 2), padding top 1 and nothing else, output
 * [2, 6, 3, 4]. cuDNN pads both sides alike, so it pads the bottom too; the
 * output size is the same, and no window reaches that row, which is what
 * the runtime checks before it accepts the entry. With FAKE_BAD_PADDING the
 * padding is bottom 1 alone: cuDNN would compute a 2-row output, and the
 * session refuses the entry.
 *
 *   conv_fwd          dst = relu(conv(src, wei) + bias)       kernel 0
 *   conv_bwd_data     diff_src from diff_dst and wei          kernel 1
 *   conv_bwd_weights  gw += diff_wei(src, diff_dst)           kernel 2
 *                     (gw a global, so that the sum shows)
 *   max_pool, max_pool_bwd   3x3 windows, stride 2, padding 1 on every
 *                     side, src [2, 3, 5, 5] to [2, 3, 3, 3]   kernels 3, 4
 *   avg_pool, avg_pool_bwd   the same windows, averaging the taps inside
 *                     the input (count_include_pad false)      kernels 5, 6
 *
 * and the three convolutions in bf16, as cleave-compile makes them for
 * cuda: every operand stored in bf16 ("src_type", "diff_dst_type",
 * "wei_type", "dst_type"), no bias, activation or accumulate. A fake kernel
 * narrows the two f32 inputs into the scratch area (round to nearest even),
 * the kernel writes its bf16 result there, and another fake kernel widens
 * it into the f32 output:
 *
 *   conv_fwd_bf16, conv_bwd_data_bf16, conv_bwd_weights_bf16  kernels 7-9
 *
 * With FAKE_BF16_F32_WEIGHTS kernel 7 keeps its weights in f32, which a
 * cuda session refuses (cuDNN multiplies bf16 only on bf16 tensors).
 *
 *===----------------------------------------------------------------------===*/

#include "FakeCuda.h"
#include "cleave/kernel_abi.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

#define TENSOR(role, name, shape)                                              \
  "{\"role\": \"" role "\", \"name\": \"" name                                 \
  "\", \"dtype\": \"f32\", \"shape\": " shape "}"
#define SRC "[2, 4, 6, 6]"
#define WEI "[6, 2, 3, 2]"
#define DST "[2, 6, 3, 4]"
#define POOL_SRC "[2, 3, 5, 5]"
#define POOL_DST "[2, 3, 3, 3]"

#ifdef FAKE_BAD_PADDING
#define PADDING "[0, 0, 1, 0]"
#else
#define PADDING "[1, 0, 0, 0]"
#endif
#define CONV(id, op, extra)                                                    \
  "{\"id\": " #id ", \"op\": \"" op "\", \"n\": 2, \"c\": 4, \"h\": 6, "       \
  "\"w\": 6, \"o\": 6, \"kh\": 3, \"kw\": 2, \"oh\": 3, \"ow\": 4, "           \
  "\"strides\": [2, 1], \"padding\": " PADDING ", \"dilations\": [1, 2], "     \
  "\"groups\": 2" extra "}"
#define POOL(id, op)                                                           \
  "{\"id\": " #id ", \"op\": \"" op "\", \"n\": 2, \"c\": 3, \"h\": 5, "       \
  "\"w\": 5, \"oh\": 3, \"ow\": 3, \"kernel\": [3, 3], \"strides\": [2, 2], "  \
  "\"padding\": [1, 1, 1, 1], \"dilations\": [1, 1], "                         \
  "\"count_include_pad\": false}"

#define ENTRY(name, args) "\"" name "\": {\"args\": [" args "]}"
/* A bf16 entry's scratch area: its inputs narrowed at kIn0 and kIn1, its
 * bf16 result at kOut. */
enum { kIn0 = 0, kIn1 = 640, kOut = 1280, kScratch = 1920 };
#define SCRATCH "{\"role\": \"scratch\", \"bytes\": 1920}"
#define BF16 ", \"math\": \"bf16\", \"dst_type\": \"bf16\""
#ifdef FAKE_BF16_F32_WEIGHTS
#define FWD_WEI_TYPE "f32"
#else
#define FWD_WEI_TYPE "bf16"
#endif
#define GLOBAL_GW "{\"role\": \"global\", \"name\": \"gw\"}"

// clang-format off
static const char kManifest[] =
    "{\"abi_version\": " STR(CLEAVE_KERNEL_ABI_VERSION) ", "
    "\"kind\": \"graph\", \"device\": \"cuda\", "
    "\"gpu_arches\": [\"sm_80\", \"sm_90\"], \"ptx_arch\": \"sm_80\", "
    "\"globals\": [{\"name\": \"gw\", \"kind\": \"param\", "
    "\"dtype\": \"f32\", \"shape\": " WEI ", "
    "\"init\": {\"kind\": \"zeros\"}}], "
    "\"hyperparameters\": [], \"inputs\": [], \"entries\": {"
    ENTRY("conv_fwd", TENSOR("input", "src", SRC) ", "
                      TENSOR("input", "wei", WEI) ", "
                      TENSOR("input", "bias", "[6]") ", "
                      TENSOR("output", "dst", DST)) ", "
    ENTRY("conv_bwd_data", TENSOR("input", "diff_dst", DST) ", "
                           TENSOR("input", "wei", WEI) ", "
                           TENSOR("output", "diff_src", SRC)) ", "
    ENTRY("conv_bwd_weights", TENSOR("input", "src", SRC) ", "
                              TENSOR("input", "diff_dst", DST) ", "
                              GLOBAL_GW) ", "
    ENTRY("max_pool", TENSOR("input", "src", POOL_SRC) ", "
                      TENSOR("output", "dst", POOL_DST)) ", "
    ENTRY("max_pool_bwd", TENSOR("input", "src", POOL_SRC) ", "
                          TENSOR("input", "diff_dst", POOL_DST) ", "
                          TENSOR("output", "diff_src", POOL_SRC)) ", "
    ENTRY("avg_pool", TENSOR("input", "src", POOL_SRC) ", "
                      TENSOR("output", "dst", POOL_DST)) ", "
    ENTRY("avg_pool_bwd", TENSOR("input", "diff_dst", POOL_DST) ", "
                          TENSOR("output", "diff_src", POOL_SRC)) ", "
    ENTRY("conv_fwd_bf16", TENSOR("input", "src", SRC) ", "
                           TENSOR("input", "wei", WEI) ", "
                           TENSOR("output", "dst", DST) ", " SCRATCH) ", "
    ENTRY("conv_bwd_data_bf16", TENSOR("input", "diff_dst", DST) ", "
                                TENSOR("input", "wei", WEI) ", "
                                TENSOR("output", "diff_src", SRC) ", "
                                SCRATCH) ", "
    ENTRY("conv_bwd_weights_bf16", TENSOR("input", "src", SRC) ", "
                                   TENSOR("input", "diff_dst", DST) ", "
                                   TENSOR("output", "diff_wei", WEI) ", "
                                   SCRATCH)
    "}, \"kernels\": ["
    CONV(0, "conv2d_fwd", ", \"bias\": true, \"activation\": \"relu\"") ", "
    CONV(1, "conv2d_bwd_data", "") ", "
    CONV(2, "conv2d_bwd_weights", ", \"accumulate\": true") ", "
    POOL(3, "max_pool2d_fwd") ", "
    POOL(4, "max_pool2d_bwd") ", "
    POOL(5, "avg_pool2d_fwd") ", "
    POOL(6, "avg_pool2d_bwd") ", "
    CONV(7, "conv2d_fwd", BF16 ", \"bias\": false, \"activation\": "
                          "\"none\", \"src_type\": \"bf16\", "
                          "\"wei_type\": \"" FWD_WEI_TYPE "\"") ", "
    CONV(8, "conv2d_bwd_data", BF16 ", \"diff_dst_type\": \"bf16\", "
                               "\"wei_type\": \"bf16\"") ", "
    CONV(9, "conv2d_bwd_weights", BF16 ", \"accumulate\": false, "
                                  "\"src_type\": \"bf16\", "
                                  "\"diff_dst_type\": \"bf16\"") "]}";
// clang-format on

int32_t cleave_abi_version(void) { return CLEAVE_KERNEL_ABI_VERSION; }
const char *cleave_manifest(void) { return kManifest; }
const void *cleave_init_data(void) { return NULL; }

void cleave_entry_conv_fwd(void *ctx, void **args) {
  cleave_kernel_conv2d_fwd(ctx, 0, args[0], args[1], (const float *)args[2],
                           args[3]);
}

void cleave_entry_conv_bwd_data(void *ctx, void **args) {
  cleave_kernel_conv2d_bwd_data(ctx, 1, args[0], args[1], args[2]);
}

void cleave_entry_conv_bwd_weights(void *ctx, void **args) {
  cleave_kernel_conv2d_bwd_weights(ctx, 2, args[0], args[1], args[2]);
}

void cleave_entry_max_pool(void *ctx, void **args) {
  cleave_kernel_pool_fwd(ctx, 3, (const float *)args[0], (float *)args[1]);
}

void cleave_entry_max_pool_bwd(void *ctx, void **args) {
  cleave_kernel_pool_bwd(ctx, 4, (const float *)args[0], (const float *)args[1],
                         (float *)args[2]);
}

void cleave_entry_avg_pool(void *ctx, void **args) {
  cleave_kernel_pool_fwd(ctx, 5, (const float *)args[0], (float *)args[1]);
}

void cleave_entry_avg_pool_bwd(void *ctx, void **args) {
  cleave_kernel_pool_bwd(ctx, 6, NULL, (const float *)args[0],
                         (float *)args[1]);
}

/* The element counts of each bf16 entry's two inputs and its result. */
static const int kCounts[3][3] = {
    {288, 72, 144}, /* conv_fwd_bf16: src, wei, dst */
    {144, 72, 288}, /* conv_bwd_data_bf16: diff_dst, wei, diff_src */
    {288, 144, 72}, /* conv_bwd_weights_bf16: src, diff_dst, diff_wei */
};

/* `n` floats to bf16, rounded to nearest even (no NaN here). */
static void toBf16(const float *in, uint16_t *out, int n) {
  for (int i = 0; i < n; ++i)
    out[i] = fake_bf16_bits(in[i]);
}

/* The fake module's kernels: params[0] points to the entry's `args`,
 * params[1] to the entry's row of kCounts. */
static void narrowKernel(void **params) {
  void **args = *(void ***)params[0];
  const int *counts = kCounts[*(const int64_t *)params[1]];
  unsigned char *scratch = (unsigned char *)args[3];
  toBf16((const float *)args[0], (uint16_t *)(void *)(scratch + kIn0),
         counts[0]);
  toBf16((const float *)args[1], (uint16_t *)(void *)(scratch + kIn1),
         counts[1]);
}
static void widenKernel(void **params) {
  void **args = *(void ***)params[0];
  const int *counts = kCounts[*(const int64_t *)params[1]];
  const uint16_t *in =
      (const uint16_t *)(const void *)((unsigned char *)args[3] + kOut);
  float *out = (float *)args[2];
  for (int i = 0; i < counts[2]; ++i) {
    uint32_t wide = (uint32_t)in[i] << 16;
    memcpy(&out[i], &wide, sizeof(float));
  }
}
static const fake_cuda_kernel kKernels[] = {{"narrow", narrowKernel},
                                            {"widen", widenKernel}};
static fake_cuda_module kModule = {FAKE_CUDA_MODULE_MAGIC, 2, kKernels};
static void *module;

__attribute__((constructor)) static void loadModule(void) {
  module = mgpuModuleLoad(&kModule, sizeof(kModule));
}
__attribute__((destructor)) static void unloadModule(void) {
  mgpuModuleUnload(module);
}

static void launch(void *ctx, const char *name, void **args, int64_t entry) {
  void *params[2] = {&args, &entry};
  mgpuLaunchKernel(mgpuModuleGetFunction(module, name), 1, 1, 1, 1, 1, 1, 0,
                   cleave_gpu_stream(ctx), params, NULL, 2);
}

void cleave_entry_conv_fwd_bf16(void *ctx, void **args) {
  unsigned char *scratch = (unsigned char *)args[3];
  launch(ctx, "narrow", args, 0);
  cleave_kernel_conv2d_fwd(ctx, 7, scratch + kIn0, scratch + kIn1, NULL,
                           scratch + kOut);
  launch(ctx, "widen", args, 0);
}

void cleave_entry_conv_bwd_data_bf16(void *ctx, void **args) {
  unsigned char *scratch = (unsigned char *)args[3];
  launch(ctx, "narrow", args, 1);
  cleave_kernel_conv2d_bwd_data(ctx, 8, scratch + kIn0, scratch + kIn1,
                                scratch + kOut);
  launch(ctx, "widen", args, 1);
}

void cleave_entry_conv_bwd_weights_bf16(void *ctx, void **args) {
  unsigned char *scratch = (unsigned char *)args[3];
  launch(ctx, "narrow", args, 2);
  cleave_kernel_conv2d_bwd_weights(ctx, 9, scratch + kIn0, scratch + kIn1,
                                   scratch + kOut);
  launch(ctx, "widen", args, 2);
}

/*===- GraphArtifact.c - A hand-written graph artifact -----------*- C -*-===//
 *
 * What the tracing frontend compiles, written by hand: a manifest of kind
 * "graph" whose entries take caller-owned buffers.
 *
 *   axpy    w += a * x (w a global updated in place), y = 2 * w, and a
 *           scratch area it fills (to prove it is there and aligned)
 *   matmul  c = a @ b through the runtime's kernel 0 (to prove the
 *           executable's kernel context reaches the entry)
 *   sum_ranks  w summed across the ranks of a data-parallel job, in place
 *           (the identity with one rank)
 *   unknown_kernel  calls kernel 9, which the manifest does not have (code
 *           that breaks the kernel ABI), then writes c = 7
 *
 * With FAKE_CUDA, a `"device": "cuda"` graph artifact for the fake CUDA
 * driver (FakeCudaDriver.c, whose device memory is host memory) and its
 * cuBLASLt (FakeCublasLt.c), as FakeArtifact.c's: the work of axpy and
 * unknown_kernel's c = 7 are kernels of a fake module launched on
 * cleave_gpu_stream(ctx), so that a captured graph replays them, and
 * unknown_kernel's kernel call fails as on the CPU. Two more entries:
 *
 *   matmul_bf16  a and b narrowed to bf16 (round to nearest even) by a fake
 *           kernel into the scratch area, a at an offset of 2 bytes (the
 *           weakest alignment of a bf16 view), then c = a @ b + bias through
 *           kernel 1, which reads both as stored ("a_type", "b_type": bf16),
 *           as cleave-compile makes a cuda artifact's bf16 matmuls; the f32
 *           bias {0.5, -0.25} is in the scratch area too
 *   matmul_fast_bf16  c = a @ b through kernel 2, "math": "bf16" on f32
 *           operands (a hand-written table)
 *
 * With FAKE_MIXED_BF16 as well, kernel 1 stores only a in bf16, which a
 * cuda session refuses (cuBLASLt takes bf16 for both operands or neither).
 *
 *===----------------------------------------------------------------------===*/

#include "cleave/kernel_abi.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

#ifdef FAKE_CUDA
#include "FakeCuda.h"

#define DEVICE_FIELDS                                                          \
  "\"device\": \"cuda\", \"gpu_arches\": [\"sm_80\", \"sm_90\"], "             \
  "\"ptx_arch\": \"sm_80\", "
#define MATMUL_ARGS                                                            \
  "{\"role\": \"input\", \"name\": \"a\", \"dtype\": \"f32\", \"shape\": "     \
  "[2, 3]},"                                                                   \
  "{\"role\": \"input\", \"name\": \"b\", \"dtype\": \"f32\", \"shape\": "     \
  "[3, 2]},"                                                                   \
  "{\"role\": \"output\", \"name\": \"c\", \"dtype\": \"f32\", \"shape\": "    \
  "[2, 2]}"
#define MATMUL_ENTRY                                                           \
  "\"matmul\": {\"args\": [" MATMUL_ARGS "]},"                                 \
  "\"matmul_bf16\": {\"args\": [" MATMUL_ARGS                                  \
  ", {\"role\": \"scratch\", \"bytes\": 48}]},"                                \
  "\"matmul_fast_bf16\": {\"args\": [" MATMUL_ARGS "]},"
#define MATMUL_KERNEL(id, bias, extra)                                         \
  "{\"id\": " #id ", \"op\": \"matmul\", \"batch\": 1, \"m\": 2, \"k\": 3, "   \
  "\"n\": 2, \"trans_a\": false, \"trans_b\": false, \"b_batched\": false, "   \
  "\"bias\": " #bias ", \"activation\": \"none\", \"accumulate\": false" extra \
  "}"
#ifdef FAKE_MIXED_BF16
#define B_TYPE "f32"
#else
#define B_TYPE "bf16"
#endif
#define KERNELS                                                                \
  "\"kernels\": [" MATMUL_KERNEL(0, false, "") ", " MATMUL_KERNEL(             \
      1, true,                                                                 \
      ", \"math\": \"bf16\", \"a_type\": \"bf16\", \"b_type\": \"" B_TYPE      \
      "\"") ", " MATMUL_KERNEL(2, false, ", \"math\": \"bf16\"") "]}"
#else
#define DEVICE_FIELDS ""
#define MATMUL_ENTRY                                                           \
  "\"matmul\": {\"args\": ["                                                   \
  "{\"role\": \"input\", \"name\": \"a\", \"dtype\": \"f32\", \"shape\": "     \
  "[2, 3]},"                                                                   \
  "{\"role\": \"input\", \"name\": \"b\", \"dtype\": \"f32\", \"shape\": "     \
  "[3, 2]},"                                                                   \
  "{\"role\": \"output\", \"name\": \"c\", \"dtype\": \"f32\", \"shape\": "    \
  "[2, 2]}]},"
#define KERNELS                                                                \
  "\"kernels\": [{\"id\": 0, \"op\": \"matmul\", \"batch\": 1, \"m\": 2, "     \
  "\"k\": 3, \"n\": 2, \"trans_a\": false, \"trans_b\": false, "               \
  "\"b_batched\": false, \"bias\": false, \"activation\": \"none\", "          \
  "\"accumulate\": false}]}"
#endif

static const char kManifest[] = "{\"abi_version\": " STR(
    CLEAVE_KERNEL_ABI_VERSION) ", "
                               "\"kind\": \"graph\"," DEVICE_FIELDS
                               "\"globals\": ["
                               "{\"name\": \"w\", \"kind\": \"param\", "
                               "\"dtype\": \"f32\", \"shape\": "
                               "[4], \"init\": {\"kind\": \"zeros\"}}],"
                               "\"hyperparameters\": [], \"inputs\": [],"
                               "\"entries\": {"
                               "\"axpy\": {\"args\": ["
                               "{\"role\": \"input\", \"name\": \"x\", "
                               "\"dtype\": \"f32\", \"shape\": "
                               "[4]},"
                               "{\"role\": \"input\", \"name\": \"a\", "
                               "\"dtype\": \"f32\", \"shape\": "
                               "[]},"
                               "{\"role\": \"output\", \"name\": \"y\", "
                               "\"dtype\": \"f32\", \"shape\": "
                               "[4]},"
                               "{\"role\": \"global\", \"name\": \"w\"},"
                               "{\"role\": \"scratch\", \"bytes\": "
                               "100}]}," MATMUL_ENTRY
                               "\"sum_ranks\": {\"args\": [{\"role\": "
                               "\"global\", \"name\": \"w\"}]},"
                               "\"unknown_kernel\": {\"args\": ["
                               "{\"role\": \"output\", \"name\": \"c\", "
                               "\"dtype\": \"f32\", \"shape\": "
                               "[2, 2]}]}}," KERNELS;

int32_t cleave_abi_version(void) { return CLEAVE_KERNEL_ABI_VERSION; }
const char *cleave_manifest(void) { return kManifest; }
const void *cleave_init_data(void) { return NULL; }

/* The bodies of the entries, on their argument arrays. */
static void axpy(void **args) {
  const float *x = (const float *)args[0];
  float a = *(const float *)args[1];
  float *y = (float *)args[2];
  float *w = (float *)args[3];
  unsigned char *scratch = (unsigned char *)args[4];
  for (int i = 0; i < 100; ++i)
    scratch[i] = (unsigned char)i;
  for (int i = 0; i < 4; ++i) {
    w[i] += a * x[i];
    y[i] = 2 * w[i];
  }
}

static void fill7(void **args) {
  float *c = (float *)args[0];
  for (int i = 0; i < 4; ++i)
    c[i] = 7.f;
}

#ifdef FAKE_CUDA
/* `n` floats to bf16, rounded to nearest even (no NaN here). */
static void toBf16(const float *in, uint16_t *out, int n) {
  for (int i = 0; i < n; ++i)
    out[i] = fake_bf16_bits(in[i]);
}

/* matmul_bf16's a (at scratch + 2) and b (at scratch + 16) in bf16, and
 * its f32 bias {0.5, -0.25} (at scratch + 32). */
static void narrow(void **args) {
  unsigned char *scratch = (unsigned char *)args[3];
  toBf16((const float *)args[0], (uint16_t *)(void *)(scratch + 2), 6);
  toBf16((const float *)args[1], (uint16_t *)(void *)(scratch + 16), 6);
  const float bias[2] = {0.5f, -0.25f};
  memcpy(scratch + 32, bias, sizeof(bias));
}

/* The fake module's kernels: params[0] points to the entry's `args`. */
static void axpyKernel(void **params) { axpy(*(void ***)params[0]); }
static void fill7Kernel(void **params) { fill7(*(void ***)params[0]); }
static void narrowKernel(void **params) { narrow(*(void ***)params[0]); }
static const fake_cuda_kernel kKernels[] = {
    {"axpy", axpyKernel}, {"fill7", fill7Kernel}, {"narrow", narrowKernel}};
static fake_cuda_module kModule = {FAKE_CUDA_MODULE_MAGIC, 3, kKernels};
static void *module;

__attribute__((constructor)) static void loadModule(void) {
  module = mgpuModuleLoad(&kModule, sizeof(kModule));
}
__attribute__((destructor)) static void unloadModule(void) {
  mgpuModuleUnload(module);
}

/* Every fake kernel takes two 8-byte parameters; the second is unused. */
static void launch(void *ctx, const char *name, void **args) {
  int64_t unused = 0;
  void *params[2] = {&args, &unused};
  mgpuLaunchKernel(mgpuModuleGetFunction(module, name), 1, 1, 1, 1, 1, 1, 0,
                   cleave_gpu_stream(ctx), params, NULL, 2);
}

void cleave_entry_matmul(void *ctx, void **args) {
  cleave_kernel_matmul(ctx, 0, args[0], args[1], NULL, (float *)args[2]);
}

void cleave_entry_matmul_bf16(void *ctx, void **args) {
  launch(ctx, "narrow", args);
  unsigned char *scratch = (unsigned char *)args[3];
  cleave_kernel_matmul(ctx, 1, scratch + 2, scratch + 16,
                       (const float *)(void *)(scratch + 32), (float *)args[2]);
}

void cleave_entry_matmul_fast_bf16(void *ctx, void **args) {
  cleave_kernel_matmul(ctx, 2, args[0], args[1], NULL, (float *)args[2]);
}
#else
static void launch(void *ctx, const char *name, void **args) {
  (void)ctx;
  if (name[0] == 'a')
    axpy(args);
  else
    fill7(args);
}

void cleave_entry_matmul(void *ctx, void **args) {
  cleave_kernel_matmul(ctx, 0, (const float *)args[0], (const float *)args[1],
                       NULL, (float *)args[2]);
}
#endif

void cleave_entry_axpy(void *ctx, void **args) { launch(ctx, "axpy", args); }

void cleave_entry_sum_ranks(void *ctx, void **args) {
  float *w = (float *)args[0];
  const int64_t size = 4;
  cleave_cross_rank_reduce(ctx, CLEAVE_REDUCE_SUM, 1, &w, &size);
}

void cleave_entry_unknown_kernel(void *ctx, void **args) {
  float *c = (float *)args[0];
  cleave_kernel_matmul(ctx, 9, c, c, NULL, c);
  launch(ctx, "fill7", args);
}

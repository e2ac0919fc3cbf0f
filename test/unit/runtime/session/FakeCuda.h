/*===- FakeCuda.h - The module format of the fake CUDA driver ----*- C -*-===//
 *
 * FakeCudaDriver.c is a libcuda.so.1 for machines without a GPU: "device"
 * memory is host memory and every copy happens at once. A "module" image it
 * loads is not a fatbin but this table of host functions, which the fake
 * cuda artifact (FakeArtifact.c with FAKE_CUDA) hands to mgpuModuleLoad and
 * the fake cuLaunchKernel calls with the launch's parameter array (every
 * fake kernel takes two 8-byte parameters, which is what a captured graph
 * keeps of a launch). That lets
 * the runtime's device session, its mgpu* functions and its error paths run
 * on any machine.
 *
 *===----------------------------------------------------------------------===*/

#ifndef CLEAVE_TEST_FAKECUDA_H
#define CLEAVE_TEST_FAKECUDA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FAKE_CUDA_MODULE_MAGIC 0x46414b45u /* "FAKE" */

typedef struct fake_cuda_kernel {
  const char *name;
  void (*fn)(void **params);
} fake_cuda_kernel;

typedef struct fake_cuda_module {
  uint32_t magic;
  int32_t count;
  const fake_cuda_kernel *kernels;
} fake_cuda_module;

/* What the fake driver counts, for tests (fake_cuda_stats()). */
typedef struct fake_cuda_stats_t {
  int64_t module_loads;
  int64_t module_unloads;
  int64_t launches;       /* kernels run, directly or by a graph */
  int64_t graph_launches; /* cuGraphLaunch calls */
  int64_t captures;       /* graphs captured */
  int64_t allocations;
  int64_t bytes_allocated;
} fake_cuda_stats_t;

/* `x` as the bits of a bfloat16, rounded to nearest even (no NaN here):
 * how the fake libraries and artifacts narrow to bf16, as a GPU would. */
static inline uint16_t fake_bf16_bits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

/* The runtime's exports of MLIR's CUDA runtime wrappers, which the fake
 * cuda artifacts call as compiled ones do (device/Modules.cpp). */
#ifdef __cplusplus
extern "C" {
#endif
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
#ifdef __cplusplus
}
#endif

#endif /* CLEAVE_TEST_FAKECUDA_H */

/*===- FakeCublasLt.c - cuBLASLt for the fake CUDA driver ---------*- C -*-===//
 *
 * Built as libcublasLt.so.13 next to the fake driver (FakeCudaDriver.c),
 * whose device memory is host memory: it implements the cuBLASLt entry
 * points the runtime resolves (runtime/src/device/cuda/CudaKernels.cpp),
 * with cublasLt.h's signatures, and computes every matmul on the host in
 * double, so that the runtime's cuda matmul kernel (its layouts,
 * transposes, batching, epilogues, accumulation and operand types) runs and
 * is checked without a GPU.
 *
 * The heuristics answer as the real library's type table does for what
 * Cleave asks (cuBLAS documentation, cublasLtMatmul's "Datatypes Supported"):
 * CUBLAS_COMPUTE_32F on f32 A, B, C and D, or on bf16 A and B with an f32
 * (or bf16) C = D; CUBLAS_COMPUTE_32F_FAST_16BF and _FAST_TF32 on f32 only.
 * Any other combination, a preference that allows less alignment than an
 * element of an operand, and a bias pointer (whose value the heuristics read
 * as its alignment) not aligned to a float have no algorithm
 * (CUBLAS_STATUS_NOT_SUPPORTED).
 *
 * A matmul is a launch of a fake kernel through the fake driver's
 * cuLaunchKernel on the call's stream: it runs in order with the artifact's
 * kernels, and a captured graph records and replays it.
 *
 * fake_cublaslt_trace() lists what each matmul ran, one line
 * each: "matmul compute=<type> a=<type> b=<type> c=<type> <rows>x<cols>
 * batch=<n> epilogue=<n> beta=<value>", in cuBLASLt's terms (its A is the
 * ABI's B); fake_cublaslt_clear() empties it.
 *
 *===----------------------------------------------------------------------===*/

#include "FakeCuda.h"

#include <cublasLt.h>
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fake_desc {
  cublasComputeType_t compute;
  cublasOperation_t transa, transb;
  cublasLtEpilogue_t epilogue;
  const float *bias;
};

struct fake_layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch;
  int64_t stride;
};

struct fake_preference {
  uint32_t alignment[4]; /* A, B, C, D */
};

static char trace[1 << 16];

const char *fake_cublaslt_trace(void) { return trace; }
void fake_cublaslt_clear(void) { trace[0] = '\0'; }

static const char *typeName(cudaDataType_t t) {
  switch (t) {
  case CUDA_R_32F:
    return "f32";
  case CUDA_R_16BF:
    return "bf16";
  default:
    return "other";
  }
}

static const char *computeName(cublasComputeType_t c) {
  switch (c) {
  case CUBLAS_COMPUTE_32F:
    return "32F";
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    return "32F_FAST_16BF";
  case CUBLAS_COMPUTE_32F_FAST_TF32:
    return "32F_FAST_TF32";
  default:
    return "other";
  }
}

static size_t elementBytes(cudaDataType_t t) {
  return t == CUDA_R_16BF ? 2 : 4;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  static int token;
  *handle = (cublasLtHandle_t)&token;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  (void)handle;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
         : status == CUBLAS_STATUS_NOT_SUPPORTED
             ? "CUBLAS_STATUS_NOT_SUPPORTED"
             : "CUBLAS_STATUS_INVALID_VALUE";
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  struct fake_desc *d = calloc(1, sizeof(*d));
  d->compute = compute;
  d->transa = d->transb = CUBLAS_OP_N;
  d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  *desc = (cublasLtMatmulDesc_t)d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  free(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t size) {
  struct fake_desc *d = (struct fake_desc *)desc;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    memcpy(&d->transa, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    memcpy(&d->transb, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    memcpy(&d->epilogue, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    memcpy(&d->bias, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
    cudaDataType_t t;
    memcpy(&t, buf, sizeof(t));
    return t == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS
                           : CUBLAS_STATUS_NOT_SUPPORTED;
  }
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (ld < (int64_t)rows)
    return CUBLAS_STATUS_INVALID_VALUE;
  struct fake_layout *l = calloc(1, sizeof(*l));
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  l->batch = 1;
  *layout = (cublasLtMatrixLayout_t)l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  free(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t size) {
  struct fake_layout *l = (struct fake_layout *)layout;
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    memcpy(&l->batch, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    memcpy(&l->stride, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  struct fake_preference *f = calloc(1, sizeof(*f));
  for (int i = 0; i < 4; ++i)
    f->alignment[i] = 256;
  *p = (cublasLtMatmulPreference_t)f;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  free(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t size) {
  struct fake_preference *f = (struct fake_preference *)p;
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    memcpy(&f->alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES],
           buf, size);
    return CUBLAS_STATUS_SUCCESS;
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

/* Whether cuBLASLt has kernels for these types (see the file comment). */
static int supported(const struct fake_desc *d, const struct fake_layout *a,
                     const struct fake_layout *b, const struct fake_layout *c,
                     const struct fake_layout *dd) {
  if (a->type != b->type || c->type != dd->type)
    return 0;
  if (d->compute == CUBLAS_COMPUTE_32F)
    return (a->type == CUDA_R_32F && c->type == CUDA_R_32F) ||
           (a->type == CUDA_R_16BF &&
            (c->type == CUDA_R_32F || c->type == CUDA_R_16BF));
  if (d->compute == CUBLAS_COMPUTE_32F_FAST_16BF ||
      d->compute == CUBLAS_COMPUTE_32F_FAST_TF32)
    return a->type == CUDA_R_32F && c->type == CUDA_R_32F;
  return 0;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t aDesc, cublasLtMatrixLayout_t bDesc,
    cublasLtMatrixLayout_t cDesc, cublasLtMatrixLayout_t dDesc,
    cublasLtMatmulPreference_t preference, int requested,
    cublasLtMatmulHeuristicResult_t results[], int *found) {
  (void)handle;
  const struct fake_layout *layouts[4] = {
      (const struct fake_layout *)aDesc, (const struct fake_layout *)bDesc,
      (const struct fake_layout *)cDesc, (const struct fake_layout *)dDesc};
  const struct fake_preference *p = (const struct fake_preference *)preference;
  *found = 0;
  if (requested < 1 || !supported((const struct fake_desc *)desc, layouts[0],
                                  layouts[1], layouts[2], layouts[3]))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < 4; ++i)
    if (p->alignment[i] < elementBytes(layouts[i]->type))
      return CUBLAS_STATUS_NOT_SUPPORTED;
  /* The bias pointer's value stands for its alignment (cublasLt.h): an f32
   * bias below a float's has no algorithm. */
  const struct fake_desc *d = (const struct fake_desc *)desc;
  if ((d->epilogue == CUBLASLT_EPILOGUE_BIAS ||
       d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) &&
      (uintptr_t)d->bias % 4 != 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  memset(&results[0], 0, sizeof(results[0]));
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

static double load(const struct fake_layout *l, const void *base, int64_t batch,
                   uint64_t row, uint64_t col) {
  int64_t index = batch * l->stride + (int64_t)(row + col * (uint64_t)l->ld);
  if (l->type == CUDA_R_16BF) {
    uint16_t bits = ((const uint16_t *)base)[index];
    uint32_t wide = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &wide, sizeof(f));
    return f;
  }
  return ((const float *)base)[index];
}

/* One cublasLtMatmul call, kept until the library is unloaded: a captured
 * graph replays it. */
struct fake_call {
  struct fake_desc desc;
  struct fake_layout a, b, c, d;
  float alpha, beta;
  const void *pa, *pb, *pc;
  void *out;
  struct fake_call *next;
};
static struct fake_call *calls;

__attribute__((destructor)) static void freeCalls(void) {
  while (calls) {
    struct fake_call *next = calls->next;
    free(calls);
    calls = next;
  }
}

/* The fake kernel that runs a call: params[0] points to its record. */
static void runMatmul(void **params) {
  const struct fake_call *call = *(struct fake_call *const *)params[0];
  const struct fake_desc *d = &call->desc;
  const struct fake_layout *la = &call->a, *lb = &call->b, *lc = &call->c,
                           *ld = &call->d;
  const uint64_t m = ld->rows, n = ld->cols;
  const uint64_t k = d->transa == CUBLAS_OP_N ? la->cols : la->rows;
  const int bias = d->epilogue == CUBLASLT_EPILOGUE_BIAS ||
                   d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const int relu = d->epilogue == CUBLASLT_EPILOGUE_RELU ||
                   d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  for (int32_t t = 0; t < ld->batch; ++t)
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (uint64_t p = 0; p < k; ++p) {
          double x = d->transa == CUBLAS_OP_N ? load(la, call->pa, t, i, p)
                                              : load(la, call->pa, t, p, i);
          double y = d->transb == CUBLAS_OP_N ? load(lb, call->pb, t, p, j)
                                              : load(lb, call->pb, t, j, p);
          sum += x * y;
        }
        double r = call->alpha * sum;
        if (call->beta != 0)
          r += call->beta * load(lc, call->pc, t, i, j);
        if (bias)
          r += d->bias[i];
        if (relu && r < 0)
          r = 0;
        ((float *)
             call->out)[t * ld->stride + (int64_t)(i + j * (uint64_t)ld->ld)] =
            (float)r;
      }
  size_t used = strlen(trace);
  snprintf(trace + used, sizeof(trace) - used,
           "matmul compute=%s a=%s b=%s c=%s %llux%llu batch=%d epilogue=%d "
           "beta=%g\n",
           computeName(d->compute), typeName(la->type), typeName(lb->type),
           typeName(lc->type), (unsigned long long)m, (unsigned long long)n,
           (int)ld->batch, (int)d->epilogue, (double)call->beta);
}

static fake_cuda_kernel kMatmulKernel = {"cublasLtMatmul", runMatmul};

/* Checks the call, then launches it on `stream` through the fake driver, so
 * that it runs in order with the artifact's kernels and a capture records
 * it. */
cublasStatus_t
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
               const void *alpha, const void *a, cublasLtMatrixLayout_t aDesc,
               const void *b, cublasLtMatrixLayout_t bDesc, const void *beta,
               const void *c, cublasLtMatrixLayout_t cDesc, void *out,
               cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  (void)handle, (void)algo, (void)workspace, (void)workspaceBytes;
  const struct fake_desc *d = (const struct fake_desc *)desc;
  const struct fake_layout *la = (const struct fake_layout *)aDesc,
                           *lb = (const struct fake_layout *)bDesc,
                           *lc = (const struct fake_layout *)cDesc,
                           *ld = (const struct fake_layout *)dDesc;
  if (!supported(d, la, lb, lc, ld) || ld->type != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const uint64_t m = ld->rows, n = ld->cols;
  const uint64_t k = d->transa == CUBLAS_OP_N ? la->cols : la->rows;
  const uint64_t bk = d->transb == CUBLAS_OP_N ? lb->rows : lb->cols;
  const uint64_t am = d->transa == CUBLAS_OP_N ? la->rows : la->cols;
  const uint64_t bn = d->transb == CUBLAS_OP_N ? lb->cols : lb->rows;
  if (k != bk || am != m || bn != n || lc->rows != m || lc->cols != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((d->epilogue == CUBLASLT_EPILOGUE_BIAS ||
       d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) &&
      !d->bias)
    return CUBLAS_STATUS_INVALID_VALUE;
  struct fake_call *call = calloc(1, sizeof(*call));
  call->desc = *d;
  call->a = *la;
  call->b = *lb;
  call->c = *lc;
  call->d = *ld;
  call->alpha = *(const float *)alpha;
  call->beta = *(const float *)beta;
  call->pa = a;
  call->pb = b;
  call->pc = c;
  call->out = out;
  call->next = calls;
  calls = call;
  int64_t unused = 0;
  void *params[2] = {&call, &unused};
  CUresult r = cuLaunchKernel((CUfunction)&kMatmulKernel, 1, 1, 1, 1, 1, 1, 0,
                              (CUstream)stream, params, NULL);
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                           : CUBLAS_STATUS_EXECUTION_FAILED;
}

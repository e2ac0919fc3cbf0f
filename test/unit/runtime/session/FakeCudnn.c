/*===- FakeCudnn.c - cuDNN for the fake CUDA driver ---------------*- C -*-===//
 *
 * Built as libcudnn.so.9 next to the fake driver (FakeCudaDriver.c), whose
 * device memory is host memory: it implements the cuDNN entry points the
 * runtime resolves (runtime/src/device/cuda/CudaKernels.cpp), with
 * cudnn.h's signatures, and computes every convolution and pooling on the
 * host in double, as cuDNN defines them: packed NCHW tensors, KCRS filters,
 * cross-correlation, the same padding on both sides of a dimension (output
 * size 1 + (in + 2 pad - dilation (k - 1) - 1) / stride), groups through the
 * group count, alpha and beta as `y = alpha op(x) + beta y`. So the runtime's
 * cuda convolution and pooling kernels (their descriptors, padding mapping,
 * algorithm choice, workspace, bias, ReLU and accumulation) run and are
 * checked without a GPU.
 *
 * Types, as cuDNN's legacy "supported configurations" table has them for
 * what Cleave may ask: every tensor and filter f32 with an f32 convolution
 * (FLOAT_CONFIG), or every one bf16 with an f32 convolution
 * (PSEUDO_BFLOAT16_CONFIG, which needs tensor-op or default math: FMA math
 * has no bf16 kernel). Anything else is CUDNN_STATUS_NOT_SUPPORTED.
 *
 * The algorithm queries (the _v7 heuristics) answer three algorithms, best
 * first. On f32 tensors: algorithm 0 is non-deterministic, algorithm 1 a
 * deterministic tensor-op one, algorithm 2 deterministic FMA math needing
 * kWorkspace bytes of workspace (what Cleave's f32 contract takes). On
 * bf16 tensors: algorithm 0 non-deterministic tensor-op math, algorithm 1
 * deterministic with default math, algorithm 2 not supported (no FMA
 * kernel for bf16). cuDNN runs an algorithm with the math type of the
 * descriptor, which a caller sets to the one the algorithm was offered with
 * (on f32 a tensor-op algorithm needs a tensor-op descriptor; on bf16 the
 * descriptor's math must be the algorithm's). A call that breaks that, or
 * gives less workspace than its algorithm needs, is CUDNN_STATUS_BAD_PARAM;
 * one with an algorithm not offered, CUDNN_STATUS_NOT_SUPPORTED.
 *
 * A call is a launch of a fake kernel through the fake driver's
 * cuLaunchKernel on the handle's stream: it runs in order with the
 * artifact's kernels, and a captured graph records and replays it.
 *
 * The backend (graph) API, for the runtime's fused attention: tensor,
 * pointwise, matmul and reduction descriptors, pointwise, matmul, reduction
 * and reshape operations, operation graphs, heuristics, engine configs,
 * engines, execution plans and variant packs. cudnnBackendExecute
 * interprets whatever graph it is given, not one pattern: the operations in
 * dependency order, on the host in double, each result rounded to its
 * compute type (f32) and stored as its tensor's type (f32, bf16 rounded to
 * nearest even, int32, boolean), virtual tensors in host temporaries laid
 * out by their strides (NaN until written), size-1 dimensions broadcast,
 * by-value scalars read from the variant pack's host pointers when the
 * graph is enqueued. A matmul multiplies the last two dimensions of
 * [.., M, K] and [.., K, N] (batch dimensions broadcast); a reduction folds
 * each input element into the result element it broadcasts from; a
 * reshape reads its input's memory through the result's dimensions and
 * strides (a transpose, when they swap). Pointwise modes: ADD, SUB, MUL,
 * DIV, MAX, MIN, EXP, LOG, NEG, IDENTITY, the six comparisons, GEN_INDEX
 * (an element's index along AXIS) and BINARY_SELECT (T ? X : B).
 * Finalizing checks required attributes (CUDNN_STATUS_BAD_PARAM when
 * missing), attribute value types, operand counts and shapes, that
 * comparisons write and BINARY_SELECT reads a BOOLEAN mask (as
 * cudnn-frontend builds them), each uid naming one tensor, each virtual
 * tensor written by exactly one operation, and no cycles;
 * execution checks that every bound uid has a non-NULL pointer aligned as
 * its tensor declares and that the plan's workspace is given. A mode,
 * operator, type or attribute this fake lacks is CUDNN_STATUS_NOT_SUPPORTED,
 * with cudnnGetLastErrorString saying so.
 *
 * The heuristics offer engines 0 and 1 in mode A and engine 2 as the
 * fallback: engine 0 carries the NONDETERMINISTIC numerical note, engine 1
 * needs kGraphWorkspace bytes of workspace, which it overwrites with NaN
 * around every operation (so a bound tensor placed in it is clobbered).
 * fake_cudnn_refuse_graphs(1) makes the heuristics refuse every graph
 * (NOT_SUPPORTED_GRAPH_PATTERN), (2) every execution plan fail to finalize
 * (NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT), (3) the heuristics refuse a
 * graph with a matmul of an f32 operand that writes a bound bf16 tensor
 * (the attention backward's dQ = dS k written straight to dq, as
 * cudnn-frontend's deterministic graph has it: a cuDNN without a
 * deterministic backward), (4) one with a matmul of an f32 operand at all
 * (that backward either way), (0) none of these.
 * fake_cudnn_fail_executions(1) makes cudnnBackendExecute fail
 * (EXECUTION_FAILED), (0) not.
 *
 * fake_cudnn_trace() lists what each call ran, one line each, for example
 * "conv_fwd x=f32 w=f32 y=f32 2x4x6x6 k=6 algo=2 beta=0", "add_tensor",
 * "relu", "pool_fwd max 3x3", "graph ops=14 engine=1"; fake_cudnn_clear()
 * empties it.
 *
 *===----------------------------------------------------------------------===*/

#include "FakeCuda.h"

#include <cuda.h>
#include <cudnn.h>

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWorkspace = 1024 };

struct cudnnContext {
  cudaStream_t stream;
};
struct cudnnTensorStruct {
  cudnnDataType_t type;
  int n, c, h, w;
};
struct cudnnFilterStruct {
  cudnnDataType_t type;
  int k, c, h, w;
};
struct cudnnConvolutionStruct {
  int pad[2], stride[2], dilation[2], groups;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  cudnnMathType_t math;
};
struct cudnnActivationStruct {
  cudnnActivationMode_t mode;
};
struct cudnnPoolingStruct {
  cudnnPoolingMode_t mode;
  int window[2], pad[2], stride[2];
};

static char trace[1 << 16];

const char *fake_cudnn_trace(void) { return trace; }
void fake_cudnn_clear(void) { trace[0] = '\0'; }

static void note(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *format, ...) {
  size_t used = strlen(trace);
  va_list args;
  va_start(args, format);
  vsnprintf(trace + used, sizeof(trace) - used, format, args);
  va_end(args);
  used = strlen(trace);
  if (used + 1 < sizeof(trace))
    strcpy(trace + used, "\n");
}

static const char *typeName(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT      ? "f32"
         : t == CUDNN_DATA_BFLOAT16 ? "bf16"
                                    : "other";
}

static double load(cudnnDataType_t type, const void *base, size_t i) {
  if (type == CUDNN_DATA_BFLOAT16) {
    uint32_t wide = (uint32_t)((const uint16_t *)base)[i] << 16;
    float f;
    memcpy(&f, &wide, sizeof(f));
    return f;
  }
  return ((const float *)base)[i];
}

static void store(cudnnDataType_t type, void *base, size_t i, double v) {
  float f = (float)v;
  if (type == CUDNN_DATA_BFLOAT16) {
    ((uint16_t *)base)[i] = fake_bf16_bits(f);
    return;
  }
  ((float *)base)[i] = f;
}

/* y = alpha v + beta y, where beta = 0 never reads y (cuDNN's rule). */
static void blend(cudnnDataType_t type, void *y, size_t i, double v,
                  float alpha, float beta) {
  double r = alpha * v;
  if (beta != 0)
    r += beta * load(type, y, i);
  store(type, y, i, r);
}

//===- Handles and descriptors --------------------------------------------===//

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define FAKE_STATUS(name)                                                      \
  case name:                                                                   \
    return #name;
    FAKE_STATUS(CUDNN_STATUS_SUCCESS)
    FAKE_STATUS(CUDNN_STATUS_NOT_INITIALIZED)
    FAKE_STATUS(CUDNN_STATUS_BAD_PARAM)
    FAKE_STATUS(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    FAKE_STATUS(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    FAKE_STATUS(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    FAKE_STATUS(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    FAKE_STATUS(CUDNN_STATUS_NOT_SUPPORTED)
    FAKE_STATUS(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    FAKE_STATUS(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    FAKE_STATUS(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    FAKE_STATUS(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
#undef FAKE_STATUS
  default:
    return "CUDNN_STATUS_EXECUTION_FAILED";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  *handle = calloc(1, sizeof(struct cudnnContext));
  return *handle ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  free(handle);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

#define FAKE_CREATE_DESTROY(Name, Type, Struct)                                \
  cudnnStatus_t cudnnCreate##Name##Descriptor(Type *desc) {                    \
    *desc = calloc(1, sizeof(struct Struct));                                  \
    return *desc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;           \
  }                                                                            \
  cudnnStatus_t cudnnDestroy##Name##Descriptor(Type desc) {                    \
    free(desc);                                                                \
    return CUDNN_STATUS_SUCCESS;                                               \
  }
FAKE_CREATE_DESTROY(Tensor, cudnnTensorDescriptor_t, cudnnTensorStruct)
FAKE_CREATE_DESTROY(Filter, cudnnFilterDescriptor_t, cudnnFilterStruct)
FAKE_CREATE_DESTROY(Convolution, cudnnConvolutionDescriptor_t,
                    cudnnConvolutionStruct)
FAKE_CREATE_DESTROY(Activation, cudnnActivationDescriptor_t,
                    cudnnActivationStruct)
FAKE_CREATE_DESTROY(Pooling, cudnnPoolingDescriptor_t, cudnnPoolingStruct)
#undef FAKE_CREATE_DESTROY

static int knownType(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_BFLOAT16;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc,
                                         cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c,
                                         int h, int w) {
  if (format != CUDNN_TENSOR_NCHW || n < 1 || c < 1 || h < 1 || w < 1)
    return CUDNN_STATUS_BAD_PARAM;
  if (!knownType(type))
    return CUDNN_STATUS_NOT_SUPPORTED;
  desc->type = type;
  desc->n = n, desc->c = c, desc->h = h, desc->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc,
                                         cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k,
                                         int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW || k < 1 || c < 1 || h < 1 || w < 1)
    return CUDNN_STATUS_BAD_PARAM;
  if (!knownType(type))
    return CUDNN_STATUS_NOT_SUPPORTED;
  desc->type = type;
  desc->k = k, desc->c = c, desc->h = h, desc->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc,
                                              int padH, int padW, int strideH,
                                              int strideW, int dilationH,
                                              int dilationW,
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (padH < 0 || padW < 0 || strideH < 1 || strideW < 1 || dilationH < 1 ||
      dilationW < 1)
    return CUDNN_STATUS_BAD_PARAM;
  desc->pad[0] = padH, desc->pad[1] = padW;
  desc->stride[0] = strideH, desc->stride[1] = strideW;
  desc->dilation[0] = dilationH, desc->dilation[1] = dilationW;
  desc->mode = mode;
  desc->compute = compute;
  desc->groups = 1;
  desc->math = CUDNN_DEFAULT_MATH;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                            int groups) {
  if (groups < 1)
    return CUDNN_STATUS_BAD_PARAM;
  desc->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                          cudnnMathType_t math) {
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}

static int outputSize(int in, int pad, int k, int stride, int dilation) {
  return 1 + (in + 2 * pad - dilation * (k - 1) - 1) / stride;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, int *n, int *c, int *h, int *ow) {
  if (x->c != w->c * conv->groups || w->k % conv->groups != 0)
    return CUDNN_STATUS_BAD_PARAM;
  *n = x->n;
  *c = w->k;
  *h = outputSize(x->h, conv->pad[0], w->h, conv->stride[0], conv->dilation[0]);
  *ow =
      outputSize(x->w, conv->pad[1], w->w, conv->stride[1], conv->dilation[1]);
  return *h >= 1 && *ow >= 1 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t desc,
                                           cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t nan,
                                           double coef) {
  (void)nan, (void)coef;
  if (mode != CUDNN_ACTIVATION_RELU)
    return CUDNN_STATUS_NOT_SUPPORTED;
  desc->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t desc,
                                          cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan,
                                          int windowH, int windowW, int padH,
                                          int padW, int strideH, int strideW) {
  (void)nan;
  if (windowH < 1 || windowW < 1 || padH < 0 || padW < 0 || strideH < 1 ||
      strideW < 1)
    return CUDNN_STATUS_BAD_PARAM;
  desc->mode = mode;
  desc->window[0] = windowH, desc->window[1] = windowW;
  desc->pad[0] = padH, desc->pad[1] = padW;
  desc->stride[0] = strideH, desc->stride[1] = strideW;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t pool,
                                  const cudnnTensorDescriptor_t x, int *n,
                                  int *c, int *h, int *w) {
  *n = x->n;
  *c = x->c;
  *h = outputSize(x->h, pool->pad[0], pool->window[0], pool->stride[0], 1);
  *w = outputSize(x->w, pool->pad[1], pool->window[1], pool->stride[1], 1);
  return *h >= 1 && *w >= 1 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

//===- Convolutions -------------------------------------------------------===//

/* Whether cuDNN has kernels for these types and this math (see the file
 * comment), and the shapes agree. */
static cudnnStatus_t checkConvolution(const struct cudnnTensorStruct *x,
                                      const struct cudnnFilterStruct *w,
                                      const struct cudnnConvolutionStruct *cv,
                                      const struct cudnnTensorStruct *y) {
  if (cv->compute != CUDNN_DATA_FLOAT || x->type != w->type ||
      x->type != y->type)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->type == CUDNN_DATA_BFLOAT16 && cv->math == CUDNN_FMA_MATH)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (cv->mode != CUDNN_CROSS_CORRELATION)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->c != w->c * cv->groups || w->k % cv->groups != 0 || y->n != x->n ||
      y->c != w->k ||
      y->h !=
          outputSize(x->h, cv->pad[0], w->h, cv->stride[0], cv->dilation[0]) ||
      y->w !=
          outputSize(x->w, cv->pad[1], w->w, cv->stride[1], cv->dilation[1]))
    return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

/* The math type algorithm `algo` is offered with, on bf16 tensors or f32
 * ones (see the file comment). */
static cudnnMathType_t offeredMath(int algo, int bf16) {
  if (bf16)
    return algo == 0   ? CUDNN_TENSOR_OP_MATH
           : algo == 1 ? CUDNN_DEFAULT_MATH
                       : CUDNN_FMA_MATH;
  return algo == 1 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

/* The three answers of every heuristics query (see the file comment). */
#define FAKE_HEURISTICS(Perf, bf16, requested, returned, perf)                 \
  do {                                                                         \
    const int count = (requested) < 3 ? (requested) : 3;                       \
    for (int i = 0; i < count; ++i) {                                          \
      Perf *p = &(perf)[i];                                                    \
      memset(p, 0, sizeof(*p));                                                \
      p->algo = i;                                                             \
      p->status = (bf16) && i == 2 ? CUDNN_STATUS_NOT_SUPPORTED                \
                                   : CUDNN_STATUS_SUCCESS;                     \
      p->time = (float)(i + 1);                                                \
      p->memory = i == 2 ? kWorkspace : 0;                                     \
      p->determinism = i == 0 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC; \
      p->mathType = offeredMath(i, bf16);                                      \
    }                                                                          \
    *(returned) = count;                                                       \
  } while (0)

static size_t workspaceOf(int algo) { return algo == 2 ? kWorkspace : 0; }

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y, const int requested, int *returned,
    cudnnConvolutionFwdAlgoPerf_t *perf) {
  (void)handle;
  cudnnStatus_t s = checkConvolution(x, w, conv, y);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  FAKE_HEURISTICS(cudnnConvolutionFwdAlgoPerf_t, x->type == CUDNN_DATA_BFLOAT16,
                  requested, returned, perf);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dx, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *perf) {
  (void)handle;
  cudnnStatus_t s = checkConvolution(dx, w, conv, dy);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  FAKE_HEURISTICS(cudnnConvolutionBwdDataAlgoPerf_t,
                  dx->type == CUDNN_DATA_BFLOAT16, requested, returned, perf);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dw, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
  (void)handle;
  cudnnStatus_t s = checkConvolution(x, dw, conv, dy);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  FAKE_HEURISTICS(cudnnConvolutionBwdFilterAlgoPerf_t,
                  x->type == CUDNN_DATA_BFLOAT16, requested, returned, perf);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
    size_t *bytes) {
  (void)handle, (void)x, (void)w, (void)conv, (void)y;
  *bytes = workspaceOf((int)algo);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dx, cudnnConvolutionBwdDataAlgo_t algo,
    size_t *bytes) {
  (void)handle, (void)w, (void)dy, (void)conv, (void)dx;
  *bytes = workspaceOf((int)algo);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dw, cudnnConvolutionBwdFilterAlgo_t algo,
    size_t *bytes) {
  (void)handle, (void)x, (void)dy, (void)conv, (void)dw;
  *bytes = workspaceOf((int)algo);
  return CUDNN_STATUS_SUCCESS;
}

enum fake_op {
  kConvForward,
  kConvBackwardData,
  kConvBackwardFilter,
  kAddTensor,
  kRelu,
  kPoolForward,
  kPoolBackward,
  kGraph
};

struct fake_execution;
static void runGraph(const struct fake_execution *execution);
static void freeExecution(struct fake_execution *execution);

/* One call, kept until the library is unloaded: a captured graph replays
 * it. `in0`, `in1` and `out` are, for a convolution forward x, w and y;
 * backward data dy, w and dx; backward filter x, dy and dw; add tensor A
 * and C; ReLU x and y; pooling forward x and y; pooling backward x, dy and
 * dx (and `in2` y). */
struct fake_call {
  enum fake_op op;
  struct cudnnTensorStruct x, y, a;
  struct cudnnFilterStruct w;
  struct cudnnConvolutionStruct conv;
  struct cudnnPoolingStruct pool;
  int algo;
  float alpha, beta;
  const void *in0, *in1, *in2;
  void *out;
  /* kGraph: an operation graph and what cudnnBackendExecute bound. */
  struct fake_execution *execution;
  struct fake_call *next;
};
static struct fake_call *calls;

__attribute__((destructor)) static void freeCalls(void) {
  while (calls) {
    struct fake_call *next = calls->next;
    freeExecution(calls->execution);
    free(calls);
    calls = next;
  }
}

/* Calls `tap(call, xIndex, wIndex, yIndex)` for every multiply of the
 * convolution. */
static void forEachTap(const struct fake_call *call,
                       void (*tap)(const struct fake_call *, size_t, size_t,
                                   size_t, double *),
                       double *sums) {
  const struct cudnnTensorStruct *x = &call->x, *y = &call->y;
  const struct cudnnFilterStruct *w = &call->w;
  const struct cudnnConvolutionStruct *cv = &call->conv;
  const int cg = w->c, og = w->k / cv->groups;
  for (int b = 0; b < y->n; ++b)
    for (int oc = 0; oc < y->c; ++oc)
      for (int oy = 0; oy < y->h; ++oy)
        for (int ox = 0; ox < y->w; ++ox)
          for (int ci = 0; ci < cg; ++ci)
            for (int ky = 0; ky < w->h; ++ky)
              for (int kx = 0; kx < w->w; ++kx) {
                int iy = oy * cv->stride[0] - cv->pad[0] + ky * cv->dilation[0];
                int ix = ox * cv->stride[1] - cv->pad[1] + kx * cv->dilation[1];
                if (iy < 0 || iy >= x->h || ix < 0 || ix >= x->w)
                  continue;
                int ic = (oc / og) * cg + ci;
                tap(call, (((size_t)b * x->c + ic) * x->h + iy) * x->w + ix,
                    (((size_t)oc * cg + ci) * w->h + ky) * w->w + kx,
                    (((size_t)b * y->c + oc) * y->h + oy) * y->w + ox, sums);
              }
}

/* sums[] is indexed by the call's output. */
static void tapForward(const struct fake_call *c, size_t xi, size_t wi,
                       size_t yi, double *sums) {
  sums[yi] += load(c->x.type, c->in0, xi) * load(c->w.type, c->in1, wi);
}
static void tapBackwardData(const struct fake_call *c, size_t xi, size_t wi,
                            size_t yi, double *sums) {
  sums[xi] += load(c->y.type, c->in0, yi) * load(c->w.type, c->in1, wi);
}
static void tapBackwardFilter(const struct fake_call *c, size_t xi, size_t wi,
                              size_t yi, double *sums) {
  sums[wi] += load(c->x.type, c->in0, xi) * load(c->y.type, c->in1, yi);
}

static size_t tensorSize(const struct cudnnTensorStruct *t) {
  return (size_t)t->n * t->c * t->h * t->w;
}

static void runConvolution(const struct fake_call *call) {
  size_t count;
  cudnnDataType_t type;
  void (*tap)(const struct fake_call *, size_t, size_t, size_t, double *);
  switch (call->op) {
  case kConvForward:
    count = tensorSize(&call->y), type = call->y.type, tap = tapForward;
    break;
  case kConvBackwardData:
    count = tensorSize(&call->x), type = call->x.type, tap = tapBackwardData;
    break;
  default:
    count = (size_t)call->w.k * call->w.c * call->w.h * call->w.w;
    type = call->w.type, tap = tapBackwardFilter;
    break;
  }
  double *sums = calloc(count, sizeof(double));
  forEachTap(call, tap, sums);
  for (size_t i = 0; i < count; ++i)
    blend(type, call->out, i, sums[i], call->alpha, call->beta);
  free(sums);
}

//===- Pooling ------------------------------------------------------------===//

static int isMax(cudnnPoolingMode_t mode) {
  return mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC;
}

/* Pooling window `o` of plane `plane`: the flat index of its first maximum
 * (row-major; -1 if the window holds only padding) and its average. */
static void poolWindow(const struct fake_call *call, const void *x,
                       size_t plane, int oy, int ox, long *argmax,
                       double *average, int *taps) {
  const struct cudnnTensorStruct *in = &call->x;
  const struct cudnnPoolingStruct *p = &call->pool;
  double best = -INFINITY, sum = 0;
  int inside = 0;
  *argmax = -1;
  for (int ky = 0; ky < p->window[0]; ++ky)
    for (int kx = 0; kx < p->window[1]; ++kx) {
      int iy = oy * p->stride[0] - p->pad[0] + ky;
      int ix = ox * p->stride[1] - p->pad[1] + kx;
      if (iy < 0 || iy >= in->h || ix < 0 || ix >= in->w)
        continue;
      size_t i = (plane * in->h + iy) * in->w + ix;
      double v = load(in->type, x, i);
      ++inside;
      sum += v;
      if (*argmax < 0 || v > best) {
        best = v;
        *argmax = (long)i;
      }
    }
  *taps = p->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
              ? p->window[0] * p->window[1]
              : inside;
  *average = inside ? sum / *taps : 0;
}

static void runPooling(const struct fake_call *call) {
  const struct cudnnTensorStruct *x = &call->x, *y = &call->y;
  const int max = isMax(call->pool.mode);
  if (call->op == kPoolForward) {
    for (size_t plane = 0; plane < (size_t)x->n * x->c; ++plane)
      for (int oy = 0; oy < y->h; ++oy)
        for (int ox = 0; ox < y->w; ++ox) {
          long argmax;
          double average;
          int taps;
          poolWindow(call, call->in0, plane, oy, ox, &argmax, &average, &taps);
          double v = max ? load(x->type, call->in0, (size_t)argmax) : average;
          blend(y->type, call->out, (plane * y->h + oy) * y->w + ox, v,
                call->alpha, call->beta);
        }
    return;
  }
  /* Backward: dx = alpha * sum of the routed dy + beta * dx. */
  const size_t count = tensorSize(x);
  double *sums = calloc(count, sizeof(double));
  const struct cudnnPoolingStruct *p = &call->pool;
  for (size_t plane = 0; plane < (size_t)x->n * x->c; ++plane)
    for (int oy = 0; oy < y->h; ++oy)
      for (int ox = 0; ox < y->w; ++ox) {
        double dy = load(y->type, call->in1, (plane * y->h + oy) * y->w + ox);
        if (max) {
          long argmax;
          double average;
          int taps;
          poolWindow(call, call->in0, plane, oy, ox, &argmax, &average, &taps);
          if (argmax >= 0)
            sums[argmax] += dy;
          continue;
        }
        int inside = 0;
        for (int pass = 0; pass < 2; ++pass)
          for (int ky = 0; ky < p->window[0]; ++ky)
            for (int kx = 0; kx < p->window[1]; ++kx) {
              int iy = oy * p->stride[0] - p->pad[0] + ky;
              int ix = ox * p->stride[1] - p->pad[1] + kx;
              if (iy < 0 || iy >= x->h || ix < 0 || ix >= x->w)
                continue;
              if (pass == 0) {
                ++inside;
                continue;
              }
              int divisor =
                  p->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                      ? p->window[0] * p->window[1]
                      : inside;
              sums[(plane * x->h + iy) * x->w + ix] += dy / divisor;
            }
      }
  for (size_t i = 0; i < count; ++i)
    blend(x->type, call->out, i, sums[i], call->alpha, call->beta);
  free(sums);
}

//===- Launching ----------------------------------------------------------===//

/* The fake kernel that runs a call: params[0] points to its record. */
static void runCall(void **params) {
  const struct fake_call *call = *(struct fake_call *const *)params[0];
  switch (call->op) {
  case kConvForward:
  case kConvBackwardData:
  case kConvBackwardFilter:
    runConvolution(call);
    return;
  case kAddTensor: {
    /* C (x) += A (a), A broadcast over every dimension of size 1. */
    const struct cudnnTensorStruct *a = &call->a, *c = &call->x;
    for (int b = 0; b < c->n; ++b)
      for (int ch = 0; ch < c->c; ++ch)
        for (int i = 0; i < c->h * c->w; ++i) {
          size_t ai =
              ((size_t)(a->n == 1 ? 0 : b) * a->c + (a->c == 1 ? 0 : ch)) *
              (size_t)(a->h * a->w);
          if (a->h * a->w != 1)
            ai += i;
          blend(c->type, call->out, ((size_t)b * c->c + ch) * c->h * c->w + i,
                load(a->type, call->in0, ai), call->alpha, call->beta);
        }
    return;
  }
  case kRelu:
    for (size_t i = 0; i < tensorSize(&call->y); ++i) {
      double v = load(call->x.type, call->in0, i);
      blend(call->y.type, call->out, i, v > 0 ? v : 0, call->alpha, call->beta);
    }
    return;
  case kPoolForward:
  case kPoolBackward:
    runPooling(call);
    return;
  case kGraph:
    runGraph(call->execution);
    return;
  }
}

static fake_cuda_kernel kCudnnKernel = {"cudnn", runCall};

static cudnnStatus_t launch(cudnnHandle_t handle, const struct fake_call *c) {
  struct fake_call *call = malloc(sizeof(*call));
  if (!call)
    return CUDNN_STATUS_ALLOC_FAILED;
  *call = *c;
  call->next = calls;
  calls = call;
  int64_t unused = 0;
  void *params[2] = {&call, &unused};
  CUresult r = cuLaunchKernel((CUfunction)&kCudnnKernel, 1, 1, 1, 1, 1, 1, 0,
                              (CUstream)handle->stream, params, NULL);
  return r == CUDA_SUCCESS ? CUDNN_STATUS_SUCCESS
                           : CUDNN_STATUS_EXECUTION_FAILED;
}

static const char *convName(enum fake_op op) {
  return op == kConvForward        ? "conv_fwd"
         : op == kConvBackwardData ? "conv_bwd_data"
                                   : "conv_bwd_filter";
}

static cudnnStatus_t
convolve(cudnnHandle_t handle, enum fake_op op, const void *alpha,
         const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
         const struct cudnnConvolutionStruct *conv, int algo, void *workspace,
         size_t bytes, const void *beta, const struct cudnnTensorStruct *y,
         const void *in0, const void *in1, void *out) {
  cudnnStatus_t s = checkConvolution(x, w, conv, y);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  const int bf16 = x->type == CUDNN_DATA_BFLOAT16;
  if (bf16 && algo == 2)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (algo < 0 || algo > 2 || !in0 || !in1 || !out ||
      bytes < workspaceOf(algo) || (workspaceOf(algo) && !workspace))
    return CUDNN_STATUS_BAD_PARAM;
  if (bf16 ? conv->math != offeredMath(algo, 1)
           : algo == 1 && conv->math != CUDNN_TENSOR_OP_MATH &&
                 conv->math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
    return CUDNN_STATUS_BAD_PARAM;
  struct fake_call call;
  memset(&call, 0, sizeof(call));
  call.op = op;
  call.x = *x, call.y = *y, call.w = *w, call.conv = *conv;
  call.algo = algo;
  call.alpha = *(const float *)alpha;
  call.beta = *(const float *)beta;
  call.in0 = in0, call.in1 = in1, call.out = out;
  note("%s x=%s w=%s y=%s %dx%dx%dx%d k=%d algo=%d math=%s beta=%g",
       convName(op), typeName(x->type), typeName(w->type), typeName(y->type),
       x->n, x->c, x->h, x->w, w->k, algo,
       conv->math == CUDNN_FMA_MATH         ? "fma"
       : conv->math == CUDNN_TENSOR_OP_MATH ? "tensor_op"
       : conv->math == CUDNN_DEFAULT_MATH   ? "default"
                                            : "other",
       (double)call.beta);
  return launch(handle, &call);
}

cudnnStatus_t cudnnConvolutionForward(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xd,
    const void *x, const cudnnFilterDescriptor_t wd, const void *w,
    const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,
    void *workspace, size_t bytes, const void *beta,
    const cudnnTensorDescriptor_t yd, void *y) {
  return convolve(handle, kConvForward, alpha, xd, wd, conv, (int)algo,
                  workspace, bytes, beta, yd, x, w, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wd,
    const void *w, const cudnnTensorDescriptor_t dyd, const void *dy,
    const cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdDataAlgo_t algo,
    void *workspace, size_t bytes, const void *beta,
    const cudnnTensorDescriptor_t dxd, void *dx) {
  return convolve(handle, kConvBackwardData, alpha, dxd, wd, conv, (int)algo,
                  workspace, bytes, beta, dyd, dy, w, dx);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xd,
    const void *x, const cudnnTensorDescriptor_t dyd, const void *dy,
    const cudnnConvolutionDescriptor_t conv,
    cudnnConvolutionBwdFilterAlgo_t algo, void *workspace, size_t bytes,
    const void *beta, const cudnnFilterDescriptor_t dwd, void *dw) {
  return convolve(handle, kConvBackwardFilter, alpha, xd, dwd, conv, (int)algo,
                  workspace, bytes, beta, dyd, x, dy, dw);
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha,
                             const cudnnTensorDescriptor_t ad, const void *a,
                             const void *beta, const cudnnTensorDescriptor_t cd,
                             void *c) {
  /* A's dimensions are C's or 1; both have one type. */
  if (ad->type != cd->type || (ad->n != 1 && ad->n != cd->n) ||
      (ad->c != 1 && ad->c != cd->c) || (ad->h != 1 && ad->h != cd->h) ||
      (ad->w != 1 && ad->w != cd->w) || (ad->h == 1) != (ad->w == 1))
    return CUDNN_STATUS_NOT_SUPPORTED;
  struct fake_call call;
  memset(&call, 0, sizeof(call));
  call.op = kAddTensor;
  call.a = *ad, call.x = *cd;
  call.alpha = *(const float *)alpha;
  call.beta = *(const float *)beta;
  call.in0 = a, call.out = c;
  note("add_tensor a=%s c=%s", typeName(ad->type), typeName(cd->type));
  return launch(handle, &call);
}

cudnnStatus_t
cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t act,
                       const void *alpha, const cudnnTensorDescriptor_t xd,
                       const void *x, const void *beta,
                       const cudnnTensorDescriptor_t yd, void *y) {
  if (act->mode != CUDNN_ACTIVATION_RELU)
    return CUDNN_STATUS_BAD_PARAM;
  if (tensorSize(xd) != tensorSize(yd) || xd->type != yd->type)
    return CUDNN_STATUS_BAD_PARAM;
  struct fake_call call;
  memset(&call, 0, sizeof(call));
  call.op = kRelu;
  call.x = *xd, call.y = *yd;
  call.alpha = *(const float *)alpha;
  call.beta = *(const float *)beta;
  call.in0 = x, call.out = y;
  note("relu %s", typeName(xd->type));
  return launch(handle, &call);
}

static cudnnStatus_t pool(cudnnHandle_t handle, enum fake_op op,
                          const struct cudnnPoolingStruct *p, const void *alpha,
                          const struct cudnnTensorStruct *x,
                          const struct cudnnTensorStruct *y, const void *beta,
                          const void *in0, const void *in1, const void *in2,
                          void *out) {
  if (x->type != y->type || x->n != y->n || x->c != y->c ||
      y->h != outputSize(x->h, p->pad[0], p->window[0], p->stride[0], 1) ||
      y->w != outputSize(x->w, p->pad[1], p->window[1], p->stride[1], 1))
    return CUDNN_STATUS_BAD_PARAM;
  struct fake_call call;
  memset(&call, 0, sizeof(call));
  call.op = op;
  call.pool = *p;
  call.x = *x, call.y = *y;
  call.alpha = *(const float *)alpha;
  call.beta = *(const float *)beta;
  call.in0 = in0, call.in1 = in1, call.in2 = in2, call.out = out;
  note("%s %s %dx%d", op == kPoolForward ? "pool_fwd" : "pool_bwd",
       isMax(p->mode) ? "max"
       : p->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
           ? "avg_include_pad"
           : "avg_exclude_pad",
       p->window[0], p->window[1]);
  return launch(handle, &call);
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle,
                                  const cudnnPoolingDescriptor_t p,
                                  const void *alpha,
                                  const cudnnTensorDescriptor_t xd,
                                  const void *x, const void *beta,
                                  const cudnnTensorDescriptor_t yd, void *y) {
  if (!x || !y)
    return CUDNN_STATUS_BAD_PARAM;
  return pool(handle, kPoolForward, p, alpha, xd, yd, beta, x, NULL, NULL, y);
}

/* cuDNN's backward reads y and x for max pooling (the routing); average
 * pooling reads neither. */
cudnnStatus_t
cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t p,
                     const void *alpha, const cudnnTensorDescriptor_t yd,
                     const void *y, const cudnnTensorDescriptor_t dyd,
                     const void *dy, const cudnnTensorDescriptor_t xd,
                     const void *x, const void *beta,
                     const cudnnTensorDescriptor_t dxd, void *dx) {
  if (!dy || !dx || (isMax(p->mode) && (!x || !y)) ||
      tensorSize(yd) != tensorSize(dyd) || tensorSize(xd) != tensorSize(dxd))
    return CUDNN_STATUS_BAD_PARAM;
  return pool(handle, kPoolBackward, p, alpha, dxd, dyd, beta, x, dy, y, dx);
}

//===- The backend API: descriptors and attributes ------------------------===//

enum {
  kMaxRank = CUDNN_DIM_MAX,
  kMaxOps = 64,
  kMaxGraphTensors = 4 * kMaxOps,
  kMaxPackEntries = 64,
  /* Engine 1's workspace: not a multiple of 256, so that buffers a caller
   * places after it must be aligned by the caller. */
  kGraphWorkspace = 1000,
};

/* The engines, by global index: the heuristics' mode A offers 0 and 1, the
 * fallback list 2 (see the file comment). */
static const struct {
  int nondeterministic;
  size_t workspace;
} kEngines[] = {{1, 0}, {0, kGraphWorkspace}, {0, 0}};

static int refuseGraphs, failExecutions;
void fake_cudnn_refuse_graphs(int where) { refuseGraphs = where; }
void fake_cudnn_fail_executions(int fail) { failExecutions = fail; }

static char lastError[512];

/* Returns `status`, keeping `format` for cudnnGetLastErrorString. */
static cudnnStatus_t failWith(cudnnStatus_t status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static cudnnStatus_t failWith(cudnnStatus_t status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(lastError, sizeof(lastError), format, args);
  va_end(args);
  return status;
}

void cudnnGetLastErrorString(char *message, size_t size) {
  if (size == 0)
    return;
  snprintf(message, size, "%s", lastError);
  lastError[0] = '\0';
}

/* A tensor descriptor; `rank` and `strideCount` are 0 until set. */
struct fake_tensor {
  int hasType, hasUid, hasAlignment;
  cudnnDataType_t type;
  int64_t rank, strideCount, dims[kMaxRank], strides[kMaxRank], uid, alignment;
  bool isVirtual, isByValue;
};

/* An operation's operands: x (a matmul's A), b (its B), t, and the result
 * y (a matmul's C). */
enum { kX, kB, kT, kY, kOperands };

enum fake_node_kind {
  kPointwiseNode,
  kMatmulNode,
  kReductionNode,
  kReshapeNode
};

/* An operation, with the attributes of its pointwise, matmul or reduction
 * descriptor. */
struct fake_node {
  enum fake_node_kind kind;
  cudnnPointwiseMode_t mode;
  cudnnDataType_t math; /* math precision or compute type */
  int64_t axis;
  cudnnReduceTensorOp_t reduction;
  int has[kOperands];
  struct fake_tensor operand[kOperands];
};

/* A finalized operation graph, never changed and shared (counted) by the
 * heuristics, engines, configs, plans and executions made from it: its
 * operations in an order where every operand is written before it is read,
 * and its tensors, one per uid. */
struct fake_op_graph {
  int refs;
  int nodes, tensors;
  struct fake_node node[kMaxOps];
  int operand[kMaxOps][kOperands]; /* into tensor[]; -1 if absent */
  struct fake_tensor tensor[kMaxGraphTensors];
};

static void releaseGraph(struct fake_op_graph *g) {
  if (g && --g->refs == 0)
    free(g);
}

static struct fake_op_graph *retainGraph(struct fake_op_graph *g) {
  ++g->refs;
  return g;
}

struct fake_descriptor {
  cudnnBackendDescriptorType_t type;
  int finalized;
  /* TENSOR */
  struct fake_tensor tensor;
  /* POINTWISE, MATMUL and REDUCTION: their attributes; OPERATION_*: the
   * operation. */
  struct fake_node node;
  int hasMode, hasMath, hasAxis, hasReduction, hasDescriptor;
  /* OPERATIONGRAPH until it is finalized. */
  struct fake_node *ops;
  int64_t opCount;
  /* OPERATIONGRAPH, ENGINEHEUR, ENGINECFG, ENGINE, EXECUTION_PLAN. */
  struct fake_op_graph *graph;
  /* ENGINEHEUR: the mode and the engines it offers. */
  int hasHeurMode;
  cudnnBackendHeurMode_t heurMode;
  int offered[3], offeredCount;
  /* ENGINECFG, ENGINE, EXECUTION_PLAN: the engine. */
  int engine;
  /* VARIANT_PACK */
  int64_t uidCount, pointerCount;
  int64_t uids[kMaxPackEntries];
  void *pointers[kMaxPackEntries];
  void *workspace;
};

static int implementedDescriptor(cudnnBackendDescriptorType_t type) {
  switch (type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    return 1;
  default:
    return 0;
  }
}

static int isOperation(cudnnBackendDescriptorType_t type) {
  return type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *out) {
  if (!out)
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "no output pointer");
  if (!implementedDescriptor(type))
    return failWith(CUDNN_STATUS_NOT_SUPPORTED,
                    "the fake cuDNN has no descriptor type %d", (int)type);
  struct fake_descriptor *d = calloc(1, sizeof(*d));
  if (!d)
    return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  d->type = type;
  *out = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc) {
  struct fake_descriptor *d = desc;
  if (!d)
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "no descriptor");
  free(d->ops);
  releaseGraph(d->graph);
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

/* The one finalized descriptor of type `want` an attribute's value names. */
static cudnnStatus_t descriptorValue(cudnnBackendAttributeType_t type,
                                     int64_t count, const void *values,
                                     cudnnBackendDescriptorType_t want,
                                     const struct fake_descriptor **out) {
  if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || count != 1)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "the attribute takes one backend descriptor");
  const struct fake_descriptor *d =
      *(const struct fake_descriptor *const *)values;
  if (!d)
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "a NULL descriptor");
  if (d->type != want)
    return failWith(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                    "the attribute takes a descriptor of type %d, not %d",
                    (int)want, (int)d->type);
  if (!d->finalized)
    return failWith(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                    "the descriptor of type %d is not finalized", (int)want);
  *out = d;
  return CUDNN_STATUS_SUCCESS;
}

/* Checks an attribute value's type and count. */
#define FAKE_EXPECT(want, wantCount)                                           \
  do {                                                                         \
    if (type != (want) || count != (wantCount))                                \
      return failWith(CUDNN_STATUS_BAD_PARAM,                                  \
                      "attribute %d takes %d value(s) of type %d", (int)name,  \
                      (int)(wantCount), (int)(want));                          \
  } while (0)

/* Checks a queried attribute's value type. */
#define FAKE_EXPECT_GET(want)                                                  \
  do {                                                                         \
    if (type != (want))                                                        \
      return failWith(CUDNN_STATUS_BAD_PARAM,                                  \
                      "attribute %d has values of type %d", (int)name,         \
                      (int)(want));                                            \
  } while (0)

/* How many of `available` values a query for `requested` answers: all of
 * them when it asks for none (a count). */
static int64_t answered(int64_t requested, int64_t available) {
  return requested == 0 || requested > available ? available : requested;
}

static cudnnStatus_t unknownAttribute(const struct fake_descriptor *d,
                                      cudnnBackendAttributeName_t name) {
  return failWith(CUDNN_STATUS_NOT_SUPPORTED,
                  "the fake cuDNN has no attribute %d on descriptor type %d",
                  (int)name, (int)d->type);
}

static cudnnStatus_t setTensor(struct fake_tensor *t,
                               cudnnBackendAttributeName_t name,
                               cudnnBackendAttributeType_t type, int64_t count,
                               const void *values) {
  switch (name) {
  case CUDNN_ATTR_TENSOR_DATA_TYPE:
    FAKE_EXPECT(CUDNN_TYPE_DATA_TYPE, 1);
    t->type = *(const cudnnDataType_t *)values;
    t->hasType = 1;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_DIMENSIONS:
  case CUDNN_ATTR_TENSOR_STRIDES: {
    if (type != CUDNN_TYPE_INT64 || count < 1 || count > kMaxRank)
      return failWith(CUDNN_STATUS_BAD_PARAM,
                      "dimensions and strides take 1 to %d INT64 values",
                      kMaxRank);
    const int dims = name == CUDNN_ATTR_TENSOR_DIMENSIONS;
    memcpy(dims ? t->dims : t->strides, values,
           (size_t)count * sizeof(int64_t));
    *(dims ? &t->rank : &t->strideCount) = count;
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    FAKE_EXPECT(CUDNN_TYPE_INT64, 1);
    t->uid = *(const int64_t *)values;
    t->hasUid = 1;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
    FAKE_EXPECT(CUDNN_TYPE_INT64, 1);
    t->alignment = *(const int64_t *)values;
    t->hasAlignment = 1;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
    FAKE_EXPECT(CUDNN_TYPE_BOOLEAN, 1);
    t->isVirtual = *(const bool *)values;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
    FAKE_EXPECT(CUDNN_TYPE_BOOLEAN, 1);
    t->isByValue = *(const bool *)values;
    return CUDNN_STATUS_SUCCESS;
  default:
    return failWith(CUDNN_STATUS_NOT_SUPPORTED,
                    "the fake cuDNN has no tensor attribute %d", (int)name);
  }
}

/* An operation's operand attribute: a finalized tensor. */
static cudnnStatus_t setOperand(struct fake_node *n, int which,
                                cudnnBackendAttributeType_t type, int64_t count,
                                const void *values) {
  const struct fake_descriptor *t = NULL;
  cudnnStatus_t s =
      descriptorValue(type, count, values, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  n->operand[which] = t->tensor;
  n->has[which] = 1;
  return CUDNN_STATUS_SUCCESS;
}

/* An operation's descriptor attribute: copies its pointwise, matmul or
 * reduction attributes. */
static cudnnStatus_t setOperationDescriptor(struct fake_descriptor *d,
                                            cudnnBackendDescriptorType_t want,
                                            cudnnBackendAttributeType_t type,
                                            int64_t count, const void *values) {
  const struct fake_descriptor *desc = NULL;
  cudnnStatus_t s = descriptorValue(type, count, values, want, &desc);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  d->node.mode = desc->node.mode;
  d->node.math = desc->node.math;
  d->node.axis = desc->node.axis;
  d->node.reduction = desc->node.reduction;
  d->hasDescriptor = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type,
                                       int64_t count, const void *values) {
  struct fake_descriptor *d = desc;
  if (!d || (count > 0 && !values))
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "a NULL argument");
  if (d->finalized)
    return failWith(CUDNN_STATUS_NOT_INITIALIZED,
                    "descriptor type %d is finalized", (int)d->type);
  struct fake_node *n = &d->node;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    return setTensor(&d->tensor, name, type, count, values);
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_POINTWISE_MODE:
      FAKE_EXPECT(CUDNN_TYPE_POINTWISE_MODE, 1);
      n->mode = *(const cudnnPointwiseMode_t *)values;
      d->hasMode = 1;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_POINTWISE_MATH_PREC:
      FAKE_EXPECT(CUDNN_TYPE_DATA_TYPE, 1);
      n->math = *(const cudnnDataType_t *)values;
      d->hasMath = 1;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_POINTWISE_AXIS:
      FAKE_EXPECT(CUDNN_TYPE_INT64, 1);
      n->axis = *(const int64_t *)values;
      d->hasAxis = 1;
      return CUDNN_STATUS_SUCCESS;
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    if (name != CUDNN_ATTR_MATMUL_COMP_TYPE)
      return unknownAttribute(d, name);
    FAKE_EXPECT(CUDNN_TYPE_DATA_TYPE, 1);
    n->math = *(const cudnnDataType_t *)values;
    d->hasMath = 1;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_REDUCTION_OPERATOR:
      FAKE_EXPECT(CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1);
      n->reduction = *(const cudnnReduceTensorOp_t *)values;
      d->hasReduction = 1;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_REDUCTION_COMP_TYPE:
      FAKE_EXPECT(CUDNN_TYPE_DATA_TYPE, 1);
      n->math = *(const cudnnDataType_t *)values;
      d->hasMath = 1;
      return CUDNN_STATUS_SUCCESS;
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR:
      return setOperationDescriptor(d, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, type,
                                    count, values);
    case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
      return setOperand(n, kX, type, count, values);
    case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
      return setOperand(n, kB, type, count, values);
    case CUDNN_ATTR_OPERATION_POINTWISE_TDESC:
      return setOperand(n, kT, type, count, values);
    case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
      return setOperand(n, kY, type, count, values);
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_OPERATION_MATMUL_DESC:
      return setOperationDescriptor(d, CUDNN_BACKEND_MATMUL_DESCRIPTOR, type,
                                    count, values);
    case CUDNN_ATTR_OPERATION_MATMUL_ADESC:
      return setOperand(n, kX, type, count, values);
    case CUDNN_ATTR_OPERATION_MATMUL_BDESC:
      return setOperand(n, kB, type, count, values);
    case CUDNN_ATTR_OPERATION_MATMUL_CDESC:
      return setOperand(n, kY, type, count, values);
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_OPERATION_REDUCTION_DESC:
      return setOperationDescriptor(d, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, type,
                                    count, values);
    case CUDNN_ATTR_OPERATION_REDUCTION_XDESC:
      return setOperand(n, kX, type, count, values);
    case CUDNN_ATTR_OPERATION_REDUCTION_YDESC:
      return setOperand(n, kY, type, count, values);
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_OPERATION_RESHAPE_XDESC:
      return setOperand(n, kX, type, count, values);
    case CUDNN_ATTR_OPERATION_RESHAPE_YDESC:
      return setOperand(n, kY, type, count, values);
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_OPERATIONGRAPH_OPS: {
      if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || count < 1 || count > kMaxOps)
        return failWith(CUDNN_STATUS_BAD_PARAM,
                        "a graph takes 1 to %d operations", kMaxOps);
      struct fake_node *ops = calloc((size_t)count, sizeof(*ops));
      if (!ops)
        return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
      for (int64_t i = 0; i < count; ++i) {
        const struct fake_descriptor *op =
            ((const struct fake_descriptor *const *)values)[i];
        if (!op || !isOperation(op->type) || !op->finalized) {
          free(ops);
          return failWith(CUDNN_STATUS_BAD_PARAM,
                          "operation %lld is not a finalized operation",
                          (long long)i);
        }
        ops[i] = op->node;
      }
      free(d->ops);
      d->ops = ops;
      d->opCount = count;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
      FAKE_EXPECT(CUDNN_TYPE_HANDLE, 1);
      return CUDNN_STATUS_SUCCESS;
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH: {
      const struct fake_descriptor *g = NULL;
      cudnnStatus_t s = descriptorValue(
          type, count, values, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g);
      if (s != CUDNN_STATUS_SUCCESS)
        return s;
      releaseGraph(d->graph);
      d->graph = retainGraph(g->graph);
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINEHEUR_MODE:
      FAKE_EXPECT(CUDNN_TYPE_HEUR_MODE, 1);
      d->heurMode = *(const cudnnBackendHeurMode_t *)values;
      d->hasHeurMode = 1;
      return CUDNN_STATUS_SUCCESS;
    default:
      return unknownAttribute(d, name);
    }
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    if (name != CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)
      return unknownAttribute(d, name);
    {
      const struct fake_descriptor *config = NULL;
      cudnnStatus_t s = descriptorValue(
          type, count, values, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &config);
      if (s != CUDNN_STATUS_SUCCESS)
        return s;
      releaseGraph(d->graph);
      d->graph = retainGraph(config->graph);
      d->engine = config->engine;
      return CUDNN_STATUS_SUCCESS;
    }
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    switch (name) {
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
      if (type != CUDNN_TYPE_INT64 || count > kMaxPackEntries)
        return failWith(CUDNN_STATUS_BAD_PARAM,
                        "unique ids are at most %d INT64 values",
                        kMaxPackEntries);
      memcpy(d->uids, values, (size_t)count * sizeof(int64_t));
      d->uidCount = count;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
      if (type != CUDNN_TYPE_VOID_PTR || count > kMaxPackEntries)
        return failWith(CUDNN_STATUS_BAD_PARAM,
                        "data pointers are at most %d VOID_PTR values",
                        kMaxPackEntries);
      memcpy(d->pointers, values, (size_t)count * sizeof(void *));
      d->pointerCount = count;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
      FAKE_EXPECT(CUDNN_TYPE_VOID_PTR, 1);
      d->workspace = *(void *const *)values;
      return CUDNN_STATUS_SUCCESS;
    default:
      return unknownAttribute(d, name);
    }
  default:
    /* Engine configs and engines come from the heuristics: this fake makes
     * none from attributes. */
    return unknownAttribute(d, name);
  }
}

//===- The backend API: finalizing ----------------------------------------===//

static int64_t elementCount(const struct fake_tensor *t) {
  int64_t n = 1;
  for (int64_t d = 0; d < t->rank; ++d)
    n *= t->dims[d];
  return n;
}

/* Elements from the first to one past the last the layout reaches. */
static int64_t span(const struct fake_tensor *t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t->rank; ++d)
    last += (t->dims[d] - 1) * t->strides[d];
  return last + 1;
}

static cudnnStatus_t finalizeTensor(const struct fake_tensor *t) {
  if (!t->hasType || !t->rank || !t->strideCount || !t->hasUid ||
      !t->hasAlignment)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "a tensor needs its data type, dimensions, strides, "
                    "unique id and byte alignment");
  if (t->strideCount != t->rank)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "tensor %lld has %lld dimensions and %lld strides",
                    (long long)t->uid, (long long)t->rank,
                    (long long)t->strideCount);
  for (int64_t d = 0; d < t->rank; ++d)
    if (t->dims[d] < 1 || t->strides[d] < 1)
      return failWith(CUDNN_STATUS_BAD_PARAM,
                      "tensor %lld: dimensions and strides must be positive",
                      (long long)t->uid);
  if (t->alignment < 1 || (t->alignment & (t->alignment - 1)))
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "tensor %lld: the alignment must be a power of two",
                    (long long)t->uid);
  if (t->isVirtual && t->isByValue)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "tensor %lld is both virtual and by value",
                    (long long)t->uid);
  if (t->isByValue && elementCount(t) != 1)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "by-value tensor %lld has more than one element",
                    (long long)t->uid);
  switch (t->type) {
  case CUDNN_DATA_FLOAT:
  case CUDNN_DATA_BFLOAT16:
  case CUDNN_DATA_INT32:
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_DATA_BOOLEAN:
    if (t->isVirtual)
      return CUDNN_STATUS_SUCCESS;
    break;
  default:
    break;
  }
  return failWith(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                  "the fake cuDNN has no %s tensors of data type %d",
                  t->isVirtual ? "virtual" : "bound", (int)t->type);
}

/* How many operands pointwise `mode` reads, or 0 if this fake lacks it. */
static int pointwiseArity(cudnnPointwiseMode_t mode) {
  switch (mode) {
  case CUDNN_POINTWISE_EXP:
  case CUDNN_POINTWISE_LOG:
  case CUDNN_POINTWISE_NEG:
  case CUDNN_POINTWISE_IDENTITY:
  case CUDNN_POINTWISE_GEN_INDEX:
    return 1;
  case CUDNN_POINTWISE_ADD:
  case CUDNN_POINTWISE_SUB:
  case CUDNN_POINTWISE_MUL:
  case CUDNN_POINTWISE_DIV:
  case CUDNN_POINTWISE_MAX:
  case CUDNN_POINTWISE_MIN:
  case CUDNN_POINTWISE_CMP_EQ:
  case CUDNN_POINTWISE_CMP_NEQ:
  case CUDNN_POINTWISE_CMP_GT:
  case CUDNN_POINTWISE_CMP_GE:
  case CUDNN_POINTWISE_CMP_LT:
  case CUDNN_POINTWISE_CMP_LE:
    return 2;
  case CUDNN_POINTWISE_BINARY_SELECT:
    return 3;
  default:
    return 0;
  }
}

static int isComparison(cudnnPointwiseMode_t mode) {
  return mode >= CUDNN_POINTWISE_CMP_EQ && mode <= CUDNN_POINTWISE_CMP_LE;
}

/* `in` broadcasts to `out`: the same rank, each dimension equal or 1. */
static int broadcasts(const struct fake_tensor *in,
                      const struct fake_tensor *out) {
  if (in->rank != out->rank)
    return 0;
  for (int64_t d = 0; d < in->rank; ++d)
    if (in->dims[d] != 1 && in->dims[d] != out->dims[d])
      return 0;
  return 1;
}

static cudnnStatus_t finalizePointwise(const struct fake_node *n) {
  const int arity = pointwiseArity(n->mode);
  const struct fake_tensor *y = &n->operand[kY];
  if (n->has[kB] != (arity >= 2) || n->has[kT] != (arity == 3))
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "pointwise mode %d takes %d operand(s)", (int)n->mode,
                    arity);
  for (int i = kX; i <= kT; ++i)
    if (n->has[i] && !broadcasts(&n->operand[i], y))
      return failWith(CUDNN_STATUS_BAD_PARAM,
                      "pointwise operand %lld does not broadcast to the "
                      "result %lld",
                      (long long)n->operand[i].uid, (long long)y->uid);
  if (n->mode == CUDNN_POINTWISE_GEN_INDEX &&
      (n->axis < 0 || n->axis >= y->rank))
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "GEN_INDEX's axis %lld is not a dimension of its result",
                    (long long)n->axis);
  if (n->mode == CUDNN_POINTWISE_GEN_INDEX && y->type != CUDNN_DATA_INT32)
    return failWith(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                    "the fake cuDNN's GEN_INDEX writes INT32 only");
  if (isComparison(n->mode) && y->type != CUDNN_DATA_BOOLEAN)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "a comparison writes a BOOLEAN tensor");
  if (n->mode == CUDNN_POINTWISE_BINARY_SELECT &&
      n->operand[kT].type != CUDNN_DATA_BOOLEAN)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "BINARY_SELECT selects with a BOOLEAN TDESC");
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalizeMatmul(const struct fake_node *n) {
  const struct fake_tensor *a = &n->operand[kX], *b = &n->operand[kB],
                           *c = &n->operand[kY];
  const int64_t r = c->rank;
  if (r < 2 || a->rank != r || b->rank != r ||
      a->dims[r - 1] != b->dims[r - 2] || c->dims[r - 2] != a->dims[r - 2] ||
      c->dims[r - 1] != b->dims[r - 1])
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "matmul %lld x %lld -> %lld: the shapes do not multiply",
                    (long long)a->uid, (long long)b->uid, (long long)c->uid);
  for (int64_t d = 0; d < r - 2; ++d)
    if ((a->dims[d] != 1 && a->dims[d] != c->dims[d]) ||
        (b->dims[d] != 1 && b->dims[d] != c->dims[d]))
      return failWith(CUDNN_STATUS_BAD_PARAM,
                      "matmul %lld x %lld: a batch dimension does not "
                      "broadcast",
                      (long long)a->uid, (long long)b->uid);
  if (a->isByValue || b->isByValue)
    return failWith(CUDNN_STATUS_BAD_PARAM, "a matmul operand is by value");
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalizeOperation(struct fake_descriptor *d) {
  struct fake_node *n = &d->node;
  switch (d->type) {
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    n->kind = kPointwiseNode;
    break;
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    n->kind = kMatmulNode;
    break;
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    n->kind = kReductionNode;
    break;
  default:
    n->kind = kReshapeNode;
    break;
  }
  int needsB = n->kind == kMatmulNode;
  if (!n->has[kX] || !n->has[kY] || (needsB && !n->has[kB]) ||
      (n->kind != kReshapeNode && !d->hasDescriptor))
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "operation type %d misses an operand or its descriptor",
                    (int)d->type);
  if (n->operand[kY].isByValue)
    return failWith(CUDNN_STATUS_BAD_PARAM, "an operation writes by value");
  const struct fake_tensor *x = &n->operand[kX], *y = &n->operand[kY];
  switch (n->kind) {
  case kPointwiseNode:
    return finalizePointwise(n);
  case kMatmulNode:
    return finalizeMatmul(n);
  case kReductionNode:
    if (x->rank != y->rank || !broadcasts(y, x) || x->isByValue)
      return failWith(CUDNN_STATUS_BAD_PARAM,
                      "reduction %lld -> %lld: each result dimension must be "
                      "the input's or 1",
                      (long long)x->uid, (long long)y->uid);
    return CUDNN_STATUS_SUCCESS;
  case kReshapeNode:
    if (elementCount(x) != elementCount(y) || span(y) > span(x) || x->isByValue)
      return failWith(CUDNN_STATUS_BAD_PARAM,
                      "reshape %lld -> %lld: the result must view the "
                      "input's elements",
                      (long long)x->uid, (long long)y->uid);
    return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_SUCCESS;
}

static int sameTensor(const struct fake_tensor *a,
                      const struct fake_tensor *b) {
  if (a->type != b->type || a->rank != b->rank ||
      a->isVirtual != b->isVirtual || a->isByValue != b->isByValue)
    return 0;
  for (int64_t d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d] || a->strides[d] != b->strides[d])
      return 0;
  return 1;
}

/* The index of `t` in g's tensors, added if its uid is new; -1 if the uid
 * names another tensor already. */
static int graphTensor(struct fake_op_graph *g, const struct fake_tensor *t) {
  for (int i = 0; i < g->tensors; ++i)
    if (g->tensor[i].uid == t->uid)
      return sameTensor(&g->tensor[i], t) ? i : -1;
  g->tensor[g->tensors] = *t;
  return g->tensors++;
}

/* Finalizes an operation graph: one tensor per uid, each written by at most
 * one operation and every virtual one by exactly one, and the operations
 * ordered so that each runs after the writers of its operands. */
static cudnnStatus_t finalizeGraph(struct fake_descriptor *d) {
  if (!d->ops)
    return failWith(CUDNN_STATUS_BAD_PARAM, "the graph has no operations");
  struct fake_op_graph *g = calloc(1, sizeof(*g));
  if (!g)
    return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  g->refs = 1;
  int operand[kMaxOps][kOperands];
  int writer[kMaxGraphTensors];
  for (int i = 0; i < kMaxGraphTensors; ++i)
    writer[i] = -1;
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  for (int64_t i = 0; i < d->opCount && s == CUDNN_STATUS_SUCCESS; ++i)
    for (int j = 0; j < kOperands; ++j) {
      operand[i][j] = -1;
      if (!d->ops[i].has[j])
        continue;
      int t = graphTensor(g, &d->ops[i].operand[j]);
      if (t < 0) {
        s = failWith(CUDNN_STATUS_BAD_PARAM,
                     "uid %lld names two different tensors",
                     (long long)d->ops[i].operand[j].uid);
        break;
      }
      operand[i][j] = t;
      if (j == kY && writer[t] >= 0) {
        s = failWith(CUDNN_STATUS_BAD_PARAM,
                     "tensor %lld is written by two operations",
                     (long long)g->tensor[t].uid);
        break;
      }
      if (j == kY)
        writer[t] = (int)i;
    }
  for (int t = 0; t < g->tensors && s == CUDNN_STATUS_SUCCESS; ++t)
    if (g->tensor[t].isVirtual && writer[t] < 0)
      s = failWith(CUDNN_STATUS_BAD_PARAM,
                   "virtual tensor %lld is read but never written",
                   (long long)g->tensor[t].uid);
  int placed[kMaxOps] = {0};
  while (s == CUDNN_STATUS_SUCCESS && g->nodes < d->opCount) {
    int progress = 0;
    for (int64_t i = 0; i < d->opCount; ++i) {
      int ready = !placed[i];
      for (int j = kX; j <= kT && ready; ++j)
        ready = operand[i][j] < 0 || writer[operand[i][j]] < 0 ||
                placed[writer[operand[i][j]]];
      if (!ready)
        continue;
      placed[i] = progress = 1;
      g->node[g->nodes] = d->ops[i];
      memcpy(g->operand[g->nodes], operand[i], sizeof(operand[i]));
      ++g->nodes;
    }
    if (!progress)
      s = failWith(CUDNN_STATUS_BAD_PARAM, "the operations form a cycle");
  }
  if (s != CUDNN_STATUS_SUCCESS) {
    free(g);
    return s;
  }
  d->graph = g;
  return CUDNN_STATUS_SUCCESS;
}

/* Whether a matmul of `g` takes an f32 operand and, if `written`, writes
 * a bound bf16 tensor (fake_cudnn_refuse_graphs 3 and 4). */
static int hasF32Product(const struct fake_op_graph *g, int written) {
  for (int i = 0; i < g->nodes; ++i) {
    const struct fake_node *n = &g->node[i];
    const struct fake_tensor *y = &n->operand[kY];
    if (n->kind == kMatmulNode &&
        (n->operand[kX].type == CUDNN_DATA_FLOAT ||
         n->operand[kB].type == CUDNN_DATA_FLOAT) &&
        (!written || (!y->isVirtual && y->type == CUDNN_DATA_BFLOAT16)))
      return 1;
  }
  return 0;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc) {
  struct fake_descriptor *d = desc;
  if (!d)
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "no descriptor");
  if (d->finalized)
    return failWith(CUDNN_STATUS_BAD_PARAM, "finalized twice");
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    s = finalizeTensor(&d->tensor);
    break;
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    if (!d->hasMode || !d->hasMath ||
        (d->node.mode == CUDNN_POINTWISE_GEN_INDEX && !d->hasAxis))
      s = failWith(CUDNN_STATUS_BAD_PARAM,
                   "a pointwise descriptor needs its mode, math precision "
                   "and, for GEN_INDEX, its axis");
    else if (!pointwiseArity(d->node.mode))
      s = failWith(CUDNN_STATUS_NOT_SUPPORTED,
                   "the fake cuDNN has no pointwise mode %d",
                   (int)d->node.mode);
    break;
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    if (!d->hasMath ||
        (d->type == CUDNN_BACKEND_REDUCTION_DESCRIPTOR && !d->hasReduction))
      s = failWith(CUDNN_STATUS_BAD_PARAM,
                   "a matmul or reduction descriptor needs its compute type "
                   "(and a reduction its operator)");
    else if (d->node.math != CUDNN_DATA_FLOAT)
      s = failWith(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                   "the fake cuDNN computes matmuls and reductions in FLOAT "
                   "only");
    else if (d->type == CUDNN_BACKEND_REDUCTION_DESCRIPTOR &&
             d->node.reduction != CUDNN_REDUCE_TENSOR_ADD &&
             d->node.reduction != CUDNN_REDUCE_TENSOR_MAX &&
             d->node.reduction != CUDNN_REDUCE_TENSOR_MIN)
      s = failWith(CUDNN_STATUS_NOT_SUPPORTED,
                   "the fake cuDNN has no reduction operator %d",
                   (int)d->node.reduction);
    break;
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    s = finalizeOperation(d);
    break;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    s = finalizeGraph(d);
    break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    if (!d->graph || !d->hasHeurMode)
      s = failWith(CUDNN_STATUS_BAD_PARAM,
                   "heuristics need an operation graph and a mode");
    else if (refuseGraphs == 1 ||
             (refuseGraphs == 3 && hasF32Product(d->graph, 1)) ||
             (refuseGraphs == 4 && hasF32Product(d->graph, 0)))
      s = failWith(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN,
                   "no engine matches this graph (fake_cudnn_refuse_graphs)");
    else if (d->heurMode == CUDNN_HEUR_MODE_FALLBACK)
      d->offered[d->offeredCount++] = 2;
    else
      for (int e = 0; e < 2; ++e)
        d->offered[d->offeredCount++] = e;
    break;
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    if (!d->graph)
      s = failWith(CUDNN_STATUS_BAD_PARAM, "a plan needs an engine config");
    else if (refuseGraphs == 2)
      s = failWith(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT,
                   "engine %d does not fit (fake_cudnn_refuse_graphs)",
                   d->engine);
    break;
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    if (d->uidCount != d->pointerCount)
      s = failWith(CUDNN_STATUS_BAD_PARAM,
                   "a variant pack has %lld unique ids and %lld pointers",
                   (long long)d->uidCount, (long long)d->pointerCount);
    break;
  default:
    s = failWith(CUDNN_STATUS_NOT_SUPPORTED,
                 "descriptor type %d comes from the heuristics", (int)d->type);
    break;
  }
  if (s == CUDNN_STATUS_SUCCESS)
    d->finalized = 1;
  return s;
}

//===- The backend API: queries -------------------------------------------===//

/* Makes `out` (created by the caller, of type `type`) a finalized engine
 * config or engine of `engine` on `graph`. */
static cudnnStatus_t fillEngine(struct fake_descriptor *out,
                                cudnnBackendDescriptorType_t type,
                                struct fake_op_graph *graph, int engine) {
  if (!out)
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "a NULL descriptor");
  if (out->type != type || out->finalized)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "the output must be a new descriptor of type %d",
                    (int)type);
  out->graph = retainGraph(graph);
  out->engine = engine;
  out->finalized = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type,
                                       int64_t requested, int64_t *count,
                                       void *values) {
  const struct fake_descriptor *d = desc;
  if (!d || !count || (requested > 0 && !values))
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "a NULL argument");
  if (!d->finalized)
    return failWith(CUDNN_STATUS_NOT_INITIALIZED,
                    "descriptor type %d is not finalized", (int)d->type);
  switch (name) {
  case CUDNN_ATTR_ENGINEHEUR_RESULTS:
    if (d->type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)
      break;
    FAKE_EXPECT_GET(CUDNN_TYPE_BACKEND_DESCRIPTOR);
    *count = answered(requested, d->offeredCount);
    for (int64_t i = 0; i < requested && i < d->offeredCount; ++i) {
      cudnnStatus_t s = fillEngine(((struct fake_descriptor **)values)[i],
                                   CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, d->graph,
                                   d->offered[i]);
      if (s != CUDNN_STATUS_SUCCESS)
        return s;
    }
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINECFG_ENGINE:
    if (d->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
      break;
    FAKE_EXPECT_GET(CUDNN_TYPE_BACKEND_DESCRIPTOR);
    *count = 1;
    return requested < 1 ? CUDNN_STATUS_SUCCESS
                         : fillEngine(*(struct fake_descriptor **)values,
                                      CUDNN_BACKEND_ENGINE_DESCRIPTOR, d->graph,
                                      d->engine);
  case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
    if (d->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
      break;
    FAKE_EXPECT_GET(CUDNN_TYPE_INT64);
    *count = 1;
    if (requested > 0)
      *(int64_t *)values = d->engine;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
    if (d->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
      break;
    FAKE_EXPECT_GET(CUDNN_TYPE_NUMERICAL_NOTE);
    const cudnnBackendNumericalNote_t notes[2] = {
        CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
        CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC};
    *count = answered(requested, kEngines[d->engine].nondeterministic ? 2 : 1);
    if (requested > 0)
      memcpy(values, notes, (size_t)*count * sizeof(notes[0]));
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
  case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
    if (d->type != (name == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE
                        ? CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
                        : CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR))
      break;
    FAKE_EXPECT_GET(CUDNN_TYPE_INT64);
    *count = 1;
    if (requested > 0)
      *(int64_t *)values = (int64_t)kEngines[d->engine].workspace;
    return CUDNN_STATUS_SUCCESS;
  default:
    break;
  }
  return unknownAttribute(d, name);
}

//===- The backend API: execution -----------------------------------------===//

/* A graph as cudnnBackendExecute enqueued it: the memory of each bound
 * tensor and the value of each by-value one (read when it was enqueued, as
 * a real engine copies them into its kernel's parameters). */
struct fake_execution {
  struct fake_op_graph *graph;
  int engine;
  void *data[kMaxGraphTensors];
  double scalar[kMaxGraphTensors];
  unsigned char *workspace;
  size_t workspaceBytes;
};

static void freeExecution(struct fake_execution *execution) {
  if (!execution)
    return;
  releaseGraph(execution->graph);
  free(execution);
}

/* `v` as a tensor of `type` holds it. */
static double rounded(cudnnDataType_t type, double v) {
  switch (type) {
  case CUDNN_DATA_FLOAT:
    return (float)v;
  case CUDNN_DATA_BFLOAT16: {
    if (isnan(v))
      return v;
    const uint16_t bits = fake_bf16_bits((float)v);
    return load(CUDNN_DATA_BFLOAT16, &bits, 0);
  }
  case CUDNN_DATA_INT32:
    return (double)(int32_t)v;
  default:
    return v != 0;
  }
}

/* Where an execution's tensor lives: host temporaries for a virtual one. */
struct fake_storage {
  const struct fake_tensor *tensor;
  void *data;
  double *temporary;
  double scalar;
};

static double loadElement(const struct fake_storage *s, int64_t offset) {
  if (s->tensor->isByValue)
    return s->scalar;
  if (s->temporary)
    return s->temporary[offset];
  if (s->tensor->type == CUDNN_DATA_INT32)
    return ((const int32_t *)s->data)[offset];
  return load(s->tensor->type, s->data, (size_t)offset);
}

static void storeElement(const struct fake_storage *s, int64_t offset,
                         double v) {
  v = rounded(s->tensor->type, v);
  if (s->temporary)
    s->temporary[offset] = v;
  else if (s->tensor->type == CUDNN_DATA_INT32)
    ((int32_t *)s->data)[offset] = (int32_t)v;
  else
    store(s->tensor->type, s->data, (size_t)offset, v);
}

/* Steps `index` through `dims` in row-major order; 0 after the last. */
static int nextIndex(int64_t *index, const int64_t *dims, int64_t rank) {
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (++index[d] < dims[d])
      return 1;
    index[d] = 0;
  }
  return 0;
}

/* The offset of `t`'s element at `index`, a size-1 dimension broadcast. */
static int64_t offsetOf(const struct fake_tensor *t, const int64_t *index) {
  int64_t offset = 0;
  for (int64_t d = 0; d < t->rank; ++d)
    offset += (t->dims[d] == 1 ? 0 : index[d]) * t->strides[d];
  return offset;
}

static double applyPointwise(const struct fake_node *n, const int64_t *index,
                             double x, double b, double t) {
  double v;
  switch (n->mode) {
  case CUDNN_POINTWISE_EXP:
    v = exp(x);
    break;
  case CUDNN_POINTWISE_LOG:
    v = log(x);
    break;
  case CUDNN_POINTWISE_NEG:
    v = -x;
    break;
  case CUDNN_POINTWISE_IDENTITY:
    v = x;
    break;
  case CUDNN_POINTWISE_GEN_INDEX:
    return (double)index[n->axis];
  case CUDNN_POINTWISE_ADD:
    v = x + b;
    break;
  case CUDNN_POINTWISE_SUB:
    v = x - b;
    break;
  case CUDNN_POINTWISE_MUL:
    v = x * b;
    break;
  case CUDNN_POINTWISE_DIV:
    v = x / b;
    break;
  case CUDNN_POINTWISE_MAX:
    v = x > b ? x : b;
    break;
  case CUDNN_POINTWISE_MIN:
    v = x < b ? x : b;
    break;
  case CUDNN_POINTWISE_CMP_EQ:
    return x == b;
  case CUDNN_POINTWISE_CMP_NEQ:
    return x != b;
  case CUDNN_POINTWISE_CMP_GT:
    return x > b;
  case CUDNN_POINTWISE_CMP_GE:
    return x >= b;
  case CUDNN_POINTWISE_CMP_LT:
    return x < b;
  case CUDNN_POINTWISE_CMP_LE:
    return x <= b;
  default: /* BINARY_SELECT */
    return t != 0 ? x : b;
  }
  return rounded(n->math, v);
}

static void runNode(const struct fake_node *n, const int *operand,
                    const struct fake_storage *storage) {
  const struct fake_storage *x = &storage[operand[kX]],
                            *y = &storage[operand[kY]];
  const struct fake_storage *b = operand[kB] >= 0 ? &storage[operand[kB]] : 0,
                            *t = operand[kT] >= 0 ? &storage[operand[kT]] : 0;
  const struct fake_tensor *yt = y->tensor;
  int64_t index[kMaxRank] = {0};
  switch (n->kind) {
  case kPointwiseNode:
    do {
      double xv = loadElement(x, offsetOf(x->tensor, index));
      double bv = b ? loadElement(b, offsetOf(b->tensor, index)) : 0;
      double tv = t ? loadElement(t, offsetOf(t->tensor, index)) : 0;
      storeElement(y, offsetOf(yt, index),
                   applyPointwise(n, index, xv, bv, tv));
    } while (nextIndex(index, yt->dims, yt->rank));
    return;
  case kMatmulNode: {
    /* y[.., m, n] = sum over k of x[.., m, k] b[.., k, n]. */
    const int64_t r = yt->rank, inner = x->tensor->dims[r - 1];
    do {
      int64_t ai[kMaxRank], bi[kMaxRank];
      memcpy(ai, index, sizeof(ai));
      memcpy(bi, index, sizeof(bi));
      double sum = 0;
      for (int64_t k = 0; k < inner; ++k) {
        ai[r - 1] = k, bi[r - 2] = k;
        sum += loadElement(x, offsetOf(x->tensor, ai)) *
               loadElement(b, offsetOf(b->tensor, bi));
      }
      storeElement(y, offsetOf(yt, index), rounded(n->math, sum));
    } while (nextIndex(index, yt->dims, yt->rank));
    return;
  }
  case kReductionNode: {
    /* Each element of x folds into the element of y it broadcasts from. */
    const int64_t count = elementCount(yt);
    double *acc = malloc((size_t)count * sizeof(double));
    const double first = n->reduction == CUDNN_REDUCE_TENSOR_ADD   ? 0
                         : n->reduction == CUDNN_REDUCE_TENSOR_MAX ? -INFINITY
                                                                   : INFINITY;
    for (int64_t i = 0; i < count; ++i)
      acc[i] = first;
    do {
      int64_t i = 0;
      for (int64_t d = 0; d < yt->rank; ++d)
        i = i * yt->dims[d] + (yt->dims[d] == 1 ? 0 : index[d]);
      double v = loadElement(x, offsetOf(x->tensor, index));
      if (n->reduction == CUDNN_REDUCE_TENSOR_ADD)
        acc[i] += v;
      else if (n->reduction == CUDNN_REDUCE_TENSOR_MAX ? v > acc[i]
                                                       : v < acc[i])
        acc[i] = v;
    } while (nextIndex(index, x->tensor->dims, x->tensor->rank));
    int64_t i = 0;
    do
      storeElement(y, offsetOf(yt, index), rounded(n->math, acc[i++]));
    while (nextIndex(index, yt->dims, yt->rank));
    free(acc);
    return;
  }
  case kReshapeNode:
    /* y is x's memory seen through y's layout. */
    do {
      int64_t offset = 0;
      for (int64_t d = 0; d < yt->rank; ++d)
        offset += index[d] * yt->strides[d];
      storeElement(y, offset, loadElement(x, offset));
    } while (nextIndex(index, yt->dims, yt->rank));
    return;
  }
}

/* The fake engines use their workspace as scratch: NaN before and after
 * every operation, so that a bound tensor placed inside it is clobbered. */
static void scribble(const struct fake_execution *e) {
  if (e->workspace)
    memset(e->workspace, 0xff, e->workspaceBytes);
}

static void runGraph(const struct fake_execution *e) {
  const struct fake_op_graph *g = e->graph;
  struct fake_storage storage[kMaxGraphTensors];
  for (int i = 0; i < g->tensors; ++i) {
    const struct fake_tensor *t = &g->tensor[i];
    storage[i].tensor = t;
    storage[i].data = e->data[i];
    storage[i].scalar = e->scalar[i];
    storage[i].temporary = NULL;
    if (t->isVirtual) {
      /* NaN until written: a read of an element never written shows. */
      const int64_t n = span(t);
      storage[i].temporary = malloc((size_t)n * sizeof(double));
      for (int64_t j = 0; j < n; ++j)
        storage[i].temporary[j] = NAN;
    }
  }
  scribble(e);
  for (int i = 0; i < g->nodes; ++i) {
    runNode(&g->node[i], g->operand[i], storage);
    scribble(e);
  }
  for (int i = 0; i < g->tensors; ++i)
    free(storage[i].temporary);
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variantPack) {
  const struct fake_descriptor *p = plan, *pack = variantPack;
  if (!handle || !p || !pack)
    return failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "a NULL argument");
  if (p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return failWith(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                    "execute takes a plan and a variant pack");
  if (!p->finalized || !pack->finalized)
    return failWith(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                    "the plan or the variant pack is not finalized");
  if (failExecutions)
    return failWith(CUDNN_STATUS_EXECUTION_FAILED,
                    "the engine failed (fake_cudnn_fail_executions)");
  const size_t workspace = kEngines[p->engine].workspace;
  if (workspace && !pack->workspace)
    return failWith(CUDNN_STATUS_BAD_PARAM,
                    "engine %d needs %zu bytes of workspace, the variant "
                    "pack has none",
                    p->engine, workspace);
  struct fake_execution *e = calloc(1, sizeof(*e));
  if (!e)
    return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  const struct fake_op_graph *g = p->graph;
  for (int i = 0; i < g->tensors; ++i) {
    const struct fake_tensor *t = &g->tensor[i];
    if (t->isVirtual)
      continue;
    int64_t j = 0;
    while (j < pack->uidCount && pack->uids[j] != t->uid)
      ++j;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    if (j == pack->uidCount)
      s = failWith(CUDNN_STATUS_BAD_PARAM,
                   "the variant pack has no pointer for tensor %lld",
                   (long long)t->uid);
    else if (!pack->pointers[j])
      s = failWith(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                   "tensor %lld is bound to NULL", (long long)t->uid);
    else if (!t->isByValue &&
             (uintptr_t)pack->pointers[j] % (uintptr_t)t->alignment)
      s = failWith(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                   "tensor %lld is not aligned to %lld bytes",
                   (long long)t->uid, (long long)t->alignment);
    if (s != CUDNN_STATUS_SUCCESS) {
      free(e);
      return s;
    }
    e->data[i] = pack->pointers[j];
    if (t->isByValue)
      e->scalar[i] = t->type == CUDNN_DATA_INT32 ? *(const int32_t *)e->data[i]
                                                 : load(t->type, e->data[i], 0);
  }
  e->graph = retainGraph(p->graph);
  e->engine = p->engine;
  e->workspace = pack->workspace;
  e->workspaceBytes = workspace;
  struct fake_call call;
  memset(&call, 0, sizeof(call));
  call.op = kGraph;
  call.execution = e;
  note("graph ops=%d engine=%d", g->nodes, p->engine);
  cudnnStatus_t s = launch(handle, &call);
  /* A record launch() could not keep; a kept one is freed with the rest. */
  if (s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    freeExecution(e);
  return s;
}

/*===- FakeCudnn.c - cuDNN for the fake CUDA driver ---------------*- C -*-===//
 *
 * Built as libcudnn.so.9 next to the fake driver (FakeCudaDriver.c), whose
 * device memory is host memory: it implements the legacy cuDNN entry points
 * the runtime resolves (runtime/src/device/cuda/CudaKernels.cpp), with
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
 * fake_cudnn_trace() lists what each call ran, one line each, for example
 * "conv_fwd x=f32 w=f32 y=f32 2x4x6x6 k=6 algo=2 beta=0", "add_tensor",
 * "relu", "pool_fwd max 3x3"; fake_cudnn_clear() empties it.
 *
 *===----------------------------------------------------------------------===*/

#include "FakeCuda.h"

#include <cuda.h>
#include <cudnn.h>

#include <math.h>
#include <stdarg.h>
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
  case CUDNN_STATUS_SUCCESS:
    return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_BAD_PARAM:
    return "CUDNN_STATUS_BAD_PARAM";
  case CUDNN_STATUS_NOT_SUPPORTED:
    return "CUDNN_STATUS_NOT_SUPPORTED";
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
  kPoolBackward
};

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

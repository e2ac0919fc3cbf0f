/*===- FakeCudaDriver.c - A CUDA driver without a GPU -------------*- C -*-===//
 *
 * Built as libcuda.so.1 in a directory of its own; tests that put that
 * directory on LD_LIBRARY_PATH get it when the runtime dlopens the driver.
 * It implements exactly the entry points the runtime resolves
 * (runtime/src/device/cuda/CudaDriver.h), with cuda.h's signatures and exported
 * names (cuMemAlloc is cuMemAlloc_v2 by cuda.h's macros). See FakeCuda.h.
 *
 * Devices: two, device 0 of compute capability 9.0 and device 1 of 7.5,
 * unless FAKE_CUDA_DEVICES is set (a count, read at every
 * cuDeviceGetCount); FAKE_CUDA_UNIFORM=1 makes device 1 a 9.0 too (two
 * ranks of a data-parallel test, one per device). fake_cuda_fail_sync(1)
 * makes stream and event waits fail as after a kernel's illegal memory
 * access.
 *
 * Streams are distinct tokens, but all work runs at once, in call order;
 * what a real GPU would order by streams and events is checked instead
 * through the trace (fake_cuda_trace: one line per copy, launch, graph
 * launch, event record, stream wait and host wait for an event).
 *
 * Graphs: while a stream captures, a launch is recorded (its kernel and
 * its two parameter values) instead of run, and a copy or fill is refused
 * (the runtime enqueues none inside an entry point); cuGraphLaunch replays
 * the recorded launches. fake_cuda_refuse_capture(1) makes capturing fail
 * as it does for work that cannot be captured. fake_cuda_fail_launch(1)
 * makes direct launches fail as a launch with bad arguments does (the
 * device itself stays usable).
 *
 * Memory: cuMemGetInfo says 1 GiB free of 2 unless fake_cuda_free_mib(n)
 * set another free amount (0: back to 1 GiB).
 *
 *===----------------------------------------------------------------------===*/

#include "FakeCuda.h"

#include <cuda.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fake_cuda_stats_t stats;
static int failSync;
static int refuseCapture;
static int failLaunch;
static size_t freeBytes = (size_t)1 << 30;

enum { kMaxGraphLaunches = 16 };
struct fake_graph {
  int count;
  const fake_cuda_kernel *kernels[kMaxGraphLaunches];
  uint64_t params[kMaxGraphLaunches][2];
};
/* The graph being captured, or NULL. */
static struct fake_graph *capturing;
static struct fake_context { int device; } contexts[2] = {{0}, {1}};
static __thread CUcontext current;

/* Streams and events are distinct non-null tokens. */
enum { kMaxStreams = 64, kMaxEvents = 64 };
static char streamTokens[kMaxStreams], eventTokens[kMaxEvents];
static int nextStream, nextEvent;
static int isStream(CUstream stream) {
  const char *p = (const char *)stream;
  return p >= streamTokens && p < streamTokens + kMaxStreams;
}
static int streamId(CUstream stream) {
  return (int)((const char *)stream - streamTokens);
}
static int eventId(CUevent event) {
  return (int)((const char *)event - eventTokens);
}

/* The trace: one line per copy, launch, graph launch, event record and
 * stream wait ("h2d s3", "launch s2 sgd_update", "record e5 s3",
 * "wait s2 e5"), for tests of the order of work on the streams. */
static char trace[1 << 16];
static size_t traceLength;
static const void *h2dSources[256];
static int h2dCount;
static void note(const char *format, ...) {
  char line[128];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  if (n > 0 && traceLength + (size_t)n + 1 < sizeof(trace)) {
    memcpy(trace + traceLength, line, (size_t)n);
    traceLength += (size_t)n;
    trace[traceLength++] = '\n';
    trace[traceLength] = 0;
  }
}
const char *fake_cuda_trace(void) { return trace; }
void fake_cuda_trace_reset(void) {
  traceLength = 0;
  trace[0] = 0;
  h2dCount = 0;
}
/* The source addresses of the host-to-device copies since the last
 * fake_cuda_trace_reset (the first 256). */
int fake_cuda_h2d_sources(const void *const **sources) {
  *sources = h2dSources;
  return h2dCount;
}

fake_cuda_stats_t fake_cuda_stats(void) { return stats; }
void fake_cuda_fail_sync(int fail) { failSync = fail; }
void fake_cuda_refuse_capture(int refuse) { refuseCapture = refuse; }
void fake_cuda_fail_launch(int fail) { failLaunch = fail; }
void fake_cuda_free_mib(int mib) {
  freeBytes = mib > 0 ? (size_t)mib << 20 : (size_t)1 << 30;
}

CUresult cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuDriverGetVersion(int *version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    return CUDA_SUCCESS;
  default:
    *name = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
  }
}
CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == CUDA_ERROR_ILLEGAL_ADDRESS
              ? "an illegal memory access was encountered"
              : "fake driver error";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  const char *env = getenv("FAKE_CUDA_DEVICES");
  *count = env ? atoi(env) : 2;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal < 0 || ordinal > 1)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
static int uniform(void) {
  const char *env = getenv("FAKE_CUDA_UNIFORM");
  return env && strcmp(env, "1") == 0;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  if (uniform())
    device = 0;
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *value = device == 0 ? 9 : 7;
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *value = device == 0 ? 0 : 5;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
  strncpy(name, device == 0 || uniform() ? "Fake GPU" : "Old Fake GPU",
          (size_t)len);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  *context = (CUcontext)&contexts[device];
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext context) {
  current = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = current;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  (void)device;
  return CUDA_SUCCESS;
}
/* A caller's push and pop around its own work (the Python binding's wait
 * for a producer's stream). */
static CUcontext pushed[8];
static int depth;
CUresult cuCtxPushCurrent(CUcontext context) {
  if (depth == 8)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pushed[depth++] = current;
  current = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext *context) {
  if (depth == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context)
    *context = current;
  current = pushed[--depth];
  return CUDA_SUCCESS;
}
CUresult cuMemGetInfo(size_t *free, size_t *total) {
  *free = freeBytes;
  *total = (size_t)1 << 31;
  return CUDA_SUCCESS;
}
/* What cuPointerGetAttribute knows: every live allocation of cuMemAlloc
 * (device memory of the current context's device) and cuMemHostAlloc
 * (page-locked host memory). */
struct fake_allocation {
  void *start;
  size_t bytes;
  unsigned type; /* CU_MEMORYTYPE_DEVICE or CU_MEMORYTYPE_HOST */
  int device;
};
static struct fake_allocation *allocations;
static size_t numAllocations, allocationCapacity;
static int track(void *start, size_t bytes, unsigned type, int device) {
  if (numAllocations == allocationCapacity) {
    size_t capacity = allocationCapacity ? 2 * allocationCapacity : 64;
    void *grown = realloc(allocations, capacity * sizeof(*allocations));
    if (!grown)
      return 0;
    allocations = (struct fake_allocation *)grown;
    allocationCapacity = capacity;
  }
  struct fake_allocation a = {start, bytes, type, device};
  allocations[numAllocations++] = a;
  return 1;
}
static void untrack(void *start) {
  for (size_t i = 0; i < numAllocations; ++i)
    if (allocations[i].start == start) {
      allocations[i] = allocations[--numAllocations];
      return;
    }
}
static const struct fake_allocation *lookup(const void *p) {
  for (size_t i = 0; i < numAllocations; ++i) {
    const char *start = (const char *)allocations[i].start;
    if ((const char *)p >= start &&
        (const char *)p <
            start + (allocations[i].bytes ? allocations[i].bytes : 1))
      return &allocations[i];
  }
  return NULL;
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (!track(p, bytes, CU_MEMORYTYPE_DEVICE,
             ((struct fake_context *)current)->device)) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  /* Not zeroed, as on a real GPU: the runtime must clear what it needs. */
  memset(p, 0xA5, bytes);
  *ptr = (CUdeviceptr)p;
  ++stats.allocations;
  stats.bytes_allocated += (int64_t)bytes;
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr ptr) {
  untrack((void *)ptr);
  free((void *)ptr);
  return CUDA_SUCCESS;
}
CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags) {
  (void)flags;
  *ptr = malloc(bytes ? bytes : 1);
  if (*ptr && !track(*ptr, bytes, CU_MEMORYTYPE_HOST, -1)) {
    free(*ptr);
    *ptr = NULL;
  }
  return *ptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *ptr) {
  untrack(ptr);
  free(ptr);
  return CUDA_SUCCESS;
}
/* The attributes the runtime asks for; memory the fake did not allocate is
 * unknown to it, as pageable host memory is to a real driver. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr ptr) {
  const struct fake_allocation *a = lookup((const void *)ptr);
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = a->type;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = a->device;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = (CUdeviceptr)a->start;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *(size_t *)data = a->bytes;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_NOT_SUPPORTED;
  }
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                           CUstream stream) {
  if (capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  note("h2d s%d", streamId(stream));
  if (h2dCount < (int)(sizeof(h2dSources) / sizeof(h2dSources[0])))
    h2dSources[h2dCount++] = src;
  memcpy((void *)dst, src, bytes);
  return CUDA_SUCCESS;
}
/* The synchronous copy a caller uses to fill its own device buffers
 * (scripts/gpu-check-train.py --memory=device); the runtime never does. */
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  if (capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  note("h2d sync");
  memcpy((void *)dst, src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                           CUstream stream) {
  if (capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  note("d2h s%d", streamId(stream));
  memcpy(dst, (const void *)src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                           CUstream stream) {
  if (capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  note("d2d s%d", streamId(stream));
  memmove((void *)dst, (const void *)src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count,
                         CUstream stream) {
  (void)stream;
  if (capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  memset((void *)dst, value, count);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                          CUstream stream) {
  (void)stream;
  if (capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  for (size_t i = 0; i < count; ++i)
    memcpy((unsigned char *)dst + 4 * i, &value, 4);
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  *stream = (CUstream)&streamTokens[nextStream++ % kMaxStreams];
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) {
  /* The default streams are a caller's (a producer's stream the Python
   * binding waits for); the runtime uses streams of its own, which are not
   * traced here. */
  if (stream == CU_STREAM_LEGACY)
    note("sync legacy");
  else if (stream == CU_STREAM_PER_THREAD)
    note("sync per-thread");
  else if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  return failSync ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *event, unsigned int flags) {
  (void)flags;
  *event = (CUevent)&eventTokens[nextEvent++ % kMaxEvents];
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream stream) {
  if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  note("record e%d s%d", eventId(event), streamId(stream));
  return CUDA_SUCCESS;
}
CUresult cuStreamWaitEvent(CUstream stream, CUevent event,
                           unsigned int flags) {
  if (!isStream(stream) || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  note("wait s%d e%d", streamId(stream), eventId(event));
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent event) {
  note("sync e%d", eventId(event));
  return failSync ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent event) {
  (void)event;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  const fake_cuda_module *m = (const fake_cuda_module *)image;
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!m || m->magic != FAKE_CUDA_MODULE_MAGIC)
    return CUDA_ERROR_INVALID_IMAGE;
  ++stats.module_loads;
  *module = (CUmodule)(uintptr_t)image;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int numOptions, CUjit_option *options,
                            void **values) {
  (void)numOptions, (void)options, (void)values;
  return cuModuleLoadData(module, image);
}
CUresult cuModuleUnload(CUmodule module) {
  (void)module;
  ++stats.module_unloads;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  const fake_cuda_module *m = (const fake_cuda_module *)module;
  for (int i = 0; i < m->count; ++i)
    if (strcmp(m->kernels[i].name, name) == 0) {
      *function = (CUfunction)(uintptr_t)&m->kernels[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuFuncGetName(const char **name, CUfunction function) {
  *name = ((const fake_cuda_kernel *)function)->name;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedMem,
                        CUstream stream, void **params, void **extra) {
  (void)gridX, (void)gridY, (void)gridZ, (void)blockX, (void)blockY,
      (void)blockZ, (void)sharedMem, (void)extra;
  if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  const fake_cuda_kernel *kernel = (const fake_cuda_kernel *)function;
  if (failLaunch && !capturing)
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (capturing) {
    if (capturing->count == kMaxGraphLaunches)
      return CUDA_ERROR_OUT_OF_MEMORY;
    capturing->kernels[capturing->count] = kernel;
    memcpy(&capturing->params[capturing->count][0], params[0], 8);
    memcpy(&capturing->params[capturing->count][1], params[1], 8);
    ++capturing->count;
    return CUDA_SUCCESS;
  }
  ++stats.launches;
  note("launch s%d %s", streamId(stream), kernel->name);
  kernel->fn(params);
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  (void)mode;
  if (!isStream(stream) || capturing)
    return CUDA_ERROR_INVALID_VALUE;
  if (refuseCapture)
    return CUDA_ERROR_NOT_SUPPORTED;
  capturing = calloc(1, sizeof(*capturing));
  return capturing ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  (void)stream;
  if (!capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  *graph = (CUgraph)capturing;
  capturing = NULL;
  ++stats.captures;
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream stream,
                             CUstreamCaptureStatus *status) {
  if (!isStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  *status = capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                      : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                            unsigned long long flags) {
  (void)flags;
  struct fake_graph *copy = malloc(sizeof(*copy));
  if (!copy)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(copy, (struct fake_graph *)graph, sizeof(*copy));
  *exec = (CUgraphExec)copy;
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (!isStream(stream) || capturing)
    return CUDA_ERROR_INVALID_VALUE;
  struct fake_graph *g = (struct fake_graph *)exec;
  ++stats.graph_launches;
  note("graph s%d", streamId(stream));
  for (int i = 0; i < g->count; ++i) {
    void *params[2] = {&g->params[i][0], &g->params[i][1]};
    ++stats.launches;
    g->kernels[i]->fn(params);
  }
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  free((struct fake_graph *)graph);
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  free((struct fake_graph *)exec);
  return CUDA_SUCCESS;
}

/*===- FakeNccl.c - NCCL for the fake CUDA driver -----------------*- C -*-===//
 *
 * Built as libnccl.so.2 next to FakeCudaDriver.c's libcuda.so.1, for the
 * data-parallel tests of cuda sessions on machines without GPUs. It
 * implements the entry points the runtime resolves (runtime/src/device/
 * cuda/Nccl.cpp) with nccl.h's signatures. The fake driver's device memory is
 * host memory, so an all-reduce is an MPI_Allreduce in place; it is
 * enqueued as a launch of a fake kernel on the given stream, as NCCL's own
 * kernels are, so that it is ordered with the session's other work and
 * recorded into a graph the session captures.
 *
 * What it checks, as NCCL would fail: the unique id came from
 * ncclGetUniqueId and every rank joined with the same one, the rank and
 * size are MPI_COMM_WORLD's, a CUDA context is current, buffers are
 * reduced in place as float32 with ncclSum or ncclAvg. FAKE_NCCL_FAIL_RANK=R
 * makes rank R's ncclCommInitRank fail (after the collective part, as a
 * real failure may), to test that the other ranks do not wait for it.
 *
 *===----------------------------------------------------------------------===*/

#include "FakeCuda.h"

#include <cuda.h>
#include <mpi.h>
#include <nccl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ncclComm {
  MPI_Comm comm;
  int rank;
  int size;
};

static const char kMagic[] = "fake-nccl-id";
/* The communicator the fake kernels reduce over: a launch keeps only two
 * parameters (FakeCuda.h), the buffer and the count with the operation. */
static struct ncclComm *active;
static int groupDepth;
static int64_t allReduceCalls;

int64_t fake_nccl_all_reduce_calls(void) { return allReduceCalls; }

static void allReduceKernel(void **params) {
  float *data;
  uint64_t packed;
  memcpy(&data, params[0], sizeof(data));
  memcpy(&packed, params[1], sizeof(packed));
  const int count = (int)(packed >> 1);
  MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, active->comm);
  if (packed & 1)
    for (int i = 0; i < count; ++i)
      data[i] /= (float)active->size;
}
static const fake_cuda_kernel kAllReduce = {"fake_nccl_all_reduce",
                                            allReduceKernel};

ncclResult_t ncclGetVersion(int *version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument (fake NCCL)";
  case ncclInvalidUsage:
    return "invalid usage (fake NCCL)";
  default:
    return "system error (fake NCCL)";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, kMagic, sizeof(kMagic));
  /* Different for every call, as NCCL's are. */
  static uint32_t serial;
  uint32_t tag = (uint32_t)rand() ^ ++serial;
  memcpy(id->internal + sizeof(kMagic), &tag, sizeof(tag));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank) {
  int initialized = 0, worldRank = -1, worldSize = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return ncclInvalidUsage;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (rank != worldRank || nranks != worldSize)
    return ncclInvalidArgument;
  CUcontext context = NULL;
  if (cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context)
    return ncclInvalidUsage;
  struct ncclComm *c = calloc(1, sizeof(*c));
  if (!c)
    return ncclSystemError;
  MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  c->rank = rank;
  c->size = nranks;
  /* Every rank must hold the id rank 0 made. */
  uint32_t tag;
  memcpy(&tag, id.internal + sizeof(kMagic), sizeof(tag));
  int valid = memcmp(id.internal, kMagic, sizeof(kMagic)) == 0;
  uint32_t lowest = tag, highest = tag;
  int allValid = valid;
  MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_UINT32_T, MPI_MIN, c->comm);
  MPI_Allreduce(MPI_IN_PLACE, &highest, 1, MPI_UINT32_T, MPI_MAX, c->comm);
  MPI_Allreduce(MPI_IN_PLACE, &allValid, 1, MPI_INT, MPI_LAND, c->comm);
  const char *failRank = getenv("FAKE_NCCL_FAIL_RANK");
  if (!allValid || lowest != highest ||
      (failRank && atoi(failRank) == rank)) {
    MPI_Comm_free(&c->comm);
    free(c);
    return failRank ? ncclSystemError : ncclInvalidArgument;
  }
  active = c;
  *comm = c;
  return ncclSuccess;
}

static ncclResult_t destroy(ncclComm_t comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Comm_free(&comm->comm);
  if (active == comm)
    active = NULL;
  free(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return destroy(comm); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return destroy(comm); }

ncclResult_t ncclGroupStart(void) {
  ++groupDepth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) {
  if (groupDepth == 0)
    return ncclInvalidUsage;
  --groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (comm != active || sendbuff != recvbuff || datatype != ncclFloat32 ||
      (op != ncclSum && op != ncclAvg) || count > INT32_MAX)
    return ncclInvalidArgument;
  ++allReduceCalls;
  uint64_t packed = ((uint64_t)count << 1) | (op == ncclAvg);
  void *params[2] = {&recvbuff, &packed};
  CUresult launched = cuLaunchKernel((CUfunction)(uintptr_t)&kAllReduce, 1, 1,
                                     1, 1, 1, 1, 0, (CUstream)stream, params,
                                     NULL);
  return launched == CUDA_SUCCESS ? ncclSuccess : ncclUnhandledCudaError;
}

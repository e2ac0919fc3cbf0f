//===- Nccl.cpp - Cross-rank reduction of device buffers with NCCL --------===//
//
// The NCCL communicator is bootstrapped over the session's MPI communicator:
// rank 0 creates the unique id and broadcasts it. Every step that may fail
// on one rank alone (loading NCCL, creating the id, joining the
// communicator) is followed by an agreement, a sum over the ranks of their
// failures, so that all ranks return an error together rather than some of
// them waiting forever in a collective the others never reach.
//
//===----------------------------------------------------------------------===//

#include "device/cuda/Nccl.h"

#include "collectives/Agree.h"
#include "collectives/Communicator.h"
#include "device/Device.h"
#include "device/cuda/CudaDriver.h"
#include "kernels/KernelContext.h"

#include "cleave/kernel_abi.h"

#include <nccl.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace cleave::rt {

namespace {

// The NCCL functions the runtime calls; X(name) for each.
#define CLEAVE_NCCL_FUNCTIONS(X)                                               \
  X(ncclGetVersion)                                                            \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclGetErrorString)                                                        \
  X(ncclAllReduce)                                                             \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)

/// ncclAvg, the reduction of CLEAVE_REDUCE_MEAN, came with NCCL 2.10.
constexpr int kMinNcclVersion = 21000;

/// libnccl.so.2, loaded once per process and never unloaded.
struct NcclLibrary {
#define CLEAVE_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  CLEAVE_NCCL_FUNCTIONS(CLEAVE_NCCL_MEMBER)
#undef CLEAVE_NCCL_MEMBER
  int version = 0;

  static const NcclLibrary *get(std::string &error) {
    static NcclLibrary library;
    static std::string loadError;
    static std::once_flag once;
    std::call_once(once, [] {
      // CLEAVE_NCCL_LIBRARY names another build (a path or a file name).
      const char *chosen = std::getenv("CLEAVE_NCCL_LIBRARY");
      const std::string name =
          chosen && *chosen ? chosen : std::string("libnccl.so.2");
      void *handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        loadError = "no NCCL (" + name +
                    " not found; it comes with the CUDA toolkit, the "
                    "libnccl2 package or PyTorch's nvidia-nccl wheel)";
        return;
      }
#define CLEAVE_NCCL_RESOLVE(fn)                                                \
  library.fn = reinterpret_cast<decltype(library.fn)>(::dlsym(handle, #fn));   \
  if (!library.fn) {                                                           \
    loadError = "NCCL (" + name + ") has no " #fn;                             \
    return;                                                                    \
  }
      CLEAVE_NCCL_FUNCTIONS(CLEAVE_NCCL_RESOLVE)
#undef CLEAVE_NCCL_RESOLVE
      if (library.ncclGetVersion(&library.version) != ncclSuccess)
        library.version = 0;
      if (library.version < kMinNcclVersion)
        loadError = "NCCL " + std::to_string(library.version) +
                    " is too old: data-parallel training needs 2.10 or later "
                    "(ncclAvg)";
    });
    error = loadError;
    return loadError.empty() ? &library : nullptr;
  }

  Status check(ncclResult_t result, const std::string &what) const {
    if (result == ncclSuccess)
      return Status::success();
    return makeError(CLEAVE_INTERNAL, what, ": NCCL error ",
                     static_cast<int>(result), " (",
                     ncclGetErrorString(result), ")");
  }
};

class NcclCollectives final : public Collectives {
public:
  NcclCollectives(const CudaDriver &driver, const NcclLibrary &nccl,
                  Device &gpu, Communicator &comm, ncclComm_t nc)
      : driver_(driver), nccl_(nccl), gpu_(gpu), comm_(comm), nc_(nc) {}

  ~NcclCollectives() override {
    // Work still enqueued may use the communicator.
    (void)gpu_.synchronize();
    nccl_.ncclCommDestroy(nc_);
  }

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }

  Status reduce(ReduceKind kind, int64_t count, float *const *buffers,
                const int64_t *sizes) override {
    if (kind == ReduceKind::Adasum)
      return adasumOnHost(count, buffers, sizes);
    const ncclRedOp_t op = kind == ReduceKind::Sum ? ncclSum : ncclAvg;
    auto stream = static_cast<cudaStream_t>(gpu_.compute().native());
    // One group: NCCL fuses the buffers' all-reduces where it can, as the
    // CPU path packs small tensors into one message.
    CLEAVE_RETURN_IF_ERROR(nccl_.check(nccl_.ncclGroupStart(), "NCCL group"));
    Status status;
    for (int64_t i = 0; i < count && status.ok(); ++i)
      if (sizes[i] > 0)
        status = nccl_.check(
            nccl_.ncclAllReduce(buffers[i], buffers[i], size_t(sizes[i]),
                                ncclFloat32, op, nc_, stream),
            "all-reduce of buffer " + std::to_string(i) + " (" +
                std::to_string(sizes[i]) + " floats)");
    Status ended = nccl_.check(nccl_.ncclGroupEnd(), "NCCL group");
    if (!status.ok())
      return status;
    CLEAVE_RETURN_IF_ERROR(ended);
    // Counted as the CPU path counts its all-reduce (a ring), per buffer.
    for (int64_t i = 0; i < count; ++i)
      ncclBytes_ += allReduceBytes(sizes[i], rank(), size(), sizeof(float));
    return Status::success();
  }

  Status supportsSharding() const override { return noSharding(); }

  /// ZeRO-1 over NCCL is not implemented; the session refuses such jobs
  /// before any call can get here.
  Status reduceScatterShards(int64_t, const float *const *, const int64_t *,
                             float *const *) override {
    return noSharding();
  }
  Status allGatherShards(int64_t, const float *const *, const int64_t *,
                         float *const *) override {
    return noSharding();
  }

  /// NCCL's count and, for Adasum, the host communicator's.
  uint64_t bytesSent() const override { return ncclBytes_ + comm_.bytesSent(); }

private:
  /// Adasum through host memory: waits for the buffers, reduces them with
  /// the MPI path and copies the result back. Waiting is not allowed while
  /// the stream is being captured into a graph: the call then fails, which
  /// makes the session run this entry point without a graph from then on.
  Status adasumOnHost(int64_t count, float *const *buffers,
                      const int64_t *sizes) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    CLEAVE_RETURN_IF_ERROR(driver_.check(
        driver_.cuStreamIsCapturing(
            static_cast<CUstream>(gpu_.compute().native()), &capture),
        "cannot query the stream's capture"));
    if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
      return makeError(CLEAVE_FAILED_PRECONDITION,
                       "Adasum stages through host memory and cannot be "
                       "captured into a CUDA graph");
    host_.resize(size_t(count));
    std::vector<float *> pointers(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      host_[i].resize(size_t(sizes[i]));
      pointers[i] = host_[i].data();
      CLEAVE_RETURN_IF_ERROR(gpu_.compute().download(
          host_[i].data(), buffers[i], sizeof(float) * size_t(sizes[i])));
    }
    CLEAVE_RETURN_IF_ERROR(gpu_.synchronize());
    comm_.reduceInPlace(ReduceKind::Adasum, count, pointers.data(), sizes);
    for (int64_t i = 0; i < count; ++i)
      CLEAVE_RETURN_IF_ERROR(gpu_.compute().upload(
          buffers[i], host_[i].data(), sizeof(float) * size_t(sizes[i])));
    // The host copies are pageable, so the uploads are done on return; the
    // next call may reuse them.
    return Status::success();
  }

  static Status noSharding() {
    return Status(CLEAVE_FAILED_PRECONDITION,
                  "ZeRO-1 (sharded optimizer state) is not implemented on "
                  "GPUs; compile without --shard-optimizer-state");
  }

  const CudaDriver &driver_;
  const NcclLibrary &nccl_;
  Device &gpu_;
  Communicator &comm_;
  ncclComm_t nc_;
  std::vector<std::vector<float>> host_;
  uint64_t ncclBytes_ = 0;
};

} // namespace

Status createNcclCollectives(const CudaDriver &driver, Device &gpu,
                             Communicator &comm,
                             std::unique_ptr<Collectives> &out) {
  std::string loadError;
  const NcclLibrary *nccl = NcclLibrary::get(loadError);
  Status loaded =
      nccl ? Status::success()
           : makeError(CLEAVE_FAILED_PRECONDITION, "rank ", comm.rank(), ": ",
                       loadError);
  CLEAVE_RETURN_IF_ERROR(agreeAcrossRanks(comm, loaded, "loading NCCL"));

  // The unique id names the NCCL communicator; rank 0 makes it, every rank
  // joins with it. The first byte of the broadcast says whether it worked.
  std::vector<char> id(1 + sizeof(ncclUniqueId), 0);
  Status made = Status::success();
  if (comm.rank() == 0) {
    ncclUniqueId unique;
    made = nccl->check(nccl->ncclGetUniqueId(&unique),
                       "rank 0: cannot create the NCCL communicator's id");
    if (made.ok()) {
      id[0] = 1;
      std::memcpy(id.data() + 1, &unique, sizeof(unique));
    }
  }
  comm.broadcast(id.data(), int64_t(id.size()), /*root=*/0);
  if (!id[0])
    return made.ok() ? makeError(CLEAVE_FAILED_PRECONDITION,
                                 "rank 0 could not create the NCCL "
                                 "communicator's id (it prints why)")
                     : made;
  ncclUniqueId unique;
  std::memcpy(&unique, id.data() + 1, sizeof(unique));

  CLEAVE_RETURN_IF_ERROR(gpu.makeCurrent());
  ncclComm_t nc = nullptr;
  Status joined = nccl->check(
      nccl->ncclCommInitRank(&nc, comm.size(), unique, comm.rank()),
      "rank " + std::to_string(comm.rank()) + " (" + gpu.description() +
          "): cannot join the NCCL communicator");
  // Whatever NCCL's reason, this job cannot train on these GPUs.
  if (!joined.ok())
    joined = Status(CLEAVE_FAILED_PRECONDITION, joined.message());
  Status all = agreeAcrossRanks(comm, joined, "joining the NCCL communicator");
  if (!all.ok()) {
    if (nc)
      nccl->ncclCommAbort(nc);
    return all;
  }
  out = std::make_unique<NcclCollectives>(driver, *nccl, gpu, comm, nc);
  return Status::success();
}

} // namespace cleave::rt

//===- Communicator.h - Cross-rank collectives ------------------*- C++ -*-===//
//
// The data-parallel ranks of one training job and the collectives the runtime
// runs across them: sum, mean and Adasum reductions of gradient or delta
// tensors, the reduce-scatter / all-gather pair of ZeRO-1 sharded optimizer
// state, broadcast and barrier. Built on MPI point-to-point messages with a
// bounded wait, so a lost rank ends the job instead of hanging it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_COMMUNICATOR_H
#define CLEAVE_RUNTIME_COLLECTIVES_COMMUNICATOR_H

#include "collectives/Sharding.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cleave::rt {

struct AdasumWorkspace;
class MpiSession;
class Transport;
template <typename T> struct RingStaging;

/// Exit status of a process whose collective failed (EX_UNAVAILABLE from
/// sysexits.h: "a service is unavailable"), so that launch scripts can tell a
/// lost peer from an ordinary error. mpirun passes on the status of the
/// first rank to abort.
inline constexpr int kCollectiveFailureExitCode = 69;

/// How reduceInPlace combines the ranks' values. The numbers are the `kind`
/// argument of cleave_cross_rank_reduce in the kernel ABI.
enum class ReduceKind : int32_t {
  Sum = 0,    ///< Elementwise sum.
  Mean = 1,   ///< Elementwise sum divided by the number of ranks.
  Adasum = 2, ///< Adaptive summation, per buffer (docs/design/adasum.md).
};

/// "sum", "mean", "adasum"; nullptr for a value outside the enum.
const char *reduceKindName(ReduceKind kind);

/// Settings of a Communicator.
struct CommunicatorOptions {
  /// How long any collective waits for its peers before declaring one dead
  /// and ending the job.
  double timeoutSeconds = 60.0;
  /// Capacity of the fusion buffer: the largest message the sum/mean ring
  /// sends in one piece, and the largest group of consecutive tensors that
  /// Adasum packs into one reduction (a larger tensor is reduced alone).
  int64_t fusionBufferBytes = int64_t(16) << 20;

  /// The defaults above, overridden by CLEAVE_COLLECTIVE_TIMEOUT_S (seconds,
  /// a positive number) when it is set. Returns std::nullopt and sets
  /// `error` when the variable is malformed.
  static std::optional<CommunicatorOptions> fromEnvironment(std::string &error);
};

/// The ranks of a data-parallel job.
///
/// Every collective must be called by all ranks, in the same order, with the
/// same number of buffers and the same sizes; results are then bit-identical
/// on all ranks. Buffers are float32 unless stated; each buffer pointer may
/// be null only when its size is 0.
///
/// Failures are fatal by design, since the ranks cannot continue without each
/// other: when a peer does not answer within the timeout, MPI reports an
/// error, or the arguments are invalid, the calling rank prints one line
/// ("rank 1: collective 'sum' timed out after 60 s waiting for peers; a rank
/// probably died ...") and the job is aborted with MPI_Abort and exit status
/// kCollectiveFailureExitCode.
///
/// Not thread-safe: calls on one communicator must not overlap. MPI is
/// initialised with MPI_THREAD_SERIALIZED, so any one thread at a time may
/// call; a program that initialises MPI itself with MPI_THREAD_SINGLE must
/// make every call from its main thread.
class Communicator {
public:
  /// The ranks of MPI_COMM_WORLD, on a private duplicate of it.
  ///
  /// - If MPI is initialised, adopts it (and leaves finalising to whoever
  ///   initialised it).
  /// - Else, if the process was started by an MPI launcher (mpirun, srun,
  ///   mpiexec: OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE is set),
  ///   initialises MPI and finalises it when the last communicator created
  ///   this way is destroyed.
  /// - Else returns a single-rank communicator that does not touch MPI, so a
  ///   plain `./train` runs without an MPI runtime being started.
  ///
  /// Returns nullptr and sets `error` when MPI cannot be initialised or was
  /// already finalised in this process.
  static std::unique_ptr<Communicator> world(const CommunicatorOptions &options,
                                             std::string &error);
  /// world() with CommunicatorOptions::fromEnvironment().
  static std::unique_ptr<Communicator> world(std::string &error);

  /// A single-rank communicator that never touches MPI; every collective is
  /// the identity and sends nothing.
  static std::unique_ptr<Communicator>
  local(const CommunicatorOptions &options = CommunicatorOptions());

  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// This rank's shard of a flat vector of `length` elements: what it owns
  /// after reduceScatterSum and contributes to allGather.
  ShardRange ownedShard(int64_t length) const {
    return shardOf(length, rank_, size_);
  }
  /// False for a communicator from local() (or world() outside a launcher).
  bool usesMpi() const { return transport_ != nullptr; }

  /// Payload bytes this rank has sent since creation or resetByteCount().
  /// Counts exactly what the algorithms below hand to MPI; each collective
  /// documents its count.
  uint64_t bytesSent() const;
  void resetByteCount();

  double timeoutSeconds() const { return options_.timeoutSeconds; }
  void setTimeoutSeconds(double seconds);
  int64_t fusionBufferBytes() const { return options_.fusionBufferBytes; }
  void setFusionBufferBytes(int64_t bytes);

  /// Combines `count` buffers across ranks in place: buffer i has `sizes[i]`
  /// elements on every rank and ends up holding the reduction of the ranks'
  /// buffer i.
  ///
  /// Sum and Mean treat the buffers as one flat vector of N = sum(sizes)
  /// elements (small tensors thereby share messages) and run a ring
  /// reduce-scatter then all-gather over it, in messages of at most
  /// fusionBufferBytes. Rank r sends 4 * ((N - |shard r|) +
  /// (N - |shard (r+1) mod R|)) bytes, about 2 (R-1)/R of the data, with
  /// shards as in shardOf(N, ., R). Mean divides each element once, after
  /// summing.
  ///
  /// Adasum reduces each buffer with its own coefficients over the tree of
  /// docs/design/adasum.md (see adasumAllreduce for the traffic).
  ///
  /// Scratch memory, kept between calls: at most two fusion buffers for Sum
  /// and Mean; for Adasum one fusion buffer plus as many floats as the
  /// largest fusion group or lone tensor.
  void reduceInPlace(ReduceKind kind, int64_t count, float *const *buffers,
                     const int64_t *sizes);
  /// reduceInPlace of a single buffer.
  void reduceInPlace(ReduceKind kind, float *data, int64_t size);

  /// Sums `count` doubles across ranks in place (a ring, as for floats; rank
  /// r sends 8 * ((count - |shard r|) + (count - |shard r+1|)) bytes).
  void allreduceSum(double *values, int64_t count);
  /// The sum of `value` over ranks.
  double allreduceSum(double value);

  /// Reduce-scatter for sharded optimizer state. The buffers form one flat
  /// vector of N = sum(sizes) elements; rank r owns shardOf(N, r, R). On
  /// return, the owned elements hold the sum over ranks and the other
  /// elements are unspecified (they hold partial sums). Sends 4 * (N -
  /// |shard r|) bytes.
  void reduceScatterSum(int64_t count, float *const *buffers,
                        const int64_t *sizes);
  void reduceScatterSum(float *data, int64_t size);

  /// The inverse of reduceScatterSum: on entry each rank's owned elements
  /// (shardOf(N, r, R) of the flat vector) hold its values; on return every
  /// rank holds all N. Sends 4 * (N - |shard (r+1) mod R|) bytes.
  void allGather(int64_t count, float *const *buffers, const int64_t *sizes);
  void allGather(float *data, int64_t size);

  /// The ZeRO-1 layout of the kernel ABI (kernel_abi.h): tensor i of
  /// sizes[i] floats is cut into size() shards of
  /// paddedShardSize(sizes[i]) floats, rank r owning elements [r * s,
  /// (r + 1) * s) and positions past the end being zero padding. Unlike
  /// shardOf, every rank's shard of a tensor has the same length, so that
  /// optimizer state sharded this way has one shape on every rank.
  int64_t paddedShardSize(int64_t length) const {
    return (length + size_ - 1) / size_;
  }

  /// outputs[i] (paddedShardSize(sizes[i]) floats) receives this rank's
  /// shard of the sum over ranks of inputs[i] (sizes[i] floats, not
  /// modified). The shards are packed rank by rank into one vector of R * S
  /// floats, S the sum of one rank's shard sizes, and reduce-scattered as
  /// reduceScatterSum does; sends 4 * (R - 1) * S bytes.
  void reduceScatterShards(int64_t count, const float *const *inputs,
                           const int64_t *sizes, float *const *outputs);
  /// The inverse without the sum: inputs[i] (this rank's shard) are
  /// gathered into outputs[i] (sizes[i] floats) on every rank, padding
  /// dropped. Sends 4 * (R - 1) * S bytes.
  void allGatherShards(int64_t count, const float *const *inputs,
                       const int64_t *sizes, float *const *outputs);

  /// Copies `bytes` bytes at `data` from rank `root` to every rank (a binomial
  /// tree: a rank sends the buffer once per child, at most ceil(log2 R)
  /// times).
  void broadcast(void *data, int64_t bytes, int root);

  /// Rank `root` receives every rank's `mine` into `all` (indexed by rank,
  /// resized by the call); `all` is unused on the other ranks. For rare,
  /// large messages (checkpoints): the root receives them one rank at a
  /// time.
  void gatherBytes(const std::string &mine, std::vector<std::string> &all,
                   int root);
  /// The inverse: every rank receives `parts[rank]` of rank `root` into
  /// `mine` (`parts` is read on the root only).
  void scatterBytes(const std::vector<std::string> &parts, std::string &mine,
                    int root);

  /// Returns once every rank has called barrier().
  void barrier();

private:
  Communicator(const CommunicatorOptions &options,
               std::shared_ptr<MpiSession> mpi,
               std::unique_ptr<Transport> transport);

  /// Checks the arguments of a buffer-list collective; fails on bad ones.
  void checkBuffers(const char *what, int64_t count, float *const *buffers,
                    const int64_t *sizes) const;
  /// Checks the arguments of reduceScatterShards / allGatherShards and
  /// returns the floats of one rank's shards, S.
  int64_t checkShards(const char *what, int64_t count,
                      const float *const *inputs, const int64_t *sizes,
                      float *const *outputs, bool inputsAreShards) const;
  /// Prints "rank R: <message>" and ends the job (or the process, locally).
  [[noreturn]] void fail(const std::string &message) const;
  int64_t fusionElems(int64_t elementBytes) const;

  CommunicatorOptions options_;
  int rank_ = 0;
  int size_ = 1;
  // Declared before transport_ so that MPI outlives the communicator handle.
  std::shared_ptr<MpiSession> mpi_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<RingStaging<float>> floatStaging_;
  std::unique_ptr<RingStaging<double>> doubleStaging_;
  std::unique_ptr<AdasumWorkspace> adasumWorkspace_;
  /// The packed vector of reduceScatterShards / allGatherShards.
  std::vector<float> shardPack_;
};

/// The implementation of cleave_cross_rank_reduce (kernel ABI): `kind` is a
/// ReduceKind value. A null `comm` means a single rank, where every kind is
/// the identity. An unknown kind or a negative size is fatal.
void crossRankReduce(Communicator *comm, int32_t kind, int64_t count,
                     float **buffers, const int64_t *sizes);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_COMMUNICATOR_H

//===- Communicator.h - Cross-rank collectives ------------------*- C++ -*-===//
//
// The data-parallel ranks of one training job and the collectives the runtime
// runs across them: sum, mean and Adasum reductions of gradient or delta
// tensors, the reduce-scatter / all-gather pair of ZeRO-1 sharded optimizer
// state, broadcast, gather, scatter and barrier. Built on MPI-3 non-blocking
// collectives (Adasum on point-to-point messages, its tree being no MPI_Op)
// with a bounded wait, so a lost rank ends the job instead of hanging it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_COMMUNICATOR_H
#define CLEAVE_RUNTIME_COLLECTIVES_COMMUNICATOR_H

#include "collectives/Collectives.h"
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
template <typename T> struct StagingBuffers;

/// Exit status of a process whose collective failed (EX_UNAVAILABLE from
/// sysexits.h: "a service is unavailable"), so that launch scripts can tell a
/// lost peer from an ordinary error. mpirun passes on the status of the
/// first rank to abort.
inline constexpr int kCollectiveFailureExitCode = 69;

/// "sum", "mean", "adasum"; nullptr for a value outside the enum.
const char *reduceKindName(ReduceKind kind);

/// Settings of a Communicator.
struct CommunicatorOptions {
  /// How long any collective waits for its peers before declaring one dead
  /// and ending the job.
  double timeoutSeconds = 60.0;
  /// Capacity of the fusion buffer: the most elements of a sum or mean that
  /// one MPI all-reduce combines (a longer list of buffers is reduced in
  /// pieces), and the largest group of consecutive tensors that Adasum packs
  /// into one reduction (a larger tensor is reduced alone). gatherBytes and
  /// scatterBytes move their parts in rounds of at most this many bytes.
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
/// Each collective is one or a few MPI non-blocking collectives (MPI_I...)
/// on a private communicator, polled to completion under the timeout. MPI
/// leaves a collective whose ranks pass different counts undefined, so every
/// collective whose sizes come from the caller first checks, with one small
/// all-reduce of a fingerprint of its name and sizes, that all ranks called
/// it with the same sizes. Sum and mean then rely on MPI computing each sum
/// once and handing it to every rank, which Open MPI's algorithms do (the
/// data-parallel tests check that parameters stay bit-identical).
///
/// Failures are fatal by design, since the ranks cannot continue without each
/// other: when a peer does not answer within the timeout, MPI reports an
/// error, the ranks disagree on the sizes, or the arguments are invalid, the
/// calling rank prints one line ("rank 1: collective 'sum' timed out after
/// 60 s waiting for peers; a rank probably died ...") and the job is aborted
/// with MPI_Abort and exit status kCollectiveFailureExitCode.
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
  ///
  /// MPI chooses how it moves a collective's data (and may send more on
  /// small messages, e.g. a reduction to one rank and back), so the count is
  /// defined by the bandwidth-optimal schedule of each collective, exactly
  /// and per call, whatever pieces the call is split into: a ring for
  /// reductions and gathers (blocks as in shardOf), a binomial tree for
  /// broadcast, direct messages for gather and scatter; each collective
  /// documents its count. Adasum counts what its tree hands to MPI. The
  /// checks that ranks agree on the sizes (16 bytes per collective) and the
  /// lengths exchanged by gather and scatter are not counted.
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
  /// elements (small tensors thereby share messages) and all-reduce it with
  /// MPI_Iallreduce, in pieces of at most fusionBufferBytes. Counted as the
  /// ring's reduce-scatter then all-gather: rank r sends 4 * ((N - |shard r|)
  /// + (N - |shard (r+1) mod R|)) bytes, about 2 (R-1)/R of the data, with
  /// shards as in shardOf(N, ., R). Mean divides each element once, after
  /// summing.
  ///
  /// Adasum reduces each buffer with its own coefficients over the tree of
  /// docs/design/adasum.md (see adasumAllreduce for the traffic).
  ///
  /// Scratch memory, kept between calls: at most two fusion buffers for Sum
  /// and Mean (a piece that spans buffers is packed into one, the result is
  /// received into the other); for Adasum one fusion buffer plus as many
  /// floats as the largest fusion group or lone tensor.
  void reduceInPlace(ReduceKind kind, int64_t count, float *const *buffers,
                     const int64_t *sizes);
  /// reduceInPlace of a single buffer.
  void reduceInPlace(ReduceKind kind, float *data, int64_t size);

  /// Sums `count` doubles across ranks in place (as for floats; counted as
  /// 8 * ((count - |shard r|) + (count - |shard r+1|)) bytes).
  void allreduceSum(double *values, int64_t count);
  /// The sum of `value` over ranks.
  double allreduceSum(double value);

  /// Reduce-scatter over the flat vector of N = sum(sizes) elements
  /// (MPI_Ireduce_scatter); rank r owns shardOf(N, r, R). On return, the
  /// owned elements hold the sum over ranks and the other elements are
  /// unspecified. Counts 4 * (N - |shard r|) bytes. N must be at most 2^30.
  void reduceScatterSum(int64_t count, float *const *buffers,
                        const int64_t *sizes);
  void reduceScatterSum(float *data, int64_t size);

  /// The inverse of reduceScatterSum (MPI_Iallgatherv): on entry each
  /// rank's owned elements (shardOf(N, r, R) of the flat vector) hold its
  /// values; on return every rank holds all N. Counts 4 * (N - |shard (r+1)
  /// mod R|) bytes. N must be at most 2^30.
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
  /// modified). The shards are packed rank by rank, zero padding included,
  /// into one vector of R equal blocks of S floats, S the sum of one rank's
  /// shard sizes (R * S at most 2^30), and reduce-scattered with
  /// MPI_Ireduce_scatter_block; counts 4 * (R - 1) * S bytes.
  void reduceScatterShards(int64_t count, const float *const *inputs,
                           const int64_t *sizes, float *const *outputs);
  /// The inverse without the sum (MPI_Iallgather of the packed blocks):
  /// inputs[i] (this rank's shard) are gathered into outputs[i] (sizes[i]
  /// floats) on every rank, padding dropped. Counts 4 * (R - 1) * S bytes.
  void allGatherShards(int64_t count, const float *const *inputs,
                       const int64_t *sizes, float *const *outputs);

  /// Copies `bytes` bytes at `data` from rank `root` to every rank
  /// (MPI_Ibcast). Counted as a binomial tree: a rank sends the buffer once
  /// per child, at most ceil(log2 R) times.
  void broadcast(void *data, int64_t bytes, int root);

  /// Rank `root` receives every rank's `mine` into `all` (indexed by rank,
  /// resized by the call); `all` is unused on the other ranks. For rare,
  /// large messages (checkpoints): an MPI_Iallgather of the lengths, then
  /// MPI_Igatherv in rounds of at most fusionBufferBytes (and 2^30) bytes in
  /// all. A rank other than the root counts the size of `mine`.
  void gatherBytes(const std::string &mine, std::vector<std::string> &all,
                   int root);
  /// The inverse (MPI_Iscatterv): every rank receives `parts[rank]` of rank
  /// `root` into `mine` (`parts` is read on the root only). The root counts
  /// the sizes of the other ranks' parts.
  void scatterBytes(const std::vector<std::string> &parts, std::string &mine,
                    int root);

  /// Returns once every rank has called barrier().
  void barrier();

  /// Where this rank sits on its machine: the job's ranks on the same host
  /// (by host name) are numbered 0 .. size - 1 in rank order. A GPU session
  /// takes GPU `rank` of its machine (one GPU per process). Collective:
  /// rank 0 gathers the host names and scatters each rank its answer (the
  /// bytes are counted as gatherBytes and scatterBytes count them).
  struct NodeRanks {
    int rank = 0;
    int size = 1;
    std::string host;
  };
  NodeRanks nodeRanks();

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
  /// The most bytes of one rank's part that a round of gatherBytes or
  /// scatterBytes moves.
  int64_t bytesPerRound() const;
  /// Fails unless one MPI call may cover `elements` elements.
  int64_t checkCount(const char *what, int64_t elements) const;

  CommunicatorOptions options_;
  int rank_ = 0;
  int size_ = 1;
  // Declared before transport_ so that MPI outlives the communicator handle.
  std::shared_ptr<MpiSession> mpi_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<StagingBuffers<float>> floatStaging_;
  std::unique_ptr<StagingBuffers<double>> doubleStaging_;
  std::unique_ptr<AdasumWorkspace> adasumWorkspace_;
  /// The packed vector of reduceScatterShards / allGatherShards.
  std::vector<float> shardPack_;
  /// The blocks of gatherBytes / scatterBytes on the root, and the
  /// per-rank counts and displacements of the v-collectives.
  std::vector<char> byteStaging_;
  std::vector<int> counts_;
  std::vector<int> displs_;
};

/// Bytes rank `rank` of `size` sends in a ring all-reduce of `n` elements of
/// `elementBytes` bytes (a reduce-scatter and an all-gather, blocks as in
/// shardOf): what bytesSent counts for a sum or mean.
uint64_t allReduceBytes(int64_t n, int rank, int size, uint64_t elementBytes);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_COMMUNICATOR_H

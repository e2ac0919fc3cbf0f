//===- Communicator.cpp - Cross-rank collectives --------------------------===//
//
// Creates communicators (adopting, initialising or bypassing MPI) and maps
// each collective onto MPI's non-blocking collectives (Adasum onto its own
// tree), with the argument checks and byte counts they share.
//
//===----------------------------------------------------------------------===//

#include "collectives/Communicator.h"

#include "collectives/Adasum.h"
#include "collectives/FlatView.h"
#include "collectives/Transport.h"

#include "Checksum.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

using namespace cleave::rt;

namespace cleave::rt {

/// Keeps MPI initialised while communicators use it, and finalises it when
/// the last one goes away if this library initialised it.
class MpiSession {
public:
  explicit MpiSession(bool owned) : owned_(owned) {}
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized)
      MPI_Finalize();
  }
  MpiSession(const MpiSession &) = delete;
  MpiSession &operator=(const MpiSession &) = delete;

private:
  bool owned_;
};

} // namespace cleave::rt

namespace {

constexpr const char *kTimeoutVariable = "CLEAVE_COLLECTIVE_TIMEOUT_S";

// Several world() calls share one MpiSession, so MPI is finalised only after
// the last of their communicators is gone.
std::mutex sessionMutex;
std::weak_ptr<MpiSession> currentSession;

/// Whether an MPI launcher started this process, i.e. whether there are
/// peers to find. Checked before initialising MPI, so that a plain run does
/// not start a singleton MPI runtime it has no use for.
bool launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

bool validTimeout(double seconds) {
  return std::isfinite(seconds) && seconds > 0;
}

/// Every buffer-list collective moves at least one double per message.
bool validFusionBufferBytes(int64_t bytes) {
  return bytes >= static_cast<int64_t>(sizeof(double));
}

std::string checkOptions(const CommunicatorOptions &options) {
  if (!validTimeout(options.timeoutSeconds))
    return "collective timeout must be a positive number of seconds, not " +
           std::to_string(options.timeoutSeconds);
  if (!validFusionBufferBytes(options.fusionBufferBytes))
    return "fusion buffer must hold at least 8 bytes, not " +
           std::to_string(options.fusionBufferBytes);
  return "";
}

} // namespace

const char *cleave::rt::reduceKindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Mean:
    return "mean";
  case ReduceKind::Adasum:
    return "adasum";
  }
  return nullptr;
}

std::optional<CommunicatorOptions>
CommunicatorOptions::fromEnvironment(std::string &error) {
  CommunicatorOptions options;
  if (const char *text = std::getenv(kTimeoutVariable)) {
    char *end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !validTimeout(seconds)) {
      error = std::string(kTimeoutVariable) + "='" + text +
              "' is not a positive number of seconds";
      return std::nullopt;
    }
    options.timeoutSeconds = seconds;
  }
  return options;
}

std::unique_ptr<Communicator>
Communicator::world(const CommunicatorOptions &options, std::string &error) {
  error = checkOptions(options);
  if (!error.empty())
    return nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    error = "MPI has already been finalised in this process; create the "
            "world communicator once and keep it for the whole run";
    return nullptr;
  }

  std::shared_ptr<MpiSession> session;
  {
    std::lock_guard<std::mutex> lock(sessionMutex);
    session = currentSession.lock();
    if (!session) {
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (!initialized && !launchedByMpi())
        return local(options);
      if (!initialized) {
        int provided = 0;
        int rc =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) {
          error = "MPI_Init_thread failed: " + mpiErrorString(rc);
          return nullptr;
        }
      }
      session = std::make_shared<MpiSession>(/*owned=*/!initialized);
      currentSession = session;
    }
  }

  // A private duplicate keeps our messages apart from any the program sends
  // on MPI_COMM_WORLD. Creating it is collective, so it gets the same
  // bounded wait as every other collective.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request);
  if (rc != MPI_SUCCESS) {
    error = "MPI_Comm_idup failed: " + mpiErrorString(rc);
    return nullptr;
  }
  MPI_Status status;
  switch (pollRequests(1, &request, &status, options.timeoutSeconds, rc)) {
  case PollResult::Complete:
    break;
  case PollResult::TimedOut: {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    Transport::abortJob(MPI_COMM_WORLD, rank,
                        Transport::timeoutMessage("create communicator",
                                                  options.timeoutSeconds));
  }
  case PollResult::Failed:
    error = "creating the communicator failed: " + mpiErrorString(rc);
    return nullptr;
  }
  auto transport = std::make_unique<Transport>(comm, options.timeoutSeconds);
  return std::unique_ptr<Communicator>(
      new Communicator(options, std::move(session), std::move(transport)));
}

std::unique_ptr<Communicator> Communicator::world(std::string &error) {
  std::optional<CommunicatorOptions> options =
      CommunicatorOptions::fromEnvironment(error);
  if (!options)
    return nullptr;
  return world(*options, error);
}

std::unique_ptr<Communicator>
Communicator::local(const CommunicatorOptions &options) {
  return std::unique_ptr<Communicator>(
      new Communicator(options, nullptr, nullptr));
}

Communicator::Communicator(const CommunicatorOptions &options,
                           std::shared_ptr<MpiSession> mpi,
                           std::unique_ptr<Transport> transport)
    : options_(options), mpi_(std::move(mpi)), transport_(std::move(transport)),
      floatStaging_(std::make_unique<StagingBuffers<float>>()),
      doubleStaging_(std::make_unique<StagingBuffers<double>>()),
      adasumWorkspace_(std::make_unique<AdasumWorkspace>()) {
  if (transport_) {
    rank_ = transport_->rank();
    size_ = transport_->size();
  }
  std::string error = checkOptions(options_);
  if (!error.empty())
    fail(error);
}

Communicator::~Communicator() = default;

uint64_t Communicator::bytesSent() const {
  return transport_ ? transport_->bytesSent() : 0;
}

void Communicator::resetByteCount() {
  if (transport_)
    transport_->resetByteCount();
}

void Communicator::setTimeoutSeconds(double seconds) {
  if (!validTimeout(seconds))
    fail("collective timeout must be a positive number of seconds, not " +
         std::to_string(seconds));
  options_.timeoutSeconds = seconds;
  if (transport_)
    transport_->setTimeoutSeconds(seconds);
}

void Communicator::setFusionBufferBytes(int64_t bytes) {
  if (!validFusionBufferBytes(bytes))
    fail("fusion buffer must hold at least 8 bytes, not " +
         std::to_string(bytes));
  options_.fusionBufferBytes = bytes;
}

int64_t Communicator::fusionElems(int64_t elementBytes) const {
  return options_.fusionBufferBytes / elementBytes;
}

void Communicator::fail(const std::string &message) const {
  if (transport_)
    transport_->fail(message);
  std::fprintf(stderr, "rank %d: %s\n", rank_, message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  std::_Exit(kCollectiveFailureExitCode);
}

namespace {

/// MPI counts and displacements are `int`. One MPI call moves at most this
/// many elements, so that counts and the displacements built from them fit.
constexpr int64_t kMaxCount = int64_t(1) << 30;

template <typename T> MPI_Datatype mpiType();
template <> MPI_Datatype mpiType<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpiType<double>() { return MPI_DOUBLE; }

/// The CRC-32 (the runtime's one checksum, Checksum.h) of the words that
/// describe a collective call: its name and its arguments' sizes. Ranks
/// whose fingerprints differ called different collectives or passed
/// different sizes.
class Fingerprint {
public:
  explicit Fingerprint(const char *what)
      : crc_(crc32(what, std::strlen(what))) {}
  Fingerprint &add(int64_t word) {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] =
          static_cast<unsigned char>(static_cast<uint64_t>(word) >> (8 * i));
    crc_ = crc32(bytes, sizeof(bytes), crc_);
    return *this;
  }
  uint64_t value() const { return crc_; }

private:
  uint32_t crc_;
};

Fingerprint fingerprintOf(const char *what, int64_t count,
                          const int64_t *sizes) {
  Fingerprint fingerprint(what);
  fingerprint.add(count);
  for (int64_t i = 0; i < count; ++i)
    fingerprint.add(sizes[i]);
  return fingerprint;
}

/// MPI leaves a collective whose ranks pass different counts undefined (it
/// may hang, truncate or mix data), so every collective whose sizes come
/// from the caller first checks that all ranks agree on them, and fails
/// with `subject` and this rank's arguments (`describe()`) otherwise.
template <typename Describe>
void checkAgreement(Transport &transport, const char *what,
                    const Fingerprint &fingerprint, const char *subject,
                    Describe describe) {
  if (!transport.agree(what, fingerprint.value()))
    transport.fail("collective '" + std::string(what) +
                   "': the ranks disagree on the " + subject +
                   ": this rank passed " + describe() +
                   ", another rank other sizes (or called another "
                   "collective)");
}

std::string describeBuffers(int64_t count, int64_t elements) {
  return std::to_string(count) + " buffer(s) of " + std::to_string(elements) +
         " elements in all";
}

// The byte counts of Communicator::bytesSent(): what rank `rank` of `size`
// sends in the bandwidth-optimal schedules, blocks as in shardOf.

/// A ring reduce-scatter of `n` elements sends every block but the rank's
/// own.
uint64_t reduceScatterBytes(int64_t n, int rank, int size,
                            uint64_t elementBytes) {
  return elementBytes * uint64_t(n - shardOf(n, rank, size).size());
}

/// A ring all-gather sends every block but the next rank's.
uint64_t allGatherBytes(int64_t n, int rank, int size, uint64_t elementBytes) {
  return elementBytes *
         uint64_t(n - shardOf(n, (rank + 1) % size, size).size());
}

/// A binomial-tree broadcast sends the data once to each child: with ranks
/// renumbered so that the root is 0, rank v receives from v minus its lowest
/// set bit and sends to v + m for the powers of two m below that bit.
uint64_t broadcastBytes(int64_t bytes, int rank, int root, int size) {
  const int relative = (rank - root + size) % size;
  int lowest = 1;
  while (lowest < size && !(relative & lowest))
    lowest <<= 1;
  uint64_t children = 0;
  for (int m = lowest >> 1; m > 0; m >>= 1)
    children += relative + m < size ? 1 : 0;
  return children * uint64_t(bytes);
}

/// Sums `view` across ranks, in place, and divides the sums by `divisor`
/// unless it is 1: MPI_Iallreduce over pieces of at most `pieceElems`
/// elements, each read from its buffer when it lies in one (else packed)
/// and received into staging.
template <typename T>
void allreduceView(Transport &transport, const FlatView<T> &view, T divisor,
                   int64_t pieceElems, StagingBuffers<T> &staging,
                   const char *what) {
  const int64_t n = view.size();
  const int rank = transport.rank(), size = transport.size();
  transport.addBytesSent(allReduceBytes(n, rank, size, sizeof(T)));
  pieceElems = std::min(pieceElems, kMaxCount);
  for (int64_t begin = 0; begin < n; begin += pieceElems) {
    const int64_t end = std::min(n, begin + pieceElems);
    const int count = static_cast<int>(end - begin);
    const T *send = view.contiguous(begin, end);
    if (!send) {
      T *packed = staging.sendOf(count);
      view.copyOut(begin, end, packed);
      send = packed;
    }
    // Into a separate buffer rather than MPI_IN_PLACE: given MPI_IN_PLACE,
    // Open MPI's libnbc always reduces to one rank and broadcasts back,
    // where it would otherwise pick a reduce-scatter / all-gather for large
    // vectors.
    T *recv = staging.recvOf(count);
    transport.collective(what, [&](MPI_Comm comm, MPI_Request *request) {
      return MPI_Iallreduce(send, recv, count, mpiType<T>(), MPI_SUM, comm,
                            request);
    });
    if (divisor != T(1))
      for (int i = 0; i < count; ++i)
        recv[i] /= divisor;
    view.copyIn(begin, end, recv);
  }
}

/// The rounds it takes to move byte strings of `lengths` (one per rank),
/// each rank's block of a round holding at most `perRound` bytes.
int64_t roundsFor(const std::vector<int64_t> &lengths, int64_t perRound) {
  int64_t rounds = 0;
  for (int64_t length : lengths)
    rounds = std::max(rounds, (length + perRound - 1) / perRound);
  return rounds;
}

/// The counts and displacements of the round that moves bytes [at, at +
/// perRound) of each string; returns their total.
int roundBlocks(const std::vector<int64_t> &lengths, int64_t at,
                int64_t perRound, std::vector<int> &counts,
                std::vector<int> &displs) {
  counts.resize(lengths.size());
  displs.resize(lengths.size());
  int total = 0;
  for (size_t q = 0; q < lengths.size(); ++q) {
    const int64_t left = std::max<int64_t>(0, lengths[q] - at);
    counts[q] = static_cast<int>(std::min(left, perRound));
    displs[q] = total;
    total += counts[q];
  }
  return total;
}

} // namespace

void Communicator::checkBuffers(const char *what, int64_t count,
                                float *const *buffers,
                                const int64_t *sizes) const {
  auto prefix = [&] { return std::string("collective '") + what + "': "; };
  if (count < 0)
    fail(prefix() + "negative buffer count " + std::to_string(count));
  if (count > 0 && (!buffers || !sizes))
    fail(prefix() + "null buffer or size list for " + std::to_string(count) +
         " buffers");
  for (int64_t i = 0; i < count; ++i) {
    if (sizes[i] < 0)
      fail(prefix() + "buffer " + std::to_string(i) + " has negative size " +
           std::to_string(sizes[i]));
    if (sizes[i] > 0 && !buffers[i])
      fail(prefix() + "buffer " + std::to_string(i) + " is null but has " +
           std::to_string(sizes[i]) + " elements");
  }
}

void Communicator::reduceInPlace(ReduceKind kind, int64_t count,
                                 float *const *buffers, const int64_t *sizes) {
  const char *name = reduceKindName(kind);
  if (!name)
    fail("unknown reduction kind " +
         std::to_string(static_cast<int32_t>(kind)) +
         " (expected 0 = sum, 1 = mean, 2 = adasum)");
  checkBuffers(name, count, buffers, sizes);
  if (size_ == 1)
    return;
  if (kind == ReduceKind::Adasum) {
    adasumAllreduce(*transport_, count, buffers, sizes, fusionElems(4),
                    *adasumWorkspace_);
    return;
  }
  FlatView<float> view(count, buffers, sizes);
  checkAgreement(*transport_, name, fingerprintOf(name, count, sizes),
                 "tensors being reduced",
                 [&] { return describeBuffers(count, view.size()); });
  const float divisor = kind == ReduceKind::Mean ? float(size_) : 1.0f;
  allreduceView(*transport_, view, divisor, fusionElems(4), *floatStaging_,
                name);
}

void Communicator::reduceInPlace(ReduceKind kind, float *data, int64_t size) {
  reduceInPlace(kind, 1, &data, &size);
}

void Communicator::allreduceSum(double *values, int64_t count) {
  const char *what = "sum (double)";
  if (count < 0)
    fail(std::string("collective '") + what + "': negative count " +
         std::to_string(count));
  if (count > 0 && !values)
    fail(std::string("collective '") + what + "': null buffer of " +
         std::to_string(count) + " elements");
  if (size_ == 1)
    return;
  FlatView<double> view(1, &values, &count);
  checkAgreement(*transport_, what, fingerprintOf(what, 1, &count),
                 "values being summed",
                 [&] { return std::to_string(count) + " values"; });
  allreduceView(*transport_, view, 1.0, fusionElems(8), *doubleStaging_, what);
}

double Communicator::allreduceSum(double value) {
  allreduceSum(&value, 1);
  return value;
}

int64_t Communicator::checkCount(const char *what, int64_t elements) const {
  if (elements > kMaxCount)
    fail(std::string("collective '") + what + "': " + std::to_string(elements) +
         " elements in one MPI call exceed the most this communicator "
         "passes to one (" +
         std::to_string(kMaxCount) + "; MPI counts are int)");
  return elements;
}

void Communicator::reduceScatterSum(int64_t count, float *const *buffers,
                                    const int64_t *sizes) {
  const char *what = "reduce-scatter";
  checkBuffers(what, count, buffers, sizes);
  if (size_ == 1)
    return;
  FlatView<float> view(count, buffers, sizes);
  const int64_t n = view.size();
  checkAgreement(*transport_, what, fingerprintOf(what, count, sizes),
                 "tensors being reduced",
                 [&] { return describeBuffers(count, n); });
  if (n == 0)
    return;
  checkCount(what, n);
  counts_.resize(size_t(size_));
  for (int q = 0; q < size_; ++q)
    counts_[size_t(q)] = static_cast<int>(shardOf(n, q, size_).size());
  const ShardRange own = ownedShard(n);
  transport_->addBytesSent(reduceScatterBytes(n, rank_, size_, 4));
  const float *send = view.contiguous(0, n);
  if (!send) {
    float *packed = floatStaging_->sendOf(n);
    view.copyOut(0, n, packed);
    send = packed;
  }
  float *recv = floatStaging_->recvOf(own.size());
  transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Ireduce_scatter(send, recv, counts_.data(), MPI_FLOAT, MPI_SUM,
                               comm, request);
  });
  view.copyIn(own.begin, own.end, recv);
}

void Communicator::reduceScatterSum(float *data, int64_t size) {
  reduceScatterSum(1, &data, &size);
}

void Communicator::allGather(int64_t count, float *const *buffers,
                             const int64_t *sizes) {
  const char *what = "all-gather";
  checkBuffers(what, count, buffers, sizes);
  if (size_ == 1)
    return;
  FlatView<float> view(count, buffers, sizes);
  const int64_t n = view.size();
  checkAgreement(*transport_, what, fingerprintOf(what, count, sizes),
                 "tensors being gathered",
                 [&] { return describeBuffers(count, n); });
  if (n == 0)
    return;
  checkCount(what, n);
  counts_.resize(size_t(size_));
  displs_.resize(size_t(size_));
  for (int q = 0; q < size_; ++q) {
    const ShardRange shard = shardOf(n, q, size_);
    counts_[size_t(q)] = static_cast<int>(shard.size());
    displs_[size_t(q)] = static_cast<int>(shard.begin);
  }
  transport_->addBytesSent(allGatherBytes(n, rank_, size_, 4));
  // In place: each rank's block already sits where it is gathered to.
  float *whole = view.contiguous(0, n);
  const bool staged = !whole;
  if (staged) {
    whole = floatStaging_->recvOf(n);
    const ShardRange own = ownedShard(n);
    view.copyOut(own.begin, own.end, whole + own.begin);
  }
  transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, whole,
                           counts_.data(), displs_.data(), MPI_FLOAT, comm,
                           request);
  });
  if (staged)
    view.copyIn(0, n, whole);
}

void Communicator::allGather(float *data, int64_t size) {
  allGather(1, &data, &size);
}

int64_t Communicator::checkShards(const char *what, int64_t count,
                                  const float *const *inputs,
                                  const int64_t *sizes, float *const *outputs,
                                  bool inputsAreShards) const {
  auto prefix = [&] { return std::string("collective '") + what + "': "; };
  if (count < 0)
    fail(prefix() + "negative tensor count " + std::to_string(count));
  if (count > 0 && (!inputs || !sizes || !outputs))
    fail(prefix() + "null input, size or output list for " +
         std::to_string(count) + " tensors");
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (sizes[i] < 0)
      fail(prefix() + "tensor " + std::to_string(i) + " has negative size " +
           std::to_string(sizes[i]));
    const int64_t shard = paddedShardSize(sizes[i]);
    const int64_t in = inputsAreShards ? shard : sizes[i];
    const int64_t out = inputsAreShards ? sizes[i] : shard;
    if ((in > 0 && !inputs[i]) || (out > 0 && !outputs[i]))
      fail(prefix() + "tensor " + std::to_string(i) + " has a null buffer");
    total += shard;
  }
  return total;
}

void Communicator::reduceScatterShards(int64_t count,
                                       const float *const *inputs,
                                       const int64_t *sizes,
                                       float *const *outputs) {
  const char *what = "reduce-scatter";
  const int64_t perRank =
      checkShards(what, count, inputs, sizes, outputs, false);
  if (size_ == 1) {
    for (int64_t i = 0; i < count; ++i)
      std::copy(inputs[i], inputs[i] + sizes[i], outputs[i]);
    return;
  }
  checkAgreement(*transport_, what, fingerprintOf(what, count, sizes),
                 "tensors being reduced",
                 [&] { return describeBuffers(count, perRank * size_); });
  if (perRank == 0)
    return;
  checkCount(what, perRank * size_);
  // Rank q's shards of every tensor, then rank q + 1's: block q of the R
  // equal blocks is then exactly rank q's shards, padding included, which is
  // the layout MPI_Ireduce_scatter_block needs. The padding is zero on
  // every rank, so it sums to zero.
  shardPack_.assign(size_t(perRank) * size_t(size_), 0.0f);
  for (int q = 0; q < size_; ++q) {
    float *dst = shardPack_.data() + int64_t(q) * perRank;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t s = paddedShardSize(sizes[i]);
      const int64_t begin = std::min(sizes[i], q * s);
      const int64_t end = std::min(sizes[i], begin + s);
      std::copy(inputs[i] + begin, inputs[i] + end, dst);
      dst += s;
    }
  }
  transport_->addBytesSent(4 * uint64_t(size_ - 1) * uint64_t(perRank));
  float *recv = floatStaging_->recvOf(perRank);
  transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Ireduce_scatter_block(shardPack_.data(), recv,
                                     static_cast<int>(perRank), MPI_FLOAT,
                                     MPI_SUM, comm, request);
  });
  const float *mine = recv;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t s = paddedShardSize(sizes[i]);
    std::copy(mine, mine + s, outputs[i]);
    mine += s;
  }
}

void Communicator::allGatherShards(int64_t count, const float *const *inputs,
                                   const int64_t *sizes,
                                   float *const *outputs) {
  const char *what = "all-gather";
  const int64_t perRank =
      checkShards(what, count, inputs, sizes, outputs, true);
  if (size_ == 1) {
    for (int64_t i = 0; i < count; ++i)
      std::copy(inputs[i], inputs[i] + sizes[i], outputs[i]);
    return;
  }
  checkAgreement(*transport_, what, fingerprintOf(what, count, sizes),
                 "tensors being gathered",
                 [&] { return describeBuffers(count, perRank * size_); });
  if (perRank == 0)
    return;
  checkCount(what, perRank * size_);
  shardPack_.resize(size_t(perRank) * size_t(size_));
  float *own = shardPack_.data() + int64_t(rank_) * perRank;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t s = paddedShardSize(sizes[i]);
    std::copy(inputs[i], inputs[i] + s, own);
    own += s;
  }
  transport_->addBytesSent(4 * uint64_t(size_ - 1) * uint64_t(perRank));
  transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, shardPack_.data(),
                          static_cast<int>(perRank), MPI_FLOAT, comm, request);
  });
  for (int q = 0; q < size_; ++q) {
    const float *src = shardPack_.data() + int64_t(q) * perRank;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t s = paddedShardSize(sizes[i]);
      const int64_t begin = std::min(sizes[i], q * s);
      const int64_t end = std::min(sizes[i], begin + s);
      std::copy(src, src + (end - begin), outputs[i] + begin);
      src += s;
    }
  }
}

void Communicator::broadcast(void *data, int64_t bytes, int root) {
  const char *what = "broadcast";
  if (bytes < 0 || (bytes > 0 && !data))
    fail("collective 'broadcast': invalid buffer of " + std::to_string(bytes) +
         " bytes");
  if (root < 0 || root >= size_)
    fail("collective 'broadcast': root " + std::to_string(root) +
         " is not a rank of " + std::to_string(size_));
  if (size_ == 1)
    return;
  checkAgreement(*transport_, what, Fingerprint(what).add(bytes).add(root),
                 "data being broadcast", [&] {
                   return std::to_string(bytes) + " bytes from root " +
                          std::to_string(root);
                 });
  transport_->addBytesSent(broadcastBytes(bytes, rank_, root, size_));
  auto *base = static_cast<char *>(data);
  for (int64_t offset = 0; offset < bytes; offset += kMaxCount) {
    const int piece = static_cast<int>(std::min(kMaxCount, bytes - offset));
    transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
      return MPI_Ibcast(base + offset, piece, MPI_BYTE, root, comm, request);
    });
  }
}

int64_t Communicator::bytesPerRound() const {
  // A round's blocks, one per rank, are staged together on the root and
  // addressed by `int` displacements.
  return std::max<int64_t>(1, std::min(kMaxCount, options_.fusionBufferBytes) /
                                  size_);
}

void Communicator::gatherBytes(const std::string &mine,
                               std::vector<std::string> &all, int root) {
  const char *what = "gather";
  if (root < 0 || root >= size_)
    fail("collective 'gather': root " + std::to_string(root) +
         " is not a rank of " + std::to_string(size_));
  if (size_ == 1) {
    all.assign(1, mine);
    return;
  }
  // Every rank learns every length (and root), so that all agree on how
  // many rounds of MPI_Igatherv it takes to move the longest part.
  std::vector<uint64_t> header(2 * size_t(size_));
  header[2 * size_t(rank_)] = uint64_t(root);
  header[2 * size_t(rank_) + 1] = mine.size();
  transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, header.data(), 2,
                          MPI_UINT64_T, comm, request);
  });
  for (int q = 0; q < size_; ++q)
    if (header[2 * size_t(q)] != uint64_t(root))
      fail("collective 'gather': the ranks disagree on the root: rank " +
           std::to_string(q) + " gathers to " +
           std::to_string(header[2 * size_t(q)]) + ", this rank to " +
           std::to_string(root));
  // The root's own part does not travel.
  std::vector<int64_t> lengths(static_cast<size_t>(size_));
  for (int q = 0; q < size_; ++q)
    lengths[size_t(q)] = q == root ? 0 : int64_t(header[2 * size_t(q) + 1]);
  if (rank_ == root) {
    all.assign(size_t(size_), std::string());
    for (int q = 0; q < size_; ++q)
      all[size_t(q)].resize(size_t(lengths[size_t(q)]));
  } else {
    transport_->addBytesSent(mine.size());
  }
  const int64_t perRound = bytesPerRound();
  const int64_t rounds = roundsFor(lengths, perRound);
  for (int64_t k = 0; k < rounds; ++k) {
    const int64_t at = k * perRound;
    const int total = roundBlocks(lengths, at, perRound, counts_, displs_);
    char *recv = nullptr;
    if (rank_ == root) {
      byteStaging_.resize(std::max(byteStaging_.size(), size_t(total)));
      recv = byteStaging_.data();
    }
    const char *send = mine.data() + std::min<int64_t>(at, mine.size());
    transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
      return MPI_Igatherv(send, counts_[size_t(rank_)], MPI_BYTE, recv,
                          counts_.data(), displs_.data(), MPI_BYTE, root, comm,
                          request);
    });
    if (rank_ == root)
      for (int q = 0; q < size_; ++q)
        if (counts_[size_t(q)] > 0)
          std::memcpy(all[size_t(q)].data() + at, recv + displs_[size_t(q)],
                      size_t(counts_[size_t(q)]));
  }
  if (rank_ == root)
    all[size_t(root)] = mine;
}

void Communicator::scatterBytes(const std::vector<std::string> &parts,
                                std::string &mine, int root) {
  const char *what = "scatter";
  if (root < 0 || root >= size_)
    fail("collective 'scatter': root " + std::to_string(root) +
         " is not a rank of " + std::to_string(size_));
  if (rank_ == root && parts.size() != size_t(size_))
    fail("collective 'scatter': " + std::to_string(parts.size()) +
         " parts for " + std::to_string(size_) + " ranks");
  if (size_ == 1) {
    mine = parts[0];
    return;
  }
  // The lengths are known on the root only. One all-reduce (maximum) of the
  // root and its complement, and of the lengths (zero except on the root),
  // checks that all ranks name the same root and tells every rank every
  // length, so that all agree on the rounds of MPI_Iscatterv.
  std::vector<uint64_t> header(size_t(size_) + 2, 0);
  header[0] = uint64_t(root);
  header[1] = ~uint64_t(root);
  if (rank_ == root)
    for (int q = 0; q < size_; ++q)
      header[2 + size_t(q)] = parts[size_t(q)].size();
  transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Iallreduce(MPI_IN_PLACE, header.data(),
                          static_cast<int>(header.size()), MPI_UINT64_T,
                          MPI_MAX, comm, request);
  });
  if (header[0] != ~header[1])
    fail("collective 'scatter': the ranks disagree on the root (this rank "
         "scatters from " +
         std::to_string(root) + ")");
  std::vector<int64_t> lengths(static_cast<size_t>(size_));
  uint64_t sent = 0;
  for (int q = 0; q < size_; ++q) {
    lengths[size_t(q)] = q == root ? 0 : int64_t(header[2 + size_t(q)]);
    sent += uint64_t(lengths[size_t(q)]);
  }
  if (rank_ == root)
    transport_->addBytesSent(sent);
  else
    mine.resize(size_t(lengths[size_t(rank_)]));
  const int64_t perRound = bytesPerRound();
  const int64_t rounds = roundsFor(lengths, perRound);
  for (int64_t k = 0; k < rounds; ++k) {
    const int64_t at = k * perRound;
    const int total = roundBlocks(lengths, at, perRound, counts_, displs_);
    char *send = nullptr;
    if (rank_ == root) {
      byteStaging_.resize(std::max(byteStaging_.size(), size_t(total)));
      send = byteStaging_.data();
      for (int q = 0; q < size_; ++q)
        if (counts_[size_t(q)] > 0)
          std::memcpy(send + displs_[size_t(q)], parts[size_t(q)].data() + at,
                      size_t(counts_[size_t(q)]));
    }
    char *recv = mine.data() + std::min<int64_t>(at, mine.size());
    transport_->collective(what, [&](MPI_Comm comm, MPI_Request *request) {
      return MPI_Iscatterv(send, counts_.data(), displs_.data(), MPI_BYTE, recv,
                           counts_[size_t(rank_)], MPI_BYTE, root, comm,
                           request);
    });
  }
  if (rank_ == root)
    mine = parts[size_t(root)];
}

void Communicator::barrier() {
  if (transport_)
    transport_->barrier("barrier");
}

Communicator::NodeRanks Communicator::nodeRanks() {
  NodeRanks mine;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0)
    std::snprintf(host, sizeof(host), "(unnamed host)");
  mine.host = host;
  if (size_ == 1)
    return mine;
  std::vector<std::string> hosts;
  gatherBytes(mine.host, hosts, /*root=*/0);
  std::vector<std::string> answers;
  if (rank_ == 0) {
    // "<local rank> <local size>" for each rank.
    answers.resize(size_);
    for (int r = 0; r < size_; ++r) {
      int before = 0, same = 0;
      for (int q = 0; q < size_; ++q)
        if (hosts[q] == hosts[r]) {
          ++same;
          before += q < r;
        }
      answers[r] = std::to_string(before) + " " + std::to_string(same);
    }
  }
  std::string answer;
  scatterBytes(answers, answer, /*root=*/0);
  if (std::sscanf(answer.c_str(), "%d %d", &mine.rank, &mine.size) != 2)
    fail("nodeRanks: rank 0 sent '" + answer + "'");
  return mine;
}

uint64_t cleave::rt::allReduceBytes(int64_t n, int rank, int size,
                                    uint64_t elementBytes) {
  return reduceScatterBytes(n, rank, size, elementBytes) +
         allGatherBytes(n, rank, size, elementBytes);
}

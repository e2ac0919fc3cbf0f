//===- Communicator.cpp - Cross-rank collectives --------------------------===//
//
// Creates communicators (adopting, initialising or bypassing MPI) and maps
// each collective onto the ring, Adasum and tree algorithms.
//
//===----------------------------------------------------------------------===//

#include "collectives/Communicator.h"

#include "collectives/Adasum.h"
#include "collectives/Ring.h"
#include "collectives/Transport.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>

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
      floatStaging_(std::make_unique<RingStaging<float>>()),
      doubleStaging_(std::make_unique<RingStaging<double>>()),
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
  const float divisor = kind == ReduceKind::Mean ? float(size_) : 1.0f;
  ringReduceScatter(*transport_, view, divisor, fusionElems(4), *floatStaging_,
                    name);
  ringAllGather(*transport_, view, fusionElems(4), *floatStaging_, name);
}

void Communicator::reduceInPlace(ReduceKind kind, float *data, int64_t size) {
  reduceInPlace(kind, 1, &data, &size);
}

void Communicator::allreduceSum(double *values, int64_t count) {
  if (count < 0)
    fail("collective 'sum (double)': negative count " + std::to_string(count));
  if (count > 0 && !values)
    fail("collective 'sum (double)': null buffer of " + std::to_string(count) +
         " elements");
  if (size_ == 1)
    return;
  FlatView<double> view(1, &values, &count);
  ringReduceScatter(*transport_, view, 1.0, fusionElems(8), *doubleStaging_,
                    "sum (double)");
  ringAllGather(*transport_, view, fusionElems(8), *doubleStaging_,
                "sum (double)");
}

double Communicator::allreduceSum(double value) {
  allreduceSum(&value, 1);
  return value;
}

void Communicator::reduceScatterSum(int64_t count, float *const *buffers,
                                    const int64_t *sizes) {
  checkBuffers("reduce-scatter", count, buffers, sizes);
  if (size_ == 1)
    return;
  FlatView<float> view(count, buffers, sizes);
  ringReduceScatter(*transport_, view, 1.0f, fusionElems(4), *floatStaging_,
                    "reduce-scatter");
}

void Communicator::reduceScatterSum(float *data, int64_t size) {
  reduceScatterSum(1, &data, &size);
}

void Communicator::allGather(int64_t count, float *const *buffers,
                             const int64_t *sizes) {
  checkBuffers("all-gather", count, buffers, sizes);
  if (size_ == 1)
    return;
  FlatView<float> view(count, buffers, sizes);
  ringAllGather(*transport_, view, fusionElems(4), *floatStaging_,
                "all-gather");
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
  // Rank q's shards of every tensor, then rank q + 1's: the ring's shard of
  // rank q (shardOf of R * S elements) is then exactly rank q's shards.
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
  float *packed = shardPack_.data();
  int64_t total = int64_t(shardPack_.size());
  FlatView<float> view(1, &packed, &total);
  ringReduceScatter(*transport_, view, 1.0f, fusionElems(4), *floatStaging_,
                    what);
  const float *mine = packed + int64_t(rank_) * perRank;
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
  shardPack_.resize(size_t(perRank) * size_t(size_));
  float *own = shardPack_.data() + int64_t(rank_) * perRank;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t s = paddedShardSize(sizes[i]);
    std::copy(inputs[i], inputs[i] + s, own);
    own += s;
  }
  float *packed = shardPack_.data();
  int64_t total = int64_t(shardPack_.size());
  FlatView<float> view(1, &packed, &total);
  ringAllGather(*transport_, view, fusionElems(4), *floatStaging_, what);
  for (int q = 0; q < size_; ++q) {
    const float *src = packed + int64_t(q) * perRank;
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
  if (bytes < 0 || (bytes > 0 && !data))
    fail("collective 'broadcast': invalid buffer of " + std::to_string(bytes) +
         " bytes");
  if (root < 0 || root >= size_)
    fail("collective 'broadcast': root " + std::to_string(root) +
         " is not a rank of " + std::to_string(size_));
  if (size_ == 1)
    return;
  // Binomial tree over ranks renumbered so that the root is 0: a rank
  // receives from the rank that differs in its lowest set bit, then forwards
  // to the ranks below that bit.
  const int relative = (rank_ - root + size_) % size_;
  int mask = 1;
  for (; mask < size_; mask <<= 1) {
    if (relative & mask) {
      transport_->recv(data, bytes, (relative - mask + root) % size_,
                       "broadcast");
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (relative + mask < size_)
      transport_->send(data, bytes, (relative + mask + root) % size_,
                       "broadcast");
}

void Communicator::gatherBytes(const std::string &mine,
                               std::vector<std::string> &all, int root) {
  if (root < 0 || root >= size_)
    fail("collective 'gather': root " + std::to_string(root) +
         " is not a rank of " + std::to_string(size_));
  if (rank_ != root) {
    const uint64_t bytes = mine.size();
    transport_->send(&bytes, sizeof(bytes), root, "gather");
    transport_->send(mine.data(), int64_t(bytes), root, "gather");
    return;
  }
  all.assign(size_t(size_), std::string());
  all[size_t(root)] = mine;
  for (int r = 0; r < size_; ++r) {
    if (r == root)
      continue;
    uint64_t bytes = 0;
    transport_->recv(&bytes, sizeof(bytes), r, "gather");
    all[size_t(r)].resize(size_t(bytes));
    transport_->recv(all[size_t(r)].data(), int64_t(bytes), r, "gather");
  }
}

void Communicator::scatterBytes(const std::vector<std::string> &parts,
                                std::string &mine, int root) {
  if (root < 0 || root >= size_)
    fail("collective 'scatter': root " + std::to_string(root) +
         " is not a rank of " + std::to_string(size_));
  if (rank_ == root) {
    if (parts.size() != size_t(size_))
      fail("collective 'scatter': " + std::to_string(parts.size()) +
           " parts for " + std::to_string(size_) + " ranks");
    for (int r = 0; r < size_; ++r) {
      if (r == root)
        continue;
      const uint64_t bytes = parts[size_t(r)].size();
      transport_->send(&bytes, sizeof(bytes), r, "scatter");
      transport_->send(parts[size_t(r)].data(), int64_t(bytes), r, "scatter");
    }
    mine = parts[size_t(root)];
    return;
  }
  uint64_t bytes = 0;
  transport_->recv(&bytes, sizeof(bytes), root, "scatter");
  mine.resize(size_t(bytes));
  transport_->recv(mine.data(), int64_t(bytes), root, "scatter");
}

void Communicator::barrier() {
  if (transport_)
    transport_->barrier("barrier");
}

void cleave::rt::crossRankReduce(Communicator *comm, int32_t kind,
                                 int64_t count, float **buffers,
                                 const int64_t *sizes) {
  if (!comm) {
    // One rank: the identity, with the same argument checks as with many.
    static const std::unique_ptr<Communicator> single = Communicator::local();
    comm = single.get();
  }
  comm->reduceInPlace(static_cast<ReduceKind>(kind), count, buffers, sizes);
}

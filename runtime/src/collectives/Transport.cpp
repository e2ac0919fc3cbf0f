//===- Transport.cpp - Guarded MPI operations -----------------------------===//
//
// Implements bounded-time waits and the fatal-error path of Transport.
//
//===----------------------------------------------------------------------===//

#include "collectives/Transport.h"

#include "collectives/Communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

using namespace cleave::rt;

namespace {

/// All point-to-point messages of a communicator (Adasum's) share one tag:
/// they are issued in the same order on every rank and MPI does not reorder
/// messages between a pair of ranks on one communicator and tag, so messages
/// match by order. MPI keeps collectives apart from them.
constexpr int kTag = 0x434c; // "CL"

/// MPI counts are `int`; larger transfers are split into pieces of this size.
constexpr int64_t kMaxPieceBytes = int64_t(1) << 30;

// The wait's backoff. MPI progresses a collective only inside MPI calls on
// every rank involved, so a rank that sleeps delays the next round of a
// collective by up to its sleep; a rank that spins takes a core from the
// kernels of whatever shares it (other ranks when they oversubscribe the
// cores, as in tests and on small machines, or this rank's OpenMP threads).
// Polling without pause for a short while keeps the latency of collectives
// whose peers are ready (Adasum's scalar exchanges, a window's reduction on
// balanced ranks) that of a spin; after that the peers are late, and sleeps
// that double from a few tens of microseconds to a millisecond bound both
// the CPU spent waiting and the delay added once they arrive.
constexpr std::chrono::microseconds kSpinTime{50};
constexpr std::chrono::microseconds kFirstSleep{20};
constexpr std::chrono::microseconds kMaxSleep{1000};

} // namespace

std::string cleave::rt::mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

PollResult cleave::rt::pollRequests(int count, MPI_Request *requests,
                                    MPI_Status *statuses, double timeoutSeconds,
                                    int &errorCode) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto limit = std::chrono::duration<double>(timeoutSeconds);
  std::chrono::microseconds sleep = kFirstSleep;
  for (;;) {
    int done = 0;
    errorCode = MPI_Testall(count, requests, &done, statuses);
    if (errorCode != MPI_SUCCESS)
      return PollResult::Failed;
    if (done)
      return PollResult::Complete;
    const Clock::duration waited = Clock::now() - start;
    if (waited > limit)
      return PollResult::TimedOut;
    if (waited < kSpinTime)
      continue;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(2 * sleep, kMaxSleep);
  }
}

Transport::Transport(MPI_Comm comm, double timeoutSeconds)
    : comm_(comm), timeoutSeconds_(timeoutSeconds) {
  // Errors must come back to us so that a lost peer becomes a message and an
  // abort, not MPI's default handler or a silent hang.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Transport::~Transport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Comm_free(&comm_);
}

void Transport::exchange(const void *sendBuf, int64_t sendBytes, int dest,
                         void *recvBuf, int64_t recvBytes, int source,
                         const char *what) {
  requests_.clear();
  expectedBytes_.clear();
  peers_.clear();
  // Receives first, so that a matching send never waits for its buffer.
  for (int64_t offset = 0; offset < recvBytes; offset += kMaxPieceBytes) {
    int64_t bytes = std::min(kMaxPieceBytes, recvBytes - offset);
    MPI_Request request;
    int rc = MPI_Irecv(static_cast<char *>(recvBuf) + offset,
                       static_cast<int>(bytes), MPI_BYTE, source, kTag, comm_,
                       &request);
    if (rc != MPI_SUCCESS)
      failMpi(what, rc, source);
    requests_.push_back(request);
    expectedBytes_.push_back(bytes);
    peers_.push_back(source);
  }
  for (int64_t offset = 0; offset < sendBytes; offset += kMaxPieceBytes) {
    int64_t bytes = std::min(kMaxPieceBytes, sendBytes - offset);
    MPI_Request request;
    int rc = MPI_Isend(static_cast<const char *>(sendBuf) + offset,
                       static_cast<int>(bytes), MPI_BYTE, dest, kTag, comm_,
                       &request);
    if (rc != MPI_SUCCESS)
      failMpi(what, rc, dest);
    requests_.push_back(request);
    expectedBytes_.push_back(-1);
    peers_.push_back(dest);
    bytesSent_ += static_cast<uint64_t>(bytes);
  }
  if (!requests_.empty())
    waitAll(what);
}

void Transport::barrier(const char *what) {
  collective(what, [](MPI_Comm comm, MPI_Request *request) {
    return MPI_Ibarrier(comm, request);
  });
}

bool Transport::agree(const char *what, uint64_t fingerprint) {
  // The maximum of the fingerprints and of their complements, i.e. the
  // complement of the minimum: all equal exactly when maximum == minimum.
  uint64_t extremes[2] = {fingerprint, ~fingerprint};
  collective(what, [&](MPI_Comm comm, MPI_Request *request) {
    return MPI_Iallreduce(MPI_IN_PLACE, extremes, 2, MPI_UINT64_T, MPI_MAX,
                          comm, request);
  });
  return extremes[0] == ~extremes[1];
}

void Transport::waitAll(const char *what) {
  const int count = static_cast<int>(requests_.size());
  statuses_.resize(count);
  int rc = MPI_SUCCESS;
  switch (pollRequests(count, requests_.data(), statuses_.data(),
                       timeoutSeconds_, rc)) {
  case PollResult::Complete:
    break;
  case PollResult::TimedOut:
    fail(timeoutMessage(what, timeoutSeconds_));
  case PollResult::Failed:
    if (rc == MPI_ERR_IN_STATUS)
      for (int i = 0; i < count; ++i)
        if (statuses_[i].MPI_ERROR != MPI_SUCCESS &&
            statuses_[i].MPI_ERROR != MPI_ERR_PENDING)
          failMpi(what, statuses_[i].MPI_ERROR, peers_[i]);
    failMpi(what, rc, MPI_PROC_NULL);
  }
  for (int i = 0; i < count; ++i) {
    if (expectedBytes_[i] < 0)
      continue;
    int received = 0;
    MPI_Get_count(&statuses_[i], MPI_BYTE, &received);
    if (received != expectedBytes_[i])
      fail("collective '" + std::string(what) + "': rank " +
           std::to_string(peers_[i]) + " sent " + std::to_string(received) +
           " bytes where " + std::to_string(expectedBytes_[i]) +
           " were expected; the ranks disagree on the tensors being reduced");
  }
}

void Transport::failMpi(const char *what, int errorCode, int peer) const {
  std::string message = "collective '" + std::string(what) +
                        "' failed: " + mpiErrorString(errorCode);
  if (peer != MPI_PROC_NULL)
    message += " (peer rank " + std::to_string(peer) + ")";
  message += "; a rank probably died or the ranks disagree on the tensors "
             "being reduced";
  fail(message);
}

void Transport::fail(const std::string &message) const {
  abortJob(comm_, rank_, message);
}

void Transport::abortJob(MPI_Comm comm, int rank, const std::string &message) {
  std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  // MPI_Abort makes mpirun kill every rank of the job; the _Exit only runs if
  // MPI itself is broken beyond aborting.
  MPI_Abort(comm, kCollectiveFailureExitCode);
  std::_Exit(kCollectiveFailureExitCode);
}

std::string Transport::timeoutMessage(const char *what, double seconds) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "collective '%s' timed out after %g s waiting for peers; a "
                "rank probably died (CLEAVE_COLLECTIVE_TIMEOUT_S sets the "
                "limit)",
                what, seconds);
  return line;
}

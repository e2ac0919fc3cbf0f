//===- Transport.h - Guarded MPI operations ---------------------*- C++ -*-===//
//
// The one place that waits on MPI: non-blocking collectives and point-to-point
// transfers, each waited on with a bounded-time poll that sleeps between
// polls, a byte counter, and the fatal-error path that turns a dead or
// diverged peer into one clear line and a job abort. Internal to
// runtime/src/collectives; users go through Communicator.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_TRANSPORT_H
#define CLEAVE_RUNTIME_COLLECTIVES_TRANSPORT_H

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::rt {

/// MPI's text for error `code` ("MPI error <code>" if MPI has none).
std::string mpiErrorString(int code);

/// Outcome of pollRequests().
enum class PollResult { Complete, Failed, TimedOut };

/// Polls `count` requests with MPI_Testall until they all complete, MPI
/// reports an error (left in `errorCode`, with per-request codes in
/// `statuses` when it is MPI_ERR_IN_STATUS) or `timeoutSeconds` pass.
/// Polls without pause for a few tens of microseconds, then sleeps between
/// polls, each sleep twice as long as the one before up to a millisecond, so
/// that a rank waiting for a late peer leaves its core to the kernels of
/// others (see the definitions in Transport.cpp for the trade-off).
PollResult pollRequests(int count, MPI_Request *requests, MPI_Status *statuses,
                        double timeoutSeconds, int &errorCode);

/// Non-blocking collectives and point-to-point transfers on a private MPI
/// communicator.
///
/// Every wait is bounded: requests are polled with MPI_Testall until they
/// complete, MPI reports an error (the communicator uses MPI_ERRORS_RETURN), or
/// `timeoutSeconds` pass. The last two are fatal: the process prints one line
/// naming its rank and the operation, then calls MPI_Abort, which makes
/// mpirun terminate every rank. A rank that died or stopped participating
/// therefore ends the job in bounded time instead of hanging it.
///
/// Received point-to-point lengths are checked against the expected ones, and
/// agree() lets a collective check that every rank passed the same
/// arguments, so ranks that disagree on what they reduce fail loudly instead
/// of mixing data (MPI leaves a collective with mismatched counts undefined).
///
/// Not thread-safe: one thread at a time may use a Transport.
class Transport {
public:
  /// Takes ownership of `comm` (frees it on destruction) and switches it to
  /// MPI_ERRORS_RETURN.
  Transport(MPI_Comm comm, double timeoutSeconds);
  ~Transport();
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  double timeoutSeconds() const { return timeoutSeconds_; }
  void setTimeoutSeconds(double seconds) { timeoutSeconds_ = seconds; }

  /// Payload bytes this rank sent since construction or the last reset:
  /// what exchange() handed to MPI sends, plus what addBytesSent() added for
  /// collectives, whose messages MPI chooses.
  uint64_t bytesSent() const { return bytesSent_; }
  void resetByteCount() { bytesSent_ = 0; }
  void addBytesSent(uint64_t bytes) { bytesSent_ += bytes; }

  /// Runs one non-blocking collective to completion: `start(comm, &request)`
  /// issues the MPI_I... call on this transport's communicator and returns
  /// its error code; the request is then waited on like every other. `what`
  /// names the collective in error messages.
  template <typename Start> void collective(const char *what, Start &&start) {
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = start(comm_, &request);
    if (rc != MPI_SUCCESS)
      failMpi(what, rc, MPI_PROC_NULL);
    requests_.assign(1, request);
    expectedBytes_.assign(1, -1);
    peers_.assign(1, MPI_PROC_NULL);
    waitAll(what);
  }

  /// Whether every rank passed the same `fingerprint` (a hash of the
  /// arguments of the collective about to run): one small all-reduce. Not
  /// counted in bytesSent().
  bool agree(const char *what, uint64_t fingerprint);

  /// Sends `sendBytes` to `dest` while receiving exactly `recvBytes` from
  /// `source`; returns when both are complete. A zero byte count skips that
  /// side (both ends compute the same lengths, so they skip together). `what`
  /// names the collective in error messages.
  void exchange(const void *sendBuf, int64_t sendBytes, int dest, void *recvBuf,
                int64_t recvBytes, int source, const char *what);
  void send(const void *buf, int64_t bytes, int dest, const char *what) {
    exchange(buf, bytes, dest, nullptr, 0, MPI_PROC_NULL, what);
  }
  void recv(void *buf, int64_t bytes, int source, const char *what) {
    exchange(nullptr, 0, MPI_PROC_NULL, buf, bytes, source, what);
  }

  /// Waits until every rank has entered the barrier.
  void barrier(const char *what);

  /// Prints "rank R: <message>" and terminates the whole job.
  [[noreturn]] void fail(const std::string &message) const;

  /// What fail() does, for code that has no Transport yet.
  [[noreturn]] static void abortJob(MPI_Comm comm, int rank,
                                    const std::string &message);

  /// The message of a wait that ran out of time.
  static std::string timeoutMessage(const char *what, double seconds);

private:
  /// Polls the pending requests until all complete; fails on error or
  /// timeout, and when a receive got other than its expected length.
  void waitAll(const char *what);
  [[noreturn]] void failMpi(const char *what, int errorCode, int peer) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  double timeoutSeconds_;
  uint64_t bytesSent_ = 0;

  // The requests of the exchange in flight, kept to reuse their storage.
  // expectedBytes_ is the length a receive must have, -1 for a send; peers_
  // names the other rank of each request for error messages.
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
  std::vector<int64_t> expectedBytes_;
  std::vector<int> peers_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_TRANSPORT_H

//===- Agree.h - All ranks fail a step together -----------------*- C++ -*-===//
//
// A step that one rank may fail alone (opening its GPU, loading NCCL,
// joining a communicator) is followed by an agreement, so that every rank
// returns an error together instead of some of them waiting forever in a
// collective the others never reach.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_AGREE_H
#define CLEAVE_RUNTIME_COLLECTIVES_AGREE_H

#include "Status.h"
#include "collectives/Communicator.h"

#include <string>
#include <vector>

namespace cleave::rt {

/// Collective: `mine` is this rank's result of a step every rank took. A
/// rank that failed returns its own error; if another rank failed, the
/// others return one naming the ranks that did (each prints its own
/// reason): "<step> failed on K of the job's R ranks: rank(s) ...", or
/// without a `step`, "rank r of R: stopped because rank(s) ... failed".
inline Status agreeAcrossRanks(Communicator &comm, const Status &mine,
                               const std::string &step = std::string()) {
  if (comm.size() == 1)
    return mine;
  std::vector<double> failed(size_t(comm.size()), 0.0);
  failed[size_t(comm.rank())] = mine.ok() ? 0.0 : 1.0;
  comm.allreduceSum(failed.data(), int64_t(failed.size()));
  if (!mine.ok())
    return mine;
  std::string ranks;
  int count = 0;
  for (size_t r = 0; r < failed.size(); ++r)
    if (failed[r] > 0) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      ++count;
    }
  if (count == 0)
    return Status::success();
  if (!step.empty())
    return makeError(CLEAVE_FAILED_PRECONDITION, step, " failed on ", count,
                     " of the job's ", comm.size(), " ranks: rank(s) ", ranks,
                     " (see their errors)");
  return makeError(CLEAVE_FAILED_PRECONDITION, "rank ", comm.rank(), " of ",
                   comm.size(), ": stopped because rank(s) ", ranks,
                   " failed (see their errors)");
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_AGREE_H

//===- MpiGTestMain.cpp - main() of the MPI gtest binary ------------------===//
//
// Creates the world communicator, runs the tests on every rank with only
// rank 0 printing the usual report (other ranks print their failures, tagged
// with their rank), and fails the process on every rank if any rank failed.
//
//===----------------------------------------------------------------------===//

#include "MpiGTest.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace cleave::rt;

namespace {

std::unique_ptr<Communicator> worldComm;

/// Prints the failed assertions of a rank other than 0, whose default
/// printer is removed so that one report is not printed R times.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  // The test's name is kept from OnTestStart: gtest holds its own lock
  // while reporting a result, so current_test_info() would deadlock here.
  void OnTestStart(const ::testing::TestInfo &test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }

  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (!result.failed())
      return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: %s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.message());
  }

private:
  int rank_;
  std::string test_;
};

} // namespace

Communicator &cleave::rt::test::world() { return *worldComm; }

bool cleave::rt::test::launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);

  // A short timeout: a test that diverges across ranks should end the run
  // quickly with a message rather than wait out the default.
  CommunicatorOptions options;
  options.timeoutSeconds = 30;
  std::string error;
  worldComm = Communicator::world(options, error);
  if (!worldComm) {
    std::fprintf(stderr, "cannot create the world communicator: %s\n",
                 error.c_str());
    return 1;
  }
  const int rank = worldComm->rank();
  const int size = worldComm->size();
  if (rank != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }

  const int localResult = RUN_ALL_TESTS();
  const double failedRanks =
      worldComm->allreduceSum(localResult == 0 ? 0.0 : 1.0);
  if (rank == 0)
    std::printf("%s: %g of %d ranks failed\n",
                worldComm->usesMpi() ? "mpi" : "local", failedRanks, size);
  worldComm.reset();
  return failedRanks == 0 ? 0 : 1;
}

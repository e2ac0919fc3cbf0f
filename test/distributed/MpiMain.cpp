//===- MpiMain.cpp - main() of the data-parallel session tests ------------===//
//
// Initialises MPI before any session exists, so that every distributed
// session of the tests adopts it (a session that initialised MPI itself
// would finalise it with its communicator, and MPI cannot be initialised
// twice in a process). Runs the tests on every rank; ranks other than 0
// print only their failures, tagged with their rank; every rank fails if
// any rank failed.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>

namespace {

/// Prints the failed assertions of a rank other than 0, whose default
/// printer is removed so that one report is not printed R times.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  // Kept from OnTestStart: gtest holds its lock while reporting a result.
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

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) !=
      MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Init_thread failed\n");
    return 1;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() == 0 ? 0 : 1;
  int failedRanks = 0;
  MPI_Allreduce(&failed, &failedRanks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%d of %d ranks failed\n", failedRanks, size);
  MPI_Finalize();
  return failedRanks == 0 ? 0 : 1;
}

//===- FaultTest.cpp - A job whose ranks fail must end, with a message ----===//
//
// Run by RunFaultTest.cmake under mpirun with 3 ranks, in one of these modes:
//   exit           rank 1 exits before the collective;
//   stall-sum      rank 1 stops participating (it sleeps) before a sum;
//   stall-barrier  the same before a barrier;
//   bad-kind       every rank asks for reduction kind 7;
//   size-mismatch  rank 1 reduces 999 elements where the others reduce 1000;
//   broadcast-mismatch
//                  rank 1 broadcasts 999 bytes where the others broadcast 1000.
// In every mode the collective must not return; the driver checks that the
// job exits non-zero, in bounded time, with a message that says why. This
// program initialises MPI itself, so Communicator::world() adopts it.
//
//===----------------------------------------------------------------------===//

#include "collectives/Communicator.h"
#include "collectives/MpiCollectives.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace cleave::rt;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: %s exit|stall-sum|stall-barrier|bad-kind|"
                 "size-mismatch|broadcast-mismatch\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);

  // The timeout comes from CLEAVE_COLLECTIVE_TIMEOUT_S, set by the driver.
  std::string error;
  std::unique_ptr<Communicator> comm = Communicator::world(error);
  if (!comm) {
    std::fprintf(stderr, "cannot create the world communicator: %s\n",
                 error.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int rank = comm->rank();

  if (rank == 1 && mode == "exit")
    _exit(1);
  if (rank == 1 && (mode == "stall-sum" || mode == "stall-barrier")) {
    // A hung rank: alive, but never joins. Bounded, so that a broken abort
    // path cannot leave it behind; the driver fails the test in that case.
    std::this_thread::sleep_for(std::chrono::seconds(30));
    _exit(3);
  }

  if (mode == "stall-barrier") {
    comm->barrier();
  } else if (mode == "broadcast-mismatch") {
    std::vector<char> data(1000, 'x');
    comm->broadcast(data.data(), rank == 1 ? 999 : 1000, 0);
  } else {
    std::vector<float> data(1000, 1.0f);
    float *buffers[] = {data.data()};
    int64_t sizes[] = {rank == 1 && mode == "size-mismatch" ? 999 : 1000};
    const int32_t kind = mode == "bad-kind" ? 7 : 0;
    (void)MpiCollectives(*comm).reduce(static_cast<ReduceKind>(kind), 1,
                                       buffers, sizes);
  }

  std::printf("rank %d: the collective returned although it had to fail\n",
              rank);
  comm.reset();
  MPI_Finalize();
  return 0;
}

//===- FakeCommunicator.h - A Communicator for kernel tests -----*- C++ -*-===//
//
// The kernel library only declares cleave::rt::crossRankReduce; the
// collectives library defines it over MPI. These tests link neither MPI nor
// the collectives: FakeCommunicator.cpp defines the function and this class
// records the calls it receives.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_KERNELS_FAKECOMMUNICATOR_H
#define CLEAVE_TEST_UNIT_RUNTIME_KERNELS_FAKECOMMUNICATOR_H

#include <cstdint>
#include <vector>

namespace cleave::rt {

/// Stands in for the collectives library's Communicator (never linked with
/// it). It plays a world of `ranks` ranks whose other ranks all hold the
/// same values as this one: a sum multiplies by `ranks`, a mean leaves the
/// values unchanged.
class Communicator {
public:
  explicit Communicator(int ranks) : ranks(ranks) {}

  struct Call {
    int32_t kind;
    int64_t count;
    float **buffers;
    const int64_t *sizes;
  };
  int ranks;
  std::vector<Call> calls;
};

} // namespace cleave::rt

#endif // CLEAVE_TEST_UNIT_RUNTIME_KERNELS_FAKECOMMUNICATOR_H

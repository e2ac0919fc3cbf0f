//===- MpiGTest.h - Running gtest suites on every MPI rank ------*- C++ -*-===//
//
// The collectives tests run as one gtest binary on every rank of an mpirun
// job; MpiGTestMain.cpp provides main(). Rules for tests written against it:
// every rank runs every test in the same order, so a test must make the same
// collective calls on every rank, and must not return early (ASSERT_*) before
// its last collective, or its peers would wait for it until the collective
// timeout ends the job. Use EXPECT_* around collectives.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_COLLECTIVES_MPIGTEST_H
#define CLEAVE_TEST_UNIT_RUNTIME_COLLECTIVES_MPIGTEST_H

#include "collectives/Communicator.h"

namespace cleave::rt::test {

/// The world communicator of this test run (a local one outside mpirun).
Communicator &world();

/// Whether an MPI launcher started this process.
bool launchedByMpi();

/// Sets the world communicator's fusion buffer for one scope.
class ScopedFusionBuffer {
public:
  explicit ScopedFusionBuffer(int64_t bytes)
      : saved_(world().fusionBufferBytes()) {
    world().setFusionBufferBytes(bytes);
  }
  ~ScopedFusionBuffer() { world().setFusionBufferBytes(saved_); }
  ScopedFusionBuffer(const ScopedFusionBuffer &) = delete;
  ScopedFusionBuffer &operator=(const ScopedFusionBuffer &) = delete;

private:
  int64_t saved_;
};

} // namespace cleave::rt::test

#endif // CLEAVE_TEST_UNIT_RUNTIME_COLLECTIVES_MPIGTEST_H

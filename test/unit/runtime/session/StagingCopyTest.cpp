//===- StagingCopyTest.cpp - The copy of a batch into staging memory ------===//
//
// copyRowsPadded copies a batch's rows into a GPU session's pinned staging
// buffer and pads a short batch with its last row; copies of at least
// kParallelCopyBytes are split over OpenMP threads. Every byte must land
// where one memcpy would put it, whatever the team and however the size
// falls on the 256 KiB chunks.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace cleave::rt;

namespace {

std::vector<unsigned char> pattern(size_t bytes) {
  std::vector<unsigned char> v(bytes);
  uint32_t x = 2463534242u;
  for (unsigned char &c : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<unsigned char>(x);
  }
  return v;
}

/// What the copy must produce: the rows, then the last row repeated.
std::vector<unsigned char> expected(const std::vector<unsigned char> &src,
                                    int64_t samples, int64_t rows,
                                    size_t rowBytes) {
  std::vector<unsigned char> out(size_t(rows) * rowBytes);
  std::memcpy(out.data(), src.data(), size_t(samples) * rowBytes);
  for (int64_t r = samples; r < rows; ++r)
    std::memcpy(out.data() + size_t(r) * rowBytes,
                src.data() + size_t(samples - 1) * rowBytes, rowBytes);
  return out;
}

struct Case {
  int64_t samples, rows;
  size_t rowBytes;
  int threads;
};

class StagingCopyTest : public ::testing::TestWithParam<Case> {};

TEST_P(StagingCopyTest, EqualsOneMemcpyAndPadsWithTheLastRow) {
  const Case c = GetParam();
  std::vector<unsigned char> src = pattern(size_t(c.samples) * c.rowBytes);
  // Garbage beyond what is written shows up as a mismatch.
  std::vector<unsigned char> dst(size_t(c.rows) * c.rowBytes, 0xAB);
  copyRowsPadded(dst.data(), src.data(), c.samples, c.rows, c.rowBytes,
                 c.threads);
  EXPECT_EQ(dst, expected(src, c.samples, c.rows, c.rowBytes));
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, StagingCopyTest,
    ::testing::Values(
        // Below the threshold: one memcpy.
        Case{32, 32, 3136, 4}, Case{5, 8, 3136, 4},
        // 4096 rows of a 28x28 f32 image (12.25 MiB, 49 chunks), whole and
        // short, with 3 threads, OpenMP's default and one.
        Case{4096, 4096, 3136, 3}, Case{4000, 4096, 3136, 3},
        Case{4096, 4096, 3136, 0}, Case{4096, 4096, 3136, 1},
        // A size that ends mid-chunk, rows that straddle chunks.
        Case{1021, 1024, 1031, 7}));

TEST(StagingCopy, TheThresholdIsTheParallelPathsEdge) {
  // Exactly kParallelCopyBytes takes the split path; a byte less does not.
  // Both must copy the same bytes.
  for (size_t bytes : {kParallelCopyBytes - 1, kParallelCopyBytes}) {
    std::vector<unsigned char> src = pattern(bytes);
    std::vector<unsigned char> dst(bytes, 0);
    copyRowsPadded(dst.data(), src.data(), int64_t(bytes), int64_t(bytes), 1,
                   2);
    EXPECT_EQ(dst, src) << bytes;
  }
}

} // namespace

//===- AlgorithmChoiceTest.cpp - Which library algorithms a session uses --===//
//
// The rules the cuda kernels choose cuBLASLt and cuDNN algorithms by, without
// a GPU: matmul algorithms per operand alignment (the arena and its views
// give pointers aligned to much less than cuBLASLt's default 256 bytes), and
// cuDNN's heuristics filtered to deterministic algorithms without tensor ops
// (a TF32 choice would change f32 numerics).
//
//===----------------------------------------------------------------------===//

#include "device/cuda/AlgorithmChoice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace cleave::rt;

namespace {

const void *at(uintptr_t address) {
  return reinterpret_cast<const void *>(address);
}

TEST(AlgorithmChoice, AlignmentIsTheWeakestOperands) {
  EXPECT_EQ(commonAlignment({at(0x10000), at(0x20000), at(0x30000)}), 256u);
  // The arena's 64-byte buffer offsets.
  EXPECT_EQ(commonAlignment({at(0x10000), at(0x10040), at(0x20000)}), 64u);
  // A view one float into a buffer.
  EXPECT_EQ(commonAlignment({at(0x10000), at(0x10004), at(0x20000)}), 4u);
  EXPECT_EQ(commonAlignment({at(0x10008), at(0x10000), at(0x10010)}), 8u);
  // A missing bias does not count.
  EXPECT_EQ(commonAlignment({at(0x10080), nullptr}), 128u);
  EXPECT_EQ(commonAlignment({nullptr}), 256u);
}

TEST(AlgorithmChoice, AlignmentClassesStrongestFirst) {
  EXPECT_EQ(alignmentClass(256), 0u);
  EXPECT_EQ(alignmentClass(64), 2u);
  EXPECT_EQ(kMatmulAlignments[alignmentClass(4)], 4u);
  EXPECT_EQ(kMatmulAlignments[alignmentClass(16)], 16u);
  // A view one bf16 element into a buffer has the weakest class.
  EXPECT_EQ(alignmentClass(2), kMatmulAlignments.size() - 1);
  EXPECT_EQ(
      alignmentClass(commonAlignment({at(0x10000), at(0x10002), at(0x20000)})),
      kMatmulAlignments.size() - 1);
  // Below a bf16 element's alignment: no class.
  EXPECT_EQ(alignmentClass(1), kMatmulAlignments.size());
  // Every class is a power of two the pointers it is chosen for satisfy.
  for (uint32_t a : kMatmulAlignments) {
    EXPECT_EQ(a & (a - 1), 0u);
    EXPECT_EQ(kMatmulAlignments[alignmentClass(commonAlignment({at(a)}))], a);
  }
}

// cuDNN's perf struct, reduced to what the rule reads.
enum Status { Success, NotSupported };
enum Determinism { NonDeterministic, Deterministic };
enum Math { DefaultMath, TensorOpMath, TensorOpMathAllowConversion, FmaMath };
struct Perf {
  int algo;
  Status status;
  Determinism determinism;
  Math mathType;
};

int choose(const std::vector<Perf> &perf) {
  int i = firstExactAlgorithm(perf.data(), int(perf.size()), Success,
                              Deterministic, {FmaMath, DefaultMath});
  return i < 0 ? -1 : perf[size_t(i)].algo;
}

TEST(AlgorithmChoice, CudnnAlgorithmsAreDeterministicWithoutTensorOps) {
  // The heuristics' favourite is a tensor-op (TF32) algorithm: skipped.
  EXPECT_EQ(choose({{7, Success, Deterministic, TensorOpMath},
                    {6, Success, Deterministic, TensorOpMathAllowConversion},
                    {1, Success, Deterministic, FmaMath}}),
            1);
  // An entry in default math runs under the FMA descriptor: taken.
  EXPECT_EQ(choose({{7, Success, Deterministic, TensorOpMath},
                    {2, Success, Deterministic, DefaultMath}}),
            2);
  EXPECT_EQ(choose({{3, Success, NonDeterministic, FmaMath},
                    {4, NotSupported, Deterministic, FmaMath},
                    {5, Success, Deterministic, FmaMath}}),
            5);
  EXPECT_EQ(choose({{7, Success, Deterministic, TensorOpMath}}), -1);
  EXPECT_EQ(choose({}), -1);
}

} // namespace

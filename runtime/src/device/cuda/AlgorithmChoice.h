//===- AlgorithmChoice.h - Library algorithms Cleave uses ------*- C++ -*-===//
//
// cuBLASLt and cuDNN offer algorithms by heuristics; not every one fits
// Cleave's contract. These rules are kept apart from the library calls, so
// that they are tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DEVICE_CUDA_ALGORITHMCHOICE_H
#define CLEAVE_RUNTIME_DEVICE_CUDA_ALGORITHMCHOICE_H

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace cleave::rt {

/// The operand alignments a matmul's algorithms are chosen for, strongest
/// first. cuBLASLt's preference assumes 256 bytes unless told otherwise
/// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), but the arena places
/// buffers at 64-byte offsets and views of them (a slice, one head of an
/// attention block) start anywhere an element can: an algorithm chosen for
/// 256 bytes fails or faults on them. The weakest is a bf16 element's (two
/// bytes); an f32 matmul's weakest is a float's.
constexpr std::array<uint32_t, 8> kMatmulAlignments = {256, 128, 64, 32,
                                                       16,  8,   4,  2};

/// The largest power of two, at most 256, that divides every non-null
/// address of `pointers` (256 if all are null).
inline uint32_t commonAlignment(std::initializer_list<const void *> pointers) {
  uint32_t alignment = kMatmulAlignments.front();
  for (const void *p : pointers) {
    if (!p)
      continue;
    auto address = reinterpret_cast<uintptr_t>(p);
    while (alignment > 1 && address % alignment != 0)
      alignment /= 2;
  }
  return alignment;
}

/// Index into kMatmulAlignments of the strongest alignment that `alignment`
/// satisfies; kMatmulAlignments.size() if it is below the weakest (a float
/// or bf16 pointer never is). `alignmentClass(elementBytes)` is the weakest
/// class a matmul on such elements needs an algorithm for.
inline std::size_t alignmentClass(uint32_t alignment) {
  std::size_t i = 0;
  while (i < kMatmulAlignments.size() && kMatmulAlignments[i] > alignment)
    ++i;
  return i;
}

/// The first of `found` cuDNN heuristic results (cudnnConvolution*AlgoPerf_t,
/// best first) a session may use, or -1: it must have succeeded, be
/// deterministic (a checkpoint resumed on the same GPU continues bit for
/// bit, which algorithms that sum with atomics do not), and not be a
/// tensor-op entry (`CUDNN_TENSOR_OP_MATH` or its conversion variant), which
/// would need a tensor-op descriptor. The convolution descriptor stays
/// `CUDNN_FMA_MATH`, which forbids TF32 (10-bit mantissas, numerics the f32
/// contract does not allow) whatever an entry reports, so entries reported
/// in plain FMA or default math both run in f32. The values are passed in,
/// so that this compiles without cudnn.h.
template <typename Perf, typename StatusT, typename DeterminismT,
          typename MathT>
int firstExactAlgorithm(const Perf *perf, int found, StatusT success,
                        DeterminismT deterministic,
                        std::initializer_list<MathT> f32Math) {
  for (int i = 0; i < found; ++i)
    if (perf[i].status == success && perf[i].determinism == deterministic &&
        std::find(f32Math.begin(), f32Math.end(), perf[i].mathType) !=
            f32Math.end())
      return i;
  return -1;
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DEVICE_CUDA_ALGORITHMCHOICE_H

//===- Shuffle.h - Reproducible per-epoch sample orders ---------*- C++ -*-===//
//
// The order of epoch e of a run with seed s is a function of (s, e, n) only,
// specified completely so that it is the same with any compiler, standard
// library or machine, and so that a resumed run recomputes it instead of
// storing it:
//
//   state  = splitmix64(s) XOR e        (s, e as uint64)
//   engine = std::mt19937_64(splitmix64(state))
//   below(m), m >= 1: threshold = (2^64 - m) mod m; draw r = engine() until
//                     r >= threshold; return r mod m   (unbiased)
//   order  = [0, 1, ..., n-1]; for i = n-1 down to 1: swap(order[i],
//            order[below(i + 1)])                       (Fisher-Yates)
//
// splitmix64 is Vigna's finaliser: z += 0x9e3779b97f4a7c15;
// z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9; z = (z ^ (z >> 27)) *
// 0x94d049bb133111eb; return z ^ (z >> 31). std::mt19937_64's sequence is
// fixed by the C++ standard; std::uniform_int_distribution and
// std::shuffle are implementation-defined and are therefore not used.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_SHUFFLE_H
#define CLEAVE_DATA_SHUFFLE_H

#include <cstdint>
#include <random>
#include <vector>

namespace cleave::data {

uint64_t splitmix64(uint64_t z);

/// An unbiased draw in [0, m) from `engine` (m >= 1), as specified above.
uint64_t uniformBelow(std::mt19937_64 &engine, uint64_t m);

/// The sample order of `epoch` (0-based) for a run seeded with `seed`: a
/// permutation of [0, n).
std::vector<uint32_t> epochOrder(uint64_t seed, uint64_t epoch, uint32_t n);

} // namespace cleave::data

#endif // CLEAVE_DATA_SHUFFLE_H

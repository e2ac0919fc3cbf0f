//===- Shuffle.cpp - Reproducible per-epoch sample orders -----------------===//

#include "Shuffle.h"

#include <numeric>
#include <utility>

namespace cleave::data {

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t uniformBelow(std::mt19937_64 &engine, uint64_t m) {
  // 2^64 mod m without 128-bit arithmetic: (2^64 - m) mod m.
  const uint64_t threshold = (0 - m) % m;
  while (true) {
    uint64_t r = engine();
    if (r >= threshold)
      return r % m;
  }
}

std::vector<uint32_t> epochOrder(uint64_t seed, uint64_t epoch, uint32_t n) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 engine(splitmix64(splitmix64(seed) ^ epoch));
  for (uint32_t i = n; i-- > 1;)
    std::swap(order[i], order[uniformBelow(engine, uint64_t(i) + 1)]);
  return order;
}

} // namespace cleave::data

//===- Initializers.h - Initial values of globals ---------------*- C++ -*-===//
//
// The initialisers of docs/design/runtime-abi.md, drawing from a generator
// whose output is fixed by the seed alone: the same seed gives the same
// parameters with any compiler, standard library or machine.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_INITIALIZERS_H
#define CLEAVE_RUNTIME_INITIALIZERS_H

#include "Manifest.h"

#include <cstdint>
#include <random>

namespace cleave::rt {

/// A seeded generator of uniform and normal variates.
///
/// The engine is std::mt19937_64, whose output sequence the C++ standard fixes
/// exactly. The standard distributions are implementation-defined, so the two
/// used here are spelled out:
///  - uniform01(): the top 53 bits of one engine output, times 2^-53: a double
///    in [0, 1) with every value a multiple of 2^-53;
///  - normal(): Box-Muller on two consecutive uniform01() draws u1, u2:
///    sqrt(-2 ln(1 - u1)) * cos(2 pi u2). One value per pair; the sine half is
///    not kept, so the generator has no state beyond the engine.
class Generator {
public:
  explicit Generator(uint64_t seed) : engine_(seed) {}

  double uniform01() { return double(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  double normal(double mean, double std);

private:
  std::mt19937_64 engine_;
};

/// Writes the initial value of `global` to `data` (global.bytes bytes).
/// Random kinds draw global.numElements values from `gen` in row-major order,
/// computed in double and rounded to the global's dtype. `initData` is the
/// artifact's cleave_init_data() (used by the `data` kind only).
void initializeGlobal(const GlobalDesc &global, void *data, Generator &gen,
                      const unsigned char *initData);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_INITIALIZERS_H

//===- Initializers.cpp - Initial values of globals -----------------------===//

#include "Initializers.h"

#include <cmath>
#include <cstring>

namespace cleave::rt {

double Generator::normal(double mean, double std) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  double u1 = uniform01();
  double u2 = uniform01();
  // 1 - u1 is in (0, 1], so the logarithm is finite.
  return mean +
         std * std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(kTwoPi * u2);
}

namespace {

template <typename T, typename Fn>
void fill(void *data, int64_t count, Fn &&valueAt) {
  T *out = static_cast<T *>(data);
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<T>(valueAt());
}

template <typename Fn>
void fillAs(DType dtype, void *data, int64_t count, Fn &&valueAt) {
  switch (dtype) {
  case DType::f32:
    return fill<float>(data, count, valueAt);
  case DType::f64:
    return fill<double>(data, count, valueAt);
  case DType::i32:
    return fill<int32_t>(data, count, valueAt);
  case DType::i64:
    return fill<int64_t>(data, count, valueAt);
  // The manifest refuses globals of the narrow types.
  case DType::i8:
  case DType::u8:
  case DType::i16:
  case DType::u16:
  case DType::u32:
  case DType::f16:
  case DType::bf16:
    break;
  }
}

} // namespace

void initializeGlobal(const GlobalDesc &global, void *data, Generator &gen,
                      const unsigned char *initData) {
  const InitSpec &init = global.init;
  int64_t n = global.numElements;
  switch (init.kind) {
  case InitKind::zeros:
    std::memset(data, 0, global.bytes);
    return;
  case InitKind::ones:
    return fillAs(global.dtype, data, n, [] { return 1.0; });
  case InitKind::constant:
    // The manifest parser checked that integer globals get integral values
    // in range, so the conversion is exact.
    return fillAs(global.dtype, data, n, [&] { return init.value; });
  case InitKind::uniform:
  case InitKind::kaiming_uniform:
  case InitKind::fan_in_uniform:
    return fillAs(global.dtype, data, n,
                  [&] { return gen.uniform(init.lo, init.hi); });
  case InitKind::normal:
    return fillAs(global.dtype, data, n,
                  [&] { return gen.normal(init.mean, init.std); });
  case InitKind::data:
    std::memcpy(data, initData + init.offset, global.bytes);
    return;
  }
}

} // namespace cleave::rt

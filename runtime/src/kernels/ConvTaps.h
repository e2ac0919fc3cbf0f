//===- ConvTaps.h - The taps of a convolution that meet its input -*- C++
//-*-===//
//
// Which taps of a convolution's kernel ever multiply an input element
// rather than padding: the CPU convolution kernel convolves with those alone
// (Convolution.cpp, "Dead taps"), and the compiler's memory report sizes the
// kernel's cached weight copies by them. Shape arithmetic only, shared by
// both so that they agree.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_CONVTAPS_H
#define CLEAVE_RUNTIME_KERNELS_CONVTAPS_H

#include <cstdint>

namespace cleave::rt {

/// The taps [begin, end) of one spatial dimension that a convolution keeps.
struct TapRange {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};

/// The taps of one spatial dimension of a kernel of `taps` taps through
/// which some of the `out` outputs reads one of the `in` input elements
/// (output i reads input i * stride - padBefore + t * dilation through tap
/// t; dilation 1 is dense). The whole kernel where those taps are not
/// contiguous, where there are none (every output in the padding), or where
/// cropping the others would leave a negative padding on either side (the
/// padding shrinks by the cropped taps times the dilation, which keeps
/// every output's window on the same input elements and the output size
/// the same).
inline TapRange liveTaps(int64_t in, int64_t out, int64_t taps, int64_t stride,
                         int64_t padBefore, int64_t padAfter,
                         int64_t dilation) {
  auto live = [&](int64_t t) {
    for (int64_t o = 0; o < out; ++o) {
      int64_t i = o * stride - padBefore + t * dilation;
      if (i >= 0 && i < in)
        return true;
    }
    return false;
  };
  const TapRange all{0, taps};
  int64_t begin = 0, end = taps;
  while (begin < taps && !live(begin))
    ++begin;
  while (end > begin && !live(end - 1))
    --end;
  if (begin == end)
    return all;
  for (int64_t t = begin + 1; t < end - 1; ++t)
    if (!live(t))
      return all;
  if (padBefore - begin * dilation < 0 ||
      padAfter - (taps - end) * dilation < 0)
    return all;
  return {begin, end};
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_CONVTAPS_H

//===- ConvPoolKernels.cpp - Reference convolution and pooling ------------===//
//
// NCHW convolution with groups, strides, padding and dilation, its two
// gradients, and max/average pooling with their gradients. Direct loops
// over output positions and window taps, accumulated in double.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Kernels.h"

#include "dialects/NN/IR/NNOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::interp;
using namespace mlir::cleave::interp::kernels;

namespace {

/// The geometry of a 2-D window op. Padding is [top, left, bottom, right].
struct Window {
  int64_t kh, kw, sh, sw, padTop, padLeft, padBottom, padRight, dh, dw;
  bool ceilMode = false;

  Window(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
         ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations, bool ceil)
      : kh(kernel[0]), kw(kernel[1]), sh(strides[0]), sw(strides[1]),
        padTop(padding[0]), padLeft(padding[1]), padBottom(padding[2]),
        padRight(padding[3]), dh(dilations[0]), dw(dilations[1]),
        ceilMode(ceil) {}

  int64_t outH(int64_t h) const {
    return nn::windowOutputSize(h, kh, sh, padTop, padBottom, dh, ceilMode);
  }
  int64_t outW(int64_t w) const {
    return nn::windowOutputSize(w, kw, sw, padLeft, padRight, dw, ceilMode);
  }
  /// Input row of tap `i` of output row `oh` (may be outside the input).
  int64_t row(int64_t oh, int64_t i) const { return oh * sh - padTop + i * dh; }
  int64_t col(int64_t ow, int64_t j) const {
    return ow * sw - padLeft + j * dw;
  }
};

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// Shapes of one convolution: input [n, c, h, w], weight [o, c / groups,
/// kh, kw], output [n, o, oh, ow].
struct ConvShape {
  int64_t n, c, h, w, o, cg, og, groups, oh, ow;
};

/// Checks the operand shapes against each other; `what` names the op's
/// operands for the message.
FailureOr<ConvShape> convShape(Operation *op, ArrayRef<int64_t> x,
                               ArrayRef<int64_t> weight, int64_t groups,
                               const Window &win) {
  ConvShape s;
  s.n = x[0];
  s.c = x[1];
  s.h = x[2];
  s.w = x[3];
  s.o = weight[0];
  s.groups = groups;
  if (groups < 1 || s.c % groups != 0 || s.o % groups != 0 ||
      weight[1] * groups != s.c)
    return op->emitOpError("input ")
           << shapeToString(x) << " and weight " << shapeToString(weight)
           << " do not form a convolution with " << groups << " groups";
  s.cg = weight[1];
  s.og = s.o / groups;
  s.oh = win.outH(s.h);
  s.ow = win.outW(s.w);
  if (s.oh < 1 || s.ow < 1)
    return op->emitOpError("kernel does not fit the padded input ")
           << shapeToString(x);
  return s;
}

/// Calls `fn(xIndex, wIndex, yIndex)` for every multiply of the convolution
/// whose input tap lies inside the input (padding contributes zeros).
template <typename Fn>
void forEachConvTap(const ConvShape &s, const Window &win, Fn &&fn) {
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oc = 0; oc < s.o; ++oc) {
      int64_t g = oc / s.og;
      for (int64_t y = 0; y < s.oh; ++y)
        for (int64_t x = 0; x < s.ow; ++x) {
          int64_t yi = ((b * s.o + oc) * s.oh + y) * s.ow + x;
          for (int64_t ci = 0; ci < s.cg; ++ci) {
            int64_t ic = g * s.cg + ci;
            for (int64_t i = 0; i < win.kh; ++i) {
              int64_t r = win.row(y, i);
              if (r < 0 || r >= s.h)
                continue;
              for (int64_t j = 0; j < win.kw; ++j) {
                int64_t col = win.col(x, j);
                if (col < 0 || col >= s.w)
                  continue;
                fn(((b * s.c + ic) * s.h + r) * s.w + col,
                   ((oc * s.cg + ci) * win.kh + i) * win.kw + j, yi);
              }
            }
          }
        }
    }
}

LogicalResult runConv2D(nn::Conv2DOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput()), &w = f.get(op.getWeight());
  ArrayRef<int64_t> ws = w.getShape();
  Window win(ws.drop_front(2), op.getStrides(), op.getPadding(),
             op.getDilations(), false);
  auto s = convShape(op, x.getShape(), ws, op.getGroups(), win);
  if (failed(s))
    return failure();
  const Tensor *bias = op.getBias() ? &f.get(op.getBias()) : nullptr;
  if (bias && bias->getShape() != ArrayRef<int64_t>{s->o})
    return op.emitOpError("bias ")
           << shapeToString(bias->getShape()) << " does not match " << s->o
           << " output channels";
  std::vector<double> xv = f.multiplied(op, x), wv = f.multiplied(op, w);
  std::vector<double> y(s->n * s->o * s->oh * s->ow, 0.0);
  forEachConvTap(*s, win, [&](int64_t xi, int64_t wi, int64_t yi) {
    y[yi] += xv[xi] * wv[wi];
  });
  f.storeResult(op, y);
  if (bias)
    for (size_t i = 0; i < y.size(); ++i)
      y[i] += bias->getDouble((i / (s->oh * s->ow)) % s->o);
  f.set(op.getResult(),
        Tensor::fromDoubles(x.getDType(), {s->n, s->o, s->oh, s->ow}, y));
  return success();
}

/// Checks a cotangent against the forward output shape.
LogicalResult checkGrad(Operation *op, const Tensor &g,
                        ArrayRef<int64_t> expected) {
  if (g.getShape() != expected)
    return op->emitOpError("grad has shape ")
           << shapeToString(g.getShape()) << ", the forward op produces "
           << shapeToString(expected);
  return success();
}

LogicalResult runConv2DGradInput(nn::Conv2DGradInputOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &w = f.get(op.getWeight());
  ArrayRef<int64_t> ws = w.getShape(), size = op.getInputSize();
  int64_t groups = op.getGroups();
  SmallVector<int64_t> xShape = {g.getShape()[0], ws[1] * groups, size[0],
                                 size[1]};
  Window win(ws.drop_front(2), op.getStrides(), op.getPadding(),
             op.getDilations(), false);
  auto s = convShape(op, xShape, ws, groups, win);
  if (failed(s) || failed(checkGrad(op, g, {s->n, s->o, s->oh, s->ow})))
    return failure();
  std::vector<double> gv = f.multiplied(op, g), wv = f.multiplied(op, w);
  std::vector<double> dx(numElementsOf(xShape), 0.0);
  forEachConvTap(*s, win, [&](int64_t xi, int64_t wi, int64_t yi) {
    dx[xi] += gv[yi] * wv[wi];
  });
  f.storeResult(op, dx);
  f.set(op.getResult(), Tensor::fromDoubles(g.getDType(), xShape, dx));
  return success();
}

LogicalResult runConv2DGradWeight(nn::Conv2DGradWeightOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &x = f.get(op.getInput());
  ArrayRef<int64_t> k = op.getKernelSize();
  int64_t groups = op.getGroups();
  if (groups < 1 || x.getShape()[1] % groups != 0)
    return op.emitOpError("input channels (")
           << x.getShape()[1] << ") not divisible by groups (" << groups << ")";
  SmallVector<int64_t> wShape = {g.getShape()[1], x.getShape()[1] / groups,
                                 k[0], k[1]};
  Window win(k, op.getStrides(), op.getPadding(), op.getDilations(), false);
  auto s = convShape(op, x.getShape(), wShape, groups, win);
  if (failed(s) || failed(checkGrad(op, g, {s->n, s->o, s->oh, s->ow})))
    return failure();
  std::vector<double> gv = f.multiplied(op, g), xv = f.multiplied(op, x);
  std::vector<double> dw(numElementsOf(wShape), 0.0);
  forEachConvTap(*s, win, [&](int64_t xi, int64_t wi, int64_t yi) {
    dw[wi] += gv[yi] * xv[xi];
  });
  f.storeResult(op, dw);
  f.set(op.getResult(), Tensor::fromDoubles(g.getDType(), wShape, dw));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Calls `fn(plane, y, x, taps)` for every output position of a pooling
/// over `n * c` planes of `h x w`, where `taps` lists the row-major window
/// positions inside the input (padding and ceil-mode overhang excluded), in
/// row-major window order, as plane-relative offsets.
template <typename Fn>
void forEachPoolWindow(int64_t planes, int64_t h, int64_t w, int64_t oh,
                       int64_t ow, const Window &win, Fn &&fn) {
  SmallVector<int64_t> taps;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        taps.clear();
        for (int64_t i = 0; i < win.kh; ++i) {
          int64_t r = win.row(y, i);
          if (r < 0 || r >= h)
            continue;
          for (int64_t j = 0; j < win.kw; ++j) {
            int64_t c = win.col(x, j);
            if (c >= 0 && c < w)
              taps.push_back(r * w + c);
          }
        }
        fn(p, y, x, ArrayRef<int64_t>(taps));
      }
}

/// The pooling geometry of a pool op (or its gradient) on an NCHW input of
/// `shape`, with the checks the verifier cannot do on dynamic shapes.
template <typename OpTy>
FailureOr<std::pair<Window, SmallVector<int64_t>>>
poolGeometry(OpTy op, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides = op.getEffectiveStrides();
  Window win(op.getKernelSize(), strides, op.getPadding(), op.getDilations(),
             op.getCeilMode());
  int64_t oh = win.outH(shape[2]), ow = win.outW(shape[3]);
  if (oh < 1 || ow < 1)
    return op.emitOpError("window does not fit the input ")
           << shapeToString(shape);
  return std::make_pair(win, SmallVector<int64_t>{shape[0], shape[1], oh, ow});
}

/// The first maximal tap of a window ("first" in row-major window order,
/// padding never wins), or -1 for a window entirely in the padding.
int64_t argmaxTap(const std::vector<double> &x, int64_t base,
                  ArrayRef<int64_t> taps) {
  int64_t best = -1;
  for (int64_t t : taps)
    if (best < 0 || x[base + t] > x[base + best])
      best = t;
  return best;
}

LogicalResult runMaxPool2D(nn::MaxPool2DOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  ArrayRef<int64_t> s = x.getShape();
  auto geo = poolGeometry(op, s);
  if (failed(geo))
    return failure();
  const Window &win = geo->first;
  ArrayRef<int64_t> outShape = geo->second;
  std::vector<double> xv = x.toDoubles();
  std::vector<double> y(numElementsOf(outShape));
  int64_t plane = s[2] * s[3];
  forEachPoolWindow(
      s[0] * s[1], s[2], s[3], outShape[2], outShape[3], win,
      [&](int64_t p, int64_t oy, int64_t ox, ArrayRef<int64_t> taps) {
        int64_t t = argmaxTap(xv, p * plane, taps);
        y[(p * outShape[2] + oy) * outShape[3] + ox] =
            t < 0 ? -std::numeric_limits<double>::infinity()
                  : xv[p * plane + t];
      });
  f.set(op.getResult(), Tensor::fromDoubles(x.getDType(), outShape, y));
  return success();
}

LogicalResult runMaxPool2DGrad(nn::MaxPool2DGradOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &x = f.get(op.getInput());
  ArrayRef<int64_t> s = x.getShape();
  auto geo = poolGeometry(op, s);
  if (failed(geo))
    return failure();
  const Window &win = geo->first;
  ArrayRef<int64_t> outShape = geo->second;
  if (failed(checkGrad(op, g, outShape)))
    return failure();
  std::vector<double> xv = x.toDoubles(), gv = g.toDoubles();
  std::vector<double> dx(xv.size(), 0.0);
  int64_t plane = s[2] * s[3];
  forEachPoolWindow(
      s[0] * s[1], s[2], s[3], outShape[2], outShape[3], win,
      [&](int64_t p, int64_t oy, int64_t ox, ArrayRef<int64_t> taps) {
        int64_t t = argmaxTap(xv, p * plane, taps);
        if (t >= 0)
          dx[p * plane + t] += gv[(p * outShape[2] + oy) * outShape[3] + ox];
      });
  f.set(op.getResult(), Tensor::fromDoubles(x.getDType(), s, dx));
  return success();
}

/// The divisor of an average-pooling window: the window size (kernel taps)
/// with `count_include_pad`, else the number of taps inside the input.
double avgDivisor(const Window &win, ArrayRef<int64_t> taps,
                  bool countIncludePad) {
  return countIncludePad ? static_cast<double>(win.kh * win.kw)
                         : static_cast<double>(taps.size());
}

LogicalResult runAvgPool2D(nn::AvgPool2DOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  ArrayRef<int64_t> s = x.getShape();
  auto geo = poolGeometry(op, s);
  if (failed(geo))
    return failure();
  const Window &win = geo->first;
  ArrayRef<int64_t> outShape = geo->second;
  bool includePad = op.getCountIncludePad();
  std::vector<double> xv = x.toDoubles();
  std::vector<double> y(numElementsOf(outShape), 0.0);
  int64_t plane = s[2] * s[3];
  forEachPoolWindow(
      s[0] * s[1], s[2], s[3], outShape[2], outShape[3], win,
      [&](int64_t p, int64_t oy, int64_t ox, ArrayRef<int64_t> taps) {
        if (taps.empty())
          return;
        double sum = 0;
        for (int64_t t : taps)
          sum += xv[p * plane + t];
        y[(p * outShape[2] + oy) * outShape[3] + ox] =
            sum / avgDivisor(win, taps, includePad);
      });
  f.set(op.getResult(), Tensor::fromDoubles(x.getDType(), outShape, y));
  return success();
}

LogicalResult runAvgPool2DGrad(nn::AvgPool2DGradOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad());
  ArrayRef<int64_t> size = op.getInputSize();
  SmallVector<int64_t> s = {g.getShape()[0], g.getShape()[1], size[0], size[1]};
  auto geo = poolGeometry(op, s);
  if (failed(geo))
    return failure();
  const Window &win = geo->first;
  ArrayRef<int64_t> outShape = geo->second;
  if (failed(checkGrad(op, g, outShape)))
    return failure();
  bool includePad = op.getCountIncludePad();
  std::vector<double> gv = g.toDoubles();
  std::vector<double> dx(numElementsOf(s), 0.0);
  int64_t plane = s[2] * s[3];
  forEachPoolWindow(
      s[0] * s[1], s[2], s[3], outShape[2], outShape[3], win,
      [&](int64_t p, int64_t oy, int64_t ox, ArrayRef<int64_t> taps) {
        if (taps.empty())
          return;
        double share = gv[(p * outShape[2] + oy) * outShape[3] + ox] /
                       avgDivisor(win, taps, includePad);
        for (int64_t t : taps)
          dx[p * plane + t] += share;
      });
  f.set(op.getResult(), Tensor::fromDoubles(g.getDType(), s, dx));
  return success();
}

LogicalResult runGlobalAvgPool(nn::GlobalAvgPoolOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  ArrayRef<int64_t> s = x.getShape();
  int64_t planes = s[0] * s[1], inner = numElementsOf(s.drop_front(2));
  std::vector<double> y(planes, 0.0);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t k = 0; k < inner; ++k)
      y[p] += x.getDouble(p * inner + k);
    y[p] /= static_cast<double>(inner);
  }
  SmallVector<int64_t> shape(s);
  for (size_t d = 2; d < shape.size(); ++d)
    shape[d] = 1;
  f.set(op.getResult(), Tensor::fromDoubles(x.getDType(), shape, y));
  return success();
}

} // namespace

void kernels::registerConvPoolKernels(KernelTable &t) {
  t.add<nn::Conv2DOp, runConv2D>();
  t.add<nn::Conv2DGradInputOp, runConv2DGradInput>();
  t.add<nn::Conv2DGradWeightOp, runConv2DGradWeight>();
  t.add<nn::MaxPool2DOp, runMaxPool2D>();
  t.add<nn::MaxPool2DGradOp, runMaxPool2DGrad>();
  t.add<nn::AvgPool2DOp, runAvgPool2D>();
  t.add<nn::AvgPool2DGradOp, runAvgPool2DGrad>();
  t.add<nn::GlobalAvgPoolOp, runGlobalAvgPool>();
}

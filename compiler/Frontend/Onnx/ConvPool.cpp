//===- ConvPool.cpp - Convolution and pooling -----------------------------===//
//
// Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool and
// GlobalMaxPool. The nn ops are 2-D (NCHW): 1-D nodes run as 2-D
// ones of height 1, 3-D ones (NCDHW) are composed of 2-D ones
// (docs/design/onnx-import.md). ONNX `pads` ([begins..., ends...], so
// [x1_begin, x2_begin, x1_end, x2_end] in 2-D) is nn's `padding` ([top,
// left, bottom, right]); `auto_pad` is resolved here from the static
// spatial sizes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

FailureOr<Value> importer::transposed(NodeImporter &n, Value v,
                                      ArrayRef<int64_t> perm) {
  auto op = n.create<nn::TransposeOp>(v, perm);
  if (failed(op))
    return failure();
  return op->getResult();
}

namespace {

/// The window attributes shared by Conv and the pools, with ONNX defaults.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padding;
};

/// A 1-D window attribute (`[a]`, or `[begin, end]` for pads) as the 2-D
/// one of an image of height 1: `[1, a]`, or `[0, begin, 0, end]`.
SmallVector<int64_t> liftTo2D(ArrayRef<int64_t> attr, bool pads) {
  if (pads)
    return {0, attr[0], 0, attr[1]};
  return {1, attr[0]};
}

/// A 1-D node's NCL input as an NC1L image (`nn.reshape`, the batch kept).
FailureOr<Value> liftInput(NodeImporter &n, Value x) {
  FailureOr<SmallVector<SymInt>> shape =
      n.getGraph().symbolicShape(x, n.getLoc());
  if (failed(shape))
    return failure();
  SmallVector<SymInt> lifted = {(*shape)[0], (*shape)[1], SymInt::constant(1),
                                (*shape)[2]};
  return n.reshape(x, lifted);
}

/// A 1-D node's `[A, B, K]` weight as the `[A, B, 1, K]` one of a 2-D node.
FailureOr<Value> liftWeight(NodeImporter &n, Value w) {
  auto type = cast<RankedTensorType>(w.getType());
  auto op = n.create<nn::ReshapeOp>(w, ArrayRef<int64_t>{type.getDimSize(0),
                                                         type.getDimSize(1), 1,
                                                         type.getDimSize(2)});
  if (failed(op))
    return failure();
  return op->getResult();
}

/// `y` as output 0 of the node: a lifted (1-D) node's NC1L result reshaped
/// back to NCL.
LogicalResult setWindowOutput(NodeImporter &n, Value y, bool lifted) {
  if (!lifted) {
    n.setOutput(0, y);
    return success();
  }
  FailureOr<SmallVector<SymInt>> shape =
      n.getGraph().symbolicShape(y, n.getLoc());
  if (failed(shape))
    return failure();
  FailureOr<Value> out = n.reshape(y, {(*shape)[0], (*shape)[1], (*shape)[3]});
  if (failed(out))
    return failure();
  n.setOutput(0, *out);
  return success();
}

/// Refuses window attributes no window has: a kernel, stride or dilation
/// below 1, a negative pad. `pads` lists begins then ends.
LogicalResult checkWindowValues(NodeImporter &n, ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations,
                                ArrayRef<int64_t> pads) {
  std::pair<StringRef, ArrayRef<int64_t>> positive[] = {
      {"kernel_shape", kernel}, {"strides", strides}, {"dilations", dilations}};
  for (auto [name, values] : positive)
    if (llvm::any_of(values, [](int64_t v) { return v < 1; }))
      return n.emitError() << n.getOpType() << " " << name << " [" << values
                           << "] must be positive";
  if (llvm::any_of(pads, [](int64_t v) { return v < 0; }))
    return n.emitError() << n.getOpType() << " pads [" << pads
                         << "] must not be negative";
  return success();
}

/// Reads `strides`, `dilations`, `pads` and `auto_pad` for a window of
/// `kernel` (2-D, or 3-D for a pool) over the spatial dimensions of
/// `input`. With `lifted`, the node is 1-D and `input` its NCL input lifted
/// to NC1L: the attributes describe one spatial dimension and are lifted
/// too (`liftTo2D`). Padding is `[begins..., ends...]`.
FailureOr<Window> readWindow(NodeImporter &n, Value input,
                             ArrayRef<int64_t> kernel, bool hasDilations,
                             bool lifted = false) {
  auto type = cast<RankedTensorType>(input.getType());
  const unsigned dims = kernel.size();
  if ((dims != 2 && dims != 3) || type.getRank() != dims + 2)
    return n.emitError() << n.getOpType()
                         << " is supported on 1-D signals (NCL), 2-D images "
                            "(NCHW) and 3-D volumes (NCDHW), with a kernel "
                            "of as many dimensions; got "
                         << type << " and kernel_shape [" << kernel << "]";
  for (unsigned i = 0; i < dims; ++i)
    if (type.isDynamicDim(2 + i))
      return n.emitError() << n.getOpType()
                           << " needs static spatial sizes, got " << type;
  unsigned spatial = lifted ? 1 : dims;
  SmallVector<int64_t> ones(spatial, 1), zeros(2 * spatial, 0);
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  auto strides = n.getInts("strides", ArrayRef(ones));
  auto dilations = hasDilations ? n.getInts("dilations", ArrayRef(ones))
                                : FailureOr<SmallVector<int64_t>>(ones);
  auto pads = n.getInts("pads", ArrayRef(zeros));
  auto autoPad = n.getString("auto_pad", "NOTSET");
  if (failed(strides) || failed(dilations) || failed(pads) || failed(autoPad))
    return failure();
  if (strides->size() != spatial || dilations->size() != spatial ||
      pads->size() != 2 * spatial)
    return n.emitError() << n.getOpType() << " window attributes must describe "
                         << spatial << " spatial dimension"
                         << (spatial == 1 ? "" : "s");
  if (failed(checkWindowValues(n, kernel, *strides, *dilations, *pads)))
    return failure();
  if (lifted) {
    *strides = liftTo2D(*strides, false);
    *dilations = liftTo2D(*dilations, false);
    *pads = liftTo2D(*pads, true);
  }
  w.strides = *strides;
  w.dilations = *dilations;

  if (*autoPad == "NOTSET") {
    w.padding = *pads;
    return w;
  }
  if (n.hasAttr("pads"))
    return n.emitError() << n.getOpType() << " sets both 'pads' and 'auto_pad'";
  w.padding.assign(2 * dims, 0);
  if (*autoPad == "VALID")
    return w;
  if (*autoPad != "SAME_UPPER" && *autoPad != "SAME_LOWER")
    return n.emitError() << n.getOpType() << " auto_pad '" << *autoPad
                         << "' is not supported";
  // SAME: the output has ceil(in / stride) positions; the odd padding
  // element goes at the end (SAME_UPPER) or the beginning (SAME_LOWER).
  for (unsigned i = 0; i < dims; ++i) {
    int64_t in = type.getDimSize(2 + i);
    int64_t out = (in + w.strides[i] - 1) / w.strides[i];
    int64_t extent = (kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
    int64_t small = total / 2, large = total - small;
    bool upper = *autoPad == "SAME_UPPER";
    w.padding[i] = upper ? small : large;
    w.padding[i + dims] = upper ? large : small;
  }
  return w;
}

/// The batch size of the NCDHW `x` that a 3-D composition reshapes, whose
/// channel count must be static (the views fold the channels into others).
FailureOr<SymInt> volumeBatch(NodeImporter &n, Value x) {
  FailureOr<SmallVector<SymInt>> shape =
      n.getGraph().symbolicShape(x, n.getLoc());
  if (failed(shape))
    return failure();
  if (!(*shape)[1].isConstant())
    return n.emitError() << n.getOpType()
                         << " needs a static channel count, got "
                         << x.getType();
  return (*shape)[0];
}

/// A 3-D weight `[A, B, kD, kH, kW]` as the 2-D one `[A, kD * B, kH, kW]`,
/// tap-major: the arrangement of conv3d's and convTranspose3d's stacks.
FailureOr<Value> depthTapsWeight(NodeImporter &n, Value w) {
  auto type = cast<RankedTensorType>(w.getType());
  FailureOr<Value> t = transposed(n, w, {0, 2, 1, 3, 4});
  if (failed(t))
    return failure();
  auto op = n.create<nn::ReshapeOp>(
      *t, ArrayRef<int64_t>{type.getDimSize(0),
                            type.getDimSize(2) * type.getDimSize(1),
                            type.getDimSize(3), type.getDimSize(4)});
  if (failed(op))
    return failure();
  return op->getResult();
}

/// A 3-D convolution of the NCDHW `x` by the `[O, C / G, kD, kH, kW]`
/// weight `w`, as one 2-D convolution: output plane `d` reads the input
/// planes `d * sD + k * dD` (k < kD) of `x` padded along D, and these are
/// stacked into the channels, `[N * D', G * kD * C / G, H, W]` (each group's
/// channels together, tap-major), against the weight rearranged to
/// `[O, kD * C / G, kH, kW]` in the same order. The stack holds each input
/// plane about kD / sD times; what runs is one convolution on the oneDNN
/// and cuDNN kernels, and the gradients are those of the 2-D convolution
/// and of slices, reshapes and transposes.
FailureOr<Value> conv3d(NodeImporter &n, Value x, Value w, Value bias,
                        const Window &win, int64_t group) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  FailureOr<SymInt> batchOr = volumeBatch(n, x);
  if (failed(batchOr))
    return failure();
  SymInt batch = *batchOr;
  int64_t c = xType.getDimSize(1), d = xType.getDimSize(2);
  int64_t h = xType.getDimSize(3), wd = xType.getDimSize(4);
  int64_t o = wType.getDimSize(0), cg = wType.getDimSize(1);
  int64_t kd = wType.getDimSize(2);
  if (group < 1 || c != cg * group || o % group != 0)
    return n.emitError() << "Conv input " << xType << " and weight " << wType
                         << " do not match group " << group;
  FailureOr<Value> padded =
      padWith(n, x, 2, win.padding[0], win.padding[3], 0.0);
  if (failed(padded))
    return failure();
  int64_t extent = (kd - 1) * win.dilations[0] + 1;
  int64_t dp = d + win.padding[0] + win.padding[3];
  if (dp < extent)
    return n.emitError() << "Conv output would have no positions along the "
                            "depth: padded depth "
                         << dp << ", kernel extent " << extent;
  int64_t od = (dp - extent) / win.strides[0] + 1;
  SmallVector<Value> taps;
  for (int64_t k = 0; k < kd; ++k) {
    auto slice = n.create<nn::SliceOp>(
        *padded, ArrayRef<int64_t>{0, 0, k * win.dilations[0], 0, 0},
        ArrayRef<int64_t>{-1, c, od, h, wd},
        ArrayRef<int64_t>{1, 1, win.strides[0], 1, 1});
    if (failed(slice))
      return failure();
    FailureOr<Value> tap = n.reshape(
        slice->getResult(),
        {batch, SymInt::constant(group), SymInt::constant(1),
         SymInt::constant(cg), SymInt::constant(od), SymInt::constant(h * wd)});
    if (failed(tap))
      return failure();
    taps.push_back(*tap);
  }
  Value stacked = taps.front();
  if (taps.size() > 1) {
    auto concat = n.create<nn::ConcatOp>(ValueRange(taps), uint64_t(2));
    if (failed(concat))
      return failure();
    stacked = concat->getResult();
  }
  // [N, G, kD, C / G, D', H * W] -> [N, D', G, kD, C / G, H * W].
  FailureOr<Value> planes = transposed(n, stacked, {0, 4, 1, 2, 3, 5});
  if (failed(planes))
    return failure();
  FailureOr<SymInt> planeCount = mul(batch, SymInt::constant(od));
  if (failed(planeCount))
    return failure();
  planes = n.reshape(*planes, {*planeCount, SymInt::constant(kd * c),
                               SymInt::constant(h), SymInt::constant(wd)});
  FailureOr<Value> kernel = depthTapsWeight(n, w);
  if (failed(planes) || failed(kernel))
    return failure();
  auto y = n.create<nn::Conv2DOp>(
      *planes, *kernel, bias, ArrayRef<int64_t>{win.strides[1], win.strides[2]},
      ArrayRef<int64_t>{win.padding[1], win.padding[2], win.padding[4],
                        win.padding[5]},
      ArrayRef<int64_t>{win.dilations[1], win.dilations[2]},
      static_cast<uint64_t>(group));
  if (failed(y))
    return failure();
  auto yType = cast<RankedTensorType>(y->getType());
  FailureOr<Value> volume = n.reshape(
      y->getResult(), {batch, SymInt::constant(od), SymInt::constant(o),
                       SymInt::constant(yType.getDimSize(2)),
                       SymInt::constant(yType.getDimSize(3))});
  if (failed(volume))
    return failure();
  return transposed(n, *volume, {0, 2, 1, 3, 4});
}

LogicalResult importConv(NodeImporter &n) {
  if (failed(n.checkAttrs({"auto_pad", "dilations", "group", "kernel_shape",
                           "pads", "strides"})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  FailureOr<Value> w = n.floatTensor(1);
  FailureOr<int64_t> group = n.getInt("group", 1);
  if (failed(x) || failed(w) || failed(group))
    return failure();
  auto wType = cast<RankedTensorType>(w->getType());
  int64_t xRank = cast<RankedTensorType>(x->getType()).getRank();
  // A 1-D convolution (NCL input, OIK weight) runs as a 2-D one over an
  // image of height 1.
  bool lifted = wType.getRank() == 3 && xRank == 3;
  bool volume = wType.getRank() == 5 && xRank == 5;
  if (wType.getRank() != 4 && !lifted && !volume)
    return n.emitError() << "Conv is supported with 1-D (OIK), 2-D (OIHW) "
                            "and 3-D (OIDHW) kernels on inputs of the same "
                            "dimensions, got "
                         << wType << " and " << x->getType();
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  auto declared = n.getInts("kernel_shape", ArrayRef(kernel));
  if (failed(declared))
    return failure();
  if (ArrayRef(*declared) != ArrayRef(kernel))
    return n.emitError() << "Conv kernel_shape [" << ArrayRef(*declared)
                         << "] differs from the weight's " << wType;
  if (lifted) {
    x = liftInput(n, *x);
    w = liftWeight(n, *w);
    if (failed(x) || failed(w))
      return failure();
    kernel.insert(kernel.begin(), 1);
  }
  FailureOr<Window> window =
      readWindow(n, *x, kernel, /*hasDilations=*/true, lifted);
  if (failed(window))
    return failure();
  Value bias;
  if (n.hasInput(2)) {
    FailureOr<Value> b = n.floatTensor(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  if (volume) {
    FailureOr<Value> y = conv3d(n, *x, *w, bias, *window, *group);
    if (failed(y))
      return failure();
    n.setOutput(0, *y);
    return success();
  }
  auto y =
      n.create<nn::Conv2DOp>(*x, *w, bias, window->strides, window->padding,
                             window->dilations, static_cast<uint64_t>(*group));
  if (failed(y))
    return failure();
  return setWindowOutput(n, y->getResult(), lifted);
}

/// A 3-D transposed convolution of the NCDHW `x` by the
/// `[C, O / G, kD, kH, kW]` weight `w` into `outSize` (D', H', W'), the
/// adjoint of conv3d's arrangement: one 2-D transposed convolution of the
/// `[N * D, C, H, W]` planes whose output channels stack the kD taps of
/// each group (`[C, kD * O / G, kH, kW]`), then each tap's planes placed
/// along the depth, input plane `d` at `d * sD + k * dD` (zeros between,
/// for the stride), summed over the taps, and the depth padding cut off
/// (or the output padding added as zeros).
FailureOr<Value> convTranspose3d(NodeImporter &n, Value x, Value w,
                                 ArrayRef<int64_t> outSize,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> pads,
                                 ArrayRef<int64_t> dilations, int64_t group) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  FailureOr<SymInt> batchOr = volumeBatch(n, x);
  if (failed(batchOr))
    return failure();
  SymInt batch = *batchOr;
  int64_t c = xType.getDimSize(1), d = xType.getDimSize(2);
  int64_t h = xType.getDimSize(3), wd = xType.getDimSize(4);
  int64_t og = wType.getDimSize(1), kd = wType.getDimSize(2);
  if (group < 1 || wType.getDimSize(0) != c || c % group != 0)
    return n.emitError() << "ConvTranspose input " << xType << " and weight "
                         << wType << " do not match group " << group;
  int64_t o = og * group, oh = outSize[1], ow = outSize[2];
  FailureOr<Value> planes = transposed(n, x, {0, 2, 1, 3, 4});
  FailureOr<SymInt> planeCount = mul(batch, SymInt::constant(d));
  if (failed(planes) || failed(planeCount))
    return failure();
  planes = n.reshape(*planes, {*planeCount, SymInt::constant(c),
                               SymInt::constant(h), SymInt::constant(wd)});
  FailureOr<Value> kernel = depthTapsWeight(n, w);
  if (failed(planes) || failed(kernel))
    return failure();
  auto y = n.create<nn::Conv2DGradInputOp>(
      *planes, *kernel, ArrayRef<int64_t>{oh, ow},
      ArrayRef<int64_t>{strides[1], strides[2]},
      ArrayRef<int64_t>{pads[1], pads[2], pads[4], pads[5]},
      ArrayRef<int64_t>{dilations[1], dilations[2]},
      static_cast<uint64_t>(group));
  if (failed(y))
    return failure();
  // [N * D, G * kD * O / G, H', W'] -> [N, D, G, kD, O / G, H' * W'].
  int64_t plane = oh * ow;
  FailureOr<Value> taps = n.reshape(
      y->getResult(),
      {batch, SymInt::constant(d), SymInt::constant(group),
       SymInt::constant(kd), SymInt::constant(og), SymInt::constant(plane)});
  if (failed(taps))
    return failure();
  int64_t stride = strides[0], dilation = dilations[0];
  int64_t full = d * stride + (kd - 1) * dilation;
  Value sum;
  for (int64_t k = 0; k < kd; ++k) {
    auto tap =
        n.create<nn::SliceOp>(*taps, ArrayRef<int64_t>{0, 0, 0, k, 0, 0},
                              ArrayRef<int64_t>{-1, d, group, 1, og, plane},
                              ArrayRef<int64_t>{1, 1, 1, 1, 1, 1});
    if (failed(tap))
      return failure();
    // Plane d at d * stride: stride - 1 planes of zeros after each.
    FailureOr<Value> spread = n.reshape(
        tap->getResult(), {batch, SymInt::constant(d), SymInt::constant(1),
                           SymInt::constant(o * plane)});
    if (failed(spread))
      return failure();
    spread = padWith(n, *spread, 2, 0, stride - 1, 0.0);
    if (failed(spread))
      return failure();
    spread = n.reshape(*spread, {batch, SymInt::constant(d * stride),
                                 SymInt::constant(o * plane)});
    if (failed(spread))
      return failure();
    // ... shifted by the tap's offset.
    spread = padWith(n, *spread, 1, k * dilation, (kd - 1 - k) * dilation, 0.0);
    if (failed(spread))
      return failure();
    if (!sum) {
      sum = *spread;
      continue;
    }
    auto add = n.create<nn::AddOp>(sum, *spread);
    if (failed(add))
      return failure();
    sum = add->getResult();
  }
  // Output plane z is position z + pad of the full depth; output padding
  // past its end is zeros.
  int64_t od = outSize[0], begin = pads[0];
  FailureOr<Value> depth =
      padWith(n, sum, 1, 0, std::max<int64_t>(0, begin + od - full), 0.0);
  if (failed(depth))
    return failure();
  auto cropped = n.create<nn::SliceOp>(*depth, ArrayRef<int64_t>{0, begin, 0},
                                       ArrayRef<int64_t>{-1, od, o * plane},
                                       ArrayRef<int64_t>{1, 1, 1});
  if (failed(cropped))
    return failure();
  FailureOr<Value> volume = n.reshape(
      cropped->getResult(), {batch, SymInt::constant(od), SymInt::constant(o),
                             SymInt::constant(oh), SymInt::constant(ow)});
  if (failed(volume))
    return failure();
  return transposed(n, *volume, {0, 2, 1, 3, 4});
}

/// ConvTranspose is the backward-data pass of the convolution whose input
/// it produces: nn.conv2d_grad_input with the ConvTranspose weight
/// `[C_in, C_out / group, kH, kW]` read as that convolution's
/// `[O, C / group, kH, kW]`, so it runs on the same oneDNN and cuDNN
/// kernels, and its gradients are a forward convolution and a
/// weight-gradient one. `output_padding` only enlarges the spatial size,
/// which conv2d_grad_input takes as an attribute.
LogicalResult importConvTranspose(NodeImporter &n) {
  if (failed(
          n.checkAttrs({"auto_pad", "dilations", "group", "kernel_shape",
                        "output_padding", "output_shape", "pads", "strides"})))
    return failure();
  FailureOr<std::string> autoPad = n.getString("auto_pad", "NOTSET");
  if (failed(autoPad))
    return failure();
  bool same = *autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER";
  if (*autoPad != "NOTSET" && *autoPad != "VALID" && !same)
    return n.emitError() << "ConvTranspose auto_pad '" << *autoPad
                         << "' is not supported";
  if (*autoPad != "NOTSET" && n.hasAttr("pads"))
    return n.emitError() << "ConvTranspose sets both 'pads' and 'auto_pad'";
  FailureOr<Value> x = n.floatTensor(0);
  FailureOr<Value> w = n.floatTensor(1);
  FailureOr<int64_t> group = n.getInt("group", 1);
  if (failed(x) || failed(w) || failed(group))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  auto wType = cast<RankedTensorType>(w->getType());
  // A 1-D one (NCL input, [C, O / group, K] weight) runs as a 2-D one over
  // an image of height 1, as Conv does.
  bool lifted = xType.getRank() == 3 && wType.getRank() == 3;
  bool volume = xType.getRank() == 5 && wType.getRank() == 5;
  if (!lifted && !volume && (xType.getRank() != 4 || wType.getRank() != 4))
    return n.emitError() << "ConvTranspose is supported on 1-D signals (NCL "
                            "input, 3-D weight), 2-D images (NCHW input, 4-D "
                            "weight) and 3-D volumes (NCDHW input, 5-D "
                            "weight), got "
                         << xType << " and " << wType;
  const unsigned dims = volume ? 3 : 2;
  unsigned spatial = lifted ? 1 : dims;
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  SmallVector<int64_t> ones(spatial, 1), zeros(2 * spatial, 0);
  auto declared = n.getInts("kernel_shape", ArrayRef(kernel));
  auto strides = n.getInts("strides", ArrayRef(ones));
  auto dilations = n.getInts("dilations", ArrayRef(ones));
  auto pads = n.getInts("pads", ArrayRef(zeros));
  auto outputPadding =
      n.getInts("output_padding", ArrayRef(zeros).take_front(spatial));
  std::optional<SmallVector<int64_t>> outputShape;
  if (n.hasAttr("output_shape")) {
    auto shape = n.getInts("output_shape");
    if (failed(shape))
      return failure();
    outputShape = *shape;
  }
  if (failed(declared) || failed(strides) || failed(dilations) ||
      failed(pads) || failed(outputPadding))
    return failure();
  if (ArrayRef(*declared) != ArrayRef(kernel))
    return n.emitError() << "ConvTranspose kernel_shape ["
                         << ArrayRef(*declared)
                         << "] differs from the weight's " << wType;
  if (strides->size() != spatial || dilations->size() != spatial ||
      pads->size() != 2 * spatial || outputPadding->size() != spatial ||
      (outputShape && outputShape->size() != spatial))
    return n.emitError() << "ConvTranspose window attributes must describe "
                         << spatial << " spatial dimension"
                         << (spatial == 1 ? "" : "s");
  if (failed(checkWindowValues(n, kernel, *strides, *dilations, *pads)))
    return failure();
  if (lifted) {
    x = liftInput(n, *x);
    w = liftWeight(n, *w);
    if (failed(x) || failed(w))
      return failure();
    xType = cast<RankedTensorType>(x->getType());
    kernel.insert(kernel.begin(), 1);
    *strides = liftTo2D(*strides, false);
    *dilations = liftTo2D(*dilations, false);
    *pads = liftTo2D(*pads, true);
    *outputPadding = {0, (*outputPadding)[0]};
    if (outputShape)
      *outputShape = {1, (*outputShape)[0]};
  }
  for (unsigned i = 0; i < dims; ++i)
    if (xType.isDynamicDim(2 + i))
      return n.emitError() << "ConvTranspose needs static spatial sizes, got "
                           << xType;
  SmallVector<int64_t> outSize(dims);
  for (unsigned i = 0; i < dims; ++i) {
    int64_t in = xType.getDimSize(2 + i), stride = (*strides)[i];
    int64_t op = (*outputPadding)[i];
    if (stride < 1)
      return n.emitError() << "ConvTranspose strides [" << ArrayRef(*strides)
                           << "] must be positive";
    // The positions the input reaches, before padding is cut off.
    int64_t reached = (in - 1) * stride + (*dilations)[i] * (kernel[i] - 1) + 1;
    if (outputShape || same) {
      // ONNX: the size asked for (`in * stride` for SAME) sets the padding;
      // the odd element goes at the end for SAME_UPPER, at the beginning
      // otherwise, and a size beyond what the input reaches is output
      // padding.
      outSize[i] = outputShape ? (*outputShape)[i] : in * stride;
      int64_t total = std::max<int64_t>(0, reached + op - outSize[i]);
      int64_t small = total / 2, large = total - small;
      bool upper = *autoPad == "SAME_UPPER";
      (*pads)[i] = upper ? small : large;
      (*pads)[i + dims] = upper ? large : small;
      op = outSize[i] - (reached - total);
    } else {
      outSize[i] = reached + op - (*pads)[i] - (*pads)[i + dims];
    }
    // A larger output_padding (ONNX allows it up to the dilation) adds rows
    // that no input position reaches, which the forward convolution the op
    // inverts does not read back.
    if (op < 0 || op >= stride)
      return n.emitError()
             << "ConvTranspose output padding " << op << " along spatial axis "
             << i << (outputShape ? " (from output_shape)" : "")
             << " must be non-negative and smaller than the stride " << stride;
    if (outSize[i] < 1)
      return n.emitError() << "ConvTranspose output would have " << outSize[i]
                           << " positions along spatial axis " << i;
  }
  Value out;
  if (volume) {
    FailureOr<Value> y = convTranspose3d(n, *x, *w, outSize, *strides, *pads,
                                         *dilations, *group);
    if (failed(y))
      return failure();
    out = *y;
  } else {
    auto y = n.create<nn::Conv2DGradInputOp>(*x, *w, outSize, *strides, *pads,
                                             *dilations,
                                             static_cast<uint64_t>(*group));
    if (failed(y))
      return failure();
    out = y->getResult();
  }
  if (n.hasInput(2)) {
    FailureOr<Value> b = n.floatTensor(2);
    if (failed(b))
      return failure();
    auto yType = cast<RankedTensorType>(out.getType());
    auto bType = cast<RankedTensorType>(b->getType());
    if (bType.getShape() != yType.getShape().slice(1, 1))
      return n.emitError() << "ConvTranspose bias must be ["
                           << yType.getDimSize(1) << "], got " << bType;
    SmallVector<int64_t> biasShape(yType.getRank() - 1, 1);
    biasShape[0] = yType.getDimSize(1);
    auto bias = n.create<nn::ReshapeOp>(*b, biasShape);
    if (failed(bias))
      return failure();
    auto sum = n.create<nn::AddOp>(out, bias->getResult());
    if (failed(sum))
      return failure();
    out = sum->getResult();
  }
  return setWindowOutput(n, out, lifted);
}

/// A 2-D pool of the NCHW `input` over the window `w`. The pooling
/// kernels pad by at most half the window (PyTorch's limit); ONNX allows
/// more. Such padding is made explicit: -inf around a max pool's input,
/// zeros around an average pool's, whose sums are then divided by the
/// number of input elements each window holds unless the padding counts.
template <typename OpTy>
FailureOr<Value> pool2d(NodeImporter &n, Value input, Window w, bool ceilMode,
                        bool countPad) {
  constexpr bool isMax = std::is_same_v<OpTy, nn::MaxPool2DOp>;
  bool explicitPadding = false;
  for (int i = 0; i < 2; ++i)
    explicitPadding |=
        2 * w.padding[i] > w.kernel[i] || 2 * w.padding[i + 2] > w.kernel[i];
  std::optional<DenseElementsAttr> divisors;
  if (explicitPadding) {
    if (!isMax && ceilMode)
      return n.emitError() << "AveragePool pads [" << ArrayRef(w.padding)
                           << "] exceed half the kernel [" << ArrayRef(w.kernel)
                           << "] with ceil_mode, which is not supported";
    auto type = cast<RankedTensorType>(input.getType());
    double fill = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int i = 0; i < 2; ++i) {
      FailureOr<Value> padded =
          padWith(n, input, 2 + i, w.padding[i], w.padding[i + 2], fill);
      if (failed(padded))
        return failure();
      input = *padded;
    }
    if (!isMax && !countPad) {
      // Window (r, c) starts at r * stride - pad; it holds the input
      // positions of [start, start + kernel) within [0, size).
      SmallVector<int64_t> out(2);
      SmallVector<SmallVector<int64_t>> held(2);
      for (int i = 0; i < 2; ++i) {
        int64_t size = type.getDimSize(2 + i), k = w.kernel[i];
        int64_t s = w.strides[i];
        out[i] = (size + w.padding[i] + w.padding[i + 2] - k) / s + 1;
        for (int64_t o = 0; o < out[i]; ++o) {
          int64_t start = o * s - w.padding[i];
          held[i].push_back(std::min(start + k, size) -
                            std::max<int64_t>(start, 0));
        }
      }
      Type elt = type.getElementType();
      SmallVector<Attribute> factors;
      for (int64_t r = 0; r < out[0]; ++r)
        for (int64_t c = 0; c < out[1]; ++c) {
          // A window of padding alone averages nothing: ONNX's reference
          // gives NaN (0 / 0), as a division by zero elements does here.
          double count = double(held[0][r] * held[1][c]);
          double kernelSize = double(w.kernel[0] * w.kernel[1]);
          factors.push_back(FloatAttr::get(
              elt, count > 0 ? kernelSize / count
                             : std::numeric_limits<double>::quiet_NaN()));
        }
      divisors =
          DenseElementsAttr::get(RankedTensorType::get(out, elt), factors);
    }
    w.padding.assign(4, 0);
  }
  FailureOr<OpTy> op;
  if constexpr (isMax)
    op = n.create<OpTy>(input, w.kernel, w.strides, w.padding, w.dilations,
                        ceilMode);
  else
    op = n.create<OpTy>(input, w.kernel, w.strides, w.padding, w.dilations,
                        ceilMode, countPad);
  if (failed(op))
    return failure();
  Value y = op->getResult();
  if (!divisors)
    return y;
  auto scaled =
      n.create<nn::MulOp>(y, n.getGraph().materialize(*divisors, n.getLoc()));
  if (failed(scaled))
    return failure();
  return scaled->getResult();
}

/// A 3-D pool of the NCDHW `x` as two 2-D ones: over (H, W) on the
/// `[N, C * D, H, W]` view, then over D on the `[N, C, D, H' * W']` view
/// with a `[kD, 1]` window. The box of a window is the product of its
/// intervals along each axis, so this is exact: a maximum is the maximum of
/// the planes' maxima (and the first maximal element in (d, h, w) order
/// stays the one whose gradient is routed, as in PyTorch's max_pool3d); an
/// average divides by the product of the per-axis counts, which is the
/// count of the box, with or without the padding.
template <typename OpTy>
FailureOr<Value> pool3d(NodeImporter &n, Value x, const Window &w,
                        bool ceilMode, bool countPad) {
  FailureOr<SymInt> batchOr = volumeBatch(n, x);
  if (failed(batchOr))
    return failure();
  SymInt batch = *batchOr;
  auto type = cast<RankedTensorType>(x.getType());
  int64_t c = type.getDimSize(1), d = type.getDimSize(2);
  SymInt channels = SymInt::constant(c);
  FailureOr<Value> planes = n.reshape(
      x, {batch, SymInt::constant(c * d), SymInt::constant(type.getDimSize(3)),
          SymInt::constant(type.getDimSize(4))});
  if (failed(planes))
    return failure();
  Window hw{{w.kernel[1], w.kernel[2]},
            {w.strides[1], w.strides[2]},
            {w.dilations[1], w.dilations[2]},
            {w.padding[1], w.padding[2], w.padding[4], w.padding[5]}};
  FailureOr<Value> pooled = pool2d<OpTy>(n, *planes, hw, ceilMode, countPad);
  if (failed(pooled))
    return failure();
  auto pooledType = cast<RankedTensorType>(pooled->getType());
  int64_t oh = pooledType.getDimSize(2), ow = pooledType.getDimSize(3);
  FailureOr<Value> columns =
      n.reshape(*pooled, {batch, channels, SymInt::constant(d),
                          SymInt::constant(oh * ow)});
  if (failed(columns))
    return failure();
  // A window of one plane (a `[1, kH, kW]` kernel): the depth pool would
  // copy.
  if (w.kernel[0] == 1 && w.strides[0] == 1 && w.padding[0] == 0 &&
      w.padding[3] == 0)
    return n.reshape(*columns, {batch, channels, SymInt::constant(d),
                                SymInt::constant(oh), SymInt::constant(ow)});
  Window depth{{w.kernel[0], 1},
               {w.strides[0], 1},
               {w.dilations[0], 1},
               {w.padding[0], 0, w.padding[3], 0}};
  FailureOr<Value> y = pool2d<OpTy>(n, *columns, depth, ceilMode, countPad);
  if (failed(y))
    return failure();
  int64_t od = cast<RankedTensorType>(y->getType()).getDimSize(2);
  return n.reshape(*y, {batch, channels, SymInt::constant(od),
                        SymInt::constant(oh), SymInt::constant(ow)});
}

/// MaxPool and AveragePool on 1-D, 2-D and 3-D inputs.
template <typename OpTy> LogicalResult importPool(NodeImporter &n) {
  constexpr bool isMax = std::is_same_v<OpTy, nn::MaxPool2DOp>;
  SmallVector<StringRef> known = {"auto_pad", "ceil_mode", "kernel_shape",
                                  "pads", "strides"};
  if (isMax)
    known.append({"dilations", "storage_order"});
  else
    known.push_back("count_include_pad");
  if (failed(n.checkAttrs(known)))
    return failure();
  if (isMax) {
    FailureOr<int64_t> order = n.getInt("storage_order", 0);
    if (failed(order))
      return failure();
    if (*order != 0)
      return n.emitError() << "MaxPool storage_order " << *order
                           << " is not supported";
    if (failed(n.requireUnused(1, "indices")))
      return failure();
  }
  // MaxPool also takes int8 and uint8 (held in i32): their values are
  // exact in f32, and a maximum selects one of them, so the pool runs on
  // the f32 kernels and its result converts back exactly.
  Type integerType;
  FailureOr<Value> x = isMax ? n.tensor(0) : n.floatTensor(0);
  if (succeeded(x) && isMax) {
    Type elt = cast<RankedTensorType>(x->getType()).getElementType();
    if (!isa<FloatType>(elt)) {
      int32_t narrow = n.input(0).narrow;
      if (narrow != onnx::TensorProto::INT8 &&
          narrow != onnx::TensorProto::UINT8)
        return n.emitError()
               << "MaxPool input '" << n.inputName(0)
               << "' must be a floating-point, int8 or uint8 tensor, got "
               << (narrow ? onnx::TensorProto::DataType_Name(
                                onnx::TensorProto::DataType(narrow))
                          : std::string("an integer tensor"))
               << " (" << x->getType() << ")";
      integerType = elt;
      auto f = n.create<nn::CastOp>(
          *x, TypeAttr::get(Float32Type::get(n.getContext())));
      if (failed(f))
        return failure();
      x = f->getResult();
    }
  }
  FailureOr<SmallVector<int64_t>> kernel = n.getInts("kernel_shape");
  FailureOr<int64_t> ceilMode = n.getInt("ceil_mode", 0);
  FailureOr<int64_t> countPad =
      isMax ? FailureOr<int64_t>(0) : n.getInt("count_include_pad", 0);
  if (failed(x) || failed(kernel) || failed(ceilMode) || failed(countPad))
    return failure();
  // A 1-D pool (NCL) runs as a 2-D one over an image of height 1.
  bool lifted = cast<RankedTensorType>(x->getType()).getRank() == 3 &&
                kernel->size() == 1;
  if (lifted) {
    x = liftInput(n, *x);
    if (failed(x))
      return failure();
    kernel->insert(kernel->begin(), 1);
  }
  FailureOr<Window> w =
      readWindow(n, *x, *kernel, /*hasDilations=*/isMax, lifted);
  if (failed(w))
    return failure();
  // Padding beyond half the kernel becomes explicit -inf, which a window
  // of padding alone would return: no integer holds it.
  unsigned dims = w->kernel.size();
  if (integerType && llvm::any_of(llvm::seq(dims), [&](unsigned i) {
        return 2 * w->padding[i] > w->kernel[i] ||
               2 * w->padding[i + dims] > w->kernel[i];
      }))
    return n.emitError() << "MaxPool on an integer tensor with pads ["
                         << ArrayRef(w->padding) << "] beyond half the kernel ["
                         << ArrayRef(w->kernel) << "] is not supported";
  FailureOr<Value> y =
      w->kernel.size() == 3
          ? pool3d<OpTy>(n, *x, *w, *ceilMode != 0, *countPad != 0)
          : pool2d<OpTy>(n, *x, *w, *ceilMode != 0, *countPad != 0);
  if (failed(y))
    return failure();
  if (integerType) {
    auto back = n.create<nn::CastOp>(*y, TypeAttr::get(integerType));
    if (failed(back))
      return failure();
    y = back->getResult();
  }
  return setWindowOutput(n, *y, lifted);
}

LogicalResult importGlobalAveragePool(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  return n.createOutput<nn::GlobalAvgPoolOp>(*x);
}

/// GlobalMaxPool is max pooling with one window over the whole image (or
/// volume), so it reuses the pooling kernels and nn.max_pool2d_grad, which
/// routes each cotangent to the first maximal element in row-major order:
/// what PyTorch's adaptive_max_pool2d backward does too (its forward keeps
/// the first index whose value exceeds the running maximum).
LogicalResult importGlobalMaxPool(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() != 4 && type.getRank() != 5)
    return n.emitError() << "GlobalMaxPool is supported on 2-D images (NCHW) "
                            "and 3-D volumes (NCDHW), got "
                         << type;
  if (llvm::any_of(llvm::seq<int64_t>(2, type.getRank()),
                   [&](int64_t d) { return type.isDynamicDim(d); }))
    return n.emitError() << "GlobalMaxPool needs static spatial sizes, got "
                         << type;
  unsigned dims = type.getRank() - 2;
  Window w{SmallVector<int64_t>(type.getShape().drop_front(2)),
           SmallVector<int64_t>(dims, 1), SmallVector<int64_t>(dims, 1),
           SmallVector<int64_t>(2 * dims, 0)};
  FailureOr<Value> y = dims == 3
                           ? pool3d<nn::MaxPool2DOp>(n, *x, w, false, false)
                           : pool2d<nn::MaxPool2DOp>(n, *x, w, false, false);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

} // namespace

void importer::populateConvPoolImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  addImporter(table, "Conv", importConv)
      .describe(
          "1-D (NCL/OIK, as a 2-D one of height 1), 2-D (NCHW/OIHW) and 3-D "
          "(NCDHW/OIDHW: one 2-D convolution over the depth taps stacked into "
          "the channels), static spatial sizes; strides, dilations, groups, "
          "`pads` or `auto_pad` (`VALID`, `SAME_UPPER`, `SAME_LOWER`)");
  addImporter(table, "ConvTranspose", importConvTranspose)
      .describe(
          "1-D (as a 2-D one of height 1), 2-D and 3-D (one 2-D transposed "
          "convolution whose output channels stack the depth taps, which are "
          "then placed along the depth and summed), static spatial sizes; "
          "strides, pads or `auto_pad` (`VALID`, `SAME_UPPER`, `SAME_LOWER`), "
          "`output_shape`, dilations, groups, output padding smaller than the "
          "stride. The backward-data convolution (`nn.conv2d_grad_input`: "
          "oneDNN on CPU, cuDNN on CUDA), whose gradients are a forward and a "
          "backward-weights convolution");
  addImporter(table, "MaxPool", importPool<nn::MaxPool2DOp>)
      .describe(
          "1-D, 2-D and 3-D (a 2-D pool over H, W, then one over D); strides, "
          "pads (more than half the kernel as explicit `-inf` padding), "
          "`ceil_mode`, `auto_pad`, dilations, `storage_order=0`, no `Indices` "
          "output; float, int8 and uint8 (pooled in f32, which holds them "
          "exactly)");
  addImporter(table, "AveragePool", importPool<nn::AvgPool2DOp>)
      .describe(
          "1-D, 2-D and 3-D (a 2-D pool over H, W, then one over D); strides, "
          "pads (more than half the kernel as explicit zero padding, not with "
          "`ceil_mode`), `ceil_mode`, `auto_pad`, `count_include_pad`");
  addImporter(table, "GlobalAveragePool", importGlobalAveragePool);
  addImporter(table, "GlobalMaxPool", importGlobalMaxPool)
      .describe(
          "2-D and 3-D; one max-pooling window over the image; the gradient "
          "goes to the first maximum in row-major order, as PyTorch's "
          "`adaptive_max_pool2d` backward. `nn.AdaptiveMaxPool2d(1)` itself "
          "exports a `MaxPool`");
}

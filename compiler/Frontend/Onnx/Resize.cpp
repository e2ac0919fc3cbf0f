//===- Resize.cpp - Resize as products with interpolation matrices --------===//
//
// Resize of the spatial axes of an NCHW tensor, in every mode ONNX has but
// `tf_crop_and_resize`, is separable: along each axis the output is a fixed
// linear map of the input. It is imported as `A_h X A_w^T` with constant
// interpolation matrices (one matrix product per resized axis), whose
// gradient is the transposed product.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

/// How Resize maps an output coordinate back to the input along one axis.
struct ResizeAxis {
  int64_t in = 0, out = 0;
  /// out / in as the model states it (the `scales` entry, or the ratio of
  /// the sizes).
  double scale = 1.0;
};

/// The input coordinate output position `i` samples, per
/// `coordinate_transformation_mode`.
double sourceCoordinate(StringRef mode, const ResizeAxis &a, int64_t i) {
  double x = static_cast<double>(i);
  if (mode == "asymmetric")
    return x / a.scale;
  if (mode == "align_corners")
    return a.out == 1 ? 0.0
                      : x * static_cast<double>(a.in - 1) /
                            static_cast<double>(a.out - 1);
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / a.scale;
  if (mode == "pytorch_half_pixel" && a.out == 1)
    return -0.5;
  return (x + 0.5) / a.scale - 0.5; // half_pixel, pytorch_half_pixel
}

/// Keys' cubic convolution kernel with parameter `A` at distance `d`.
double cubicWeight(double d, double A) {
  d = std::abs(d);
  if (d <= 1)
    return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2)
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0.0;
}

/// How Resize weighs the input positions around a coordinate.
struct ResizeMode {
  StringRef mode, coordinates, nearestMode;
  /// Cubic only: the kernel's parameter, and whether positions outside the
  /// input get no weight (the others renormalised) rather than the edge's
  /// value.
  double cubicA = -0.75;
  bool excludeOutside = false;
};

/// The `[out, in]` interpolation matrix of one axis: row `i` holds the
/// weights output position `i` gives the input positions.
DenseElementsAttr interpolationMatrix(const ResizeAxis &a, Type elementType,
                                      const ResizeMode &r) {
  StringRef mode = r.mode, nearestMode = r.nearestMode;
  std::vector<double> m(a.out * a.in, 0.0);
  for (int64_t i = 0; i < a.out; ++i) {
    double x = sourceCoordinate(r.coordinates, a, i);
    double *row = &m[i * a.in];
    if (mode == "cubic") {
      // As ONNX's reference: the four positions around x, the second of
      // which is the last one strictly left of x (so t is in (0, 1]);
      // positions past an edge read the edge (or, with exclude_outside,
      // are left out).
      double left = std::ceil(x) - 1, t = x - left;
      double w[4] = {cubicWeight(t + 1, r.cubicA), cubicWeight(t, r.cubicA),
                     cubicWeight(1 - t, r.cubicA),
                     cubicWeight(2 - t, r.cubicA)};
      double kept = 0.0;
      for (int k = 0; k < 4; ++k) {
        int64_t index = static_cast<int64_t>(left) - 1 + k;
        bool inside = index >= 0 && index < a.in;
        if (r.excludeOutside && !inside)
          w[k] = 0.0;
        kept += w[k];
      }
      for (int k = 0; k < 4; ++k) {
        int64_t index = std::clamp<int64_t>(static_cast<int64_t>(left) - 1 + k,
                                            0, a.in - 1);
        row[index] += r.excludeOutside ? w[k] / kept : w[k];
      }
      continue;
    }
    if (mode == "nearest") {
      double f = std::floor(x);
      double nearest;
      if (nearestMode == "floor")
        nearest = f;
      else if (nearestMode == "ceil")
        nearest = std::ceil(x);
      else if (x - f == 0.5)
        nearest = nearestMode == "round_prefer_ceil" ? f + 1 : f;
      else
        nearest = std::round(x);
      row[std::clamp<int64_t>(static_cast<int64_t>(nearest), 0, a.in - 1)] =
          1.0;
      continue;
    }
    // Linear: the coordinate clamps to the input, so border outputs repeat
    // the edge (ONNX's and PyTorch's behaviour).
    x = std::clamp(x, 0.0, static_cast<double>(a.in - 1));
    int64_t lo = static_cast<int64_t>(std::floor(x));
    int64_t hi = std::min(lo + 1, a.in - 1);
    double t = x - static_cast<double>(lo);
    row[lo] += 1.0 - t;
    row[hi] += t;
  }
  auto type = RankedTensorType::get({a.out, a.in}, elementType);
  if (elementType.isF32()) {
    std::vector<float> narrow(m.begin(), m.end());
    return DenseElementsAttr::get(type, ArrayRef(narrow));
  }
  return DenseElementsAttr::get(type, ArrayRef(m));
}

bool isIdentity(const ResizeAxis &a, DenseElementsAttr matrix) {
  if (a.in != a.out)
    return false;
  for (auto [k, v] : llvm::enumerate(matrix.getValues<APFloat>()))
    if (v.convertToDouble() != (k / a.in == k % a.in ? 1.0 : 0.0))
      return false;
  return true;
}

SmallVector<double> floatsOf(DenseElementsAttr attr) {
  SmallVector<double> values;
  for (const APFloat &v : attr.getValues<APFloat>())
    values.push_back(attr.getElementType().isF32()
                         ? widenFloat(v.convertToFloat())
                         : v.convertToDouble());
  return values;
}

/// The values of an nn.concat of rank-1 float constants: torch.onnx builds
/// Resize's `scales` as Concat(Constant, Constant) when it does not fold
/// constants (training-mode exports), and only integer shape values fold
/// while importing.
std::optional<SmallVector<double>> concatenatedConstants(Value v) {
  auto concat = v ? v.getDefiningOp<nn::ConcatOp>() : nn::ConcatOp();
  if (!concat || cast<RankedTensorType>(concat.getType()).getRank() != 1)
    return std::nullopt;
  SmallVector<double> values;
  for (Value part : concat.getInputs()) {
    DenseElementsAttr attr;
    if (!matchPattern(part, m_Constant(&attr)))
      return std::nullopt;
    values.append(floatsOf(attr));
  }
  return values;
}

/// Resize in `nearest`, `linear` (bilinear) and `cubic` (bicubic) modes on
/// NCHW images. All are separable: the result is `A_h X A_w^T` per image, with
/// constant interpolation matrices built here, so it imports as one or two
/// nn.matmul (the matrix kernels on every target) and needs no gradient of
/// its own: the matmul VJP multiplies by the transposed matrices, which is
/// the scatter-add of nearest and the transposed interpolation of the others.
/// The dense matrices cost `out * in` per row, a fair price for the
/// decoder-sized images the op appears in.
LogicalResult importResize(NodeImporter &n) {
  if (failed(n.checkAttrs(
          {"antialias", "axes", "coordinate_transformation_mode",
           "cubic_coeff_a", "exclude_outside", "extrapolation_value",
           "keep_aspect_ratio_policy", "mode", "nearest_mode"})))
    return failure();
  // Opset 18: `axes` names the dimensions `scales`/`sizes` list (the others
  // keep their size), `keep_aspect_ratio_policy` reinterprets `sizes`, and
  // `antialias` filters linear downscaling.
  FailureOr<int64_t> antialias = n.getInt("antialias", 0);
  FailureOr<std::string> policy =
      n.getString("keep_aspect_ratio_policy", "stretch");
  if (failed(antialias) || failed(policy))
    return failure();
  if (*policy != "stretch")
    return n.emitError() << "Resize keep_aspect_ratio_policy '" << *policy
                         << "' is not supported (stretch is)";
  SmallVector<int64_t> resizedAxes = {0, 1, 2, 3};
  if (n.hasAttr("axes")) {
    FailureOr<SmallVector<int64_t>> given = n.getInts("axes");
    if (failed(given))
      return failure();
    resizedAxes.clear();
    for (int64_t axis : *given) {
      int64_t normalized = axis < 0 ? axis + 4 : axis;
      if (normalized < 0 || normalized > 3 ||
          llvm::is_contained(resizedAxes, normalized))
        return n.emitError() << "Resize axes [" << ArrayRef(*given)
                             << "] are not distinct dimensions of an NCHW "
                                "image";
      resizedAxes.push_back(normalized);
    }
  }
  FailureOr<std::string> mode = n.getString("mode", "nearest");
  FailureOr<std::string> coordinates =
      n.getString("coordinate_transformation_mode", "half_pixel");
  FailureOr<std::string> nearestMode =
      n.getString("nearest_mode", "round_prefer_floor");
  if (failed(mode) || failed(coordinates) || failed(nearestMode))
    return failure();
  if (*mode != "nearest" && *mode != "linear" && *mode != "cubic")
    return n.emitError() << "Resize mode '" << *mode
                         << "' is not supported (nearest, linear and cubic "
                            "are)";
  FailureOr<double> cubicA = n.getFloat("cubic_coeff_a", -0.75);
  FailureOr<int64_t> excludeOutside = n.getInt("exclude_outside", 0);
  if (failed(cubicA) || failed(excludeOutside))
    return failure();
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"},
                          *coordinates))
    return n.emitError() << "Resize coordinate_transformation_mode '"
                         << *coordinates << "' is not supported";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          *nearestMode))
    return n.emitError() << "Resize nearest_mode '" << *nearestMode
                         << "' is not supported";
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() != 4 || type.isDynamicDim(2) || type.isDynamicDim(3))
    return n.emitError() << "Resize is supported on NCHW images with static "
                            "spatial sizes, got "
                         << type;

  // Opset 13 names the scales or the sizes; an empty tensor stands for an
  // absent input (older exporters write one).
  auto given = [&](unsigned i) {
    if (!n.hasInput(i))
      return false;
    ImportedValue &v = n.input(i);
    if (v.kind == ImportedValue::Kind::Constant)
      return v.constant.getNumElements() != 0;
    if (v.kind == ImportedValue::Kind::Symbolic)
      return !v.symbolic.empty();
    return true;
  };
  bool hasScales = given(2), hasSizes = given(3);
  if (hasScales == hasSizes)
    return n.emitError() << "Resize needs exactly one of 'scales' and 'sizes'";
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  bool batchKept = false;
  if (hasScales) {
    std::optional<SmallVector<double>> folded;
    if (!n.isConstant(2))
      folded = concatenatedConstants(n.input(2).tensor);
    if (folded) {
      scales = *folded;
    } else {
      FailureOr<DenseElementsAttr> attr = n.constant(2, "scales");
      if (failed(attr))
        return failure();
      if (!isa<FloatType>(attr->getElementType()))
        return n.emitError() << "Resize scales must be floating-point";
      scales = floatsOf(*attr);
    }
  } else {
    // torch.onnx writes sizes as Concat(Shape(x)[:2], [H, W]): the batch
    // entry is known only up to the batch size.
    FailureOr<SmallVector<SymInt>> given = n.symbolicInts(3, "sizes");
    FailureOr<SmallVector<SymInt>> shape =
        n.getGraph().symbolicShape(*x, n.getLoc());
    if (failed(given) || failed(shape))
      return failure();
    if (given->size() != resizedAxes.size())
      return n.emitError() << "Resize sizes must have " << resizedAxes.size()
                           << " entries (one per resized axis), got "
                           << given->size();
    // Every dimension keeps its size unless `sizes` names it.
    SmallVector<SymInt> full(*shape);
    for (auto [axis, size] : llvm::zip(resizedAxes, *given))
      full[axis] = size;
    batchKept = full[0] == (*shape)[0];
    for (auto [d, size] : llvm::enumerate(full)) {
      if (d == 0)
        sizes.push_back(0); // Compared symbolically above.
      else if (!size.isConstant())
        return n.emitError() << "Resize sizes [" << ArrayRef(*given)
                             << "] depend on the batch size beyond dimension "
                                "0";
      else
        sizes.push_back(size.coeff);
    }
  }
  if (hasScales) {
    if (scales.size() != resizedAxes.size())
      return n.emitError() << "Resize scales must have " << resizedAxes.size()
                           << " entries (one per resized axis), got "
                           << scales.size();
    SmallVector<double> full(4, 1.0);
    for (auto [axis, scale] : llvm::zip(resizedAxes, scales))
      full[axis] = scale;
    scales = std::move(full);
  }
  bool keepsBatchAndChannels =
      hasScales ? scales[0] == 1.0 && scales[1] == 1.0
                : batchKept && sizes[1] == type.getDimSize(1);
  if (!keepsBatchAndChannels)
    return n.emitError() << "Resize of the batch or channel dimension is not "
                            "supported";

  SmallVector<ResizeAxis, 2> axes(2);
  for (int d = 0; d < 2; ++d) {
    ResizeAxis &a = axes[d];
    a.in = type.getDimSize(2 + d);
    if (hasScales) {
      a.scale = scales[2 + d];
      a.out = static_cast<int64_t>(std::floor(a.in * a.scale));
    } else {
      a.out = sizes[2 + d];
      a.scale = static_cast<double>(a.out) / static_cast<double>(a.in);
    }
    if (a.out < 1 || !(a.scale > 0))
      return n.emitError() << "Resize to an empty image is not supported";
    // Antialiasing only changes linear and cubic downscaling.
    if (*antialias != 0 && *mode != "nearest" && a.out < a.in)
      return n.emitError() << "Resize with antialias=1 is not supported when "
                           << *mode << " mode shrinks the image";
  }

  Type elementType = type.getElementType();
  GraphImporter &g = n.getGraph();
  ResizeMode how{*mode, *coordinates, *nearestMode, *cubicA,
                 *excludeOutside != 0};
  DenseElementsAttr rows = interpolationMatrix(axes[0], elementType, how);
  DenseElementsAttr cols = interpolationMatrix(axes[1], elementType, how);
  bool resizeRows = !isIdentity(axes[0], rows);
  bool resizeCols = !isIdentity(axes[1], cols);
  Value y = *x;
  if (resizeRows) {
    // X^T A_h^T: [N, C, W, oH], rows resized, still transposed.
    auto op = n.create<nn::MatmulOp>(y, g.materialize(rows, n.getLoc()),
                                     /*transpose_a=*/true,
                                     /*transpose_b=*/true);
    if (failed(op))
      return failure();
    y = op->getResult();
  }
  if (resizeCols) {
    // (X^T A_h^T)^T A_w^T = A_h X A_w^T, or X A_w^T alone.
    auto op = n.create<nn::MatmulOp>(y, g.materialize(cols, n.getLoc()),
                                     /*transpose_a=*/resizeRows,
                                     /*transpose_b=*/true);
    if (failed(op))
      return failure();
    y = op->getResult();
  } else if (resizeRows) {
    auto op = n.create<nn::TransposeOp>(y, ArrayRef<int64_t>{0, 1, 3, 2});
    if (failed(op))
      return failure();
    y = op->getResult();
  }
  n.setOutput(0, y);
  return success();
}

} // namespace

void importer::populateResizeImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  // roi (input 1) only matters for tf_crop_and_resize, which is refused.
  addImporter(table, "Resize", importResize)
      .constants(0b1110)
      .describe(
          "NCHW with static spatial sizes, `scales` or `sizes` (constant, or "
          "`Concat(Shape(x)[:2], ...)` as `F.interpolate(size=...)` exports); "
          "`mode` `nearest` (every `nearest_mode`), `linear` (bilinear) or "
          "`cubic` (bicubic: `cubic_coeff_a`, `exclude_outside`), "
          "`coordinate_transformation_mode` `half_pixel`, "
          "`pytorch_half_pixel`, `align_corners`, `asymmetric`, "
          "`tf_half_pixel_for_nn`. Imported as `A_h X A_w^T` with constant "
          "interpolation matrices; the gradient is the transposed product. "
          "Opset 18: `axes`, `keep_aspect_ratio_policy` `stretch`, `antialias` "
          "where it changes nothing (nearest, or linear and cubic that do not "
          "shrink). Refused: `tf_crop_and_resize`, resizing N or C, "
          "antialiased linear or cubic downscaling");
}

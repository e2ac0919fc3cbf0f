//===- ConvPool.cpp - Convolution and pooling -----------------------------===//
//
// 2-D Conv, MaxPool, AveragePool and GlobalAveragePool on NCHW tensors.
// ONNX `pads` ([x1_begin, x2_begin, x1_end, x2_end]) is nn's `padding`
// ([top, left, bottom, right]); `auto_pad` is resolved here from the static
// spatial sizes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

/// The window attributes shared by Conv and the pools, with ONNX defaults.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padding;
};

/// Reads `strides`, `dilations`, `pads` and `auto_pad` for a 2-D window of
/// `kernel` over the spatial dimensions of `input`.
FailureOr<Window> readWindow(NodeImporter &n, Value input,
                             ArrayRef<int64_t> kernel, bool hasDilations) {
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() != 4)
    return n.emitError() << n.getOpType()
                         << " is supported on 2-D images (NCHW), got " << type;
  if (type.isDynamicDim(2) || type.isDynamicDim(3))
    return n.emitError() << n.getOpType() << " needs static spatial sizes, got "
                         << type;
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  auto strides = n.getInts("strides", ArrayRef<int64_t>{1, 1});
  auto dilations =
      hasDilations
          ? n.getInts("dilations", ArrayRef<int64_t>{1, 1})
          : FailureOr<SmallVector<int64_t>>(SmallVector<int64_t>{1, 1});
  auto pads = n.getInts("pads", ArrayRef<int64_t>{0, 0, 0, 0});
  auto autoPad = n.getString("auto_pad", "NOTSET");
  if (failed(strides) || failed(dilations) || failed(pads) || failed(autoPad))
    return failure();
  if (strides->size() != 2 || dilations->size() != 2 || pads->size() != 4 ||
      kernel.size() != 2)
    return n.emitError() << n.getOpType()
                         << " window attributes must describe 2 spatial "
                            "dimensions";
  w.strides = *strides;
  w.dilations = *dilations;

  if (*autoPad == "NOTSET") {
    w.padding = *pads;
    return w;
  }
  if (n.hasAttr("pads"))
    return n.emitError() << n.getOpType() << " sets both 'pads' and 'auto_pad'";
  w.padding.assign(4, 0);
  if (*autoPad == "VALID")
    return w;
  if (*autoPad != "SAME_UPPER" && *autoPad != "SAME_LOWER")
    return n.emitError() << n.getOpType() << " auto_pad '" << *autoPad
                         << "' is not supported";
  // SAME: the output has ceil(in / stride) positions; the odd padding
  // element goes at the end (SAME_UPPER) or the beginning (SAME_LOWER).
  for (int i = 0; i < 2; ++i) {
    int64_t in = type.getDimSize(2 + i);
    int64_t out = (in + w.strides[i] - 1) / w.strides[i];
    int64_t extent = (kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
    int64_t small = total / 2, large = total - small;
    bool upper = *autoPad == "SAME_UPPER";
    w.padding[i] = upper ? small : large;
    w.padding[i + 2] = upper ? large : small;
  }
  return w;
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
  if (wType.getRank() != 4)
    return n.emitError() << "Conv is supported with 2-D kernels (OIHW), got "
                         << wType;
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  auto declared = n.getInts("kernel_shape", ArrayRef(kernel));
  if (failed(declared))
    return failure();
  if (ArrayRef(*declared) != ArrayRef(kernel))
    return n.emitError() << "Conv kernel_shape [" << ArrayRef(*declared)
                         << "] differs from the weight's " << wType;
  FailureOr<Window> window = readWindow(n, *x, kernel, /*hasDilations=*/true);
  if (failed(window))
    return failure();
  Value bias;
  if (n.hasInput(2)) {
    FailureOr<Value> b = n.floatTensor(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  return n.createOutput<nn::Conv2DOp>(*x, *w, bias, window->strides, window->padding, window->dilations, static_cast<uint64_t>(*group));
}

/// MaxPool and AveragePool.
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
  FailureOr<Value> x = n.floatTensor(0);
  FailureOr<SmallVector<int64_t>> kernel = n.getInts("kernel_shape");
  FailureOr<int64_t> ceilMode = n.getInt("ceil_mode", 0);
  if (failed(x) || failed(kernel) || failed(ceilMode))
    return failure();
  FailureOr<Window> w = readWindow(n, *x, *kernel, /*hasDilations=*/isMax);
  if (failed(w))
    return failure();
  FailureOr<OpTy> op;
  if constexpr (isMax) {
    op = n.create<OpTy>(*x, w->kernel, w->strides, w->padding, w->dilations,
                        *ceilMode != 0);
  } else {
    FailureOr<int64_t> countPad = n.getInt("count_include_pad", 0);
    if (failed(countPad))
      return failure();
    op = n.create<OpTy>(*x, w->kernel, w->strides, w->padding, w->dilations,
                        *ceilMode != 0, *countPad != 0);
  }
  if (failed(op))
    return failure();
  n.setOutput(0, op->getResult());
  return success();
}

LogicalResult importGlobalAveragePool(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  return n.createOutput<nn::GlobalAvgPoolOp>(*x);
}

} // namespace

void importer::populateConvPoolImporters(ImporterTable &table) {
  table["Conv"] = {importConv};
  table["MaxPool"] = {importPool<nn::MaxPool2DOp>};
  table["AveragePool"] = {importPool<nn::AvgPool2DOp>};
  table["GlobalAveragePool"] = {importGlobalAveragePool};

  // The operator table of docs/user/onnx.md (cleave-opt --list-onnx-ops).
  table["Conv"].notes =
      "2-D (NCHW/OIHW), static spatial sizes; strides, dilations, groups, "
      "`pads` or `auto_pad` (`VALID`, `SAME_UPPER`, `SAME_LOWER`)";
  table["MaxPool"].notes = "2-D; strides, pads, `ceil_mode`, `auto_pad`, "
                           "dilations, `storage_order=0`, no `Indices` output";
  table["AveragePool"].notes =
      "2-D; strides, pads, `ceil_mode`, `auto_pad`, `count_include_pad`";
}

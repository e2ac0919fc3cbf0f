// Constants, shapes, reshapes, slicing, concatenation, gathers and casts.
// Shape computations fold away, the batch size staying symbolic.
//
// RUN: %python %S/Inputs/make_model.py flatten %t.flatten.onnx
// RUN: cleave-opt --import-onnx %t.flatten.onnx | FileCheck %s --check-prefix=FLATTEN
// RUN: %python %S/Inputs/make_model.py swish_chain %t.swish.onnx
// RUN: cleave-opt --import-onnx %t.swish.onnx | FileCheck %s --check-prefix=SWISH
// RUN: %python %S/Inputs/make_model.py reshape %t.reshape.onnx
// RUN: cleave-opt --import-onnx %t.reshape.onnx | FileCheck %s --check-prefix=RESHAPE
// RUN: %python %S/Inputs/make_model.py shape_reshape %t.shape.onnx
// RUN: cleave-opt --import-onnx %t.shape.onnx | FileCheck %s --check-prefix=SHAPE
// RUN: %python %S/Inputs/make_model.py transpose %t.transpose.onnx
// RUN: cleave-opt --import-onnx %t.transpose.onnx | FileCheck %s --check-prefix=TRANSPOSE
// RUN: %python %S/Inputs/make_model.py concat %t.concat.onnx
// RUN: cleave-opt --import-onnx %t.concat.onnx | FileCheck %s --check-prefix=CONCAT
// RUN: %python %S/Inputs/make_model.py slice %t.slice.onnx
// RUN: cleave-opt --import-onnx %t.slice.onnx | FileCheck %s --check-prefix=SLICE
// RUN: %python %S/Inputs/make_model.py split %t.split.onnx
// RUN: cleave-opt --import-onnx %t.split.onnx | FileCheck %s --check-prefix=SPLIT
// RUN: %python %S/Inputs/make_model.py batch_slice_split %t.batch-slice.onnx
// RUN: cleave-opt --import-onnx %t.batch-slice.onnx | FileCheck %s --check-prefix=BATCH-SLICE
// RUN: %python %S/Inputs/make_model.py class_token %t.class-token.onnx
// RUN: cleave-opt --import-onnx %t.class-token.onnx | FileCheck %s --check-prefix=CLASS-TOKEN
// RUN: cleave-opt --import-onnx %t.class-token.onnx --cleave-attach-loss="micro-batch=2 loss=mse" --canonicalize | FileCheck %s --check-prefix=CLASS-TOKEN-2
// RUN: %python %S/Inputs/make_model.py zeros_like_batch %t.zeros.onnx
// RUN: cleave-opt --import-onnx %t.zeros.onnx | FileCheck %s --check-prefix=ZEROS
// RUN: %python %S/Inputs/make_model.py expand_static %t.expand.onnx
// RUN: cleave-opt --import-onnx %t.expand.onnx | FileCheck %s --check-prefix=EXPAND
// RUN: %python %S/Inputs/make_model.py squeeze_unsqueeze %t.squeeze.onnx
// RUN: cleave-opt --import-onnx %t.squeeze.onnx | FileCheck %s --check-prefix=SQUEEZE
// RUN: %python %S/Inputs/make_model.py gather_embedding %t.embedding.onnx
// RUN: cleave-opt --import-onnx %t.embedding.onnx | FileCheck %s --check-prefix=EMBEDDING
// RUN: %python %S/Inputs/make_model.py gather_constant %t.gather.onnx
// RUN: cleave-opt --import-onnx %t.gather.onnx | FileCheck %s --check-prefix=GATHER
// RUN: %python %S/Inputs/make_model.py constant_identity_cast %t.cast.onnx
// RUN: cleave-opt --import-onnx %t.cast.onnx | FileCheck %s --check-prefix=CAST
// RUN: %python %S/Inputs/make_model.py cast_shape %t.cast-shape.onnx
// RUN: cleave-opt --import-onnx %t.cast-shape.onnx | FileCheck %s --check-prefix=CAST-SHAPE
// RUN: %python %S/Inputs/make_model.py range_mask %t.range.onnx
// RUN: cleave-opt --import-onnx %t.range.onnx | FileCheck %s --check-prefix=RANGE
// RUN: %python %S/Inputs/make_model.py tile %t.tile.onnx
// RUN: cleave-opt --import-onnx %t.tile.onnx | FileCheck %s --check-prefix=TILE
// RUN: %python %S/Inputs/make_model.py trilu %t.trilu.onnx
// RUN: cleave-opt --import-onnx %t.trilu.onnx | FileCheck %s --check-prefix=TRILU
// RUN: %python %S/Inputs/make_model.py pad_modes %t.pad.onnx
// RUN: cleave-opt --import-onnx %t.pad.onnx | FileCheck %s --check-prefix=PAD
// RUN: %python %S/Inputs/make_model.py pad_axes_opset18 %t.pad18.onnx
// RUN: cleave-opt --import-onnx %t.pad18.onnx | FileCheck %s --check-prefix=PAD18

// A shape asked for at the end of a long chain whose every link reads the
// previous value twice is found once per value, not once per path.
// SWISH-LABEL: func.func @forward(
// SWISH-COUNT-64: nn.mul
// SWISH:         nn.flatten %{{.+}} : tensor<?x2x3xf32> -> tensor<?x6xf32>

// FLATTEN-LABEL: func.func @forward(
// FLATTEN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"}) -> tensor<?x12xf32>
// FLATTEN-NEXT:    nn.flatten %[[X]] {axis = 2 : i64} : tensor<?x2x3x4xf32> -> tensor<?x12xf32>

// Reshape to [0, -1, 4]: 0 copies the batch, -1 is then static.
// RESHAPE-LABEL: func.func @forward(
// RESHAPE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"}) -> tensor<?x6x4xf32>
// RESHAPE-NEXT:    nn.reshape %[[X]] [-1, 6, 4] : tensor<?x2x3x4xf32> -> tensor<?x6x4xf32>

// x.view(x.size(0), -1); rows = x.view(-1, *x.shape[2:]), a batch of 2B;
// rows.view(rows.size(0) // 2, -1). No Shape, Gather, Unsqueeze, Concat or
// integer arithmetic is left, not even a constant.
// SHAPE-LABEL: func.func @forward(
// SHAPE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3x4xf32> {train.input = "x"})
// SHAPE-SAME:    -> (tensor<?x24xf32>, tensor<?x24xf32>)
// SHAPE-NEXT:    %[[FLAT:.+]] = nn.reshape %[[X]] [-1, 24] : tensor<?x2x3x4xf32> -> tensor<?x24xf32>
// SHAPE-NEXT:    %[[ROWS:.+]] = nn.reshape %[[X]] [-1, 3, 4] : tensor<?x2x3x4xf32> -> tensor<?x3x4xf32>
// SHAPE-NEXT:    %[[Y:.+]] = nn.reshape %[[ROWS]] [-1, 24] : tensor<?x3x4xf32> -> tensor<?x24xf32>
// SHAPE-NEXT:    return %[[FLAT]], %[[Y]]

// An explicit permutation, then the default (reversed) one.
// TRANSPOSE-LABEL: func.func @forward(
// TRANSPOSE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3xf32> {train.input = "x"})
// TRANSPOSE-NEXT:    %[[T:.+]] = nn.transpose %[[X]] [0, 2, 1] : tensor<?x2x3xf32> -> tensor<?x3x2xf32>
// TRANSPOSE-NEXT:    nn.transpose %[[T]] [2, 1, 0] : tensor<?x3x2xf32> -> tensor<2x3x?xf32>

// CONCAT-LABEL: func.func @forward(
// CONCAT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2xf32> {train.input = "x"},
// CONCAT-SAME:    %[[Y:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "y"})
// CONCAT-NEXT:    nn.concat %[[X]], %[[Y]] {axis = 1 : i64} : tensor<?x2xf32>, tensor<?x3xf32> -> tensor<?x5xf32>

// starts [1, -100], ends [2^62, 100], axes [0, -1], steps [1, 2], clamped
// as ONNX does, in one nn.slice.
// SLICE-LABEL: func.func @forward(
// SLICE-SAME:    %[[X:[a-z0-9_]+]]: tensor<4x6xf32> {train.input = "x"})
// SLICE-NEXT:    nn.slice %[[X]] starts [1, 0] sizes [3, 3] strides [1, 2] : tensor<4x6xf32> -> tensor<3x3xf32>

// SPLIT-LABEL: func.func @forward(
// SPLIT-SAME:    %[[X:[a-z0-9_]+]]: tensor<4x6xf32> {train.input = "x"})
// SPLIT-NEXT:    %[[A:.+]] = nn.slice %[[X]] starts [0, 0] sizes [4, 2] strides [1, 1] : tensor<4x6xf32> -> tensor<4x2xf32>
// SPLIT-NEXT:    %[[B:.+]] = nn.slice %[[X]] starts [0, 2] sizes [4, 4] strides [1, 1] : tensor<4x6xf32> -> tensor<4x4xf32>
// SPLIT-NEXT:    return %[[A]], %[[B]]

// Slices of a batched tensor keep the batch whole (-1): an end of
// x.size(0) or 2^63-1 on the batch, strided features, Split's parts, and a
// constant Gather on a feature axis.
// BATCH-SLICE-LABEL: func.func @forward(
// BATCH-SLICE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x6xf32> {train.input = "x"})
// BATCH-SLICE-NEXT:    %[[Q:.+]] = nn.slice %[[X]] starts [0, 0, 1] sizes [-1, 3, 3] strides [1, 1, 2] : tensor<?x3x6xf32> -> tensor<?x3x3xf32>
// BATCH-SLICE-NEXT:    %[[K:.+]] = nn.slice %[[X]] starts [0, 0, 0] sizes [-1, 3, 2] strides [1, 1, 1] : tensor<?x3x6xf32> -> tensor<?x3x2xf32>
// BATCH-SLICE-NEXT:    %[[V:.+]] = nn.slice %[[X]] starts [0, 0, 2] sizes [-1, 3, 4] strides [1, 1, 1] : tensor<?x3x6xf32> -> tensor<?x3x4xf32>
// BATCH-SLICE-NEXT:    %[[F:.+]] = nn.slice %[[X]] starts [0, 0, 0] sizes [-1, 3, 1] strides [1, 1, 1] : tensor<?x3x6xf32> -> tensor<?x3x1xf32>
// BATCH-SLICE-NEXT:    %[[F2:.+]] = nn.reshape %[[F]] [-1, 3] : tensor<?x3x1xf32> -> tensor<?x3xf32>
// BATCH-SLICE-NEXT:    return %[[Q]], %[[K]], %[[V]], %[[F2]]

// expand(n, -1, -1): ConstantOfShape, Mul, Equal, Not and Where fold on the
// shape [B, -1, -1] to [B, 1, 1]; the batch comes from the data input.
// CLASS-TOKEN-LABEL: func.func @forward(
// CLASS-TOKEN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// CLASS-TOKEN-SAME:    %[[CLS:[a-z0-9_]+]]: tensor<1x1x4xf32> {{.+}}train.param = "cls"})
// CLASS-TOKEN-NEXT:    %[[T:.+]] = nn.broadcast_to %[[CLS]] [-1, 1, 4] batch_of %[[X]] : tensor<1x1x4xf32>, tensor<?x3x4xf32> -> tensor<?x1x4xf32>
// CLASS-TOKEN-NEXT:    nn.concat %[[T]], %[[X]] {axis = 1 : i64} : tensor<?x1x4xf32>, tensor<?x3x4xf32> -> tensor<?x4x4xf32>

// Specialised, the broadcast folds to its static form.
// CLASS-TOKEN-2-LABEL: func.func @forward(
// CLASS-TOKEN-2:         nn.broadcast_to %{{.+}} [2, 1, 4] : tensor<1x1x4xf32> -> tensor<2x1x4xf32>

// torch.zeros(x.size(0), 1, 4): the scalar broadcast over the batch.
// ZEROS-LABEL: func.func @forward(
// ZEROS-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"})
// ZEROS-NEXT:    %[[C:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// ZEROS-NEXT:    %[[Z:.+]] = nn.broadcast_to %[[C]] [-1, 1, 4] batch_of %[[X]] : tensor<f32>, tensor<?x3x4xf32> -> tensor<?x1x4xf32>
// ZEROS-NEXT:    nn.concat %[[Z]], %[[X]] {axis = 1 : i64} : tensor<?x1x4xf32>, tensor<?x3x4xf32> -> tensor<?x4x4xf32>

// A static Expand is an nn.broadcast_to; an Expand to the input's own shape
// vanishes.
// EXPAND-LABEL: func.func @forward(
// EXPAND-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"},
// EXPAND-SAME:    %[[B:[a-z0-9_]+]]: tensor<4xf32> {{.+}}train.param = "b"})
// EXPAND-NEXT:    %[[E:.+]] = nn.broadcast_to %[[B]] [3, 4] : tensor<4xf32> -> tensor<3x4xf32>
// EXPAND-NEXT:    nn.add %[[X]], %[[E]] : tensor<?x3x4xf32>, tensor<3x4xf32> -> tensor<?x3x4xf32>

// SQUEEZE-LABEL: func.func @forward(
// SQUEEZE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x1x3xf32> {train.input = "x"})
// SQUEEZE-NEXT:    %[[S:.+]] = nn.reshape %[[X]] [-1, 3] : tensor<?x1x3xf32> -> tensor<?x3xf32>
// SQUEEZE-NEXT:    nn.reshape %[[S]] [-1, 3, 1] : tensor<?x3xf32> -> tensor<?x3x1xf32>

// Gather with run-time indices is an embedding lookup in a parameter.
// EMBEDDING-LABEL: func.func @forward(
// EMBEDDING-SAME:    %[[IDS:[a-z0-9_]+]]: tensor<?x5xi64> {train.input = "ids"},
// EMBEDDING-SAME:    %[[TABLE:[a-z0-9_]+]]: tensor<10x4xf32> {train.init = dense<{{.+}}> : tensor<10x4xf32>, train.param = "table"})
// EMBEDDING-NEXT:    nn.embedding %[[IDS]], %[[TABLE]] : tensor<?x5xi64>, tensor<10x4xf32> -> tensor<?x5x4xf32>

// Constant indices: a scalar index drops the axis; [0, 2, 4] is a stride.
// GATHER-LABEL: func.func @forward(
// GATHER-SAME:    %[[X:[a-z0-9_]+]]: tensor<4x5x6xf32> {train.input = "x"})
// GATHER-NEXT:    %[[ROW:.+]] = nn.slice %[[X]] starts [0, 2, 0] sizes [4, 1, 6] strides [1, 1, 1] : tensor<4x5x6xf32> -> tensor<4x1x6xf32>
// GATHER-NEXT:    %[[FLAT:.+]] = nn.reshape %[[ROW]] [4, 6] : tensor<4x1x6xf32> -> tensor<4x6xf32>
// GATHER-NEXT:    nn.slice %[[FLAT]] starts [0, 0] sizes [4, 3] strides [1, 2] : tensor<4x6xf32> -> tensor<4x3xf32>

// Identity and a Cast to the same type vanish; a Constant node is an
// arith.constant.
// CAST-LABEL: func.func @forward(
// CAST-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"})
// CAST-NEXT:    %[[C:.+]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CAST-NEXT:    %[[Y:.+]] = nn.add %[[X]], %[[C]] : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
// CAST-NEXT:    return %[[Y]]

// The batch size read from the shape of a cast: an elementwise op (the
// NN_Elementwise trait) gives its result its operands' symbolic shape.
// CAST-SHAPE-LABEL: func.func @forward(
// CAST-SHAPE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3xf32> {train.input = "x"})
// CAST-SHAPE-NEXT:    %[[Y:.+]] = nn.reshape %[[X]] [-1, 6] : tensor<?x2x3xf32> -> tensor<?x6xf32>
// CAST-SHAPE-NEXT:    return %[[Y]]

// Range, Unsqueeze, Greater, Less, And and Or fold into one constant mask
// (the upper triangle: j > i); a float Range is a constant.
// RANGE-LABEL: func.func @forward(
// RANGE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x3xf32> {train.input = "x"})
// RANGE-DAG:     %[[MASK:.+]] = arith.constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// RANGE-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// RANGE-DAG:     %[[RAMP:.+]] = arith.constant dense<[1.000000e+00, 5.000000e-01, 0.000000e+00]> : tensor<3xf32>
// RANGE:         %[[S:.+]] = nn.add %[[X]], %[[RAMP]] : tensor<?x3x3xf32>, tensor<3xf32> -> tensor<?x3x3xf32>
// RANGE-NEXT:    %[[Y:.+]] = nn.where %[[MASK]], %[[INF]], %[[S]]
// RANGE-NEXT:    return %[[Y]]

// Tile [1, 2, 3]: a size-1 axis before each repeated one, broadcast to the
// repeats and merged back.
// TILE-LABEL: func.func @forward(
// TILE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x3xf32> {train.input = "x"})
// TILE-NEXT:    %[[R:.+]] = nn.reshape %[[X]] [-1, 1, 2, 1, 3] : tensor<?x2x3xf32> -> tensor<?x1x2x1x3xf32>
// TILE-NEXT:    %[[B:.+]] = nn.broadcast_to %[[R]] [-1, 2, 2, 3, 3] batch_of %[[X]] : tensor<?x1x2x1x3xf32>, tensor<?x2x3xf32> -> tensor<?x2x2x3x3xf32>
// TILE-NEXT:    %[[Y:.+]] = nn.reshape %[[B]] [-1, 4, 9] : tensor<?x2x2x3x3xf32> -> tensor<?x4x9xf32>
// TILE-NEXT:    return %[[Y]]

// Trilu of ConstantOfShape's ones (k = 1, upper) folds into the causal
// mask; Trilu of a run-time tensor (lower, k = -1) keeps the strictly lower
// triangle with nn.where.
// TRILU-LABEL: func.func @forward(
// TRILU-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x3xf32> {train.input = "x"})
// TRILU-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// TRILU-DAG:     %[[LOWER:.+]] = arith.constant dense<{{\[}}[0.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 1.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// TRILU-DAG:     %[[INF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// TRILU-DAG:     %[[FUTURE:.+]] = arith.constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// TRILU:         %[[M:.+]] = nn.where %[[FUTURE]], %[[INF]], %[[X]] : tensor<3x3xf32>, tensor<f32>, tensor<?x3x3xf32> -> tensor<?x3x3xf32>
// TRILU-NEXT:    %[[Y:.+]] = nn.where %[[LOWER]], %[[M]], %[[ZERO]] : tensor<3x3xf32>, tensor<?x3x3xf32>, tensor<f32> -> tensor<?x3x3xf32>
// TRILU-NEXT:    return %[[Y]]

// Pad constant 1.5 ([1, 2] on the last axis: blocks over the batch),
// reflect ([1, 1] on axis 1: element 1 on both sides of 3) and edge ([2, 0]
// on the last axis: element 0 twice).
// PAD-LABEL: func.func @forward(
// PAD-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"})
// PAD:         %[[V:.+]] = arith.constant dense<1.500000e+00> : tensor<f32>
// PAD-NEXT:    %[[L:.+]] = nn.broadcast_to %[[V]] [-1, 3, 1] batch_of %[[X]]
// PAD-NEXT:    %[[R:.+]] = nn.broadcast_to %[[V]] [-1, 3, 2] batch_of %[[X]]
// PAD-NEXT:    %[[C:.+]] = nn.concat %[[L]], %[[X]], %[[R]] {axis = 2 : i64} : tensor<?x3x1xf32>, tensor<?x3x4xf32>, tensor<?x3x2xf32> -> tensor<?x3x7xf32>
// PAD-NEXT:    %[[A:.+]] = nn.slice %[[C]] starts [0, 1, 0] sizes [-1, 1, 7]
// PAD-NEXT:    %[[B:.+]] = nn.slice %[[C]] starts [0, 1, 0] sizes [-1, 1, 7]
// PAD-NEXT:    %[[M:.+]] = nn.concat %[[A]], %[[C]], %[[B]] {axis = 1 : i64} : tensor<?x1x7xf32>, tensor<?x3x7xf32>, tensor<?x1x7xf32> -> tensor<?x5x7xf32>
// PAD-NEXT:    %[[E1:.+]] = nn.slice %[[M]] starts [0, 0, 0] sizes [-1, 5, 1]
// PAD-NEXT:    %[[E2:.+]] = nn.slice %[[M]] starts [0, 0, 0] sizes [-1, 5, 1]
// PAD-NEXT:    %[[Y:.+]] = nn.concat %[[E2]], %[[E1]], %[[M]] {axis = 2 : i64} : tensor<?x5x1xf32>, tensor<?x5x1xf32>, tensor<?x5x7xf32> -> tensor<?x5x9xf32>
// PAD-NEXT:    return %[[Y]]

// Opset 18's axes input; a static tensor pads with constant blocks.
// PAD18-LABEL: func.func @forward(
// PAD18-SAME:    %[[X:[a-z0-9_]+]]: tensor<2x3xf32> {train.input = "x"})
// PAD18-DAG:     %[[L:.+]] = arith.constant dense<0.000000e+00> : tensor<2x1xf32>
// PAD18-DAG:     %[[R:.+]] = arith.constant dense<0.000000e+00> : tensor<2x2xf32>
// PAD18:         %[[Y:.+]] = nn.concat %[[L]], %[[X]], %[[R]] {axis = 1 : i64} : tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32> -> tensor<2x6xf32>
// PAD18-NEXT:    return %[[Y]]

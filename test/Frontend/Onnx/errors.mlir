// Models the importer refuses, each with a diagnostic and no crash.
//
// RUN: not cleave-opt --import-onnx %t.missing.onnx 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: %python %S/Inputs/make_model.py text %t.text.onnx
// RUN: not cleave-opt --import-onnx %t.text.onnx 2>&1 | FileCheck %s --check-prefix=TEXT
// RUN: %python %S/Inputs/make_model.py truncated %t.truncated.onnx
// RUN: not cleave-opt --import-onnx %t.truncated.onnx 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// RUN: rm -f %t.empty.onnx && touch %t.empty.onnx
// RUN: not cleave-opt --import-onnx %t.empty.onnx 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: %python %S/Inputs/make_model.py short_raw_data %t.raw.onnx
// RUN: not cleave-opt --import-onnx %t.raw.onnx 2>&1 | FileCheck %s --check-prefix=RAW
// RUN: %python %S/Inputs/make_model.py dangling_input %t.dangling.onnx
// RUN: not cleave-opt --import-onnx %t.dangling.onnx 2>&1 | FileCheck %s --check-prefix=DANGLING
// RUN: %python %S/Inputs/make_model.py opset11_squeeze %t.opset.onnx
// RUN: not cleave-opt --import-onnx %t.opset.onnx 2>&1 | FileCheck %s --check-prefix=OPSET
// RUN: %python %S/Inputs/make_model.py opset22 %t.opset22.onnx
// RUN: not cleave-opt --import-onnx %t.opset22.onnx 2>&1 | FileCheck %s --check-prefix=OPSET22
// RUN: %python %S/Inputs/make_model.py unsupported_op %t.op.onnx
// RUN: not cleave-opt --import-onnx %t.op.onnx 2>&1 | FileCheck %s --check-prefix=OP
// RUN: %python %S/Inputs/make_model.py layernorm_opset13 %t.newer.onnx
// RUN: not cleave-opt --import-onnx %t.newer.onnx 2>&1 | FileCheck %s --check-prefix=NEWER
// RUN: %python %S/Inputs/make_model.py float16_initializer %t.f16.onnx
// RUN: not cleave-opt --import-onnx %t.f16.onnx 2>&1 | FileCheck %s --check-prefix=F16
// RUN: %python %S/Inputs/make_model.py uint64_input %t.u64.onnx
// RUN: not cleave-opt --import-onnx %t.u64.onnx 2>&1 | FileCheck %s --check-prefix=U64
// RUN: %python %S/Inputs/make_model.py dynamic_feature %t.dynamic.onnx
// RUN: not cleave-opt --import-onnx %t.dynamic.onnx 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// RUN: %python %S/Inputs/make_model.py runtime_shape %t.runtime.onnx
// RUN: not cleave-opt --import-onnx %t.runtime.onnx 2>&1 | FileCheck %s --check-prefix=RUNTIME-SHAPE
// RUN: %python %S/Inputs/make_model.py batch_squared %t.squared.onnx
// RUN: not cleave-opt --import-onnx %t.squared.onnx 2>&1 | FileCheck %s --check-prefix=SQUARED
// RUN: %python %S/Inputs/make_model.py batch_slice %t.slice.onnx
// RUN: not cleave-opt --import-onnx %t.slice.onnx 2>&1 | FileCheck %s --check-prefix=SLICE
// RUN: %python %S/Inputs/make_model.py batch_dependent_expand %t.expand.onnx
// RUN: not cleave-opt --import-onnx %t.expand.onnx 2>&1 | FileCheck %s --check-prefix=EXPAND
// RUN: %python %S/Inputs/make_model.py int_zeros_like_batch %t.int-zeros.onnx
// RUN: not cleave-opt --import-onnx %t.int-zeros.onnx 2>&1 | FileCheck %s --check-prefix=INT-ZEROS
// RUN: %python %S/Inputs/make_model.py huge_constant_of_shape %t.huge.onnx
// RUN: not cleave-opt --import-onnx %t.huge.onnx 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: %python %S/Inputs/make_model.py compare_batch %t.compare.onnx
// RUN: not cleave-opt --import-onnx %t.compare.onnx 2>&1 | FileCheck %s --check-prefix=COMPARE
// RUN: %python %S/Inputs/make_model.py reduce_runtime_axes %t.reduce.onnx
// RUN: not cleave-opt --import-onnx %t.reduce.onnx 2>&1 | FileCheck %s --check-prefix=REDUCE-AXES
// RUN: %python %S/Inputs/make_model.py compare_masks %t.compare-masks.onnx
// RUN: not cleave-opt --import-onnx %t.compare-masks.onnx 2>&1 | FileCheck %s --check-prefix=COMPARE-MASKS
// RUN: %python %S/Inputs/make_model.py cast_runtime %t.cast.onnx
// RUN: not cleave-opt --import-onnx %t.cast.onnx 2>&1 | FileCheck %s --check-prefix=CAST
// RUN: %python %S/Inputs/make_model.py clip_runtime_bound %t.clip.onnx
// RUN: not cleave-opt --import-onnx %t.clip.onnx 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: %python %S/Inputs/make_model.py clip_inverted %t.clip2.onnx
// RUN: not cleave-opt --import-onnx %t.clip2.onnx 2>&1 | FileCheck %s --check-prefix=CLIP-INVERTED
// RUN: %python %S/Inputs/make_model.py bad_gemm %t.gemm.onnx
// RUN: not cleave-opt --import-onnx %t.gemm.onnx 2>&1 | FileCheck %s --check-prefix=INFER
// RUN: %python %S/Inputs/make_model.py tile_batch %t.tile-batch.onnx
// RUN: not cleave-opt --import-onnx %t.tile-batch.onnx 2>&1 | FileCheck %s --check-prefix=TILE-BATCH
// RUN: %python %S/Inputs/make_model.py einsum_unsupported %t.einsum.onnx
// RUN: not cleave-opt --import-onnx %t.einsum.onnx 2>&1 | FileCheck %s --check-prefix=EINSUM
// RUN: %python %S/Inputs/make_model.py pad_wrap %t.pad-wrap.onnx
// RUN: not cleave-opt --import-onnx %t.pad-wrap.onnx 2>&1 | FileCheck %s --check-prefix=PAD-WRAP

// MISSING: error: cannot open input file '{{.*}}missing.onnx': No such file or directory

// TEXT: text.onnx:0:0: error: '{{.*}}text.onnx' is not an ONNX model: it does not parse as an ONNX ModelProto (truncated or corrupt?)

// The first half of a valid model.
// TRUNCATED: error: '{{.*}}truncated.onnx' is not an ONNX model: it does not parse as an ONNX ModelProto (truncated or corrupt?)

// Protobuf reads zero bytes as an empty message.
// EMPTY: error: '{{.*}}empty.onnx' is not an ONNX model: it has no graph

// RAW: error: tensor 'fc.weight' holds 8 bytes of data, expected 24 for 'tensor<2x3xf32>'

// The ONNX checker's verdict, on one line.
// DANGLING: error: '{{.*}}dangling.onnx' is not a valid ONNX model: Nodes in a graph must be topologically sorted, however input 'ghost' of node: name: y OpType: Add is not output of any previous nodes.

// Below opset 13, an op whose definition changed at 13 is refused, named.
// OPSET: error: node 'squeeze' is Squeeze-11 (opset 11), whose definition changed in Squeeze-13; Cleave imports that one and later (export with opset 13 or later)
// OPSET22: error: unsupported ONNX opset 22; supported opsets are 13 to 21 (and older ones whose ops are unchanged at opset 13)

// The node's name, op type and opset.
// OP: error: node 'pick' has unsupported op type 'Hardmax' (opset 13)

// LayerNormalization only exists from opset 17 on.
// NEWER: error: node 'y' has unsupported op type 'LayerNormalization' (opset 13)

// A half-precision weight would be a constant, never trained.
// F16: error: initializer 'b' is FLOAT16: parameters are float32 or float64 (export the model in float32; --precision=bf16 computes in bf16)

// U64: error: graph input 'x' has unsupported element type UINT64

// DYNAMIC: error: dimension 1 of graph input 'x' is dynamic ('seq'); only dimension 0, the batch, may be

// A reshape target read from a graph input cannot fold.
// RUNTIME-SHAPE: error: Reshape shape ('shape') is computed at run time; it must fold to a constant
// RUNTIME-SHAPE-NEXT: note: while importing ONNX node 'y' (Reshape, opset 13)

// x.view(B * B, -1): B is the batch size, tracked through Shape and Mul.
// SQUARED: error: cannot reshape [B, 4] to [B^2, -1] (B is the batch size)
// SQUARED-NEXT: note: while importing ONNX node 'y' (Reshape, opset 13)

// Slices of a batched tensor take the whole batch or are refused.
// SLICE: error: Slice [1:9223372036854775807:1] of dimension 0 of size B is not supported: along a batch-dependent dimension only the whole dimension can be taken (B is the batch size)
// SLICE-NEXT: note: while importing ONNX node 'y' (Slice, opset 13)

// EXPAND: error: Expand to [B^2, 4] is not supported: a batch-dependent size other than a multiple of B (B is the batch size)
// EXPAND-NEXT: note: while importing ONNX node 'y' (Expand, opset 13)

// INT-ZEROS: error: ConstantOfShape of 'i64' to the batch-dependent shape [B, 4] is not supported: nn has no integer tensors
// INT-ZEROS-NEXT: note: while importing ONNX node 'zeros' (ConstantOfShape, opset 13)

// A 2^40-element float splat folds through Equal and Slice without writing
// its elements; the long integer vector is refused.
// HUGE: error: ConstantOfShape of 100000 integers is not supported (a shape value of at most 4096 entries)
// HUGE-NEXT: note: while importing ONNX node 'ints' (ConstantOfShape, opset 13)

// Comparisons fold on shape values, when the answer holds for every B >= 1.
// COMPARE: error: Equal of B and 4 depends on the batch size B
// COMPARE-NEXT: note: while importing ONNX node 'eq' (Equal, opset 13)
// REDUCE-AXES: error: ReduceSum axes ('axes') is computed at run time; it must fold to a constant
// REDUCE-AXES-NEXT: note: while importing ONNX node 'y' (ReduceSum, opset 13)

// Run-time booleans are f32 masks (nn has no boolean tensors): a
// comparison of masks is refused.
// COMPARE-MASKS: error: Equal of boolean tensors at run time is not supported (compare numbers)
// COMPARE-MASKS-NEXT: note: while importing ONNX node 'y' (Equal, opset 13)

// CAST: error: Cast to ONNX data type 8 is not supported
// CAST-NEXT: note: while importing ONNX node 'y' (Cast, opset 13)

// CLIP: error: Clip min ('lo') must be a compile-time constant
// CLIP-NEXT: note: while importing ONNX node 'y' (Clip, opset 13)

// CLIP-INVERTED: error: Clip min 2.000000e+00 is greater than max 1.000000e+00, which is not supported
// CLIP-INVERTED-NEXT: note: while importing ONNX node 'y' (Clip, opset 13)

// nn.linear's own type inference speaks; the note names the ONNX node.
// INFER: error: bias must be [2], got [5]
// INFER-NEXT: note: while importing ONNX node 'y' (Gemm, opset 13)

// GlobalMaxPool, ConvTranspose, Resize and InstanceNormalization: the forms
// that stay unsupported are refused, naming the node.
// RUN: %python %S/Inputs/make_model.py global_maxpool_4d %t.gmp4d.onnx
// RUN: not cleave-opt --import-onnx %t.gmp4d.onnx 2>&1 | FileCheck %s --check-prefix=GMP-4D
// GMP-4D: error: GlobalMaxPool is supported on 2-D images (NCHW) and 3-D volumes (NCDHW), got 'tensor<?x3x2x5x4x2xf32>'
// GMP-4D-NEXT: note: while importing ONNX node 'y' (GlobalMaxPool, opset 13)
// RUN: %python %S/Inputs/make_model.py conv3d_zero_stride %t.conv-stride0.onnx
// RUN: not cleave-opt --import-onnx %t.conv-stride0.onnx 2>&1 | FileCheck %s --check-prefix=STRIDE-0
// STRIDE-0: error: Conv strides [0, 1, 1] must be positive
// RUN: %python %S/Inputs/make_model.py maxpool_int16 %t.pool-i16.onnx
// RUN: not cleave-opt --import-onnx %t.pool-i16.onnx 2>&1 | FileCheck %s --check-prefix=POOL-I16
// POOL-I16: error: MaxPool input 'x' must be a floating-point, int8 or uint8 tensor, got INT16 ('tensor<?x1x4x4xi32>')
// RUN: %python %S/Inputs/make_model.py maxpool_4d %t.pool4d.onnx
// RUN: not cleave-opt --import-onnx %t.pool4d.onnx 2>&1 | FileCheck %s --check-prefix=POOL-4D
// POOL-4D: error: MaxPool is supported on 1-D signals (NCL), 2-D images (NCHW) and 3-D volumes (NCDHW), with a kernel of as many dimensions; got 'tensor<?x3x2x4x4x2xf32>' and kernel_shape [1, 2, 2, 1]
// POOL-4D-NEXT: note: while importing ONNX node 'y' (MaxPool, opset 13)
// RUN: %python %S/Inputs/make_model.py avgpool_wide_pads_ceil %t.wide-ceil.onnx
// RUN: not cleave-opt --import-onnx %t.wide-ceil.onnx 2>&1 | FileCheck %s --check-prefix=WIDE-CEIL
// WIDE-CEIL: error: AveragePool pads [2, 2, 2, 2] exceed half the kernel [3, 3] with ceil_mode, which is not supported
// WIDE-CEIL-NEXT: note: while importing ONNX node 'a' (AveragePool, opset 13)
// RUN: %python %S/Inputs/make_model.py conv_transpose_output_shape_too_large %t.convt-shape.onnx
// RUN: not cleave-opt --import-onnx %t.convt-shape.onnx 2>&1 | FileCheck %s --check-prefix=CONVT-SHAPE
// CONVT-SHAPE: error: ConvTranspose output padding 2 along spatial axis 0 (from output_shape) must be non-negative and smaller than the stride 2
// CONVT-SHAPE-NEXT: note: while importing ONNX node 'y' (ConvTranspose, opset 13)
// RUN: %python %S/Inputs/make_model.py conv_transpose_large_output_padding %t.convt-op.onnx
// RUN: not cleave-opt --import-onnx %t.convt-op.onnx 2>&1 | FileCheck %s --check-prefix=CONVT-OP
// CONVT-OP: error: ConvTranspose output padding 1 along spatial axis 0 must be non-negative and smaller than the stride 1
// CONVT-OP-NEXT: note: while importing ONNX node 'y' (ConvTranspose, opset 13)
// RUN: %python %S/Inputs/make_model.py conv_transpose_4d %t.convt-4d.onnx
// RUN: not cleave-opt --import-onnx %t.convt-4d.onnx 2>&1 | FileCheck %s --check-prefix=CONVT-4D
// CONVT-4D: error: ConvTranspose is supported on 1-D signals (NCL input, 3-D weight), 2-D images (NCHW input, 4-D weight) and 3-D volumes (NCDHW input, 5-D weight), got 'tensor<?x2x3x3x3x3xf32>' and 'tensor<2x1x3x3x3x3xf32>'
// CONVT-4D-NEXT: note: while importing ONNX node 'y' (ConvTranspose, opset 13)
// RUN: %python %S/Inputs/make_model.py resize_crop %t.crop.onnx
// RUN: not cleave-opt --import-onnx %t.crop.onnx 2>&1 | FileCheck %s --check-prefix=RESIZE-CROP
// RESIZE-CROP: error: Resize coordinate_transformation_mode 'tf_crop_and_resize' is not supported
// RESIZE-CROP-NEXT: note: while importing ONNX node 'y' (Resize, opset 13)
// RUN: %python %S/Inputs/make_model.py resize_channels %t.resize-c.onnx
// RUN: not cleave-opt --import-onnx %t.resize-c.onnx 2>&1 | FileCheck %s --check-prefix=RESIZE-C
// RESIZE-C: error: Resize of the batch or channel dimension is not supported
// RESIZE-C-NEXT: note: while importing ONNX node 'y' (Resize, opset 13)
// RUN: %python %S/Inputs/make_model.py instance_norm_bad_scale %t.in-scale.onnx
// RUN: not cleave-opt --import-onnx %t.in-scale.onnx 2>&1 | FileCheck %s --check-prefix=IN-SCALE
// IN-SCALE: error: InstanceNormalization scale and bias must be [3] for the input 'tensor<?x3x4x5xf32>', got 'tensor<1xf32>'
// IN-SCALE-NEXT: note: while importing ONNX node 'y' (InstanceNormalization, opset 13)


// TILE-BATCH: error: Tile of the batch-dependent dimension B is not supported (B is the batch size)
// TILE-BATCH-NEXT: note: while importing ONNX node 'y' (Tile, opset 13)

// EINSUM: error: Einsum equation 'bij,bij->bk' is not supported: an output dimension in neither operand
// EINSUM-NEXT: note: while importing ONNX node 'z' (Einsum, opset 13)

// PAD-WRAP: error: Pad mode 'wrap' is not supported (constant, reflect, edge)
// PAD-WRAP-NEXT: note: while importing ONNX node 'y' (Pad, opset 19)

// Resize (opset 18) and GroupNormalization forms that stay unsupported.
// RUN: %python %S/Inputs/make_model.py resize_antialias_shrink %t.aa.onnx
// RUN: not cleave-opt --import-onnx %t.aa.onnx 2>&1 | FileCheck %s --check-prefix=RESIZE-AA
// RESIZE-AA: error: Resize with antialias=1 is not supported when linear mode shrinks the image
// RESIZE-AA-NEXT: note: while importing ONNX node 'y' (Resize, opset 18)
// RUN: %python %S/Inputs/make_model.py resize_aspect_policy %t.policy.onnx
// RUN: not cleave-opt --import-onnx %t.policy.onnx 2>&1 | FileCheck %s --check-prefix=RESIZE-POLICY
// RESIZE-POLICY: error: Resize keep_aspect_ratio_policy 'not_larger' is not supported (stretch is)
// RESIZE-POLICY-NEXT: note: while importing ONNX node 'y' (Resize, opset 18)
// RUN: %python %S/Inputs/make_model.py groupnorm_bad_groups %t.gn.onnx
// RUN: not cleave-opt --import-onnx %t.gn.onnx 2>&1 | FileCheck %s --check-prefix=GN-GROUPS
// GN-GROUPS: error: GroupNormalization num_groups 4 does not divide the 6 channels
// GN-GROUPS-NEXT: note: while importing ONNX node 'y' (GroupNormalization, opset 21)

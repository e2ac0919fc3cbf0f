// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-convert-nn-to-linalg | FileCheck %s

// Numpy broadcasting becomes a constant-0 or dropped dimension in the map.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[A:.+]]: tensor<4x3xf32>, %[[B:.+]]: tensor<3xf32>)
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<4x3xf32>, tensor<3xf32>) outs(%[[E]] : tensor<4x3xf32>)
// CHECK: arith.addf
// CHECK-NOT: nn.
func.func @add_broadcast(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = nn.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A size-1 dimension that stretches reads element 0.
// CHECK-DAG: #[[$STRETCH:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @mul_stretch
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$STRETCH]], #{{.+}}]
// CHECK: arith.mulf
func.func @mul_stretch(%a: tensor<4x3xf32>, %b: tensor<4x1xf32>) -> tensor<4x3xf32> {
  %0 = nn.mul %a, %b : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// ONNX Max and Min: NaN-propagating maximumf/minimumf.
// CHECK-LABEL: func.func @maximum_minimum
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.minimumf
// CHECK-NOT: nn.
func.func @maximum_minimum(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = nn.maximum %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = nn.minimum %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// A tensor exponent: math.powf of the broadcast operands.
// CHECK-LABEL: func.func @powf
// CHECK-SAME: (%[[X:.+]]: tensor<4x3xf32>, %[[E:.+]]: tensor<3xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]], %[[E]] : tensor<4x3xf32>, tensor<3xf32>)
// CHECK: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %{{.+}}: f32):
// CHECK:   %[[P:.+]] = math.powf %[[A]], %[[B]] : f32
// CHECK:   linalg.yield %[[P]] : f32
// CHECK-NOT: nn.
func.func @powf(%x: tensor<4x3xf32>, %e: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = nn.powf %x, %e : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Integer arithmetic: arith's integer ops; a division whose divisor is 0
// or -1 never reaches arith.divsi (undefined there, a trap on x86): it
// gives 0 and the negation.
// CHECK-LABEL: func.func @integers
// CHECK: linalg.generic
// CHECK:   arith.addi %{{.+}}, %{{.+}} : i64
// CHECK: linalg.generic
// CHECK:   arith.maxsi %{{.+}}, %{{.+}} : i64
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.+]]: i32, %[[Y:.+]]: i32, %{{.+}}: i32):
// CHECK-DAG:   %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-DAG:   %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-DAG:   %[[M1:.+]] = arith.constant -1 : i32
// CHECK:   %[[BY0:.+]] = arith.cmpi eq, %[[Y]], %[[ZERO]] : i32
// CHECK:   %[[BYM1:.+]] = arith.cmpi eq, %[[Y]], %[[M1]] : i32
// CHECK:   %[[EITHER:.+]] = arith.ori %[[BY0]], %[[BYM1]] : i1
// CHECK:   %[[SAFE:.+]] = arith.select %[[EITHER]], %[[ONE]], %[[Y]] : i32
// CHECK:   %[[Q:.+]] = arith.divsi %[[X]], %[[SAFE]] : i32
// CHECK:   %[[NEG:.+]] = arith.subi %[[ZERO]], %[[X]] : i32
// CHECK:   %[[R:.+]] = arith.select %[[BYM1]], %[[NEG]], %[[Q]] : i32
// CHECK:   %[[OUT:.+]] = arith.select %[[BY0]], %[[ZERO]], %[[R]] : i32
// CHECK:   linalg.yield %[[OUT]] : i32
// CHECK: linalg.generic
// CHECK:   arith.subi %{{.+}}, %{{.+}} : i32
// CHECK-NOT: nn.
func.func @integers(%a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi32>, %d: tensor<4xi32>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi32>, tensor<4xi32>) {
  %0 = nn.add %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %1 = nn.maximum %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %2 = nn.div %c, %d : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %3 = nn.neg %c : tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xi64>, tensor<4xi64>, tensor<4xi32>, tensor<4xi32>
}

// -----

// sin and cos stay math ops (libm, not approximated); round is roundeven
// (halves to even), not math.round (halves away from zero).
// CHECK-LABEL: func.func @trig_rounding
// CHECK: linalg.generic
// CHECK:   math.sin %{{.+}} : f32
// CHECK: linalg.generic
// CHECK:   math.cos %{{.+}} : f32
// CHECK: linalg.generic
// CHECK:   math.floor %{{.+}} : f32
// CHECK: linalg.generic
// CHECK:   math.ceil %{{.+}} : f32
// CHECK: linalg.generic
// CHECK:   math.roundeven %{{.+}} : f64
// CHECK-NOT: nn.
func.func @trig_rounding(%x: tensor<4x3xf32>, %y: tensor<2xf64>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2xf64>) {
  %0 = nn.sin %x : tensor<4x3xf32>
  %1 = nn.cos %x : tensor<4x3xf32>
  %2 = nn.floor %x : tensor<4x3xf32>
  %3 = nn.ceil %x : tensor<4x3xf32>
  %4 = nn.round %y : tensor<2xf64>
  return %0, %1, %2, %3, %4 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2xf64>
}

// -----

// nn.compare: arith.cmpi (signed) on integers, arith.cmpf on floats (une
// for ne: NaN is unequal to everything), the i1 widened to the mask type.
// CHECK-LABEL: func.func @compare
// CHECK: linalg.generic
// CHECK: ^bb0(%{{.+}}: i64, %{{.+}}: i64, %{{.+}}: f32):
// CHECK:   %[[EQ:.+]] = arith.cmpi eq
// CHECK:   %[[M:.+]] = arith.uitofp %[[EQ]] : i1 to f32
// CHECK:   linalg.yield %[[M]] : f32
// CHECK: linalg.generic
// CHECK:   arith.cmpi slt
// CHECK: linalg.generic
// CHECK:   %[[NE:.+]] = arith.cmpf une
// CHECK:   arith.uitofp %[[NE]] : i1 to f64
// CHECK: linalg.generic
// CHECK:   arith.cmpf oge
// CHECK-NOT: nn.
func.func @compare(%ids: tensor<4x3xi64>, %z: tensor<i64>, %a: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf64>, tensor<4x3xf32>) {
  %0 = nn.compare <eq>, %ids, %z {dtype = f32} : tensor<4x3xi64>, tensor<i64> -> tensor<4x3xf32>
  %1 = nn.compare <lt>, %ids, %z {dtype = f32} : tensor<4x3xi64>, tensor<i64> -> tensor<4x3xf32>
  %2 = nn.compare <ne>, %a, %b {dtype = f64} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf64>
  %3 = nn.compare <ge>, %a, %b {dtype = f32} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf64>, tensor<4x3xf32>
}

// -----

// nn.cast: C conversions, one linalg.generic each from the input's element
// type to the result's (signed integers; fptosi truncates toward zero).
// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.+]]: tensor<4x3xf32>, %[[D:.+]]: tensor<4x3xf64>, %[[I:.+]]: tensor<4x3xi32>, %[[L:.+]]: tensor<4x3xi64>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]] : tensor<4x3xf32>)
// CHECK-SAME: outs(%{{.+}} : tensor<4x3xf64>)
// CHECK: ^bb0(%[[A0:.+]]: f32, %{{.+}}: f64):
// CHECK:   %[[E:.+]] = arith.extf %[[A0]] : f32 to f64
// CHECK:   linalg.yield %[[E]] : f64
// CHECK: ^bb0(%[[A1:.+]]: f64, %{{.+}}: f32):
// CHECK:   arith.truncf %[[A1]] : f64 to f32
// CHECK: ^bb0(%[[A2:.+]]: i32, %{{.+}}: f32):
// CHECK:   arith.sitofp %[[A2]] : i32 to f32
// CHECK: ^bb0(%[[A3:.+]]: f32, %{{.+}}: i64):
// CHECK:   arith.fptosi %[[A3]] : f32 to i64
// CHECK: ^bb0(%[[A4:.+]]: f64, %{{.+}}: i32):
// CHECK:   arith.fptosi %[[A4]] : f64 to i32
// CHECK: ^bb0(%[[A5:.+]]: i32, %{{.+}}: i64):
// CHECK:   arith.extsi %[[A5]] : i32 to i64
// CHECK: ^bb0(%[[A6:.+]]: i64, %{{.+}}: i32):
// CHECK:   arith.trunci %[[A6]] : i64 to i32
// CHECK: ^bb0(%[[A7:.+]]: i64, %{{.+}}: f64):
// CHECK:   arith.sitofp %[[A7]] : i64 to f64
// CHECK-NOT: nn.
func.func @cast(%x: tensor<4x3xf32>, %d: tensor<4x3xf64>, %i: tensor<4x3xi32>, %l: tensor<4x3xi64>) -> (tensor<4x3xf64>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x3xi32>, tensor<4x3xi64>, tensor<4x3xi32>, tensor<4x3xf64>) {
  %0 = nn.cast %x : tensor<4x3xf32> -> tensor<4x3xf64>
  %1 = nn.cast %d : tensor<4x3xf64> -> tensor<4x3xf32>
  %2 = nn.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  %3 = nn.cast %x : tensor<4x3xf32> -> tensor<4x3xi64>
  %4 = nn.cast %d : tensor<4x3xf64> -> tensor<4x3xi32>
  %5 = nn.cast %i : tensor<4x3xi32> -> tensor<4x3xi64>
  %6 = nn.cast %l : tensor<4x3xi64> -> tensor<4x3xi32>
  %7 = nn.cast %l : tensor<4x3xi64> -> tensor<4x3xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x3xf64>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x3xi32>, tensor<4x3xi64>, tensor<4x3xi32>, tensor<4x3xf64>
}

// -----

// The narrow types: unsigned integers zero-extend and convert as unsigned;
// bf16 converts to and from f32 only, anything else through it.
// CHECK-LABEL: func.func @cast_narrow
// CHECK: ^bb0(%[[U0:.+]]: i8, %{{.+}}: i32):
// CHECK:   arith.extui %[[U0]] : i8 to i32
// CHECK: ^bb0(%[[U1:.+]]: i8, %{{.+}}: f32):
// CHECK:   arith.uitofp %[[U1]] : i8 to f32
// CHECK: ^bb0(%[[S:.+]]: i16, %{{.+}}: i32):
// CHECK:   arith.extsi %[[S]] : i16 to i32
// CHECK: ^bb0(%[[H:.+]]: f16, %{{.+}}: f32):
// CHECK:   arith.extf %[[H]] : f16 to f32
// CHECK: ^bb0(%[[D:.+]]: f64, %{{.+}}: bf16):
// CHECK:   %[[F:.+]] = arith.truncf %[[D]] : f64 to f32
// CHECK:   arith.truncf %[[F]] : f32 to bf16
// CHECK: ^bb0(%[[B:.+]]: bf16, %{{.+}}: i32):
// CHECK:   %[[BF:.+]] = arith.extf %[[B]] : bf16 to f32
// CHECK:   arith.fptosi %[[BF]] : f32 to i32
// CHECK: ^bb0(%[[I:.+]]: i32, %{{.+}}: i8):
// CHECK:   arith.trunci %[[I]] : i32 to i8
func.func @cast_narrow(%u: tensor<4xi8>, %s: tensor<4xi16>, %h: tensor<4xf16>, %d: tensor<4xf64>, %b: tensor<4xbf16>, %i: tensor<4xi32>)
    -> (tensor<4xi32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi8>) {
  %0 = nn.cast unsigned %u : tensor<4xi8> -> tensor<4xi32>
  %1 = nn.cast unsigned %u : tensor<4xi8> -> tensor<4xf32>
  %2 = nn.cast %s : tensor<4xi16> -> tensor<4xi32>
  %3 = nn.cast %h : tensor<4xf16> -> tensor<4xf32>
  %4 = nn.cast %d : tensor<4xf64> -> tensor<4xbf16>
  %5 = nn.cast %b : tensor<4xbf16> -> tensor<4xi32>
  %6 = nn.cast %i : tensor<4xi32> -> tensor<4xi8>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi8>
}

// -----

// relu(linear(x)) is a matmul without the kernels' ReLU post-op, which maps
// NaN to 0, and a maximumf loop, which propagates it as PyTorch's ReLU; the
// backward mask reads the pre-activation.
// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME: (%[[X:.+]]: tensor<8x16xf32>, %[[W:.+]]: tensor<4x16xf32>, %[[B:.+]]: tensor<4xf32>, %[[DY:.+]]: tensor<8x4xf32>)
// CHECK: %[[L:.+]] = rt.kernel matmul ins(%[[X]], %[[W]], %[[B]] : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
// CHECK-NOT: activation
// CHECK-SAME: -> tensor<8x4xf32>
// CHECK: %[[Y:.+]] = linalg.generic
// CHECK-SAME: ins(%[[L]] :
// CHECK: arith.maximumf
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: ins(%[[DY]], %[[L]] :
// CHECK: arith.cmpf ogt
// CHECK: return %[[Y]], %[[G]]
func.func @linear_relu(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<4xf32>, %dy: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = nn.linear %x, %w, %b : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %1 = nn.relu %0 : tensor<8x4xf32>
  %2 = nn.relu_grad %dy, %0 : tensor<8x4xf32>
  return %1, %2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A batched linear folds the batch into the rows of one GEMM.
// CHECK-LABEL: func.func @linear_rank3
// CHECK: %[[X2:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<2x5x16xf32> into tensor<10x16xf32>
// CHECK: %[[R:.+]] = rt.kernel matmul ins(%[[X2]], %{{.+}} : tensor<10x16xf32>, tensor<4x16xf32>)
// CHECK: tensor.expand_shape %[[R]] {{\[}}[0, 1], [2]] output_shape [2, 5, 4] : tensor<10x4xf32> into tensor<2x5x4xf32>
func.func @linear_rank3(%x: tensor<2x5x16xf32>, %w: tensor<4x16xf32>) -> tensor<2x5x4xf32> {
  %0 = nn.linear %x, %w : tensor<2x5x16xf32>, tensor<4x16xf32> -> tensor<2x5x4xf32>
  return %0 : tensor<2x5x4xf32>
}

// -----

// Batched matmul with a batched right-hand side.
// CHECK-LABEL: func.func @matmul_batched
// CHECK: rt.kernel matmul ins(%{{.+}}, %{{.+}} : tensor<3x4x5xf32>, tensor<3x6x5xf32>) outs(%{{.+}} : tensor<3x4x6xf32>) {trans_a = false, trans_b = true}
func.func @matmul_batched(%a: tensor<3x4x5xf32>, %b: tensor<3x6x5xf32>) -> tensor<3x4x6xf32> {
  %0 = nn.matmul %a, %b {transpose_b} : tensor<3x4x5xf32>, tensor<3x6x5xf32> -> tensor<3x4x6xf32>
  return %0 : tensor<3x4x6xf32>
}

// -----

// CHECK-LABEL: func.func @conv
// CHECK: rt.kernel conv2d_fwd ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<2x4x4x4xf32>)
// CHECK-SAME: {dilations = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK-LABEL: func.func @conv_grads
// CHECK: rt.kernel conv2d_bwd_data ins(%{{.+}}, %{{.+}} : tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) outs(%{{.+}} : tensor<2x3x8x8xf32>)
// CHECK: rt.kernel conv2d_bwd_weights ins(%{{.+}}, %{{.+}} : tensor<2x3x8x8xf32>, tensor<2x4x4x4xf32>) outs(%{{.+}} : tensor<4x3x3x3xf32>)
func.func @conv(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x4x4xf32>
  return %0 : tensor<2x4x4x4xf32>
}
func.func @conv_grads(%dy: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x3xf32>, %x: tensor<2x3x8x8xf32>) -> (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) {
  %0 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 8, 8>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  %1 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<4x3x3x3xf32>
  return %0, %1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}

// -----

// oneDNN has no ceil mode: the extra output row/column becomes end padding.
// Its max skips NaN: the same pooling of +inf where x is NaN (-inf
// elsewhere) marks the windows that hold one, whose output becomes NaN.
// CHECK-LABEL: func.func @pool_ceil
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x5x5xf32>)
// CHECK: %[[Y:.+]] = rt.kernel max_pool2d_fwd ins(%[[X]] : tensor<1x2x5x5xf32>) outs(%{{.+}} : tensor<1x2x3x3xf32>)
// CHECK-SAME: kernel = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>
// CHECK: %[[MARKS:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<1x2x5x5xf32>)
// CHECK: %[[NAN:.+]] = arith.cmpf uno
// CHECK: arith.select %[[NAN]], %{{.+}}, %{{.+}} : f32
// CHECK: %[[HIT:.+]] = rt.kernel max_pool2d_fwd ins(%[[MARKS]] : tensor<1x2x5x5xf32>) outs(%{{.+}} : tensor<1x2x3x3xf32>)
// CHECK-SAME: kernel = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[Y]], %[[HIT]] : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>)
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: return %[[OUT]]
func.func @pool_ceil(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = nn.max_pool2d %x {kernel_size = array<i64: 2, 2>, ceil_mode} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Counting padding and a ceil-mode overhang cannot be told apart by oneDNN.
func.func @avg_pool_ceil_include_pad(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'nn.avg_pool2d' op with ceil_mode and count_include_pad, whose last window reaches past the padding, is not supported: the pooling kernels count that overhang as padding (pad the input explicitly, or leave out count_include_pad)}}
  %0 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>, ceil_mode, count_include_pad} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----


// Softmax: max and sum reductions broadcast back as size-1 dimensions.
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.fill ins(%{{.+}} : f32)
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: tensor.expand_shape
// CHECK: math.exp
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: arith.divf
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = nn.softmax %x {axis = 1} : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// An f32 sum accumulates in f64 and rounds once (docs/design/numerics.md);
// the mean scales the rounded sum.
// CHECK-LABEL: func.func @reduce_mean_f32
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<3xf64>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "parallel", "reduction"]} ins(%{{.+}} : tensor<2x3x5xf32>) outs(%[[ZERO]] : tensor<3xf64>)
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[ACC:.+]]: f64):
// CHECK-NEXT: %[[WIDE:.+]] = arith.extf %[[X]] : f32 to f64
// CHECK-NEXT: %[[ADD:.+]] = arith.addf %[[WIDE]], %[[ACC]] : f64
// CHECK-NEXT: linalg.yield %[[ADD]] : f64
// CHECK: linalg.generic {{.+}} ins(%[[SUM]] : tensor<3xf64>) outs(%{{.+}} : tensor<3xf32>)
// CHECK: arith.truncf %{{.+}} : f64 to f32
// CHECK: arith.mulf
func.func @reduce_mean_f32(%x: tensor<2x3x5xf32>) -> tensor<3xf32> {
  %0 = nn.reduce_mean %x [0, 2] : tensor<2x3x5xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// An f64 sum accumulates in f64: nothing to widen.
// CHECK-LABEL: func.func @reduce_sum_f64
// CHECK: linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<3xf64>)
// CHECK: linalg.generic
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @reduce_sum_f64(%x: tensor<2x3xf64>) -> tensor<3xf64> {
  %0 = nn.reduce_sum %x [0] : tensor<2x3xf64> -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// -----

// Cross-entropy reads each sample's label logit with a clamped index.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: linalg.index 0
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract
// CHECK: math.log
func.func @cross_entropy(%x: tensor<4x10xf32>, %l: tensor<4xi64>) -> tensor<4xf32> {
  %0 = nn.cross_entropy %x, %l {reduction = #nn.reduction<none>} : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Inputs that the lowering clamps as labels or indices record their bound
// (the smallest over their uses) for the runtime to check; other inputs and
// non-inputs get none.
// CHECK-LABEL: func.func @index_bounds
// CHECK-SAME: %{{.+}}: tensor<4xi64> {train.index_bound = 10 : i64, train.input = "labels"}
// CHECK-SAME: %{{.+}}: tensor<4xi64> {train.index_bound = 7 : i64, train.input = "ids"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xi64>, %
func.func @index_bounds(%x: tensor<4x10xf32> {train.input = "x"},
                        %l: tensor<4xi64> {train.input = "labels"},
                        %ids: tensor<4xi64> {train.input = "ids"},
                        %other: tensor<4xi64>,
                        %t7: tensor<7x10xf32>, %t9: tensor<9x10xf32>)
    -> (tensor<4xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>) {
  %0 = nn.cross_entropy %x, %l {reduction = #nn.reduction<none>} : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>
  %1 = nn.embedding %ids, %t9 : tensor<4xi64>, tensor<9x10xf32> -> tensor<4x10xf32>
  %2 = nn.embedding %ids, %t7 : tensor<4xi64>, tensor<7x10xf32> -> tensor<4x10xf32>
  %3 = nn.embedding %other, %t7 : tensor<4xi64>, tensor<7x10xf32> -> tensor<4x10xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>
}

// -----

// Dropout hashes (key + flat index) with SplitMix64 and compares the top 24
// bits with ceil(ratio * 2^24) = 4194304 for ratio 0.25.
// CHECK-LABEL: func.func @dropout
// CHECK: %[[SEED:.+]] = tensor.extract
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: arith.shrui
// CHECK: arith.constant 4194304 : i64
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @dropout(%x: tensor<4x8xf32>, %s: tensor<i64>) -> tensor<4x8xf32> {
  %0 = nn.dropout %x, %s {ratio = 0.25} : tensor<4x8xf32>, tensor<i64> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Optimizer updates write into the parameter and its state (destination
// passing), reading hyperparameters once as scalars.
// CHECK-LABEL: func.func @adam
// CHECK-SAME: (%[[P:.+]]: tensor<4xf32>, %[[G:.+]]: tensor<4xf32>, %[[M:.+]]: tensor<4xf32>, %[[V:.+]]: tensor<4xf32>
// CHECK: math.powf
// CHECK: math.powf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[G]] : tensor<4xf32>) outs(%[[P]], %[[M]], %[[V]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: math.sqrt
func.func @adam(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<i64>, %lr: tensor<f32>, %b1: tensor<f32>, %b2: tensor<f32>, %eps: tensor<f32>, %wd: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0:3 = train.adam %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd : tensor<4xf32>, tensor<f32>
  return %0#0, %0#1, %0#2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[P:.+]]: tensor<4xf32>, %[[G:.+]]: tensor<4xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[G]] : tensor<4xf32>) outs(%[[P]] : tensor<4xf32>)
func.func @sgd(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %wd: tensor<f32>) -> tensor<4xf32> {
  %0 = train.sgd %p, %g lr %lr weight_decay %wd : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce
// CHECK: %[[R:.+]] = rt.cross_rank_reduce sum outs(%{{.+}}, %{{.+}} : tensor<4xf32>, tensor<f32>) -> tensor<4xf32>, tensor<f32>
func.func @reduce(%a: tensor<4xf32>, %n: tensor<f32>) -> (tensor<4xf32>, tensor<f32>) {
  %0:2 = train.cross_rank_reduce sum %a, %n : tensor<4xf32>, tensor<f32>
  return %0#0, %0#1 : tensor<4xf32>, tensor<f32>
}

// -----

// Lowering happens after the split; a window_sum here is a pipeline error.
func.func @unsplit(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'train.window_sum'}}
  %0 = train.window_sum %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ZeRO-1: the shards are fresh destinations; a gathered parameter that is
// only stored is gathered into the global (a load as destination, which the
// entry ABI turns into the session's buffer).
train.global param @w : tensor<3x4xf32>
// CHECK-LABEL: func.func @sharding
// CHECK-SAME: (%[[G:[^:]+]]: tensor<3x4xf32>, %[[V:[^:]+]]: tensor<3xf32>)
// CHECK: %[[E:.+]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[F:.+]] = tensor.empty() : tensor<1xf32>
// CHECK: %[[S:.+]]:2 = rt.reduce_scatter ranks 4 ins(%[[G]], %[[V]] : tensor<3x4xf32>, tensor<3xf32>) outs(%[[E]], %[[F]] : tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>, tensor<1xf32>
// CHECK: %[[E2:.+]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[P:.+]] = rt.shard ranks 4 ins(%[[G]] : tensor<3x4xf32>) outs(%[[E2]] : tensor<3xf32>) -> tensor<3xf32>
// CHECK: %[[W:.+]] = train.load @w : tensor<3x4xf32>
// CHECK: %[[E3:.+]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[A:.+]]:2 = rt.all_gather ranks 4 ins(%[[S]]#0, %[[S]]#1 : tensor<3xf32>, tensor<1xf32>) outs(%[[W]], %[[E3]] : tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>, tensor<3xf32>
// CHECK: train.store %[[A]]#0, @w
// CHECK: return %[[P]], %[[A]]#1
func.func @sharding(%g: tensor<3x4xf32>, %v: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %s:2 = train.reduce_scatter %g, %v ranks 4 : tensor<3x4xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<1xf32>
  %p = train.shard %g ranks 4 : tensor<3x4xf32> -> tensor<3xf32>
  %a:2 = train.all_gather %s#0, %s#1 ranks 4 : tensor<3xf32>, tensor<1xf32> -> tensor<3x4xf32>, tensor<3xf32>
  train.store %a#0, @w : tensor<3x4xf32>
  return %p, %a#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Clipping shards: the local sum of squares is summed across ranks before
// the square root.
// CHECK-LABEL: func.func @clip_across_ranks
// CHECK: %[[LOCAL:.+]] = arith.truncf %{{.+}} : f64 to f32
// CHECK: %[[PART:.+]] = tensor.from_elements %[[LOCAL]] : tensor<f32>
// CHECK: %[[SUM:.+]] = rt.cross_rank_reduce sum outs(%[[PART]] : tensor<f32>) -> tensor<f32>
// CHECK: %[[TOTAL:.+]] = tensor.extract %[[SUM]][]
// CHECK: %[[WIDE:.+]] = arith.extf %[[TOTAL]] : f32 to f64
// CHECK: math.sqrt %[[WIDE]]
func.func @clip_across_ranks(%a: tensor<3xf32>, %b: tensor<1xf32>, %c: tensor<f32>) -> (tensor<3xf32>, tensor<1xf32>, tensor<f32>) {
  %0:3 = train.clip_by_global_norm %a, %b max_norm %c {across_ranks} : tensor<3xf32>, tensor<1xf32>, tensor<f32>
  return %0#0, %0#1, %0#2 : tensor<3xf32>, tensor<1xf32>, tensor<f32>
}

// -----

// The window check: per value the sum of x - x (0, or NaN when an element
// is not finite; a scalar is taken as it is), a vector of flags, and the
// first flag set as 1 + its position (or 0), in any order of iteration.
// CHECK-LABEL: func.func @check_finite
// CHECK-SAME: (%[[A:[^:]+]]: tensor<3x4xf32>, %[[C:[^:]+]]: tensor<f64>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "reduction"]} ins(%[[A]] : tensor<3x4xf32>)
// CHECK: ^bb0(%[[E:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK: %[[D:.+]] = arith.subf %[[E]], %[[E]] : f32
// CHECK: arith.addf %[[ACC]], %[[D]] : f32
// CHECK: %[[FLAGS:.+]] = linalg.generic {{.+}} iterator_types = ["parallel"]} ins(%[[SUM]], %[[C]] : tensor<f32>, tensor<f64>) outs(%{{.+}} : tensor<2xf32>)
// CHECK: %[[D0:.+]] = arith.subf %{{.+}} : f32
// CHECK: arith.cmpf uno, %[[D0]], %[[D0]] : f32
// CHECK: %[[D1:.+]] = arith.subf %{{.+}} : f64
// CHECK: arith.cmpf uno, %[[D1]], %[[D1]] : f64
// CHECK-NOT: rt.cross_rank_reduce
// CHECK: %[[FIRST:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]} ins(%[[FLAGS]] : tensor<2xf32>) outs(%{{.+}} : tensor<i64>)
// CHECK: ^bb0(%[[FLAG:.+]]: f32, %[[OUT:.+]]: i64):
// CHECK: %[[I:.+]] = linalg.index 0
// CHECK: %[[POS:.+]] = arith.addi %{{.+}}, %{{.+}} : i64
// CHECK: %[[SET:.+]] = arith.cmpf ogt, %[[FLAG]], %{{.+}} : f32
// CHECK: %[[NONE:.+]] = arith.cmpi eq, %[[OUT]], %{{.+}} : i64
// CHECK: %[[EARLIER:.+]] = arith.cmpi slt, %[[POS]], %[[OUT]] : i64
// CHECK: %[[EITHER:.+]] = arith.ori %[[NONE]], %[[EARLIER]]
// CHECK: %[[TAKE:.+]] = arith.andi %[[SET]], %[[EITHER]]
// CHECK: arith.select %[[TAKE]], %[[POS]], %[[OUT]] : i64
// CHECK: return %[[FIRST]]
func.func @check_finite(%a: tensor<3x4xf32>, %c: tensor<f64>) -> tensor<i64> {
  %0 = train.check_finite %a, %c : tensor<3x4xf32>, tensor<f64>
  return %0 : tensor<i64>
}

// -----

// Across ranks the flags are summed over the ranks before the first is
// found: one collective for all values.
// CHECK-LABEL: func.func @check_finite_across_ranks
// CHECK: %[[FLAGS:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<2xf32>)
// CHECK: %[[ALL:.+]] = rt.cross_rank_reduce sum outs(%[[FLAGS]] : tensor<2xf32>) -> tensor<2xf32>
// CHECK: linalg.generic {{.+}} ins(%[[ALL]] : tensor<2xf32>) outs(%{{.+}} : tensor<i64>)
func.func @check_finite_across_ranks(%a: tensor<3xf32>, %c: tensor<f32>) -> tensor<i64> {
  %0 = train.check_finite %a, %c {across_ranks} : tensor<3xf32>, tensor<f32>
  return %0 : tensor<i64>
}

// -----

// More than 32 values: the flags are built 32 per kernel and inserted into
// one vector, so that no kernel takes an operand per parameter.
// CHECK-LABEL: func.func @check_finite_many
// CHECK:         %[[F0:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<32xf32>)
// CHECK:         %[[V0:.+]] = tensor.insert_slice %[[F0]] into %{{.+}}[0] [32] [1] : tensor<32xf32> into tensor<33xf32>
// CHECK:         %[[F1:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1xf32>)
// CHECK:         %[[V1:.+]] = tensor.insert_slice %[[F1]] into %[[V0]][32] [1] [1] : tensor<1xf32> into tensor<33xf32>
// CHECK:         linalg.generic {{.+}} ins(%[[V1]] : tensor<33xf32>) outs(%{{.+}} : tensor<i64>)
func.func @check_finite_many(%a: tensor<f32>) -> tensor<i64> {
  %0 = train.check_finite %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
  return %0 : tensor<i64>
}

// -----

// The runtime's matrix kernels compute in f32 (f64 runs only in the
// interpreter): an f64 product is refused with the reason, not left for the
// conversion to fail on.
func.func @matmul_f64(%a: tensor<5x2x3xf64>, %b: tensor<5x3x4xf64>) -> tensor<5x2x4xf64> {
  // expected-error @+1 {{'nn.matmul' op on 'f64' tensors is not supported: the matrix, convolution and pooling kernels compute in f32 (cast the operands to f32)}}
  %0 = nn.matmul %a, %b : tensor<5x2x3xf64>, tensor<5x3x4xf64> -> tensor<5x2x4xf64>
  return %0 : tensor<5x2x4xf64>
}

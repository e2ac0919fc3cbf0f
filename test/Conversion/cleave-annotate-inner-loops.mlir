// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops | FileCheck %s
// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops --convert-scf-to-cf --finalize-memref-to-llvm --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM
// RUN: not cleave-opt %s --split-input-file --cleave-annotate-inner-loops=min-trip-count=0 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops=bf16-vector-width=16 | FileCheck %s --check-prefix=WIDTH16
// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops=min-trip-count=4 --mlir-print-local-scope | FileCheck %s --check-prefix=SHORT
// RUN: not cleave-opt %s --split-input-file --cleave-annotate-inner-loops=bf16-vector-width=0 2>&1 | FileCheck %s --check-prefix=ERR-WIDTH
// RUN: not cleave-opt %s --split-input-file --cleave-annotate-inner-loops=bf16-vector-width=3 2>&1 | FileCheck %s --check-prefix=ERR-WIDTH3

// ERR: min-trip-count=0 is out of range; expected at least 1
// ERR-WIDTH: bf16-vector-width=0 is out of range; expected a power of two from 1 to 64
// ERR-WIDTH3: bf16-vector-width=3 is out of range; expected a power of two from 1 to 64

// The innermost loop of a nest (32 iterations) is kept rolled; the outer
// loop is not annotated. The annotation reaches the LLVM back edge.
// CHECK: #[[$UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[$ANN:.+]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func @nest
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     memref.store
// CHECK:   } {loop_annotation = #[[$ANN]]}
// CHECK-NOT: loop_annotation
// CHECK: return
// LLVM-LABEL: llvm.func @nest
// LLVM: llvm.br ^{{.+}} {loop_annotation = #{{.+}}}
func.func @nest(%m: memref<8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %cst = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      memref.store %cst, %m[%i, %j] : memref<8x32xf32>
    }
  }
  return
}

// -----

// Shorter than a vector (8 < 16 iterations), or of unknown length: left
// for LLVM to unroll.
// CHECK-LABEL: func.func @short_or_dynamic
// CHECK-NOT: loop_annotation
// CHECK: return
func.func @short_or_dynamic(%m: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cst = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %cst, %m[%i] : memref<?xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    memref.store %cst, %m[%i] : memref<?xf32>
  }
  return
}

// -----

// Affine addresses (offsets, scaled indices) are annotated; a clamped
// index (padding's gather) is not.
// CHECK-LABEL: func.func @addresses
// CHECK: scf.for
// CHECK: } {loop_annotation =
// CHECK: scf.for
// CHECK-NOT: loop_annotation
// CHECK: return
func.func @addresses(%m: memref<128xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c63 = arith.constant 63 : index
  scf.for %i = %c0 to %c32 step %c1 {
    %a = arith.muli %i, %c2 : index
    %b = arith.addi %a, %c1 : index
    %v = memref.load %m[%b] : memref<128xf32>
    memref.store %v, %out[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %a = arith.subi %i, %c2 : index
    %b = arith.maxsi %a, %c0 : index
    %v = memref.load %m[%b] : memref<128xf32>
    memref.store %v, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// On a target with AVX512-BF16, loops that convert between f32 and bf16
// (narrowing an activation, widening a stored one) are given their vector
// width as well: LLVM's X86 cost model prices the vector conversions as
// scalar ones. Not so a loop without a bf16 conversion (f32 to f64), one
// with a strided access (a transpose: a gather the width would force), one
// that carries a value or stores to one element throughout (reductions LLVM
// could then reorder), or one shorter than the width.
// CHECK-DAG: #[[$UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[$VEC:.+]] = #llvm.loop_vectorize<width = 8 : i32>
// CHECK-DAG: #[[$PLAIN:.+]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-DAG: #[[$BF16:.+]] = #llvm.loop_annotation<vectorize = #[[$VEC]], unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func @conversions
// CHECK: arith.truncf
// CHECK: } {loop_annotation = #[[$BF16]]}
// CHECK: arith.extf
// CHECK: } {loop_annotation = #[[$BF16]]}
// CHECK: arith.extf
// CHECK: } {loop_annotation = #[[$PLAIN]]}
// CHECK: arith.truncf
// CHECK: } {loop_annotation = #[[$PLAIN]]}
// CHECK: arith.truncf
// CHECK: } {loop_annotation = #[[$PLAIN]]}
// CHECK: arith.truncf
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK: arith.truncf
// CHECK: } {loop_annotation = #[[$PLAIN]]}
// CHECK-NEXT: return
// WIDTH16: #llvm.loop_vectorize<width = 16 : i32>
// With min-trip-count=4 the 6-iteration loop is kept rolled, but gets no
// width of 8.
// SHORT-LABEL: func.func @conversions
// SHORT-COUNT-4: arith.truncf
// SHORT: } {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
// SHORT: arith.truncf
// SHORT: } {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
// SHORT-NEXT: return
// LLVM-DAG: #[[$LVEC:.+]] = #llvm.loop_vectorize<width = 8 : i32>
// LLVM-DAG: #[[$LBF16:.+]] = #llvm.loop_annotation<vectorize = #[[$LVEC]], unroll = #{{.+}}>
// LLVM-LABEL: llvm.func @conversions
// LLVM: llvm.fptrunc {{.+}} : f32 to bf16
// LLVM: llvm.br ^{{.+}} {loop_annotation = #[[$LBF16]]}
module attributes {rt.target = {cpu = "sapphirerapids", features = ["avx512bf16", "avx512f"]}} {
func.func @conversions(%x: memref<256xf32>, %b: memref<256xbf16>,
                       %y: memref<256xf32>, %d: memref<256xf64>,
                       %t: memref<256x256xf32>, %s: memref<f32>,
                       %r: memref<bf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %r0 = arith.maximumf %v, %zero : f32
    %n = arith.truncf %r0 : f32 to bf16
    %j = arith.addi %i, %c0 : index
    memref.store %n, %b[%j] : memref<256xbf16>
  }
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %b[%i] : memref<256xbf16>
    %w = arith.extf %v : bf16 to f32
    memref.store %w, %y[%i] : memref<256xf32>
  }
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %w = arith.extf %v : f32 to f64
    memref.store %w, %d[%i] : memref<256xf64>
  }
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %t[%i, %c3] : memref<256x256xf32>
    %n = arith.truncf %v : f32 to bf16
    memref.store %n, %b[%i] : memref<256xbf16>
  }
  %sum = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %x[%i] : memref<256xf32>
    %n = arith.truncf %v : f32 to bf16
    memref.store %n, %b[%i] : memref<256xbf16>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  memref.store %sum, %s[] : memref<f32>
  scf.for %i = %c0 to %c6 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %n = arith.truncf %v : f32 to bf16
    memref.store %n, %b[%i] : memref<256xbf16>
  }
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %o = memref.load %s[] : memref<f32>
    %a = arith.addf %o, %v : f32
    memref.store %a, %s[] : memref<f32>
    %n = arith.truncf %a : f32 to bf16
    memref.store %n, %b[%i] : memref<256xbf16>
  }
  return
}
}

// -----

// Without AVX512-BF16 (or no recorded target), cleave-expand-bf16 turns the
// conversions into integer arithmetic, which LLVM prices right: no width.
// CHECK-LABEL: func.func @no_native_bf16
// CHECK-NOT: loop_vectorize
// CHECK: return
module attributes {rt.target = {cpu = "x86-64-v4", features = ["avx512f"]}} {
func.func @no_native_bf16(%x: memref<256xf32>, %b: memref<256xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %n = arith.truncf %v : f32 to bf16
    memref.store %n, %b[%i] : memref<256xbf16>
  }
  return
}
}

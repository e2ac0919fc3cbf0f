// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops | FileCheck %s
// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops --convert-scf-to-cf --finalize-memref-to-llvm --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM
// RUN: not cleave-opt %s --split-input-file --cleave-annotate-inner-loops=min-trip-count=0 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: cleave-opt %s --split-input-file --cleave-annotate-inner-loops=bf16-vector-width=8 | FileCheck %s --check-prefix=WIDTH8
// RUN: not cleave-opt %s --split-input-file --cleave-annotate-inner-loops=bf16-vector-width=0 2>&1 | FileCheck %s --check-prefix=ERR-WIDTH

// ERR: min-trip-count=0 is out of range; expected at least 1
// ERR-WIDTH: bf16-vector-width=0 is out of range; expected at least 1

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

// Loops that convert between f32 and bf16 (narrowing an activation,
// widening a stored one) are given their vector width as well: LLVM's X86
// cost model prices the vector conversions as scalar ones. A loop without
// a bf16 conversion, and f32-f64 conversions, keep the plain annotation.
// CHECK-DAG: #[[$UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[$VEC:.+]] = #llvm.loop_vectorize<width = 16 : i32>
// CHECK-DAG: #[[$PLAIN:.+]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-DAG: #[[$BF16:.+]] = #llvm.loop_annotation<vectorize = #[[$VEC]], unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func @conversions
// CHECK: arith.truncf
// CHECK: } {loop_annotation = #[[$BF16]]}
// CHECK: arith.extf
// CHECK: } {loop_annotation = #[[$BF16]]}
// CHECK: arith.extf
// CHECK: } {loop_annotation = #[[$PLAIN]]}
// WIDTH8: #llvm.loop_vectorize<width = 8 : i32>
// LLVM-LABEL: llvm.func @conversions
// LLVM: llvm.fptrunc {{.+}} : f32 to bf16
// LLVM: llvm.br ^{{.+}} {loop_annotation = #{{.+}}}
func.func @conversions(%x: memref<256xf32>, %b: memref<256xbf16>,
                       %y: memref<256xf32>, %d: memref<256xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %x[%i] : memref<256xf32>
    %r = arith.maximumf %v, %zero : f32
    %n = arith.truncf %r : f32 to bf16
    memref.store %n, %b[%i] : memref<256xbf16>
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
  return
}

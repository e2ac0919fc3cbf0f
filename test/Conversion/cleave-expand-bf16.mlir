// RUN: cleave-opt %s --split-input-file --cleave-expand-bf16 | FileCheck %s

// bf16 conversions become integer arithmetic on the bits, so that no library
// helper (__truncsfbf2, which Debian 12's libgcc lacks) is called; others
// stay for LLVM.

// CHECK-LABEL: func.func @conversions
// CHECK-SAME: (%[[X:.+]]: f32, %[[B:.+]]: bf16, %[[H:.+]]: f16)
// CHECK-NOT: arith.truncf %[[X]] : f32 to bf16
// CHECK-NOT: arith.extf %[[B]] : bf16 to f32
// The extension: the bits, shifted into the upper half.
// CHECK-DAG: %[[BITS:.+]] = arith.bitcast %[[B]] : bf16 to i16
// CHECK-DAG: %[[WIDE:.+]] = arith.extui %[[BITS]] : i16 to i32
// CHECK-DAG: arith.shli %[[WIDE]]
// The truncation rounds to nearest even and keeps NaN.
// CHECK-DAG: arith.bitcast %[[X]] : f32 to i32
// CHECK-DAG: arith.cmpf une, %[[X]], %[[X]]
// f16 is LLVM's (F16C, or libgcc's __truncsfhf2).
// CHECK-DAG: arith.truncf %[[X]] : f32 to f16
// CHECK-DAG: arith.extf %[[H]] : f16 to f32
func.func @conversions(%x: f32, %b: bf16, %h: f16) -> (bf16, f32, f16, f32) {
  %0 = arith.truncf %x : f32 to bf16
  %1 = arith.extf %b : bf16 to f32
  %2 = arith.truncf %x : f32 to f16
  %3 = arith.extf %h : f16 to f32
  return %0, %1, %2, %3 : bf16, f32, f16, f32
}

// -----

// A module whose recorded target (cleave-write-manifest's rt.target) has
// AVX512-BF16 keeps its conversions: LLVM narrows with VCVTNEPS2BF16.
// RUN: cleave-opt %s --split-input-file --cleave-expand-bf16 | FileCheck %s --check-prefix=NATIVE

// NATIVE-LABEL: func.func @native
// NATIVE: arith.truncf %{{.+}} : f32 to bf16
// NATIVE: arith.extf %{{.+}} : bf16 to f32
module attributes {rt.target = {cpu = "sapphirerapids", features = ["avx512f", "avx512bf16"]}} {
  func.func @native(%x: f32, %b: bf16) -> (bf16, f32) {
    %0 = arith.truncf %x : f32 to bf16
    %1 = arith.extf %b : bf16 to f32
    return %0, %1 : bf16, f32
  }
}

// -----

// A recorded target without AVX512-BF16 is expanded as above.
// NATIVE-LABEL: func.func @portable
// NATIVE-NOT: arith.truncf
// NATIVE: arith.cmpf une
module attributes {rt.target = {cpu = "x86-64-v3", features = ["avx2"]}} {
  func.func @portable(%x: f32) -> bf16 {
    %0 = arith.truncf %x : f32 to bf16
    return %0 : bf16
  }
}

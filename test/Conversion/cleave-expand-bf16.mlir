// RUN: cleave-opt %s --cleave-expand-bf16 | FileCheck %s

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

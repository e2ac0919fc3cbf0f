// RUN: cleave-opt %s --cleave-approximate-math | FileCheck %s

// f32 transcendentals become arithmetic (fma chains, floor, bit casts) that
// LLVM vectorises with the loop around them, instead of scalar libm calls.
// CHECK-LABEL: func.func @f32_ops
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.log
// CHECK: math.fma
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.log
// CHECK: return
func.func @f32_ops(%x: f32) -> (f32, f32, f32, f32, f32, f32, f32) {
  %0 = math.erf %x : f32
  %1 = math.exp %x : f32
  %2 = math.tanh %x : f32
  %3 = math.log %x : f32
  %4 = math.log1p %x : f32
  %5 = math.log2 %x : f32
  %6 = math.expm1 %x : f32
  return %0, %1, %2, %3, %4, %5, %6 : f32, f32, f32, f32, f32, f32, f32
}

// Other types keep the exact lowering (LLVM intrinsics and libm); so do
// ops LLVM already vectorises, and sin and cos, whose approximation loses
// accuracy as |x| grows (libm's sinf/cosf reduce the argument exactly).
// CHECK-LABEL: func.func @kept
// CHECK: math.erf %{{.+}} : f64
// CHECK: math.exp %{{.+}} : f64
// CHECK: math.sqrt %{{.+}} : f32
// CHECK: math.sin %{{.+}} : f32
// CHECK: math.cos %{{.+}} : f32
func.func @kept(%x: f64, %y: f32) -> (f64, f64, f32, f32, f32) {
  %0 = math.erf %x : f64
  %1 = math.exp %x : f64
  %2 = math.sqrt %y : f32
  %3 = math.sin %y : f32
  %4 = math.cos %y : f32
  return %0, %1, %2, %3, %4 : f64, f64, f32, f32, f32
}

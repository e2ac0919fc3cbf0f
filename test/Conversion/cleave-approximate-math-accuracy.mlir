// The polynomial approximations cleave-approximate-math substitutes for
// libm, lowered to machine code and measured against double-precision libm
// on a grid over each function's range: within 4 ulp of the rounded exact
// result here (erf and tanh reach 4, exp and log 1); the bound leaves room
// for another LLVM's instruction selection (fma contraction) and still
// fails for any approximation coarser than float32's last bits.
//
// RUN: cleave-opt %s --cleave-approximate-math \
// RUN:   | mlir-opt --convert-math-to-llvm --convert-arith-to-llvm \
// RUN:       --convert-func-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: llc -O2 -relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %python %S/Inputs/math_accuracy.py %t.o 8 | FileCheck %s
// CHECK: erf: max {{[0-8]}} ulp
// CHECK: exp: max {{[0-8]}} ulp
// CHECK: tanh: max {{[0-8]}} ulp
// CHECK: log: max {{[0-8]}} ulp

func.func @erf(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  return %0 : f32
}
func.func @exp(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}
func.func @tanh(%x: f32) -> f32 {
  %0 = math.tanh %x : f32
  return %0 : f32
}
func.func @log(%x: f32) -> f32 {
  %0 = math.log %x : f32
  return %0 : f32
}

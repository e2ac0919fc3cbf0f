// sin, cos, floor, ceil, round and powf through both back ends, forward and
// backward (test/Pipelines/Inputs/math_ops.mlir).
//
// On the CPU, for a target without SSE4.1 (x86-64), rounding is a libm
// call as well as the transcendentals, and the artifact links:
// cleave-compile refuses one whose symbols neither the runtime nor libc/libm
// resolve. sin and cos stay libm calls (not approximated: see
// cleave-approximate-math); round is roundeven (halves to even), not round.
// RUN: cleave-compile %S/Inputs/math_ops.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target-cpu=x86-64 -o %t.cpu.cleave
// RUN: llvm-nm -D --undefined-only %t.cpu.cleave | FileCheck %s --check-prefix=CPU --implicit-check-not="U roundf"
// CPU-DAG: U ceilf
// CPU-DAG: U {{(sin)?}}cosf
// CPU-DAG: U floorf
// CPU-DAG: U powf
// CPU-DAG: U roundevenf
// CPU-DAG: U sin{{(cos)?}}f
//
// With target=cuda: libdevice calls in the kernels (rint rounds halves to even).
// RUN: cleave-compile %S/Inputs/math_ops.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=NVVM
// NVVM-DAG: llvm.call @__nv_sinf
// NVVM-DAG: llvm.call @__nv_cosf
// NVVM-DAG: llvm.call @__nv_floorf
// NVVM-DAG: llvm.call @__nv_ceilf
// NVVM-DAG: llvm.call @__nv_rintf
// NVVM-DAG: llvm.call @__nv_powf
// NVVM-NOT: math.

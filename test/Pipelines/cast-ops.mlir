// nn.cast through both back ends, forward and backward
// (test/Pipelines/Inputs/cast_ops.mlir): each cast is a linalg.generic
// whose operand and result element types differ, bufferized into buffers of
// both types.
//
// On the CPU the artifact builds and links.
// RUN: cleave-compile %S/Inputs/cast_ops.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target-cpu=x86-64 -o %t.cpu.cleave
//
// With target=cuda the conversions are in the kernels: C's truncation
// toward zero (fptosi) and signed integers (sitofp, sext).
// RUN: cleave-compile %S/Inputs/cast_ops.mlir --loss=mse --micro-batch=8 --accumulate=2 --optimizer=sgd --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=NVVM
// NVVM-DAG: llvm.fptosi %{{.+}} : f32 to i32
// NVVM-DAG: llvm.sitofp %{{.+}} : i64 to f32
// NVVM-DAG: llvm.sext %{{.+}} : i32 to i64
// NVVM-DAG: llvm.fptrunc %{{.+}} : f64 to f32

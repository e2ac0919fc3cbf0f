// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-run-gpu-launches-on-host | FileCheck %s
// Testing aid: each gpu.launch as host loops over blocks (z, y, x) and,
// inside, threads (z, y, x), the ids and sizes replaced by the loops'.

// CHECK-LABEL: func.func @independent_threads
// CHECK-SAME: (%[[M:.+]]: memref<64xf32>)
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK: scf.for %{{.+}} = %[[C0]] to %{{.+}} step
// CHECK:   scf.for %{{.+}} = %[[C0]] to %{{.+}} step
// CHECK:     scf.for %[[BX:.+]] = %[[C0]] to %[[C2]] step
// CHECK:       scf.for %{{.+}} = %[[C0]] to %{{.+}} step
// CHECK:         scf.for %{{.+}} = %[[C0]] to %{{.+}} step
// CHECK:           scf.for %[[TX:.+]] = %[[C0]] to %[[C32]] step
// CHECK:             %[[BASE:.+]] = arith.muli %[[BX]], %[[C32]]
// CHECK:             %[[I:.+]] = arith.addi %[[BASE]], %[[TX]]
// CHECK:             memref.store %{{.+}}, %[[M]][%[[I]]]
// CHECK-NOT: gpu.
func.func @independent_threads(%m: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %dim = gpu.block_dim x
    %base = arith.muli %bx, %dim : index
    %i = arith.addi %base, %tx : index
    %one = arith.constant 1.0 : f32
    memref.store %one, %m[%i] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// A block reduction: sweep 1 combines every thread's operand in thread
// order into a running total (reset per block), sweep 2 recomputes what
// precedes the reduction and runs the rest with the total.
// CHECK-LABEL: func.func @block_reduction
// CHECK: %[[TOTAL:.+]] = memref.alloca() : memref<f32>
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     scf.for %[[BX:.+]] =
// CHECK:       memref.store %{{.+}}, %[[TOTAL]][]
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           scf.for %[[T1:.+]] =
// CHECK:             %[[X:.+]] = memref.load %{{.+}}[%[[BX]], %[[T1]]]
// CHECK:             %[[SO:.+]] = memref.load %[[TOTAL]][]
// CHECK:             %[[SUM:.+]] = arith.addf %[[SO]], %[[X]]
// CHECK:             memref.store %[[SUM]], %[[TOTAL]][]
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           scf.for %[[T2:.+]] =
// CHECK:             memref.load %{{.+}}[%[[BX]], %[[T2]]]
// CHECK:             %[[ALL:.+]] = memref.load %[[TOTAL]][]
// CHECK:             scf.if
// CHECK:               memref.store %[[ALL]], %{{.+}}[%[[BX]]]
// CHECK-NOT: gpu.
func.func @block_reduction(%in: memref<4x8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %x = memref.load %in[%bx, %tx] : memref<4x8xf32>
    %all = gpu.all_reduce add %x uniform {} : (f32) -> f32
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      memref.store %all, %out[%bx] : memref<4xf32>
    }
    gpu.terminator
  }
  return
}

// -----

func.func @barrier(%m: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{cannot run on the host: threads of a block run one after another}}
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

func.func @two_reductions(%m: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %x = memref.load %m[%tx] : memref<8xf32>
    %a = gpu.all_reduce add %x uniform {} : (f32) -> f32
    // expected-error @+1 {{runs on the host only as the one float reduction with an operation, directly in its launch}}
    %b = gpu.all_reduce maximumf %a uniform {} : (f32) -> f32
    memref.store %b, %m[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}

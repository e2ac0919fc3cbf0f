// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-linalg-to-gpu-loops))' --split-input-file --verify-diagnostics | FileCheck %s
// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-linalg-to-gpu-loops{block-size=64}))' --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SMALL
// RUN: not cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-linalg-to-gpu-loops{block-size=2048}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=BIG
// BIG: error: block-size=2048 is out of range; expected 1 to 1024 threads

// Elementwise 32x10: blocks of 25x10 threads, the contiguous dimension on x;
// 32 rows do not divide into 25, so the last block masks its extra threads.
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[C25:.+]] = arith.constant 25 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK: scf.parallel ({{.+}}) = ({{.+}}) to ({{.+}}) step
// CHECK: scf.parallel ({{.+}}) = ({{.+}}) to ({{.+}}) step
// CHECK: arith.cmpi ult, %{{.+}}, %[[C32]] : index
// CHECK: scf.if
// CHECK: math.exp
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_y, {{.+}}>, #gpu.loop_dim_map<processor = thread_x, {{.+}}>]
// The grid: two blocks of rows on x, one along the classes.
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x, {{.+}}>, #gpu.loop_dim_map<processor = sequential, {{.+}}>]
// SMALL-LABEL: func.func @elementwise
// SMALL-DAG: arith.constant 6 : index
// SMALL-DAG: arith.constant 10 : index
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: memref<32x10xf32>, %b: memref<32x10xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : memref<32x10xf32>) outs(%b : memref<32x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A column sum (reduction outside): the reduction moves inside, each of
// 512 threads sums its column in order.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[C256:.+]] = arith.constant 256 : index
// CHECK: scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%c512) step
// CHECK: scf.parallel (%[[THREAD:.+]]) =
// CHECK: %[[COL:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
// CHECK: scf.for %[[ROW:.+]] = %{{.+}} to %c32
// CHECK: memref.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<32x512xf32>
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: processor = thread_x
// CHECK: processor = block_x
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @column_sum(%a: memref<32x512xf32>, %s: memref<512xf32>) {
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%a : memref<32x512xf32>) outs(%s : memref<512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = arith.addf %in, %out : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// No parallel dimension (a 0-d fill, a full reduction): kernels of one
// thread, never host loops.
// CHECK-LABEL: func.func @full_sum
// CHECK: scf.parallel (%{{.+}}) = (%[[Z:.+]]) to (%[[O:.+]]) step (%[[O]])
// CHECK: memref.store %{{.+}}, %{{.+}}[] : memref<f32>
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: scf.parallel
// CHECK-NEXT: arith.constant 0 : index
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT: scf.for
// CHECK: return
#id1 = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @full_sum(%a: memref<32xf32>, %s: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
  linalg.generic {indexing_maps = [#id1, #scalar], iterator_types = ["reduction"]} ins(%a : memref<32xf32>) outs(%s : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %e = arith.addf %in, %out : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// memref.copy is a loop nest like the others. Threads take the three
// innermost dimensions (3x4x5), the grid the outermost (2 blocks).
// CHECK-LABEL: func.func @copy4d
// CHECK-NOT: memref.copy
// CHECK: memref.load %{{.+}} : memref<2x3x4x5xf32>
// CHECK: memref.store %{{.+}} : memref<2x3x4x5xf32>
// CHECK: mapping = [#gpu.loop_dim_map<processor = sequential, {{.+}}>, #gpu.loop_dim_map<processor = thread_z, {{.+}}>, #gpu.loop_dim_map<processor = thread_y, {{.+}}>, #gpu.loop_dim_map<processor = thread_x, {{.+}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x, {{.+}}>, #gpu.loop_dim_map<processor = sequential, {{.+}}>, #gpu.loop_dim_map<processor = sequential, {{.+}}>, #gpu.loop_dim_map<processor = sequential, {{.+}}>]
func.func @copy4d(%a: memref<2x3x4x5xf32>, %b: memref<2x3x4x5xf32>) {
  memref.copy %a, %b : memref<2x3x4x5xf32> to memref<2x3x4x5xf32>
  return
}

// -----

// Unit dimensions take no thread dimension: the 256 rows of a 256x1 column
// are on x. A dimension of more than 65535 blocks takes the grid's x.
// CHECK-LABEL: func.func @column
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x, {{.+}}>, #gpu.loop_dim_map<processor = sequential, {{.+}}>]
// CHECK-LABEL: func.func @tall
// CHECK: mapping = [#gpu.loop_dim_map<processor = sequential, {{.+}}>, #gpu.loop_dim_map<processor = thread_x, {{.+}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x, {{.+}}>, #gpu.loop_dim_map<processor = sequential, {{.+}}>]
func.func @column(%a: memref<256x1xf32>, %b: memref<256x1xf32>) {
  memref.copy %a, %b : memref<256x1xf32> to memref<256x1xf32>
  return
}
func.func @tall(%a: memref<100000x256xf32>, %b: memref<100000x256xf32>) {
  memref.copy %a, %b : memref<100000x256xf32> to memref<100000x256xf32>
  return
}

// -----

// A hand-written sequential loop (an embedding gradient's scatter, whose
// rows may repeat) keeps its order in a kernel of one thread.
// CHECK-LABEL: func.func @scatter
// CHECK: scf.parallel
// CHECK-NEXT: scf.for
// CHECK: scf.for
// CHECK: memref.store
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
func.func @scatter(%ids: memref<4xi64>, %g: memref<4x8xf32>, %w: memref<10x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %id = memref.load %ids[%i] : memref<4xi64>
    %row = arith.index_cast %id : i64 to index
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %g[%i, %j] : memref<4x8xf32>
      %y = memref.load %w[%row, %j] : memref<10x8xf32>
      %z = arith.addf %x, %y : f32
      memref.store %z, %w[%row, %j] : memref<10x8xf32>
    }
  }
  return
}

// -----

// Long reductions take a block of threads per output element: each thread
// folds a strided share in order, gpu.all_reduce combines the shares, and
// thread 0 folds the result into the output's old value.
// CHECK-LABEL: func.func @row_max
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch blocks(%[[ROW:[^,]+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c32, %{{.+}} = %c1, %{{.+}} = %c1) threads(%[[T:[^,]+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c256, %{{.+}} = %c1, %{{.+}} = %c1)
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PART:.+]] = scf.for %{{.+}} = %[[T]] to %c1000 step %c256{{.*}} iter_args(%[[ACC:.+]] = %[[NEGINF]]) -> (f32)
// CHECK: %[[X:.+]] = memref.load
// CHECK: %[[M:.+]] = arith.maximumf %[[X]], %[[ACC]] : f32
// CHECK: scf.yield %[[M]] : f32
// CHECK: %[[ALL:.+]] = gpu.all_reduce maximumf %[[PART]] uniform
// CHECK: scf.if
// CHECK: %[[OLD:.+]] = memref.load %{{.+}} : memref<32xf32>
// CHECK: %[[NEW:.+]] = arith.maximumf %[[ALL]], %[[OLD]] : f32
// CHECK: memref.store %[[NEW]]
// CHECK: gpu.terminator
// A long full reduction (a squared norm, accumulated in f64) is one block.
// CHECK-LABEL: func.func @sum_squares
// CHECK: gpu.launch blocks({{.+}}) in (%{{.+}} = %c1{{(_[0-9]+)?}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads({{.+}}) in (%{{.+}} = %c256,
// CHECK: arith.constant 0.000000e+00 : f64
// CHECK: gpu.all_reduce add %{{.+}} uniform
// A short one stays with one thread per output element.
// CHECK-LABEL: func.func @short_rows
// CHECK-NOT: gpu.launch
// CHECK: scf.for
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @row_max(%a: memref<32x1000xf32>, %m: memref<32xf32>) {
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : memref<32x1000xf32>) outs(%m : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = arith.maximumf %in, %out : f32
    linalg.yield %e : f32
  }
  return
}
func.func @sum_squares(%a: memref<100000xf32>, %s: memref<f64>) {
  linalg.generic {indexing_maps = [#id1, #scalar], iterator_types = ["reduction"]} ins(%a : memref<100000xf32>) outs(%s : memref<f64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    %sq = arith.mulf %w, %w : f64
    %e = arith.addf %out, %sq : f64
    linalg.yield %e : f64
  }
  return
}
func.func @short_rows(%a: memref<32x10xf32>, %m: memref<32xf32>) {
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : memref<32x10xf32>) outs(%m : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = arith.addf %in, %out : f32
    linalg.yield %e : f32
  }
  return
}

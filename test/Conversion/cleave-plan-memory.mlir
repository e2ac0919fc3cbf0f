// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-plan-memory | FileCheck %s

// %a and %b are live at the same time and get disjoint offsets; %c starts
// after %a's last use and reuses its bytes. 4x16xf32 is 256 bytes.
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: %[[ARENA:[a-z0-9]+]]: memref<512xi8>
// CHECK-SAME: rt.abi = [{name = "x", role = "input"}, {bytes = 512 : i64, role = "scratch"}]
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[OFF_A:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[A:.+]] = memref.view %[[ARENA]][%[[OFF_A]]][] : memref<512xi8> to memref<4x16xf32>
// CHECK-DAG: %[[OFF_B:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[B:.+]] = memref.view %[[ARENA]][%[[OFF_B]]][] : memref<512xi8> to memref<4x16xf32>
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: %[[C:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<512xi8> to memref<4x16xf32>
// CHECK: memref.copy %[[B]], %[[C]]
// CHECK-NOT: memref.dealloc
func.func @reuse(%ctx: !llvm.ptr, %x: memref<4x16xf32>) attributes {rt.abi = [{name = "x", role = "input"}]} {
  %a = memref.alloc() : memref<4x16xf32>
  memref.copy %x, %a : memref<4x16xf32> to memref<4x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  memref.copy %a, %b : memref<4x16xf32> to memref<4x16xf32>
  memref.dealloc %a : memref<4x16xf32>
  %c = memref.alloc() : memref<4x16xf32>
  memref.copy %b, %c : memref<4x16xf32> to memref<4x16xf32>
  memref.copy %c, %x : memref<4x16xf32> to memref<4x16xf32>
  return
}

// -----

// A use through a view keeps the buffer alive; sizes round up to 64 bytes.
// CHECK-LABEL: func.func @through_view
// CHECK-SAME: memref<128xi8>
// CHECK-SAME: {bytes = 128 : i64, role = "scratch"}
func.func @through_view(%ctx: !llvm.ptr, %x: memref<2x3xf32>) attributes {rt.abi = []} {
  %a = memref.alloc() : memref<2x3xf32>
  %v = memref.collapse_shape %a [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  %b = memref.alloc() : memref<2x3xf32>
  memref.copy %x, %b : memref<2x3xf32> to memref<2x3xf32>
  %bv = memref.collapse_shape %b [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %bv, %v : memref<6xf32> to memref<6xf32>
  return
}

// -----

// Functions that are not entry points are left alone.
// CHECK-LABEL: func.func @helper
// CHECK: memref.alloc
func.func @helper() {
  %a = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

func.func @dynamic(%ctx: !llvm.ptr, %n: index) attributes {rt.abi = []} {
  // expected-error @+1 {{is not a static top-level allocation; entry points must not allocate dynamically}}
  %a = memref.alloc(%n) : memref<?xf32>
  return
}

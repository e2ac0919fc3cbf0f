// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-emit-artifact-abi | FileCheck %s

// Each entry gets an exported (ctx, void **args) wrapper that loads its
// arguments and calls it; the entry itself becomes internal.
// CHECK-LABEL: llvm.func internal @micro_step
// CHECK-LABEL: llvm.func @cleave_entry_micro_step
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr, %[[ARGS:.+]]: !llvm.ptr)
// CHECK: %[[S0:.+]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.+]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S1:.+]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[A1:.+]] = llvm.load %[[S1]]
// CHECK: llvm.call @micro_step(%[[CTX]], %[[A0]], %[[A1]])
// CHECK-LABEL: llvm.func @cleave_abi_version() -> i32
// CHECK: llvm.mlir.constant(1 : i32)
// CHECK: llvm.mlir.global internal constant @__cleave_manifest("{}\00") {addr_space = 0 : i32, alignment = 64 : i64}
// CHECK-LABEL: llvm.func @cleave_manifest() -> !llvm.ptr
// CHECK: llvm.mlir.addressof @__cleave_manifest
// CHECK: llvm.mlir.global internal constant @__cleave_init_data(dense<[1, 2, 3, 4]> : tensor<4xi8>)
// CHECK-LABEL: llvm.func @cleave_init_data() -> !llvm.ptr
// CHECK: llvm.mlir.addressof @__cleave_init_data
// CHECK-NOT: rt.manifest_json
module attributes {rt.entries = ["micro_step"], rt.manifest_json = "{}", rt.init_data = dense<[1, 2, 3, 4]> : tensor<4xi8>} {
  llvm.func @micro_step(%ctx: !llvm.ptr, %a: !llvm.ptr, %b: !llvm.ptr) {
    llvm.return
  }
}

// -----

// Without initial data, cleave_init_data returns null.
// CHECK-LABEL: llvm.func @cleave_init_data() -> !llvm.ptr
// CHECK: %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.return %[[NULL]]
module attributes {rt.entries = [], rt.manifest_json = "{}"} {
}

// -----

// expected-error @+1 {{no manifest; run cleave-write-manifest first}}
module {
}

// -----

// expected-error @+1 {{entry point @eval_step was not lowered to the LLVM dialect}}
module attributes {rt.entries = ["eval_step"], rt.manifest_json = "{}"} {
  func.func @eval_step() {
    return
  }
}

// -----

module attributes {rt.entries = ["eval_step"], rt.manifest_json = "{}"} {
  // expected-error @+1 {{entry points must take only pointers (lower with bare-pointer memrefs)}}
  llvm.func @eval_step(%x: i64) {
    llvm.return
  }
}

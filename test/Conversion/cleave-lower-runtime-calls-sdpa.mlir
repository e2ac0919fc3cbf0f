// RUN: cleave-opt %s --split-input-file --verify-diagnostics \
// RUN:   --cleave-lower-runtime-calls="precision=bf16" | FileCheck %s

// Fused attention (attention.md): one storage type for every tensor but the
// log-sum-exp, which the entry's io_type names and math follows; the mask
// and keep are passed as NULL when there are none. With dropout, keep is the
// last input and the entry records the ratio.

// CHECK: rt.kernels = [
// CHECK-SAME: {batch = 8 : i64, causal = true, {{[^}]*}}, head_dim = 16 : i64, id = 0 : i64, io_type = "bf16", mask = false, math = "bf16", op = "sdpa_fwd", scale = 2.500000e-01 : f64, seq_kv = 6 : i64, seq_q = 4 : i64, value_dim = 16 : i64}
// CHECK-SAME: {batch = 8 : i64, causal = true, {{[^}]*}}, id = 1 : i64, io_type = "bf16", mask = true, math = "bf16", op = "sdpa_bwd"
// CHECK-LABEL: func.func @micro_step
// CHECK:         %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         %[[NULL2:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         call @cleave_kernel_sdpa_fwd(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[NULL]], %[[NULL2]], %{{.+}}, %{{.+}})
// CHECK:         %[[NULL3:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         call @cleave_kernel_sdpa_bwd(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{[^,]+}}, %[[NULL3]], 
func.func @micro_step(%ctx: !llvm.ptr, %q: memref<8x4x16xbf16>, %k: memref<8x6x16xbf16>, %v: memref<8x6x16xbf16>, %m: memref<4x6xbf16>, %o: memref<8x4x16xbf16>, %lse: memref<8x4xf32>, %do: memref<8x4x16xbf16>, %dq: memref<8x4x16xbf16>, %dk: memref<8x6x16xbf16>, %dv: memref<8x6x16xbf16>) {
  rt.kernel sdpa_fwd ins(%q, %k, %v : memref<8x4x16xbf16>, memref<8x6x16xbf16>, memref<8x6x16xbf16>) outs(%o, %lse : memref<8x4x16xbf16>, memref<8x4xf32>) {scale = 0.25 : f64, causal = true}
  rt.kernel sdpa_bwd ins(%q, %k, %v, %o, %lse, %do, %m : memref<8x4x16xbf16>, memref<8x6x16xbf16>, memref<8x6x16xbf16>, memref<8x4x16xbf16>, memref<8x4xf32>, memref<8x4x16xbf16>, memref<4x6xbf16>) outs(%dq, %dk, %dv : memref<8x4x16xbf16>, memref<8x6x16xbf16>, memref<8x6x16xbf16>) {scale = 0.25 : f64, causal = true}
  return
}

// -----

// Dropout: keep [B, T, S] after the (absent) mask, and the ratio.
// CHECK: rt.kernels = [
// CHECK-SAME: {batch = 8 : i64, causal = true, dropout = 1.000000e-01 : f64, {{[^}]*}}, id = 0 : i64, io_type = "bf16", mask = false, math = "bf16", op = "sdpa_fwd"
// CHECK-SAME: {batch = 8 : i64, causal = true, dropout = 1.000000e-01 : f64, {{[^}]*}}, id = 1 : i64, io_type = "bf16", mask = false, math = "bf16", op = "sdpa_bwd"
// CHECK-LABEL: func.func @micro_step
// CHECK:         %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         call @cleave_kernel_sdpa_fwd(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[NULL]], %{{[^,]+}}, %{{.+}}, %{{.+}})
// CHECK:         %[[NULL2:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         call @cleave_kernel_sdpa_bwd(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[NULL2]], %{{[^,]+}}, 
func.func @micro_step(%ctx: !llvm.ptr, %q: memref<8x4x16xbf16>, %keep: memref<8x4x4xbf16>, %o: memref<8x4x16xbf16>, %lse: memref<8x4xf32>, %do: memref<8x4x16xbf16>, %dq: memref<8x4x16xbf16>) {
  rt.kernel sdpa_fwd ins(%q, %q, %q, %keep : memref<8x4x16xbf16>, memref<8x4x16xbf16>, memref<8x4x16xbf16>, memref<8x4x4xbf16>) outs(%o, %lse : memref<8x4x16xbf16>, memref<8x4xf32>) {scale = 0.25 : f64, causal = true, dropout = 0.1 : f64}
  rt.kernel sdpa_bwd ins(%q, %q, %q, %o, %lse, %do, %keep : memref<8x4x16xbf16>, memref<8x4x16xbf16>, memref<8x4x16xbf16>, memref<8x4x16xbf16>, memref<8x4xf32>, memref<8x4x16xbf16>, memref<8x4x4xbf16>) outs(%dq, %dq, %dq : memref<8x4x16xbf16>, memref<8x4x16xbf16>, memref<8x4x16xbf16>) {scale = 0.25 : f64, causal = true, dropout = 0.1 : f64}
  return
}

// -----

// A bf16 query with an f32 key: cuDNN takes one type.
func.func @micro_step(%ctx: !llvm.ptr, %q: memref<8x4x16xbf16>, %k: memref<8x6x16xf32>, %v: memref<8x6x16xbf16>, %o: memref<8x4x16xbf16>, %lse: memref<8x4xf32>) {
  // expected-error @+1 {{stores attention's tensors in two types ('memref<8x6x16xf32>' beside 'memref<8x4x16xbf16>'); cuDNN's fused attention takes one}}
  rt.kernel sdpa_fwd ins(%q, %k, %v : memref<8x4x16xbf16>, memref<8x6x16xf32>, memref<8x6x16xbf16>) outs(%o, %lse : memref<8x4x16xbf16>, memref<8x4xf32>) {scale = 0.25 : f64, causal = true}
  return
}

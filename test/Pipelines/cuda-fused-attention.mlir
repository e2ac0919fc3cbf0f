// Attention on cuda in bf16 runs as cuDNN's fused kernels (attention.md):
// nn.attention stays one op through autodiff, whose VJP is one
// nn.fused_attention_grad taking the forward's row log-sum-exp; both become
// sdpa kernels on bf16 tensors (the log-sum-exp f32), called through the
// kernel ABI; and the artifact builds through ptxas. Elsewhere, and with
// --fused-attention=false, attention is spelt out as matmuls and a softmax.
//
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --target=cuda --precision=bf16 --compile-to=grad | FileCheck %s --check-prefix=GRAD
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --target=cuda --precision=bf16 --compile-to=linalg | FileCheck %s --check-prefix=LINALG
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --target=cuda --precision=bf16 --compile-to=bufferize | FileCheck %s --check-prefix=CALLS
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --accumulate=2 --target=cuda --precision=bf16 -o %t.cleave
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --target=cuda --precision=bf16 --fused-attention=false --compile-to=grad | FileCheck %s --check-prefix=UNFUSED
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --target=cuda --compile-to=grad | FileCheck %s --check-prefix=UNFUSED
// RUN: cleave-compile %S/Inputs/attention_lm.mlir --micro-batch=4 --precision=bf16 --target-features=+avx512bf16 --compile-to=grad | FileCheck %s --check-prefix=UNFUSED

// GRAD:      %[[O:.+]], %[[LSE:.+]] = nn.fused_attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.8284271247461903 : f64, scale_is_divisor} : (tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) -> (tensor<4x2x8x8xf32>, tensor<4x2x8xf32>)
// GRAD:      nn.fused_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %[[O]], %[[LSE]], %{{.+}} {causal, scale = 2.8284271247461903 : f64, scale_is_divisor}
// GRAD-NOT:  nn.softmax

// The heads flattened into one batch of 8; the scale the kernel multiplies
// by is 1/sqrt(8); q, k, v, o and the gradients in bf16, lse in f32.
// LINALG:     %[[F:.+]]:2 = rt.kernel sdpa_fwd ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<8x8x8xbf16>, tensor<8x8x8xbf16>, tensor<8x8x8xbf16>) outs(%{{.+}}, %{{.+}} : tensor<8x8x8xbf16>, tensor<8x8xf32>) {causal = true, scale = 0.35355339059327373 : f64}
// LINALG:     rt.kernel sdpa_bwd ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[F]]#1, %{{.+}} : tensor<8x8x8xbf16>, tensor<8x8x8xbf16>, tensor<8x8x8xbf16>, tensor<8x8x8xbf16>, tensor<8x8xf32>, tensor<8x8x8xbf16>) outs(%{{.+}}, %{{.+}}, %{{.+}} : tensor<8x8x8xbf16>, tensor<8x8x8xbf16>, tensor<8x8x8xbf16>)
// LINALG-NOT: linalg.softmax

// CALLS: \22batch\22:8,\22causal\22:true,\22entry\22:\22micro_step\22,\22head_dim\22:8,\22id\22:3,\22io_type\22:\22bf16\22,\22mask\22:false,\22math\22:\22bf16\22,\22op\22:\22sdpa_fwd\22,\22scale\22:0.35355339059327373,\22seq_kv\22:8,\22seq_q\22:8,\22value_dim\22:8}
// CALLS-SAME: \22op\22:\22sdpa_bwd\22
// CALLS: call @cleave_kernel_sdpa_fwd(%arg0, %c3_i64, %{{.+}}, %{{.+}}, %{{.+}}, %[[NOMASK:[^,]+]], %[[NOKEEP:[^,]+]], %{{.+}}, %{{.+}}) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CALLS: call @cleave_kernel_sdpa_bwd(%arg0, %c10_i64, {{.*}}) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CALLS: func.func private @cleave_kernel_sdpa_fwd(
// CALLS: func.func private @cleave_kernel_sdpa_bwd(

// UNFUSED-NOT: fused_attention
// UNFUSED:     nn.softmax
// UNFUSED-NOT: fused_attention

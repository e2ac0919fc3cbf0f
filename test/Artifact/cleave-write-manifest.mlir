// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-write-manifest=target-cpu=x86-64-v2 | FileCheck %s
// RUN: not cleave-opt %s --split-input-file --cleave-write-manifest=target-cpu=pentium9 2>&1 | FileCheck %s --check-prefix=BAD-CPU
// BAD-CPU: error: unknown target CPU 'pentium9'
// RUN: cleave-opt %s --split-input-file --verify-diagnostics --cleave-write-manifest=target-cpu=x86-64-v2 | FileCheck %s --check-prefix=NO-AVX
// NO-AVX-NOT: avx

// The manifest (JSON, stored as a string attribute until it is emitted)
// carries the split's report, the globals with their initialisers, the data
// inputs, hyperparameter defaults, every entry's argument list and the kernel
// table. Exact initial values go to the init data, 64-byte aligned; a splat
// is stored expanded (3.0f = 0x40400000).
// CHECK: module attributes {rt.entries = ["micro_step", "apply_step"]
// CHECK-SAME: rt.init_data = dense<[0, 0, -128, 63, 0, 0, 0, 64, {{(0, )+}}0, 0, 64, 64, 0, 0, 64, 64]> : tensor<72xi8>
// CHECK-SAME: rt.manifest_json = "{\22abi_version\22:1,\22accumulate\22:4,\22dtype\22:\22f32\22,
// CHECK-SAME: \22globals\22:[{\22dtype\22:\22f32\22,\22init\22:{\22hi\22:1,\22kind\22:\22uniform\22,\22lo\22:-1},\22kind\22:\22param\22,\22name\22:\22w\22,\22shape\22:[2,2]}
// CHECK-SAME: {\22dtype\22:\22f32\22,\22init\22:{\22bytes\22:8,\22kind\22:\22data\22,\22offset\22:0},\22kind\22:\22param\22,\22name\22:\22v\22,\22shape\22:[2]}
// CHECK-SAME: {\22dtype\22:\22f32\22,\22init\22:{\22bytes\22:8,\22kind\22:\22data\22,\22offset\22:64},\22kind\22:\22buffer\22,\22name\22:\22s\22,\22shape\22:[2]}
// CHECK-SAME: {\22dtype\22:\22f32\22,\22init\22:{\22kind\22:\22zeros\22},\22kind\22:\22accumulator\22,\22name\22:\22w.grad\22,\22of\22:\22w\22,\22shape\22:[2,2]}
// CHECK-SAME: \22hyperparameters\22:[{\22default\22:0.01,\22name\22:\22lr\22}]
// CHECK-SAME: \22inputs\22:[{\22dtype\22:\22f32\22,\22name\22:\22x\22,\22shape\22:[8,2]},{\22dtype\22:\22i64\22,\22name\22:\22labels\22,\22shape\22:[8]},{\22dtype\22:\22f32\22,\22name\22:\22weights\22,\22role\22:\22sample_weights\22,\22shape\22:[8]}]
// CHECK-SAME: \22kernels\22:[{\22accumulate\22:false,\22activation\22:\22none\22,\22b_batched\22:false,\22batch\22:1,\22bias\22:false,\22id\22:0,\22k\22:2,\22m\22:8,\22n\22:2,\22op\22:\22matmul\22,\22trans_a\22:false,\22trans_b\22:false}]
// What the kernels multiply in (no entry says "math": bf16).
// CHECK-SAME: \22micro_batch\22:8,\22precision\22:\22f32\22,\22reduce\22:\22none\22,\22sealed\22:true,
// The target CPU and every feature it implies (sse4.2 with x86-64-v2, not
// avx), handed to code generation as rt.target too.
// CHECK-SAME: \22target\22:{\22cpu\22:\22x86-64-v2\22,\22features\22:[
// CHECK-SAME: \22sse4.2\22
// CHECK-SAME: ]},\22warnings\22:[]}"
// CHECK-SAME: rt.target = {cpu = "x86-64-v2", features = [
// The train globals and the consumed module attributes are gone.
// CHECK-NOT: train.global
// CHECK-NOT: rt.kernels
module attributes {rt.kernels = [{accumulate = false, activation = "none", b_batched = false, batch = 1 : i64, bias = false, id = 0 : i64, k = 2 : i64, m = 8 : i64, n = 2 : i64, op = "matmul", trans_a = false, trans_b = false}], train.manifest = {accumulate = 4 : i64, reduce = "none", warnings = []}} {
  train.global param @w : tensor<2x2xf32> = #train.init<uniform, -1.0, 1.0>
  train.global param @v : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
  train.global buffer @s : tensor<2xf32> = dense<3.0> : tensor<2xf32>
  train.global accumulator @w.grad of @w : tensor<2x2xf32>
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<8x2xf32>, %l: memref<8xi64>, %wt: memref<8xf32>, %loss: memref<f32>, %w: memref<2x2xf32>, %s: memref<2x2xf32>, %m: memref<i64>, %scratch: memref<64xi8>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}, {name = "labels", role = "input"}, {name = "weights", role = "input", sample_weights = true}, {name = "loss", role = "output"}, {name = "w", role = "global"}, {name = "w.grad", role = "global"}, {name = "train.micro_steps", role = "global"}, {bytes = 64 : i64, role = "scratch"}]} {
    return
  }
  func.func @apply_step(%ctx: !llvm.ptr, %lr: memref<f32>, %t: memref<i64>, %m: memref<i64>) attributes {train.entry = "apply_step", rt.abi = [{default = 1.0e-2 : f64, name = "lr", role = "hyper"}, {name = "train.step", role = "global"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
}

// -----

// expected-error @+1 {{has rt.abi but no train.entry}}
func.func @orphan(%ctx: !llvm.ptr) attributes {rt.abi = []} {
  return
}

// -----

func.func @micro_step(%ctx: !llvm.ptr, %x: memref<2xf8E4M3FN>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}]} {
  return
}
// expected-error @-3 {{argument #1 has an element type the runtime does not support: 'memref<2xf8E4M3FN>'}}

// -----

// No u64: nn has no unsigned 64-bit arithmetic to produce one.
func.func @micro_step(%ctx: !llvm.ptr, %x: memref<2xi64>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input", unsigned = true}]} {
  return
}
// expected-error @-3 {{argument #1 has an element type the runtime does not support: 'memref<2xi64>'}}

// -----

// An input the training step does not read (a model that uses it only
// through its shape) is still listed: eval_step reads it. micro_step's
// inputs come first, in its order, wherever it is in the module.
// CHECK: module attributes {rt.entries = ["micro_step", "eval_step", "apply_step"]
// CHECK-SAME: \22inputs\22:[{\22dtype\22:\22f32\22,\22name\22:\22targets\22,\22shape\22:[4,2]},{\22dtype\22:\22f32\22,\22name\22:\22weights\22,\22role\22:\22sample_weights\22,\22shape\22:[4]},{\22dtype\22:\22f32\22,\22name\22:\22x\22,\22shape\22:[4,3]}]
module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  func.func @eval_step(%ctx: !llvm.ptr, %x: memref<4x3xf32>, %p: memref<4x2xf32>) attributes {train.entry = "eval_step", rt.abi = [{name = "x", role = "input"}, {name = "prediction", role = "output"}]} {
    return
  }
  func.func @micro_step(%ctx: !llvm.ptr, %t: memref<4x2xf32>, %wt: memref<4xf32>, %loss: memref<f32>, %m: memref<i64>) attributes {train.entry = "micro_step", rt.abi = [{name = "targets", role = "input"}, {name = "weights", role = "input", sample_weights = true}, {name = "loss", role = "output"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
  func.func @apply_step(%ctx: !llvm.ptr, %lr: memref<f32>, %t: memref<i64>, %m: memref<i64>) attributes {train.entry = "apply_step", rt.abi = [{default = 1.0e-2 : f64, name = "lr", role = "hyper"}, {name = "train.step", role = "global"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
}

// -----

// A hyperparameter without a default (the runtime starts every session from
// one) is refused, naming it, instead of reaching the manifest as null.
module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<4x2xf32>, %loss: memref<f32>, %m: memref<i64>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}, {name = "loss", role = "output"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
  // expected-error @+1 {{argument #1 (hyperparameter "lr") has no default; set train.default on the step function's argument}}
  func.func @apply_step(%ctx: !llvm.ptr, %lr: memref<f32>, %t: memref<i64>, %m: memref<i64>) attributes {train.entry = "apply_step", rt.abi = [{name = "lr", role = "hyper"}, {name = "train.step", role = "global"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
}

// -----

// Every key written is a row of artifact_schema.def: an rt.abi attribute
// the table does not know would reach the manifest unreviewed, so the
// compile stops, saying where.
module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  // expected-error @+1 {{argument #2 of rt.abi: unknown key 'frobnicate'; expected role, bytes, name, dtype, shape, held_bytes, default, index_bound or ignore_index}}
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<4x2xf32>, %loss: memref<f32>, %m: memref<i64>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}, {frobnicate = 1 : i64, name = "loss", role = "output"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
  func.func @apply_step(%ctx: !llvm.ptr, %lr: memref<f32>, %t: memref<i64>, %m: memref<i64>) attributes {train.entry = "apply_step", rt.abi = [{default = 1.0e-2 : f64, name = "lr", role = "hyper"}, {name = "train.step", role = "global"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
}

// -----

// A key the argument's role does not take is refused as well.
module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  // expected-error @+1 {{argument #3 of rt.abi: 'bytes' is not allowed for global}}
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<4x2xf32>, %loss: memref<f32>, %m: memref<i64>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}, {name = "loss", role = "output"}, {bytes = 8 : i64, name = "train.micro_steps", role = "global"}]} {
    return
  }
}

// -----

// What the runtime would refuse to load is refused here, with its message.
// expected-error @+1 {{the runtime would refuse this artifact: manifest: entries.apply_step does not take global 'train.step'}}
module attributes {train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<4x2xf32>, %loss: memref<f32>, %m: memref<i64>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}, {name = "loss", role = "output"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
  func.func @apply_step(%ctx: !llvm.ptr, %lr: memref<f32>, %m: memref<i64>) attributes {train.entry = "apply_step", rt.abi = [{default = 1.0e-2 : f64, name = "lr", role = "hyper"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
}

// -----

// So is a kernel-table entry with a field its op does not take (the rt
// dialect's verifier reads the table as WriteManifestPass does).
// expected-error @+1 {{'rt.kernels' entry 0: 'm' is not allowed for conv2d_fwd}}
module attributes {rt.kernels = [{activation = "none", bias = false, c = 1 : i64, dilations = array<i64: 1, 1>, groups = 1 : i64, h = 4 : i64, id = 0 : i64, kh = 1 : i64, kw = 1 : i64, m = 2 : i64, n = 1 : i64, o = 1 : i64, oh = 4 : i64, op = "conv2d_fwd", ow = 4 : i64, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, w = 4 : i64}], train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
}

// -----

// A kernel table whose rows are well formed but whose shapes disagree is
// refused with the message a session's kernel library would give at load.
// expected-error @+1 {{the runtime would refuse this artifact: kernel 0 (conv2d_fwd): field 'oh' is 5, expected 4 = (h + pad_top + pad_bottom - dilation*(kernel-1) - 1) / stride + 1}}
module attributes {rt.kernels = [{activation = "none", bias = false, c = 1 : i64, dilations = array<i64: 1, 1>, groups = 1 : i64, h = 4 : i64, id = 0 : i64, kh = 1 : i64, kw = 1 : i64, n = 1 : i64, o = 1 : i64, oh = 5 : i64, op = "conv2d_fwd", ow = 4 : i64, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, w = 4 : i64}], train.manifest = {accumulate = 1 : i64, reduce = "none", warnings = []}} {
  train.global counter @train.step : tensor<i64>
  train.global counter @train.micro_steps : tensor<i64>
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<1x1x4x4xf32>, %loss: memref<f32>, %m: memref<i64>) attributes {train.entry = "micro_step", rt.abi = [{name = "x", role = "input"}, {name = "loss", role = "output"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
  func.func @apply_step(%ctx: !llvm.ptr, %lr: memref<f32>, %t: memref<i64>, %m: memref<i64>) attributes {train.entry = "apply_step", rt.abi = [{default = 1.0e-2 : f64, name = "lr", role = "hyper"}, {name = "train.step", role = "global"}, {name = "train.micro_steps", role = "global"}]} {
    return
  }
}

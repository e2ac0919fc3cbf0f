// RUN: cleave-opt %s --split-input-file --verify-diagnostics

// The rt.* attributes the dialect verifies: every one where it belongs, then
// one violation per case.

module attributes {rt.entries = ["micro_step"], rt.init_data = dense<[1, 2]> : tensor<2xi8>, rt.kernels = [{accumulate = false, activation = "none", b_batched = false, batch = 1 : i64, bias = false, id = 0 : i64, k = 2 : i64, m = 8 : i64, n = 2 : i64, op = "matmul", trans_a = false, trans_b = false}], rt.manifest_json = "{\22abi_version\22: 1}", rt.target = {cpu = "x86-64-v2", features = ["sse4.2"]}} {
  func.func @micro_step(%ctx: !llvm.ptr, %x: memref<4xf32>, %lr: memref<f32>, %loss: memref<f32>, %w: memref<4xf32>, %scratch: memref<64xi8>)
      attributes {rt.abi = [{name = "x", role = "input"}, {default = 1.0e-2 : f64, name = "lr", role = "hyper"}, {name = "loss", role = "output"}, {name = "w", role = "global"}, {bytes = 64 : i64, role = "scratch"}]} {
    return
  }
}

// -----

// expected-error @+1 {{unknown attribute 'rt.manifest'}}
module attributes {rt.manifest = "{}"} {
}

// -----

// expected-error @+1 {{'rt.abi' is a function attribute}}
module attributes {rt.abi = []} {
}

// -----

// expected-error @+1 {{'rt.abi' must be an array, got {name = "x", role = "input"}}}
func.func @f(%ctx: !llvm.ptr) attributes {rt.abi = {name = "x", role = "input"}} {
  return
}

// -----

// expected-error @+1 {{'rt.abi' entry #0 must be a dictionary, got "x"}}
func.func @f(%ctx: !llvm.ptr) attributes {rt.abi = ["x"]} {
  return
}

// -----

// expected-error @+1 {{'rt.abi' entry #0 has no string 'role'}}
func.func @f(%ctx: !llvm.ptr) attributes {rt.abi = [{name = "x"}]} {
  return
}

// -----

// expected-error @+1 {{'rt.abi' entry #0 has unknown role "label"; expected input, hyper, output, global or scratch}}
func.func @f(%ctx: !llvm.ptr) attributes {rt.abi = [{name = "x", role = "label"}]} {
  return
}

// -----

// expected-error @+1 {{'rt.abi' entry #1 (global) needs a non-empty string 'name'}}
func.func @f(%ctx: !llvm.ptr) attributes {rt.abi = [{name = "x", role = "input"}, {role = "global"}]} {
  return
}

// -----

// expected-error @+1 {{'rt.abi' entry #0 (scratch) needs a non-negative integer 'bytes'}}
func.func @f(%ctx: !llvm.ptr) attributes {rt.abi = [{bytes = -1 : i64, role = "scratch"}]} {
  return
}

// -----

// expected-error @+1 {{'rt.kernels' is a module attribute}}
func.func @f() attributes {rt.kernels = []} {
  return
}

// -----

// expected-error @+1 {{'rt.kernels' must be an array of dictionaries, got [0]}}
module attributes {rt.kernels = [0]} {
}

// -----

// Each entry is a kernel of the manifest's table, complete for its op.
// expected-error @+1 {{'rt.kernels' entry 0: 'trans_a' is missing for matmul}}
module attributes {rt.kernels = [{accumulate = false, activation = "none", b_batched = false, batch = 1 : i64, bias = false, id = 0 : i64, k = 2 : i64, m = 8 : i64, n = 2 : i64, op = "matmul", trans_b = false}]} {
}

// -----

// expected-error @+1 {{'rt.kernels' entry 0: 'op' must be "matmul", "conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weights", "max_pool2d_fwd", "avg_pool2d_fwd", "max_pool2d_bwd", "avg_pool2d_bwd", "sdpa_fwd" or "sdpa_bwd", got "softmax"}}
module attributes {rt.kernels = [{id = 0 : i64, op = "softmax"}]} {
}

// -----

// expected-error @+1 {{'rt.kernels' entry 0: 'm' must be a positive integer of at most 2^31-1, got 4294967296 : i64}}
module attributes {rt.kernels = [{accumulate = false, activation = "none", b_batched = false, batch = 1 : i64, bias = false, id = 0 : i64, k = 2 : i64, m = 4294967296 : i64, n = 2 : i64, op = "matmul", trans_a = false, trans_b = false}]} {
}

// -----

// expected-error @+1 {{'rt.manifest_json' must be a string, got {}}}
module attributes {rt.manifest_json = {}} {
}

// -----

// expected-error @+1 {{'rt.manifest_json' is not JSON: }}
module attributes {rt.manifest_json = "{\22abi_version\22: }"} {
}

// -----

// expected-error @+1 {{'rt.manifest_json' must be a JSON object}}
module attributes {rt.manifest_json = "[1]"} {
}

// -----

// expected-error @+1 {{'rt.entries' must be an array of strings, got [@micro_step]}}
module attributes {rt.entries = [@micro_step]} {
}

// -----

// expected-error @+1 {{'rt.init_data' must be a 1-D tensor of i8 (bytes)}}
module attributes {rt.init_data = dense<[1.0, 2.0]> : tensor<2xf32>} {
}

// -----

// expected-error @+1 {{'rt.target' must be {cpu = "name", features = [strings]}, got {cpu = "x86-64", features = [1]}}}
module attributes {rt.target = {cpu = "x86-64", features = [1]}} {
}

// -----

// expected-error @+1 {{'rt.target' must be {cpu = "name", features = [strings]}, got {features = []}}}
module attributes {rt.target = {features = []}} {
}

// RUN: cleave-opt %s --split-input-file --verify-diagnostics

// Malformed gathers, their gradients and nn.iota.

func.func @gather_axis(%x: tensor<4x6xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'nn.gather' op failed to infer returned types}}
  %0 = nn.gather %x, %i {axis = 2} : tensor<4x6xf32>, tensor<2xi64> -> tensor<4x2xf32>
  return
}

// -----

func.func @gather_bool_indices(%x: tensor<4x6xf32>, %i: tensor<2xi1>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer or 32-bit float or 64-bit float values}}
  %0 = nn.gather %x, %i {axis = 0} : tensor<4x6xf32>, tensor<2xi1> -> tensor<2x6xf32>
  return
}

// -----

func.func @gather_grad_shape(%dy: tensor<4x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{grad [4, 5] does not hold indices [3] at axis 0}}
  // expected-error @+1 {{'nn.gather_grad' op failed to infer returned types}}
  %0 = nn.gather_grad %dy, %i {axis = 0, dim_size = 9} : tensor<4x5xf32>, tensor<3xi64> -> tensor<9x5xf32>
  return
}

// -----

func.func @gather_grad_size(%dy: tensor<3x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{dim_size must be >= 1, got 0}}
  // expected-error @+1 {{'nn.gather_grad' op failed to infer returned types}}
  %0 = nn.gather_grad %dy, %i {axis = 0, dim_size = 0} : tensor<3x5xf32>, tensor<3xi64> -> tensor<0x5xf32>
  return
}

// -----

func.func @gather_elements_rank(%x: tensor<4x6xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{indices [4] must have the rank of [4, 6]}}
  // expected-error @+1 {{'nn.gather_elements' op failed to infer returned types}}
  %0 = nn.gather_elements %x, %i {axis = 1} : tensor<4x6xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @gather_elements_larger(%x: tensor<4x6xf32>, %i: tensor<5x2xi64>) {
  // expected-error @+2 {{indices [5, 2] are larger than [4, 6] along axis 0}}
  // expected-error @+1 {{'nn.gather_elements' op failed to infer returned types}}
  %0 = nn.gather_elements %x, %i {axis = 1} : tensor<4x6xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
  return
}

// -----

func.func @gather_elements_grad_shape(%dy: tensor<4x2xf32>, %i: tensor<4x3xi64>) {
  // expected-error @+2 {{grad [4, 2] must have the shape of the indices [4, 3]}}
  // expected-error @+1 {{'nn.gather_elements_grad' op failed to infer returned types}}
  %0 = nn.gather_elements_grad %dy, %i {axis = 1, shape = array<i64: 4, 6>} : tensor<4x2xf32>, tensor<4x3xi64> -> tensor<4x6xf32>
  return
}

// -----

func.func @iota_axis(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{axis -1 is out of range for rank 2}}
  // expected-error @+1 {{'nn.iota' op failed to infer returned types}}
  %0 = nn.iota %x {axis = -1, dtype = f32} : tensor<4x6xf32> -> tensor<6xf32>
  return
}

// RUN: cleave-opt %s --split-input-file --verify-diagnostics

// Every shape or type constraint of the nn ops, one violation per case.

func.func @add_broadcast_mismatch(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [4, 3] and [4] do not broadcast (dimension 1 of the broadcast shape: 3 vs 4)}}
  // expected-error @+1 {{'nn.add' op failed to infer returned types}}
  %0 = nn.add %a, %b : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @mul_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.mul' op failed to infer returned types}}
  %0 = nn.mul %a, %b : tensor<4xf32>, tensor<4xf64> -> tensor<4xf32>
  return
}

// -----

func.func @sub_wrong_result_type(%a: tensor<4x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'nn.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'nn.sub' op failed to infer returned types}}
  %0 = nn.sub %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @div_mixed_element_types(%a: tensor<4xi32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operands must have the same element type, got 'i32' and 'f32'}}
  // expected-error @+1 {{'nn.div' op failed to infer returned types}}
  %0 = nn.div %a, %b : tensor<4xi32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @add_i8(%a: tensor<4xi8>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.add %a, %a : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
  return
}

// -----

func.func @exp_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float values}}
  %0 = nn.exp %a : tensor<4xi32>
  return
}

// -----

func.func @unary_result_type(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.exp' op requires the same type for all operands and results}}
  %0 = "nn.exp"(%x) : (tensor<4x3xf32>) -> tensor<4x3xf64>
  return
}

// -----

func.func @pow_missing_exponent(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.pow' op requires attribute 'exponent'}}
  %0 = "nn.pow"(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @powf_broadcast_mismatch(%x: tensor<4x3xf32>, %e: tensor<2x1xf32>) {
  // expected-error @+2 {{operand shapes [4, 3] and [2, 1] do not broadcast (dimension 0 of the broadcast shape: 4 vs 2)}}
  // expected-error @+1 {{'nn.powf' op failed to infer returned types}}
  %0 = nn.powf %x, %e : tensor<4x3xf32>, tensor<2x1xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @powf_integer_exponent(%x: tensor<4xf32>, %e: tensor<4xi64>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit float or 64-bit float values}}
  %0 = nn.powf %x, %e : tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @round_result_type(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.round' op requires the same type for all operands and results}}
  %0 = "nn.round"(%x) : (tensor<4x3xf32>) -> tensor<4x3xf64>
  return
}

// -----

func.func @relu_grad_shape_mismatch(%dy: tensor<4x3xf32>, %x: tensor<4x4xf32>) {
  // expected-error @+1 {{'nn.relu_grad' op requires the same type for all operands and results}}
  %0 = "nn.relu_grad"(%dy, %x) : (tensor<4x3xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_contraction_mismatch(%a: tensor<8x32xf32>, %b: tensor<16x64xf32>) {
  // expected-error @+2 {{contraction dimensions differ: lhs [8, 32] and rhs [16, 64] contract 32 with 16}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<8x32xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @matmul_transpose_b_mismatch(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @+2 {{contraction dimensions differ: lhs [8, 32] and rhs [32, 16] contract 32 with 16}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b {transpose_b} : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  return
}

// -----

func.func @matmul_rank_1(%a: tensor<32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @+2 {{operands must have rank >= 2, got 1 and 2}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<32xf32>, tensor<32x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<4x8x32xf32>, %b: tensor<2x32x16xf32>) {
  // expected-error @+2 {{batch dimension 0 differs: 4 vs 2}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<4x8x32xf32>, tensor<2x32x16xf32> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<4x8x32xf32>, %b: tensor<2x4x32x16xf32>) {
  // expected-error @+2 {{rhs must be a matrix or have the rank of lhs (3), got rank 4}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<4x8x32xf32>, tensor<2x4x32x16xf32> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<8x32xf64>, %b: tensor<32x16xf32>) {
  // expected-error @+2 {{operands must have the same element type, got 'f64' and 'f32'}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<8x32xf64>, tensor<32x16xf32> -> tensor<8x16xf64>
  return
}

// -----

func.func @linear_features_mismatch(%x: tensor<8x32xf32>, %w: tensor<16x64xf32>) {
  // expected-error @+2 {{input features (32) do not match weight [out, in] = [16, 64]}}
  // expected-error @+1 {{'nn.linear' op failed to infer returned types}}
  %0 = nn.linear %x, %w : tensor<8x32xf32>, tensor<16x64xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<8x32xf32>, %w: tensor<32xf32>) {
  // expected-error @+2 {{weight must be [out, in], got rank 1}}
  // expected-error @+1 {{'nn.linear' op failed to infer returned types}}
  %0 = nn.linear %x, %w : tensor<8x32xf32>, tensor<32xf32> -> tensor<8xf32>
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{bias must be [16], got [32]}}
  // expected-error @+1 {{'nn.linear' op failed to infer returned types}}
  %0 = nn.linear %x, %w, %b : tensor<8x32xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @linear_bias_element_type(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf64>) {
  // expected-error @+2 {{input and bias must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.linear' op failed to infer returned types}}
  %0 = nn.linear %x, %w, %b : tensor<8x32xf32>, tensor<16x32xf32>, tensor<16xf64> -> tensor<8x16xf32>
  return
}

// -----

func.func @reshape_count_mismatch(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{cannot reshape [4, 6] (24 elements) into [5, 5] (25 elements)}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x [5, 5] : tensor<4x6xf32> -> tensor<5x5xf32>
  return
}

// -----

func.func @reshape_inferred_not_divisible(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{cannot reshape [4, 6] into [-1, 5]}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x [-1, 5] : tensor<4x6xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @reshape_two_inferred(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{shape has more than one -1 entry}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x [-1, -1] : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @reshape_negative_entry(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{shape entries must be >= 0 or -1, got -2}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x [-2, 12] : tensor<4x6xf32> -> tensor<2x12xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{axis -3 out of range [-2, 2] for rank 2}}
  // expected-error @+1 {{'nn.flatten' op failed to infer returned types}}
  %0 = nn.flatten %x {axis = -3} : tensor<4x6xf32> -> tensor<1x24xf32>
  return
}

// -----

func.func @transpose_bad_permutation(%x: tensor<4x6x8xf32>) {
  // expected-error @+2 {{permutation [0, 2, 2] is not a permutation of [0, 3)}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x [0, 2, 2] : tensor<4x6x8xf32> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @transpose_permutation_length(%x: tensor<4x6x8xf32>) {
  // expected-error @+2 {{permutation has 2 entries for a rank-3 input}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x [1, 0] : tensor<4x6x8xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{permutation [0, 2] is not a permutation of [0, 2)}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x [0, 2] : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+2 {{input 1 has shape [5, 3], which differs from [4, 3] outside the concatenation axis}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 1} : tensor<4x3xf32>, tensor<5x3xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{axis -3 out of range for rank 2}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %a {axis = -3} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<4x3xf32>, %b: tensor<4x3x1xf32>) {
  // expected-error @+2 {{input 1 has rank 3, expected 2}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 0} : tensor<4x3xf32>, tensor<4x3x1xf32> -> tensor<8x3xf32>
  return
}

// -----

func.func @concat_element_type(%a: tensor<4x3xf32>, %b: tensor<4x3xf64>) {
  // expected-error @+2 {{inputs must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 0} : tensor<4x3xf32>, tensor<4x3xf64> -> tensor<8x3xf32>
  return
}

// -----

func.func @concat_no_input() {
  // expected-error @+2 {{needs at least one input}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = "nn.concat"() <{axis = 0 : i64}> : () -> tensor<8x3xf32>
  return
}

// -----

func.func @slice_out_of_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 1: slice [6 + 3 x 1) exceeds the size 8}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x starts [0, 6] sizes [4, 3] strides [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_strided_out_of_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 0: slice [1 + 2 x 3) exceeds the size 4}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x starts [1, 0] sizes [2, 8] strides [3, 1] : tensor<4x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_zero_stride(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 1: start must be >= 0, size >= 0 or -1 and stride >= 1}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x starts [0, 0] sizes [4, 8] strides [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_size_below_minus_one(%x: tensor<?x8xf32>) {
  // expected-error @+2 {{dimension 0: start must be >= 0, size >= 0 or -1 and stride >= 1}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x starts [0, 0] sizes [-2, 8] strides [1, 1] : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @slice_to_end_start_past_end(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 1: start 9 exceeds the size 8}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x starts [0, 9] sizes [4, -1] strides [1, 1] : tensor<4x8xf32> -> tensor<4x0xf32>
  return
}

// -----

func.func @slice_entry_count(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{starts, sizes and strides need one entry per dimension (2)}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x starts [0] sizes [4, 8] strides [1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @pad_does_not_fit(%x: tensor<4x3xf32>) {
  // expected-error @+2 {{dimension 1: 3 elements placed from 2 with stride 2 do not fit in size 6}}
  // expected-error @+1 {{'nn.pad' op failed to infer returned types}}
  %0 = nn.pad %x starts [0, 2] strides [1, 2] shape [4, 6] : tensor<4x3xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @pad_negative_size(%x: tensor<0x3xf32>) {
  // expected-error @+2 {{dimension 0: start and size must be >= 0 and stride >= 1}}
  // expected-error @+1 {{'nn.pad' op failed to infer returned types}}
  %0 = nn.pad %x starts [0, 0] strides [1, 1] shape [-1, 3] : tensor<0x3xf32> -> tensor<?x3xf32>
  return
}

// -----

func.func @broadcast_to_mismatch(%x: tensor<3xf32>) {
  // expected-error @+2 {{cannot broadcast [3] to [4, 5]}}
  // expected-error @+1 {{'nn.broadcast_to' op failed to infer returned types}}
  %0 = nn.broadcast_to %x [4, 5] : tensor<3xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @broadcast_to_lower_rank(%x: tensor<4x3xf32>) {
  // expected-error @+2 {{cannot broadcast rank 2 to rank 1}}
  // expected-error @+1 {{'nn.broadcast_to' op failed to infer returned types}}
  %0 = nn.broadcast_to %x [3] : tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @broadcast_to_negative(%x: tensor<1xf32>) {
  // expected-error @+2 {{shape entries must be >= 0, got [-4]}}
  // expected-error @+1 {{'nn.broadcast_to' op failed to infer returned types}}
  %0 = nn.broadcast_to %x [-4] : tensor<1xf32> -> tensor<?xf32>
  return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<4x3xf32>) {
  // expected-error @+2 {{axis 2 out of range for rank 2}}
  // expected-error @+1 {{'nn.reduce_sum' op failed to infer returned types}}
  %0 = nn.reduce_sum %x [2] : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_twice(%x: tensor<4x3xf32>) {
  // expected-error @+2 {{axis -1 listed twice}}
  // expected-error @+1 {{'nn.reduce_mean' op failed to infer returned types}}
  %0 = nn.reduce_mean %x [1, -1] : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_keepdims_result(%x: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.reduce_max' op inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'nn.reduce_max' op failed to infer returned types}}
  %0 = nn.reduce_max %x [1] {keepdims} : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_max_grad_shape(%dy: tensor<3xf32>, %x: tensor<4x3xf32>) {
  // expected-error @+2 {{grad has shape [3], expected the reduction's [4]}}
  // expected-error @+1 {{'nn.reduce_max_grad' op failed to infer returned types}}
  %0 = nn.reduce_max_grad %dy, %x [1] : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @reduce_max_grad_element_type(%dy: tensor<4xf64>, %x: tensor<4x3xf32>) {
  // expected-error @+2 {{grad and input must have the same element type, got 'f64' and 'f32'}}
  // expected-error @+1 {{'nn.reduce_max_grad' op failed to infer returned types}}
  %0 = nn.reduce_max_grad %dy, %x [1] : tensor<4xf64>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.softmax' op axis 2 out of range for rank 2}}
  %0 = nn.softmax %x {axis = 2} : tensor<4x3xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.log_softmax' op axis -3 out of range for rank 2}}
  %0 = nn.log_softmax %x {axis = -3} : tensor<4x3xf32>
  return
}

// -----

func.func @one_hot_num_classes(%l: tensor<4xi64>) {
  // expected-error @+2 {{num_classes must be >= 1, got -2}}
  // expected-error @+1 {{'nn.one_hot' op failed to infer returned types}}
  %0 = nn.one_hot %l {num_classes = -2, dtype = f32} : tensor<4xi64> -> tensor<4x2xf32>
  return
}

// -----

func.func @one_hot_dtype(%l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.one_hot' op attribute 'dtype' failed to satisfy constraint: type attribute of 32-bit float or 64-bit float}}
  %0 = nn.one_hot %l {num_classes = 2, dtype = f16} : tensor<4xi64> -> tensor<4x2xf16>
  return
}

// -----

func.func @cross_entropy_label_shape(%x: tensor<32x10xf32>, %l: tensor<16xi64>) {
  // expected-error @+2 {{labels must be [32] to match the logits, got [16]}}
  // expected-error @+1 {{'nn.cross_entropy' op failed to infer returned types}}
  %0 = nn.cross_entropy %x, %l : tensor<32x10xf32>, tensor<16xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_logits_rank(%x: tensor<32xf32>, %l: tensor<32xi64>) {
  // expected-error @+2 {{logits must be [batch, classes], got [32]}}
  // expected-error @+1 {{'nn.cross_entropy' op failed to infer returned types}}
  %0 = nn.cross_entropy %x, %l : tensor<32xf32>, tensor<32xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_labels(%x: tensor<32x10xf32>, %l: tensor<32xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.cross_entropy %x, %l : tensor<32x10xf32>, tensor<32xf32> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_reduction_result(%x: tensor<32x10xf32>, %l: tensor<32xi64>) {
  // expected-error @+2 {{'nn.cross_entropy' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<32xf32>'}}
  // expected-error @+1 {{'nn.cross_entropy' op failed to infer returned types}}
  %0 = nn.cross_entropy %x, %l : tensor<32x10xf32>, tensor<32xi64> -> tensor<32xf32>
  return
}

// -----

func.func @mse_shape(%x: tensor<32x4xf32>, %t: tensor<32x5xf32>) {
  // expected-error @+2 {{input [32, 4] and target [32, 5] must have the same shape}}
  // expected-error @+1 {{'nn.mse_loss' op failed to infer returned types}}
  %0 = nn.mse_loss %x, %t : tensor<32x4xf32>, tensor<32x5xf32> -> tensor<f32>
  return
}

// -----

func.func @mse_element_type(%x: tensor<32x4xf32>, %t: tensor<32x4xf64>) {
  // expected-error @+2 {{input and target must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.mse_loss' op failed to infer returned types}}
  %0 = nn.mse_loss %x, %t : tensor<32x4xf32>, tensor<32x4xf64> -> tensor<f32>
  return
}

// -----

func.func @mse_rank_0(%x: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+2 {{input must have a batch dimension}}
  // expected-error @+1 {{'nn.mse_loss' op failed to infer returned types}}
  %0 = nn.mse_loss %x, %t : tensor<f32>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @conv_channel_mismatch(%x: tensor<8x3x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{weight [6, 1, 5, 5] expects 1 input channels, input has 3}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w : tensor<8x3x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_groups_input_channels(%x: tensor<8x3x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{input channels (3) not divisible by groups (2)}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {groups = 2} : tensor<8x3x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_groups_output_channels(%x: tensor<8x4x28x28xf32>, %w: tensor<5x2x5x5xf32>) {
  // expected-error @+2 {{output channels (5) not divisible by groups (2)}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {groups = 2} : tensor<8x4x28x28xf32>, tensor<5x2x5x5xf32> -> tensor<8x5x24x24xf32>
  return
}

// -----

func.func @conv_groups_zero(%x: tensor<8x4x28x28xf32>, %w: tensor<6x4x5x5xf32>) {
  // expected-error @+2 {{groups must be >= 1, got 0}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {groups = 0} : tensor<8x4x28x28xf32>, tensor<6x4x5x5xf32> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_kernel_too_large(%x: tensor<8x1x4x4xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{kernel [5, 5] does not fit the padded input [8, 1, 4, 4]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w : tensor<8x1x4x4xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x1x1xf32>
  return
}

// -----

func.func @conv_dilated_kernel_too_large(%x: tensor<8x1x6x6xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+2 {{kernel [3, 3] does not fit the padded input [8, 1, 6, 6]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {dilations = array<i64: 3, 1>} : tensor<8x1x6x6xf32>, tensor<6x1x3x3xf32> -> tensor<8x6x1x4xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{bias must be [6], got [5]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w, %b : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<5xf32> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_bias_element_type(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf32>, %b: tensor<6xf64>) {
  // expected-error @+2 {{input and bias must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w, %b : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf64> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_weight_element_type(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf64>) {
  // expected-error @+2 {{input and weight must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf64> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_input_rank(%x: tensor<1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{input must be NCHW (rank 4), got [1, 28, 28]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w : tensor<1x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<6x24x24xf32>
  return
}

// -----

func.func @conv_strides(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{strides must be two values >= 1, got [1, 0]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 0>} : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_padding(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{padding must be [top, left, bottom, right] with values >= 0, got [1, 1]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x26x26xf32>
  return
}

// -----

func.func @conv_dilations(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{dilations must be two values >= 1, got [0, 1]}}
  // expected-error @+1 {{'nn.conv2d' op failed to infer returned types}}
  %0 = nn.conv2d %x, %w {dilations = array<i64: 0, 1>} : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x24x24xf32>
  return
}

// -----

func.func @conv_grad_input_grad_shape(%dy: tensor<8x6x20x20xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{grad has shape [8, 6, 20, 20], but the forward op produces [8, 6, 24, 24]}}
  // expected-error @+1 {{'nn.conv2d_grad_input' op failed to infer returned types}}
  %0 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 28, 28>} : tensor<8x6x20x20xf32>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf32>
  return
}

// -----

func.func @conv_grad_input_input_size(%dy: tensor<8x6x24x24xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{input_size must be two values >= 1, got [28]}}
  // expected-error @+1 {{'nn.conv2d_grad_input' op failed to infer returned types}}
  %0 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 28>} : tensor<8x6x24x24xf32>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf32>
  return
}

// -----

func.func @conv_grad_input_element_type(%dy: tensor<8x6x24x24xf64>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{grad and weight must have the same element type, got 'f64' and 'f32'}}
  // expected-error @+1 {{'nn.conv2d_grad_input' op failed to infer returned types}}
  %0 = nn.conv2d_grad_input %dy, %w {input_size = array<i64: 28, 28>} : tensor<8x6x24x24xf64>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf64>
  return
}

// -----

func.func @conv_grad_weight_grad_shape(%dy: tensor<8x6x24x24xf32>, %x: tensor<8x1x28x28xf32>) {
  // expected-error @+2 {{grad has shape [8, 6, 24, 24], but the forward op produces [8, 6, 26, 26]}}
  // expected-error @+1 {{'nn.conv2d_grad_weight' op failed to infer returned types}}
  %0 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 3, 3>} : tensor<8x6x24x24xf32>, tensor<8x1x28x28xf32> -> tensor<6x1x3x3xf32>
  return
}

// -----

func.func @conv_grad_weight_kernel_size(%dy: tensor<8x6x24x24xf32>, %x: tensor<8x1x28x28xf32>) {
  // expected-error @+2 {{kernel_size must be two values >= 1, got [0, 5]}}
  // expected-error @+1 {{'nn.conv2d_grad_weight' op failed to infer returned types}}
  %0 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 0, 5>} : tensor<8x6x24x24xf32>, tensor<8x1x28x28xf32> -> tensor<6x1x0x5xf32>
  return
}

// -----

func.func @conv_grad_weight_groups(%dy: tensor<8x6x24x24xf32>, %x: tensor<8x3x28x28xf32>) {
  // expected-error @+2 {{input channels (3) not divisible by groups (2)}}
  // expected-error @+1 {{'nn.conv2d_grad_weight' op failed to infer returned types}}
  %0 = nn.conv2d_grad_weight %dy, %x {kernel_size = array<i64: 5, 5>, groups = 2} : tensor<8x6x24x24xf32>, tensor<8x3x28x28xf32> -> tensor<6x1x5x5xf32>
  return
}

// -----

func.func @pool_padding_over_half_kernel(%x: tensor<8x6x28x28xf32>) {
  // expected-error @+2 {{padding must be at most half the kernel size, got [2, 0, 0, 0] for kernel [3, 3]}}
  // expected-error @+1 {{'nn.max_pool2d' op failed to infer returned types}}
  %0 = nn.max_pool2d %x {kernel_size = array<i64: 3, 3>, padding = array<i64: 2, 0, 0, 0>} : tensor<8x6x28x28xf32> -> tensor<8x6x10x9xf32>
  return
}

// -----

func.func @pool_kernel_size(%x: tensor<8x6x28x28xf32>) {
  // expected-error @+2 {{kernel_size must be two values >= 1, got [2]}}
  // expected-error @+1 {{'nn.avg_pool2d' op failed to infer returned types}}
  %0 = nn.avg_pool2d %x {kernel_size = array<i64: 2>} : tensor<8x6x28x28xf32> -> tensor<8x6x14x14xf32>
  return
}

// -----

func.func @pool_window_too_large(%x: tensor<8x6x2x2xf32>) {
  // expected-error @+2 {{window [3, 3] does not fit the input [8, 6, 2, 2]}}
  // expected-error @+1 {{'nn.max_pool2d' op failed to infer returned types}}
  %0 = nn.max_pool2d %x {kernel_size = array<i64: 3, 3>} : tensor<8x6x2x2xf32> -> tensor<8x6x1x1xf32>
  return
}

// -----

func.func @pool_input_rank(%x: tensor<6x28x28xf32>) {
  // expected-error @+2 {{input must be NCHW (rank 4), got [6, 28, 28]}}
  // expected-error @+1 {{'nn.max_pool2d' op failed to infer returned types}}
  %0 = nn.max_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<6x28x28xf32> -> tensor<6x14x14xf32>
  return
}

// -----

func.func @max_pool_grad_shape(%dy: tensor<8x6x13x13xf32>, %x: tensor<8x6x28x28xf32>) {
  // expected-error @+2 {{grad has shape [8, 6, 13, 13], but the forward op produces [8, 6, 14, 14]}}
  // expected-error @+1 {{'nn.max_pool2d_grad' op failed to infer returned types}}
  %0 = nn.max_pool2d_grad %dy, %x {kernel_size = array<i64: 2, 2>} : tensor<8x6x13x13xf32>, tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
  return
}

// -----

func.func @max_pool_grad_element_type(%dy: tensor<8x6x14x14xf64>, %x: tensor<8x6x28x28xf32>) {
  // expected-error @+2 {{grad and input must have the same element type, got 'f64' and 'f32'}}
  // expected-error @+1 {{'nn.max_pool2d_grad' op failed to infer returned types}}
  %0 = nn.max_pool2d_grad %dy, %x {kernel_size = array<i64: 2, 2>} : tensor<8x6x14x14xf64>, tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
  return
}

// -----

func.func @avg_pool_grad_shape(%dy: tensor<8x6x14x14xf32>) {
  // expected-error @+2 {{grad has shape [8, 6, 14, 14], but the forward op produces [8, 6, 15, 15]}}
  // expected-error @+1 {{'nn.avg_pool2d_grad' op failed to infer returned types}}
  %0 = nn.avg_pool2d_grad %dy {kernel_size = array<i64: 2, 2>, input_size = array<i64: 30, 30>} : tensor<8x6x14x14xf32> -> tensor<8x6x30x30xf32>
  return
}

// -----

func.func @avg_pool_grad_input_size(%dy: tensor<8x6x14x14xf32>) {
  // expected-error @+2 {{input_size must be two values >= 1, got [0, 28]}}
  // expected-error @+1 {{'nn.avg_pool2d_grad' op failed to infer returned types}}
  %0 = nn.avg_pool2d_grad %dy {kernel_size = array<i64: 2, 2>, input_size = array<i64: 0, 28>} : tensor<8x6x14x14xf32> -> tensor<8x6x0x28xf32>
  return
}

// -----

func.func @global_avg_pool_rank(%x: tensor<8x6xf32>) {
  // expected-error @+2 {{input must be [N, C, spatial...], got [8, 6]}}
  // expected-error @+1 {{'nn.global_avg_pool' op failed to infer returned types}}
  %0 = nn.global_avg_pool %x : tensor<8x6xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<8x6x4x4xf32>, %c: tensor<6xf32>, %m: tensor<5xf32>) {
  // expected-error @+2 {{running_mean must be [6], got [5]}}
  // expected-error @+1 {{'nn.batch_norm' op failed to infer returned types}}
  %0:3 = nn.batch_norm %x, %c, %c, %m, %c : tensor<8x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>, tensor<5xf32>, tensor<6xf32> -> tensor<8x6x4x4xf32>, tensor<5xf32>, tensor<6xf32>
  return
}

// -----

func.func @batch_norm_sample_weights(%x: tensor<8x6x4x4xf32>, %c: tensor<6xf32>, %w: tensor<6xf32>) {
  // expected-error @+2 {{sample_weights must be [8] (one per sample), got [6]}}
  // expected-error @+1 {{'nn.batch_norm' op failed to infer returned types}}
  %0:3 = nn.batch_norm %x, %c, %c, %c, %c sample_weights %w {training} : tensor<8x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<8x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>
  return
}

// -----

func.func @batch_norm_scale_element_type(%x: tensor<8x6xf32>, %s: tensor<6xf64>, %c: tensor<6xf32>) {
  // expected-error @+2 {{input and scale must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.batch_norm' op failed to infer returned types}}
  %0:3 = nn.batch_norm %x, %s, %c, %c, %c : tensor<8x6xf32>, tensor<6xf64>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<8x6xf32>, tensor<6xf32>, tensor<6xf32>
  return
}

// -----

func.func @batch_norm_momentum(%x: tensor<8x6xf32>, %c: tensor<6xf32>) {
  // expected-error @+2 {{momentum must be in [0, 1], got 1.500000e+00}}
  // expected-error @+1 {{'nn.batch_norm' op failed to infer returned types}}
  %0:3 = nn.batch_norm %x, %c, %c, %c, %c {momentum = 1.5 : f64} : tensor<8x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<8x6xf32>, tensor<6xf32>, tensor<6xf32>
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<8x6xf32>, %c: tensor<6xf32>) {
  // expected-error @+2 {{epsilon must be >= 0, got -1.000000e+00}}
  // expected-error @+1 {{'nn.batch_norm' op failed to infer returned types}}
  %0:3 = nn.batch_norm %x, %c, %c, %c, %c {epsilon = -1.0 : f64} : tensor<8x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<8x6xf32>, tensor<6xf32>, tensor<6xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<8xf32>, %c: tensor<8xf32>) {
  // expected-error @+2 {{input must be [N, C, ...], got [8]}}
  // expected-error @+1 {{'nn.batch_norm' op failed to infer returned types}}
  %0:3 = nn.batch_norm %x, %c, %c, %c, %c : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<4x16x32xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{scale must have the normalised shape [32], got [16]}}
  // expected-error @+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x, %g : tensor<4x16x32xf32>, tensor<16xf32> -> tensor<4x16x32xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<4x16x32xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{bias must have the normalised shape [16, 32], got [32]}}
  // expected-error @+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x bias %b {axis = 1} : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x16x32xf32>) {
  // expected-error @+2 {{axis 3 out of range for rank 3}}
  // expected-error @+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x {axis = 3} : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  return
}

// -----

func.func @layer_norm_scale_element_type(%x: tensor<4x32xf32>, %g: tensor<32xf64>) {
  // expected-error @+2 {{input and scale must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x, %g : tensor<4x32xf32>, tensor<32xf64> -> tensor<4x32xf32>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<4x32xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{ratio must be in [0, 1), got 1.000000e+00}}
  // expected-error @+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %seed {ratio = 1.0} : tensor<4x32xf32>, tensor<i64> -> tensor<4x32xf32>
  return
}

// -----

func.func @dropout_ratio_negative(%x: tensor<4x32xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{ratio must be in [0, 1), got -5.000000e-01}}
  // expected-error @+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %seed {ratio = -0.5} : tensor<4x32xf32>, tensor<i64> -> tensor<4x32xf32>
  return
}

// -----

func.func @dropout_seed_type(%x: tensor<4x32xf32>, %seed: tensor<1xi64>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0 = nn.dropout %x, %seed {ratio = 0.5} : tensor<4x32xf32>, tensor<1xi64> -> tensor<4x32xf32>
  return
}

// -----

func.func @embedding_table_rank(%ids: tensor<4xi64>, %t: tensor<100xf32>) {
  // expected-error @+2 {{table must be [num_embeddings, dim], got [100]}}
  // expected-error @+1 {{'nn.embedding' op failed to infer returned types}}
  %0 = nn.embedding %ids, %t : tensor<4xi64>, tensor<100xf32> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_float_indices(%ids: tensor<4xf32>, %t: tensor<100x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.embedding %ids, %t : tensor<4xf32>, tensor<100x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @embedding_grad_shape(%dy: tensor<5x8xf32>, %ids: tensor<4xi64>) {
  // expected-error @+2 {{grad [5, 8] must be the indices' shape [4] plus one dimension}}
  // expected-error @+1 {{'nn.embedding_grad' op failed to infer returned types}}
  %0 = nn.embedding_grad %dy, %ids {num_embeddings = 100} : tensor<5x8xf32>, tensor<4xi64> -> tensor<100x8xf32>
  return
}

// -----

func.func @embedding_grad_rows(%dy: tensor<4x8xf32>, %ids: tensor<4xi64>) {
  // expected-error @+2 {{num_embeddings must be >= 1, got -1}}
  // expected-error @+1 {{'nn.embedding_grad' op failed to infer returned types}}
  %0 = nn.embedding_grad %dy, %ids {num_embeddings = -1} : tensor<4x8xf32>, tensor<4xi64> -> tensor<1x8xf32>
  return
}

// -----

func.func @clamp_inverted_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.clamp' op min 2.000000e+00 is greater than max 1.000000e+00}}
  %0 = nn.clamp %x, 2.0, 1.0 : tensor<4xf32>
  return
}

// -----

func.func @clamp_grad_nan_bound(%dy: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.clamp_grad' op bounds must not be NaN}}
  %0 = nn.clamp_grad %dy, %x, 0x7FF8000000000000, 1.0 : tensor<4xf32>
  return
}

// -----

func.func @broadcast_to_batch_without_source(%x: tensor<1x3xf32>) {
  // expected-error @+2 {{shape entries must be >= 0, got [-1, 3]}}
  // expected-error @+1 {{'nn.broadcast_to' op failed to infer returned types}}
  %0 = nn.broadcast_to %x [-1, 3] : tensor<1x3xf32> -> tensor<?x3xf32>
  return
}

// -----

func.func @broadcast_to_scalar_batch_source(%x: tensor<1x3xf32>, %s: tensor<i64>) {
  // expected-error @+2 {{the batch source must have a dimension 0}}
  // expected-error @+1 {{'nn.broadcast_to' op failed to infer returned types}}
  %0 = nn.broadcast_to %x [-1, 3] batch_of %s : tensor<1x3xf32>, tensor<i64> -> tensor<?x3xf32>
  return
}

// -----

func.func @where_mask_does_not_broadcast(%m: tensor<3xf32>, %x: tensor<2x4xf32>) {
  // expected-error @+2 {{condition shape [3] and operand shape [2, 4] do not broadcast}}
  // expected-error @+1 {{'nn.where' op failed to infer returned types}}
  %0 = nn.where %m, %x, %x : tensor<3xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @compare_element_types_differ(%ids: tensor<4xi64>, %x: tensor<4xf32>) {
  // expected-error @+2 {{operands must have the same element type, got 'i64' and 'f32'}}
  // expected-error @+1 {{'nn.compare' op failed to infer returned types}}
  %0 = nn.compare <eq>, %ids, %x {dtype = f32} : tensor<4xi64>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @compare_integer_mask(%ids: tensor<4xi64>) {
  // expected-error @+1 {{attribute 'dtype' failed to satisfy constraint}}
  %0 = nn.compare <eq>, %ids, %ids {dtype = i64} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return
}

// -----

func.func @compare_does_not_broadcast(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [3] and [4] do not broadcast}}
  // expected-error @+1 {{'nn.compare' op failed to infer returned types}}
  %0 = nn.compare <lt>, %a, %b {dtype = f32} : tensor<3xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @cast_shape_changes(%x: tensor<4x3xi32>) {
  // expected-error @+2 {{'nn.cast' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{'nn.cast' op failed to infer returned types}}
  %0 = nn.cast %x : tensor<4x3xi32> -> tensor<3x4xf32>
  return
}

// -----

func.func @cast_unsigned_float(%x: tensor<4xf16>) {
  // expected-error @+1 {{'nn.cast' op reads its input as unsigned integers, but the input is 'tensor<4xf16>'}}
  %0 = nn.cast unsigned %x : tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

func.func @cast_rank_changes(%x: tensor<4x3xf64>) {
  // expected-error @+2 {{'nn.cast' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<12xf32>'}}
  // expected-error @+1 {{'nn.cast' op failed to infer returned types}}
  %0 = nn.cast %x : tensor<4x3xf64> -> tensor<12xf32>
  return
}

// -----

func.func @cast_to_unsupported_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'dtype' failed to satisfy constraint}}
  %0 = nn.cast %x : tensor<4xf32> -> tensor<4xf8E4M3FN>
  return
}

// -----

func.func @cast_from_unsupported_type(%x: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = nn.cast %x : tensor<4xi1> -> tensor<4xf32>
  return
}

// -----

func.func @cast_dtype_not_result_type(%x: tensor<4xi64>) {
  // expected-error @+2 {{'nn.cast' op inferred type(s) 'tensor<4xf64>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'nn.cast' op failed to infer returned types}}
  %0 = "nn.cast"(%x) <{dtype = f64}> : (tensor<4xi64>) -> tensor<4xf32>
  return
}

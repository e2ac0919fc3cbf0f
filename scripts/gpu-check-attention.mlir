// The GPU check's attention model (scripts/gpu-check.sh, bf16 stage): a
// classifier of the transformer rows' token data (ids below 50 in
// sequences of 8, five classes) through one block of causal
// self-attention, two heads of 8 (a head dimension cuDNN's fused attention
// takes), so that --target=cuda --precision=bf16 runs it as the sdpa
// kernels (docs/design/attention.md) while its CPU twin spells it out.
func.func @forward(
    %ids: tensor<?x8xi64> {train.input = "ids"},
    %e: tensor<50x16xf32> {train.param = "embed.weight", train.init = #train.init<normal, 0.0, 1.0>},
    %wq: tensor<16x16xf32> {train.param = "q.weight", train.init = #train.init<kaiming_uniform>},
    %wk: tensor<16x16xf32> {train.param = "k.weight", train.init = #train.init<kaiming_uniform>},
    %wv: tensor<16x16xf32> {train.param = "v.weight", train.init = #train.init<kaiming_uniform>},
    %wo: tensor<16x16xf32> {train.param = "o.weight", train.init = #train.init<kaiming_uniform>},
    %wh: tensor<5x16xf32> {train.param = "head.weight", train.init = #train.init<kaiming_uniform>},
    %bh: tensor<5xf32> {train.param = "head.bias", train.init = #train.init<fan_in_uniform, 16.0>})
    -> tensor<?x5xf32> {
  %x = nn.embedding %ids, %e : tensor<?x8xi64>, tensor<50x16xf32> -> tensor<?x8x16xf32>
  %q = nn.linear %x, %wq : tensor<?x8x16xf32>, tensor<16x16xf32> -> tensor<?x8x16xf32>
  %k = nn.linear %x, %wk : tensor<?x8x16xf32>, tensor<16x16xf32> -> tensor<?x8x16xf32>
  %v = nn.linear %x, %wv : tensor<?x8x16xf32>, tensor<16x16xf32> -> tensor<?x8x16xf32>
  %q4 = nn.reshape %q [-1, 8, 2, 8] : tensor<?x8x16xf32> -> tensor<?x8x2x8xf32>
  %k4 = nn.reshape %k [-1, 8, 2, 8] : tensor<?x8x16xf32> -> tensor<?x8x2x8xf32>
  %v4 = nn.reshape %v [-1, 8, 2, 8] : tensor<?x8x16xf32> -> tensor<?x8x2x8xf32>
  %qh = nn.transpose %q4 [0, 2, 1, 3] : tensor<?x8x2x8xf32> -> tensor<?x2x8x8xf32>
  %kh = nn.transpose %k4 [0, 2, 1, 3] : tensor<?x8x2x8xf32> -> tensor<?x2x8x8xf32>
  %vh = nn.transpose %v4 [0, 2, 1, 3] : tensor<?x8x2x8xf32> -> tensor<?x2x8x8xf32>
  %a = nn.attention %qh, %kh, %vh {scale = 2.8284271247461903 : f64, scale_is_divisor, causal} : tensor<?x2x8x8xf32>, tensor<?x2x8x8xf32>, tensor<?x2x8x8xf32> -> tensor<?x2x8x8xf32>
  %at = nn.transpose %a [0, 2, 1, 3] : tensor<?x2x8x8xf32> -> tensor<?x8x2x8xf32>
  %a3 = nn.reshape %at [-1, 8, 16] : tensor<?x8x2x8xf32> -> tensor<?x8x16xf32>
  %o = nn.linear %a3, %wo : tensor<?x8x16xf32>, tensor<16x16xf32> -> tensor<?x8x16xf32>
  %r = nn.add %x, %o : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x16xf32>
  %m = nn.reduce_mean %r [1] : tensor<?x8x16xf32> -> tensor<?x16xf32>
  %h = nn.linear %m, %wh, %bh : tensor<?x16xf32>, tensor<5x16xf32>, tensor<5xf32> -> tensor<?x5xf32>
  return %h : tensor<?x5xf32>
}

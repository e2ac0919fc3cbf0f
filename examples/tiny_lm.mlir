// A tiny byte-level language model for the end-to-end tests of token
// datasets: each token's embedding, a ReLU layer and a head over the
// vocabulary give next-token logits [B, T, vocab] (a bigram model: no token
// sees another). Vocabulary 256 (bytes), sequences of 8 tokens, the layout
// scripts/make-text-corpus.py --seq-len=8 writes. cleave-compile's
// cross-entropy is then a loss per token, and labels equal to
// --ignore-index (default -100) are not trained on (docs/design/split.md).
//
//   cleave-compile examples/tiny_lm.mlir --optimizer=adam --lr=0.01 \
//       --micro-batch=8 --accumulate=2 -o tiny_lm.cleave
func.func @forward(
    %ids: tensor<?x8xi64> {train.input = "ids"},
    %e: tensor<256x16xf32> {train.param = "embed.weight", train.init = #train.init<normal, 0.0, 1.0>},
    %w1: tensor<32x16xf32> {train.param = "fc.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<32xf32> {train.param = "fc.bias", train.init = #train.init<fan_in_uniform, 16.0>},
    %w2: tensor<256x32xf32> {train.param = "head.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<256xf32> {train.param = "head.bias", train.init = #train.init<fan_in_uniform, 32.0>})
    -> tensor<?x8x256xf32> {
  %0 = nn.embedding %ids, %e : tensor<?x8xi64>, tensor<256x16xf32> -> tensor<?x8x16xf32>
  %1 = nn.linear %0, %w1, %b1 : tensor<?x8x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<?x8x32xf32>
  %2 = nn.relu %1 : tensor<?x8x32xf32>
  %3 = nn.linear %2, %w2, %b2 : tensor<?x8x32xf32>, tensor<256x32xf32>, tensor<256xf32> -> tensor<?x8x256xf32>
  return %3 : tensor<?x8x256xf32>
}

// A model whose own data input is called "weights": a forward-only artifact
// passes it on as data (test/tools/cleave-compile.mlir, NAMED-WEIGHTS).
func.func @forward(%x: tensor<?x4xf32> {train.input = "weights"},
                   %w: tensor<3x4xf32> {train.param = "w", train.init = #train.init<zeros>})
    -> tensor<?x3xf32> {
  %y = nn.linear %x, %w : tensor<?x4xf32>, tensor<3x4xf32> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

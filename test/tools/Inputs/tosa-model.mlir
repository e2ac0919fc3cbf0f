// A model in a dialect Cleave does not take (tools/cleave-compile.mlir,
// UNKNOWN-DIALECT): the parser refuses it by name.
func.func @model(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = tosa.abs %x : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

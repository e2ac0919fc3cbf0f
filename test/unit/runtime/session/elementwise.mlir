// A model whose every op is a generated loop nest (no cuBLASLt or cuDNN
// kernel), so that a real cuda artifact of it opens a session on the fake
// CUDA driver: FakeGpuTest compares the device memory that session
// allocates with the artifact's memory report.
func.func @forward(
    %x: tensor<?x256xf32> {train.input = "x"},
    %w: tensor<256xf32> {train.param = "w", train.init = #train.init<ones>},
    %b: tensor<256xf32> {train.param = "b", train.init = #train.init<zeros>})
    -> tensor<?x256xf32> {
  %0 = nn.mul %x, %w : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %1 = nn.add %0, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return %1 : tensor<?x256xf32>
}

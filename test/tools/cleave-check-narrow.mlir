// cleave-check draws random inputs only where a distribution stands for the
// data (f32/f64 from N(0, 1), i32/i64 labels below their class count); a
// uint8 image input is refused, naming it and the way out, rather than fed
// zeros that would make any pair of artifacts agree.
//
// RUN: %python %cleave_src/test/Frontend/Onnx/Inputs/make_model.py uint8_linear %t.onnx
// RUN: not cleave-check %t.onnx --loss=cross-entropy --micro-batch=4 --accumulate=2 2>&1 | FileCheck %s
// CHECK: input 'x' is u8 [4, 4], and cleave-check draws random values only for f32/f64 data and i32/i64 labels; give samples with --data

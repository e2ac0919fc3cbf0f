// Below opset 13, a model imports when each op has there the definition it
// has at 13 (Conv-11) or one that only allows fewer types (Relu-6; opset 13
// added bfloat16 to it). errors.mlir has the refusal of one that changed
// (Squeeze-11).
//
// RUN: %python %S/Inputs/make_model.py opset11_conv %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK: nn.conv2d
// CHECK: nn.relu

// The supported-operator table of docs/user/onnx.md is what the importer's
// registry says (`cleave-opt --list-onnx-ops`); regenerate it with
// `ninja -C build update-onnx-ops-doc`.
//
// RUN: %python %S/../../../scripts/update-onnx-ops-doc.py --check %S/../../../docs/user/onnx.md cleave-opt
// RUN: cleave-opt --list-onnx-ops | FileCheck %s

// CHECK: | ONNX op | from opset | notes |
// CHECK: | `Gelu` | 20 |
// CHECK: | `LayerNormalization` | 17 |

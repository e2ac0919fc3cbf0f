// Data in the narrow types (uint8 pixels, int8, float16): the graph takes
// and returns them as they are (the manifest's u8, i8, f16), computes in a
// wider carrier (i32, f32), and brings every result back into its type's
// values, so each op gives what it gives in the narrow type: uint8 addition
// and int8 negation wrap around, float16 products round to float16.
//
// RUN: %python %S/Inputs/make_model.py narrow_types %t.onnx
// RUN: cleave-opt --import-onnx %t.onnx | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[P:[a-z0-9_]+]]: tensor<?x4xi8> {train.input = "p", train.unsigned},
// CHECK-SAME:    %[[S:[a-z0-9_]+]]: tensor<?x4xi8> {train.input = "s"},
// CHECK-SAME:    %[[H:[a-z0-9_]+]]: tensor<?x4xf16> {train.input = "h"})
// CHECK-SAME:    -> (tensor<?x4xi8> {train.unsigned}, tensor<?x4xi8>, tensor<?x4xf16>, tensor<?x4xf32>)
// The uint8 initializer, in the carrier.
// CHECK-DAG:     %[[BIAS:.+]] = arith.constant dense<[0, 1, 128, 255]> : tensor<4xi32>
// CHECK-DAG:     %[[PW:.+]] = nn.cast unsigned %[[P]] : tensor<?x4xi8> -> tensor<?x4xi32>
// CHECK-DAG:     %[[SW:.+]] = nn.cast %[[S]] : tensor<?x4xi8> -> tensor<?x4xi32>
// CHECK-DAG:     %[[HW:.+]] = nn.cast %[[H]] : tensor<?x4xf16> -> tensor<?x4xf32>
// CHECK:         %[[SUM:.+]] = nn.add %[[PW]], %[[BIAS]]
// CHECK-NEXT:    %[[SUM8:.+]] = nn.cast %[[SUM]] : tensor<?x4xi32> -> tensor<?x4xi8>
// CHECK-NEXT:    %[[SUMW:.+]] = nn.cast unsigned %[[SUM8]] : tensor<?x4xi8> -> tensor<?x4xi32>
// CHECK-NEXT:    %[[NEG:.+]] = nn.neg %[[SW]]
// CHECK-NEXT:    %[[NEG8:.+]] = nn.cast %[[NEG]] : tensor<?x4xi32> -> tensor<?x4xi8>
// CHECK-NEXT:    %[[NEGW:.+]] = nn.cast %[[NEG8]] : tensor<?x4xi8> -> tensor<?x4xi32>
// CHECK-NEXT:    %[[SQ:.+]] = nn.mul %[[HW]], %[[HW]]
// CHECK-NEXT:    %[[SQ16:.+]] = nn.cast %[[SQ]] : tensor<?x4xf32> -> tensor<?x4xf16>
// CHECK-NEXT:    %[[SQW:.+]] = nn.cast %[[SQ16]] : tensor<?x4xf16> -> tensor<?x4xf32>
// The outputs leave in their types (cleave-opt's canonicalisation folds
// each round trip).
// CHECK-NEXT:    %[[Y0:.+]] = nn.cast %[[SUMW]] : tensor<?x4xi32> -> tensor<?x4xi8>
// CHECK-NEXT:    %[[Y1:.+]] = nn.cast %[[NEGW]] : tensor<?x4xi32> -> tensor<?x4xi8>
// CHECK-NEXT:    %[[Y2:.+]] = nn.cast %[[SQW]] : tensor<?x4xf32> -> tensor<?x4xf16>
// CHECK-NEXT:    return %[[Y0]], %[[Y1]], %[[Y2]], %[[HW]]

// Run: the runtime takes and prints the narrow types; text values are
// checked against their type's range and rounded to nearest even.
// REQUIRES: cleave-runtime
// RUN: cleave-compile %t.onnx --inference --micro-batch=1 -o %t.cleave
// RUN: cleave-run %t.cleave --precision=9 --input p=250,1,200,3 --input s=-128,5,127,0 --input h=300,0.1,65519,4e-8 | FileCheck %s --check-prefix=EXEC
// RUN: not cleave-run %t.cleave --input p=256 2>&1 | FileCheck %s --check-prefix=RANGE

// EXEC:      eval_step.prediction: u8 [1, 4]
// EXEC-NEXT:   [0] 250 2 72 2
// EXEC:      eval_step.output1: i8 [1, 4]
// EXEC-NEXT:   [0] -128 -5 -127 0
// 300^2 overflows float16; 0.1 is 0.0999755859 in float16.
// EXEC:      eval_step.output2: f16 [1, 4]
// EXEC-NEXT:   [0] inf 0.00999450684 inf 0
// 65519 rounds to float16's largest, 65504; 4e-8 to its smallest subnormal.
// EXEC:      eval_step.output3: f32 [1, 4]
// EXEC-NEXT:   [0] 300 0.0999755859 65504 5.96046448e-08

// RANGE: error: --input p: '256' is not a u8 integer

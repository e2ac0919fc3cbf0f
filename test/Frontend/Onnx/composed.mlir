// ONNX ops the importer composes of nn ops (so their gradients follow from
// the ops'): the activations, reductions, LRN and the depth/space moves. The
// ONNX backend node tests (test/onnx-node) check their values.
//
// RUN: %python %S/Inputs/make_model.py composed_activations %t.act.onnx
// RUN: cleave-opt --import-onnx %t.act.onnx | FileCheck %s --check-prefix=ACT
// PRelu's slope is a parameter: the training step differentiates through it.
// RUN: cleave-compile %t.act.onnx --micro-batch=4 --loss=mse --compile-to=split | FileCheck %s --check-prefix=ACT-TRAIN
// RUN: %python %S/Inputs/make_model.py depth_space %t.ds.onnx
// RUN: cleave-opt --import-onnx %t.ds.onnx | FileCheck %s --check-prefix=DS
// RUN: %python %S/Inputs/make_model.py log_sum_exp %t.lse.onnx
// RUN: cleave-opt --import-onnx %t.lse.onnx | FileCheck %s --check-prefix=LSE
// RUN: %python %S/Inputs/make_model.py lrn %t.lrn.onnx
// RUN: cleave-opt --import-onnx %t.lrn.onnx | FileCheck %s --check-prefix=LRN
// RUN: %python %S/Inputs/make_model.py trig_round_pow %t.trig.onnx
// RUN: cleave-opt --import-onnx %t.trig.onnx | FileCheck %s --check-prefix=TRIG
// RUN: %python %S/Inputs/make_model.py integer_ops %t.int.onnx
// RUN: cleave-opt --import-onnx %t.int.onnx | FileCheck %s --check-prefix=INT
// RUN: %python %S/Inputs/make_model.py isnan_f64 %t.isnan.onnx
// RUN: cleave-opt --import-onnx %t.isnan.onnx | FileCheck %s --check-prefix=ISNAN
// RUN: %python %S/Inputs/make_model.py depth_to_space_bad_block %t.bad.onnx
// RUN: not cleave-opt --import-onnx %t.bad.onnx 2>&1 | FileCheck %s --check-prefix=BAD

// Elu(alpha 0.5): relu(x) + 0.5 * (exp(min(x, 0)) - 1), the exponential
// never of a positive number; then PRelu as a select.
// ACT-LABEL: func.func @forward(
// ACT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3x4xf32> {train.input = "x"}
// ACT-SAME:    %[[SLOPE:[a-z0-9_]+]]: tensor<3x1xf32> {{{.*}}train.param = "slope"}
// ACT-DAG:       %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// ACT-DAG:       %[[HALF:.+]] = arith.constant dense<5.000000e-01> : tensor<f32>
// ACT-DAG:       %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// ACT:           %[[NEG:.+]] = nn.clamp %[[X]], 0xFFF0000000000000, 0.000000e+00
// ACT-NEXT:      %[[E:.+]] = nn.exp %[[NEG]]
// ACT-NEXT:      %[[EM1:.+]] = nn.sub %[[E]], %[[ONE]]
// ACT-NEXT:      %[[SCALED:.+]] = nn.mul %[[HALF]], %[[EM1]]
// ACT-NEXT:      %[[POS:.+]] = nn.relu %[[X]]
// ACT-NEXT:      %[[ELU:.+]] = nn.add %[[POS]], %[[SCALED]]
// ACT-NEXT:      %[[LEAK:.+]] = nn.mul %[[SLOPE]], %[[ELU]] : tensor<3x1xf32>, tensor<?x3x4xf32>
// ACT-NEXT:      %[[BELOW:.+]] = nn.compare <lt>, %[[ELU]], %[[ZERO]] {dtype = f32}
// ACT-NEXT:      %[[Y:.+]] = nn.where %[[BELOW]], %[[LEAK]], %[[ELU]]
// ACT-NEXT:      return %[[Y]]

// ACT-TRAIN:       train.global accumulator @slope.grad of @slope : tensor<3x1xf32>
// ACT-TRAIN-LABEL: func.func @micro_step(
// ACT-TRAIN:         %[[SLOPE:.+]] = train.load @slope : tensor<3x1xf32>
// ACT-TRAIN:         nn.where
// The slope's gradient, the input where it is negative, summed over the
// batch and the broadcast columns, accumulates into its buffer.
// ACT-TRAIN:         %[[SUM:.+]] = nn.reduce_sum %{{.+}} [0, 2] {keepdims} : tensor<4x3x4xf32> -> tensor<1x3x1xf32>
// ACT-TRAIN-NEXT:    %[[GRAD:.+]] = nn.reshape %[[SUM]] [3, 1]
// ACT-TRAIN:         train.accumulate %[[GRAD]], @slope.grad
// ACT-TRAIN-LABEL: func.func @apply_step(

// DepthToSpace in CRD mode (pixel_shuffle) and SpaceToDepth: reshape,
// transpose, reshape, the batch dimension kept as -1.
// DS-LABEL: func.func @forward(
// DS:         nn.reshape %{{.+}} [-1, 2, 2, 2, 3, 5] : tensor<?x8x3x5xf32> -> tensor<?x2x2x2x3x5xf32>
// DS-NEXT:    nn.transpose %{{.+}} [0, 1, 4, 2, 5, 3] : tensor<?x2x2x2x3x5xf32> -> tensor<?x2x3x2x5x2xf32>
// DS-NEXT:    nn.reshape %{{.+}} [-1, 2, 6, 10]
// DS-NEXT:    nn.reshape %{{.+}} [-1, 2, 3, 2, 5, 2]
// DS-NEXT:    nn.transpose %{{.+}} [0, 3, 5, 1, 2, 4] : tensor<?x2x3x2x5x2xf32> -> tensor<?x2x2x2x3x5xf32>
// DS-NEXT:    nn.reshape %{{.+}} [-1, 8, 3, 5] : tensor<?x2x2x2x3x5xf32> -> tensor<?x8x3x5xf32>

// ReduceLogSumExp: the maximum (0 where infinite) is subtracted before the
// exponential and added after the logarithm.
// LSE-LABEL: func.func @forward(
// LSE-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x4xf32>
// LSE-DAG:     %[[INF:.+]] = arith.constant dense<0x7F800000> : tensor<f32>
// LSE:         %[[M:.+]] = nn.reduce_max %[[X]] [1] {keepdims}
// LSE-NEXT:    %[[MABS:.+]] = nn.leaky_relu %[[M]] {alpha = -1.000000e+00 : f64}
// LSE-NEXT:    %[[INFINITE:.+]] = nn.compare <eq>, %[[MABS]], %[[INF]]
// LSE-NEXT:    %[[SAFE:.+]] = nn.where %[[INFINITE]], %{{.+}}, %[[M]]
// LSE-NEXT:    %[[SHIFTED:.+]] = nn.sub %[[X]], %[[SAFE]]
// LSE-NEXT:    %[[E:.+]] = nn.exp %[[SHIFTED]]
// LSE-NEXT:    %[[SUM:.+]] = nn.reduce_sum %[[E]] [1] : tensor<?x4xf32> -> tensor<?xf32>
// LSE-NEXT:    %[[LOG:.+]] = nn.log %[[SUM]]
// LSE:         %[[Y:.+]] = nn.add %[[LOG]], %{{.+}} : tensor<?xf32>, tensor<?xf32>
// LSE-NEXT:    return %[[Y]]

// LRN(size 3): the window of channels c-1..c+1 is a band matrix.
// LRN-LABEL: func.func @forward(
// LRN-DAG:     %[[BAND:.+]] = arith.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 1.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00]]> : tensor<4x4xf32>
// LRN:         %[[SQ:.+]] = nn.mul %[[X:.+]], %[[X]]
// LRN-NEXT:    %[[LAST:.+]] = nn.transpose %[[SQ]] [0, 2, 3, 1]
// LRN-NEXT:    %[[SUMS:.+]] = nn.matmul %[[LAST]], %[[BAND]]
// LRN-NEXT:    nn.transpose %[[SUMS]] [0, 3, 1, 2]
// LRN:         %[[DIV:.+]] = nn.pow %{{.+}}, 5.000000e-01
// LRN-NEXT:    nn.div %[[X]], %[[DIV]]

// Tan is sin / cos; Pow with a run-time tensor of exponents is nn.powf.
// TRIG-LABEL: func.func @forward(
// TRIG-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "x"}
// TRIG-SAME:    %[[E:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "e"}
// TRIG:         %[[S:.+]] = nn.sin %[[X]]
// TRIG-NEXT:    %[[C:.+]] = nn.cos %[[X]]
// TRIG-NEXT:    %[[T:.+]] = nn.div %[[S]], %[[C]]
// TRIG-NEXT:    %[[R:.+]] = nn.round %[[T]]
// TRIG-NEXT:    %[[Y:.+]] = nn.powf %[[R]], %[[E]]
// TRIG-NEXT:    return %[[Y]]

// Integer tensors compute in nn's integer ops; an integer base is raised in
// f64 and truncated back.
// INT-LABEL: func.func @forward(
// INT-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xi64> {train.input = "x"}
// INT-SAME:    %[[Y:[a-z0-9_]+]]: tensor<?x3xi64> {train.input = "y"}
// INT-SAME:    %[[E:[a-z0-9_]+]]: tensor<?x3xf32> {train.input = "e"}
// INT:         %[[M:.+]] = nn.maximum %[[X]], %[[Y]] : tensor<?x3xi64>, tensor<?x3xi64> -> tensor<?x3xi64>
// INT-NEXT:    %[[Q:.+]] = nn.div %[[M]], %[[Y]] : tensor<?x3xi64>
// INT-NEXT:    %[[N:.+]] = nn.neg %[[Q]] : tensor<?x3xi64>
// INT-NEXT:    %[[B:.+]] = nn.cast %[[N]] : tensor<?x3xi64> -> tensor<?x3xf64>
// INT-NEXT:    %[[EW:.+]] = nn.cast %[[E]] : tensor<?x3xf32> -> tensor<?x3xf64>
// INT-NEXT:    %[[P:.+]] = nn.powf %[[B]], %[[EW]]
// INT-NEXT:    %[[OUT:.+]] = nn.cast %[[P]] : tensor<?x3xf64> -> tensor<?x3xi64>
// INT-NEXT:    return %[[OUT]]

// IsNaN of f64 data is an ONNX boolean: the importer's f32 mask, which Not
// (like every boolean consumer) takes.
// ISNAN-LABEL: func.func @forward(
// ISNAN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x3xf64>
// ISNAN:         %[[NAN:.+]] = nn.compare <ne>, %[[X]], %[[X]] {dtype = f32} : tensor<?x3xf64>, tensor<?x3xf64> -> tensor<?x3xf32>
// ISNAN-NEXT:    %[[NOT:.+]] = nn.compare <eq>, %[[NAN]], %{{.+}} {dtype = f32}
// ISNAN-NEXT:    return %[[NOT]]

// BAD: error: DepthToSpace blocksize 3 does not divide the channels of 'tensor<?x8x3x5xf32>'
// BAD: note: while importing ONNX node 'out' (DepthToSpace, opset 13)

// RNN, GRU and LSTM are unrolled over their static sequence length into nn
// ops (the ONNX backend node tests check their values, and the oracle's
// recurrent cases their training against PyTorch's).
//
// RUN: %python %S/Inputs/make_model.py rnn_reverse %t.rnn.onnx
// RUN: cleave-opt --import-onnx %t.rnn.onnx | FileCheck %s --check-prefix=RNN
// RUN: %python %S/Inputs/make_model.py lstm_input_forget %t.lstm.onnx
// RUN: not cleave-opt --import-onnx %t.lstm.onnx 2>&1 | FileCheck %s --check-prefix=FORGET
// RUN: %python %S/Inputs/make_model.py gru_leaky %t.gru.onnx
// RUN: not cleave-opt --import-onnx %t.gru.onnx 2>&1 | FileCheck %s --check-prefix=LEAKY

// A reverse RNN in layout 1 (batch first): the sequence and the initial
// state are transposed to time first, the input projection of the whole
// sequence is one product, and the steps run from the last to the first;
// the outputs come back in time order and batch first.
// RNN-LABEL: func.func @forward(
// RNN-SAME:    %[[X:[a-z0-9_]+]]: tensor<?x2x4xf32> {train.input = "x"}
// RNN-SAME:    %[[H0:[a-z0-9_]+]]: tensor<?x1x3xf32> {train.input = "h0"}
// RNN:         %[[XT:.+]] = nn.transpose %[[X]] [1, 0, 2] : tensor<?x2x4xf32> -> tensor<2x?x4xf32>
// RNN:         %[[PROJ:.+]] = nn.linear %[[XT]], %{{.+}} : tensor<2x?x4xf32>, tensor<3x4xf32> -> tensor<2x?x3xf32>
// RNN:         nn.slice %[[PROJ]] starts [1, 0, 0] sizes [1, -1, 3]
// RNN:         %[[S1:.+]] = nn.relu
// RNN:         %[[Y1:.+]] = nn.reshape %[[S1]] [1, 1, -1, 3]
// RNN:         nn.slice %[[PROJ]] starts [0, 0, 0] sizes [1, -1, 3]
// RNN:         nn.linear %[[S1]], %{{.+}} : tensor<?x3xf32>, tensor<3x3xf32>
// RNN:         %[[S0:.+]] = nn.relu
// RNN:         %[[Y0:.+]] = nn.reshape %[[S0]] [1, 1, -1, 3]
// RNN:         %[[LAST:.+]] = nn.reshape %[[S0]] [1, -1, 3]
// RNN:         %[[Y:.+]] = nn.concat %[[Y0]], %[[Y1]] {axis = 0 : i64}
// RNN:         %[[YB:.+]] = nn.transpose %[[Y]] [2, 0, 1, 3] : tensor<2x1x?x3xf32> -> tensor<?x2x1x3xf32>
// RNN:         %[[HB:.+]] = nn.transpose %[[LAST]] [1, 0, 2] : tensor<1x?x3xf32> -> tensor<?x1x3xf32>
// RNN:         return %[[YB]], %[[HB]]

// FORGET: error: LSTM input_forget = 1 (coupled input and forget gates) is not supported
// LEAKY: error: GRU activation 'LeakyRelu' is not supported (Sigmoid, Tanh and Relu are)

// optimizer.step(); optimizer.zero_grad(): the train dialect's update ops on
// parameters, gradients and state, hyperparameters as scalar inputs (never
// constants), results stored back in place, gradients zeroed.

// RUN: cleave-trace-ir sgd-step | FileCheck %s --check-prefix=SGD
// RUN: cleave-trace-ir momentum-step | FileCheck %s --check-prefix=MOMENTUM
// RUN: cleave-trace-ir adam-step | FileCheck %s --check-prefix=ADAM

// SGD-LABEL: func.func @graph(
// SGD-SAME:    %[[LR:arg[0-9]+]]: tensor<f32> {train.input = "in0"}, %[[WD:arg[0-9]+]]: tensor<f32> {train.input = "in1"}) attributes {train.entry = "graph"}
// SGD-DAG:     %[[ZERO:cst[_0-9]*]] = arith.constant dense<0.000000e+00> : tensor<12x16xf32>
// SGD:         %[[P:[0-9]+]] = train.load @param0 : tensor<12x16xf32>
// SGD:         %[[G:[0-9]+]] = train.load @grad0 : tensor<12x16xf32>
// SGD:         %[[NEW:[0-9]+]] = train.sgd %[[P]], %[[G]] lr %[[LR]] weight_decay %[[WD]]
// SGD-COUNT-3: train.sgd
// SGD:         train.store %[[NEW]], @param0 : tensor<12x16xf32>
// SGD:         train.store %[[ZERO]], @grad0 : tensor<12x16xf32>
// SGD-NOT:     train.accumulate
// SGD:         return

// MOMENTUM-LABEL: train.global state @state0 of @param0 : tensor<3x16xf32>
// MOMENTUM:       func.func @graph(%[[LR:arg[0-9]+]]: tensor<f32> {train.input = "in0"}, %[[M:arg[0-9]+]]: tensor<f32> {train.input = "in1"}, %[[WD:arg[0-9]+]]: tensor<f32> {train.input = "in2"})
// MOMENTUM:         %[[P:[a-z_0-9]+]], %[[BUF:[a-z_0-9]+]] = train.momentum %{{.+}}, %{{.+}}, %{{.+}} lr %[[LR]] momentum %[[M]] weight_decay %[[WD]] {nesterov}
// MOMENTUM:         train.store %[[P]], @param0
// MOMENTUM:         train.store %[[BUF]], @state0

// ADAM-LABEL: train.global state @state1 of @param0 : tensor<3x16xf32>
// ADAM:       func.func @graph(%[[STEP:arg[0-9]+]]: tensor<i64> {train.input = "in0"}, %[[LR:arg[0-9]+]]: tensor<f32> {train.input = "in1"}
// ADAM:         %[[P:[a-z_0-9]+]], %[[M:[a-z_0-9]+]], %[[V:[a-z_0-9]+]] = train.adam %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} step %[[STEP]] lr %[[LR]] betas %{{.+}}, %{{.+}} eps %{{.+}} weight_decay %{{.+}} {decoupled}
// ADAM:         train.store %[[P]], @param0
// ADAM:         train.store %[[M]], @state0
// ADAM:         train.store %[[V]], @state1

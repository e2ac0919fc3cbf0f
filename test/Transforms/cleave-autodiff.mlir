// RUN: split-file --leading-lines %s %t
// RUN: cleave-opt %t/default.mlir --split-input-file --verify-diagnostics --cleave-autodiff | FileCheck %s --check-prefix=AD
// RUN: cleave-opt %t/named.mlir --split-input-file --verify-diagnostics --cleave-autodiff=function=f | FileCheck %s --check-prefix=NAMED
// RUN: not cleave-opt %t/named.mlir --split-input-file --cleave-autodiff=function=nope 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING: error: no function named @nope

//--- default.mlir

// The gradient function keeps the arguments and results of the source, then
// returns one gradient per train.param argument, in argument order. A value
// used twice (%pre feeds relu and add) gets the sum of both cotangents; the
// data input gets no cotangent; the unused parameter gets a zero gradient.

// AD-LABEL: func.func @loss(
// AD-NOT: nn.relu_grad
// AD-LABEL: func.func @loss_grad(
// AD-SAME: %[[X:[^:]+]]: tensor<8x4xf32> {train.input = "x"},
// AD-SAME: %[[W:[^:]+]]: tensor<3x4xf32> {train.param = "w"},
// AD-SAME: %[[B:[^:]+]]: tensor<3xf32> {train.param = "b"},
// AD-SAME: %[[U:[^:]+]]: tensor<5xf32> {train.param = "unused"},
// AD-SAME: %[[L:[^:]+]]: tensor<8xi64> {train.input = "labels"})
// AD-SAME: -> (tensor<f32> {train.output = "loss"}, tensor<3x4xf32> {train.grad_of = "w"}, tensor<3xf32> {train.grad_of = "b"}, tensor<5xf32> {train.grad_of = "unused"})
// AD-SAME: attributes {train.gradient_of = @loss}
// AD: %[[PRE:.+]] = nn.linear %[[X]], %[[W]], %[[B]]
// AD: %[[ACT:.+]] = nn.relu %[[PRE]]
// AD: %[[SUM:.+]] = nn.add %[[PRE]], %[[ACT]]
// AD: %[[LOSS:.+]] = nn.cross_entropy %[[SUM]], %[[L]]
// AD: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// AD: nn.softmax %[[SUM]]
// AD: %[[DACT:.+]] = nn.relu_grad %[[DSUM:.+]], %[[PRE]]
// AD: %[[DPRE:.+]] = nn.add %[[DSUM]], %[[DACT]] : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
// AD: %[[DW:.+]] = nn.matmul %[[DPRE]], %[[X]] {transpose_a} : tensor<8x3xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
// AD-NOT: nn.matmul %[[DPRE]], %[[W]]
// AD: %[[DB1:.+]] = nn.reduce_sum %[[DPRE]] [0] {keepdims}
// AD: %[[DB:.+]] = nn.reshape %[[DB1]] [3]
// AD-NOT: nn.matmul
// AD: %[[DU:.+]] = arith.constant dense<0.000000e+00> : tensor<5xf32>
// AD: return %[[LOSS]], %[[DW]], %[[DB]], %[[DU]]
func.func @loss(%x: tensor<8x4xf32> {train.input = "x"},
                %w: tensor<3x4xf32> {train.param = "w"},
                %b: tensor<3xf32> {train.param = "b"},
                %u: tensor<5xf32> {train.param = "unused"},
                %l: tensor<8xi64> {train.input = "labels"})
    -> (tensor<f32> {train.output = "loss"}) {
  %pre = nn.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %act = nn.relu %pre : tensor<8x3xf32>
  %sum = nn.add %pre, %act : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %loss = nn.cross_entropy %sum, %l : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Only what the loss needs from a parameter is differentiated: the product
// needs the cotangent of %w only (dy * x, never dy * w); %side depends on a
// parameter but not the loss and %data depends on no parameter, so neither
// gets a VJP. Extra results pass through.

// AD-LABEL: func.func @partial_grad(
// AD-SAME: %[[X:[^:]+]]: tensor<4x3xf32>, %[[W:[^:]+]]: tensor<4x3xf32> {train.param = "w"})
// AD-SAME: -> (tensor<f32>, tensor<4x3xf32>, tensor<4x3xf32> {train.grad_of = "w"})
// AD: %[[SIDE:.+]] = nn.exp %[[W]]
// AD: %[[LOSS:.+]] = nn.reduce_sum
// AD-NOT: nn.tanh
// AD-NOT: nn.mul %{{.+}}, %[[SIDE]]
// AD-NOT: nn.mul %{{.+}}, %[[W]]
// AD: %[[DW:.+]] = nn.mul %{{.+}}, %[[X]] : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
// AD-NOT: nn.
// AD: return %[[LOSS]], %[[SIDE]], %[[DW]]
func.func @partial(%x: tensor<4x3xf32>, %w: tensor<4x3xf32> {train.param = "w"}) -> (tensor<f32>, tensor<4x3xf32>) {
  %0 = nn.mul %w, %x : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %side = nn.exp %w : tensor<4x3xf32>
  %data = nn.tanh %x : tensor<4x3xf32>
  %1 = nn.add %0, %data : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %2 = nn.reduce_sum %1 [] : tensor<4x3xf32> -> tensor<f32>
  return %2, %side : tensor<f32>, tensor<4x3xf32>
}

// -----

// A mask compared from a parameter (`x > w`) carries no gradient: the
// comparison is piecewise constant, so the where's condition is a constant
// and only its selected side reaches %w, through the where's VJP.

// AD-LABEL: func.func @compared_mask_grad(
// AD: %[[MASK:.+]] = nn.compare <gt>
// AD-NOT: nn.compare
// AD: nn.where %[[MASK]], %{{.+}}, %{{.+}} :
// AD: nn.where %[[MASK]], %{{.+}}, %{{.+}} :
// AD: return
func.func @compared_mask(%x: tensor<4xf32>, %w: tensor<4xf32> {train.param = "w"}) -> tensor<f32> {
  %mask = nn.compare <gt>, %x, %w {dtype = f32} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y = nn.where %mask, %x, %w : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = nn.reduce_sum %y [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sin' = cos and cos' = -sin, of the forward input.

// AD-LABEL: func.func @trig_grad(
// AD-SAME: %[[W:[^:]+]]: tensor<4xf32> {train.param = "w"})
// AD: nn.reduce_sum
// AD: %[[S:.+]] = nn.sin %[[W]] : tensor<4xf32>
// AD: %[[DS:.+]] = nn.mul %{{.+}}, %[[S]]
// AD: nn.neg %[[DS]]
// AD: %[[C:.+]] = nn.cos %[[W]] : tensor<4xf32>
// AD: nn.mul %{{.+}}, %[[C]]
// AD: return
func.func @trig(%w: tensor<4xf32> {train.param = "w"}) -> tensor<f32> {
  %s = nn.sin %w : tensor<4xf32>
  %c = nn.cos %w : tensor<4xf32>
  %y = nn.add %s, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = nn.reduce_sum %y [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Both cotangents of a tensor power, each summed back to its operand's
// shape: rhs * lhs^(rhs - 1) (0 where rhs = 0) for the base, log(lhs) *
// result (0 where lhs = 0 and rhs >= 0) for the exponent.

// AD-LABEL: func.func @powf_grad(
// AD-SAME: %[[X:[^:]+]]: tensor<4x3xf32> {train.param = "x"}, %[[E:[^:]+]]: tensor<3xf32> {train.param = "e"})
// AD-SAME: -> (tensor<f32>, tensor<4x3xf32> {train.grad_of = "x"}, tensor<3xf32> {train.grad_of = "e"})
// AD: %[[Y:.+]] = nn.powf %[[X]], %[[E]]
// AD: %[[EM1:.+]] = nn.sub %[[E]], %{{.+}} : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// AD: nn.powf %[[X]], %[[EM1]]
// AD: nn.compare <eq>, %[[E]], %{{.+}} {dtype = f32} : tensor<3xf32>, tensor<f32>
// AD: %[[DX:.+]] = nn.where
// AD: %[[LOG:.+]] = nn.log %[[X]]
// AD: nn.mul %[[LOG]], %[[Y]]
// AD: nn.compare <eq>, %[[X]], %{{.+}} {dtype = f32} : tensor<4x3xf32>, tensor<f32>
// AD: nn.compare <ge>, %[[E]], %{{.+}} {dtype = f32} : tensor<3xf32>, tensor<f32>
// AD: %[[WDE:.+]] = nn.where
// AD: %[[SDE:.+]] = nn.reduce_sum %[[WDE]] [0] {keepdims} : tensor<4x3xf32> -> tensor<1x3xf32>
// AD: %[[DE:.+]] = nn.reshape %[[SDE]] [3]
// AD: return %{{.+}}, %[[DX]], %[[DE]]
func.func @powf(%x: tensor<4x3xf32> {train.param = "x"}, %e: tensor<3xf32> {train.param = "e"}) -> tensor<f32> {
  %y = nn.powf %x, %e : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = nn.reduce_sum %y [] : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// floor, ceil and round are piecewise constant: their results carry no
// gradient even when computed from a parameter, so x * floor(x) has the
// cotangent dy * floor(x), and a loss of rounded values alone a zero
// gradient (no error for the ops without a VJP).

// AD-LABEL: func.func @rounding_grad(
// AD-SAME: %[[W:[^:]+]]: tensor<4xf32> {train.param = "w"})
// AD: %[[F:.+]] = nn.floor %[[W]]
// AD: %[[C:.+]] = nn.ceil %[[W]]
// AD: %[[R:.+]] = nn.round %[[W]]
// AD-NOT: nn.floor
// AD-NOT: nn.ceil
// AD-NOT: nn.round
// AD: nn.reduce_sum
// AD-NOT: %[[C]]
// AD-NOT: %[[R]]
// AD: %[[DW:.+]] = nn.mul %{{.+}}, %[[F]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// AD-NEXT: return %{{.+}}, %[[DW]]
func.func @rounding(%w: tensor<4xf32> {train.param = "w"}) -> tensor<f32> {
  %f = nn.floor %w : tensor<4xf32>
  %c = nn.ceil %w : tensor<4xf32>
  %r = nn.round %w : tensor<4xf32>
  %y = nn.mul %w, %f : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %z = nn.add %c, %r : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %t = nn.add %y, %z : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = nn.reduce_sum %t [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// AD-LABEL: func.func @only_rounded_grad(
// AD: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<4xf32>
// AD: return %{{.+}}, %[[ZERO]]
func.func @only_rounded(%w: tensor<4xf32> {train.param = "w"}) -> tensor<f32> {
  %r = nn.round %w : tensor<4xf32>
  %l = nn.reduce_sum %r [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A float-to-float cast's cotangent is the result's cast back to the
// source type: a loss computed in f64 from an f32 parameter has an f32
// gradient.

// AD-LABEL: func.func @cast_float_grad(
// AD-SAME: %[[W:[^:]+]]: tensor<4xf32> {train.param = "w"})
// AD-SAME: -> (tensor<f64>, tensor<4xf32> {train.grad_of = "w"})
// AD: %[[D:.+]] = nn.cast %[[W]] : tensor<4xf32> -> tensor<4xf64>
// AD: nn.mul %[[D]], %[[D]]
// AD: %[[DD:.+]] = nn.add %{{.+}}, %{{.+}} : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
// AD: %[[DW:.+]] = nn.cast %[[DD]] : tensor<4xf64> -> tensor<4xf32>
// AD-NEXT: return %{{.+}}, %[[DW]]
func.func @cast_float(%w: tensor<4xf32> {train.param = "w"}) -> tensor<f64> {
  %d = nn.cast %w : tensor<4xf32> -> tensor<4xf64>
  %y = nn.mul %d, %d : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %l = nn.reduce_sum %y [0] : tensor<4xf64> -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// A cast to an integer type is piecewise constant, as floor: w * trunc(w),
// truncated through i64, has the cotangent dy * trunc(w), and no cast back
// from the integers is built. A cast from an integer type has no gradient
// either.

// AD-LABEL: func.func @cast_integer_grad(
// AD-SAME: %[[W:[^:]+]]: tensor<4xf32> {train.param = "w"}
// AD: %[[I:.+]] = nn.cast %[[W]] : tensor<4xf32> -> tensor<4xi64>
// AD: %[[T:.+]] = nn.cast %[[I]] : tensor<4xi64> -> tensor<4xf32>
// AD: nn.reduce_sum
// AD-NOT: nn.cast
// AD: %[[DW:.+]] = nn.mul %{{.+}}, %[[T]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// AD-NEXT: return %{{.+}}, %[[DW]]
func.func @cast_integer(%w: tensor<4xf32> {train.param = "w"}, %ids: tensor<4xi32>) -> tensor<f32> {
  %i = nn.cast %w : tensor<4xf32> -> tensor<4xi64>
  %t = nn.cast %i : tensor<4xi64> -> tensor<4xf32>
  %y = nn.mul %w, %t : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %f = nn.cast %ids : tensor<4xi32> -> tensor<4xf32>
  %z = nn.add %y, %f : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = nn.reduce_sum %z [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// AD-LABEL: func.func @only_cast_to_integer_grad(
// AD: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<4xf32>
// AD: return %{{.+}}, %[[ZERO]]
func.func @only_cast_to_integer(%w: tensor<4xf32> {train.param = "w"}) -> tensor<f32> {
  %i = nn.cast %w : tensor<4xf32> -> tensor<4xi32>
  %t = nn.cast %i : tensor<4xi32> -> tensor<4xf32>
  %l = nn.reduce_sum %t [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Without `function`, only functions with a train.param argument and a rank-0
// first result are differentiated, and never a gradient function again.

// AD-LABEL: func.func @no_params(
// AD-LABEL: func.func @vector_result(
// AD-LABEL: func.func @scalar_f64(
// AD-LABEL: func.func @scalar_f64_grad(
// AD-SAME: -> (tensor<f64>, tensor<2xf64> {train.grad_of = "p"})
// AD-LABEL: func.func @already_grad(
// AD-NOT: func.func
// AD: {{^// -+$}}
func.func @no_params(%x: tensor<2xf32>) -> tensor<f32> {
  %0 = nn.reduce_sum %x [] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @vector_result(%p: tensor<2xf32> {train.param = "p"}) -> tensor<2xf32> {
  return %p : tensor<2xf32>
}
func.func @scalar_f64(%p: tensor<2xf64> {train.param = "p"}) -> tensor<f64> {
  %0 = nn.reduce_sum %p [] : tensor<2xf64> -> tensor<f64>
  return %0 : tensor<f64>
}
func.func @already_grad(%p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> attributes {train.gradient_of = @no_params} {
  %0 = nn.reduce_sum %p [] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{@loss has control flow; autodiff needs a single block}}
func.func @loss(%p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> {
  cf.br ^bb1
^bb1:
  %0 = nn.reduce_sum %p [] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @loss(%p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> {
  // expected-error @+1 {{'arith.negf' op is on the path from a train.param argument to the loss but has no gradient (DifferentiableOpInterface)}}
  %0 = arith.negf %p : tensor<2xf32>
  %1 = nn.reduce_sum %0 [] : tensor<2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A non-differentiable op that only data flows through is fine.
// AD-LABEL: func.func @loss_grad(
// AD: arith.negf
func.func @loss(%x: tensor<2xf32>, %p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> {
  %0 = arith.negf %x : tensor<2xf32>
  %1 = nn.mul %0, %p : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %2 = nn.reduce_sum %1 [] : tensor<2xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Running statistics of batch normalisation are state, not parameters.
func.func @loss(%x: tensor<4x2xf32>, %g: tensor<2xf32> {train.param = "g"}) -> tensor<f32> {
  // expected-error @+1 {{'nn.batch_norm' op operand #3 depends on a train.param argument but is not differentiable}}
  %y, %m, %v = nn.batch_norm %x, %g, %g, %g, %g {training} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
  %0 = nn.reduce_sum %y [] : tensor<4x2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

//--- named.mlir

// With `function`, exactly that function is differentiated.
// NAMED-LABEL: func.func @f(
// NAMED-LABEL: func.func @f_grad(
// NAMED-SAME: -> (tensor<f32>, tensor<2xf32> {train.grad_of = "p"})
// NAMED-SAME: attributes {train.gradient_of = @f}
// NAMED-LABEL: func.func @g(
// NAMED-NOT: func.func
// NAMED: {{^// -+$}}
func.func @f(%p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> {
  %0 = nn.reduce_sum %p [] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @g(%p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> {
  %0 = nn.reduce_sum %p [] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{must be a scalar loss (a rank-0 float tensor), got 'tensor<2xf32>'}}
func.func @f(%p: tensor<2xf32> {train.param = "p"}) -> tensor<2xf32> {
  return %p : tensor<2xf32>
}

// -----

// expected-error @+1 {{has no argument marked train.param}}
func.func @f(%x: tensor<2xf32>) -> tensor<f32> {
  %0 = nn.reduce_sum %x [] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A batch left dynamic: the VJP of the sum would need its size.
func.func @f(%x: tensor<?x2xf32>, %p: tensor<2xf32> {train.param = "p"}) -> tensor<f32> {
  %0 = nn.mul %x, %p : tensor<?x2xf32>, tensor<2xf32> -> tensor<?x2xf32>
  // expected-error @+1 {{'nn.reduce_sum' op has the dynamic type 'tensor<?x2xf32>': cleave-autodiff needs static shapes; specialise the batch dimension first (micro-batch=B in cleave-attach-loss or the training pipeline)}}
  %1 = nn.reduce_sum %0 [] : tensor<?x2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{returns nothing to differentiate}}
func.func @f(%p: tensor<2xf32> {train.param = "p"}) {
  return
}

// -----

// expected-error @+1 {{@f has no body}}
func.func private @f(%p: tensor<2xf32> {train.param = "p"}) -> tensor<f32>

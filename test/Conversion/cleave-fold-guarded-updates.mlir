// RUN: cleave-opt %s --split-input-file --cleave-fold-guarded-updates | FileCheck %s

// SGD's fused loop: the select moves onto the in-place output (%p), the
// second output goes, and its result's uses take the in-place one.
// CHECK-LABEL: func.func @single_result
// CHECK-SAME: (%[[OK:.+]]: tensor<f32>, %[[G:.+]]: tensor<4xf32>, %[[P:.+]]: tensor<4xf32>)
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: outs(%[[P]] : tensor<4xf32>)
// CHECK: %[[NEW:.+]] = arith.subf
// CHECK: %[[SEL:.+]] = arith.select %{{.+}}, %[[NEW]], %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[SEL]] : f32
// CHECK: return %[[R]]
#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @single_result(%ok: tensor<f32>, %g: tensor<4xf32>, %p: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#scalar, #id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%ok, %g, %p : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%p, %e : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%c: f32, %gi: f32, %pi: f32, %o: f32, %unused: f32):
    %new = arith.subf %o, %gi : f32
    %cond = arith.cmpf une, %c, %zero : f32
    %sel = arith.select %cond, %new, %pi : f32
    linalg.yield %new, %sel : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %r#1 : tensor<4xf32>
}

// -----

// Adam's loop has three in-place outputs, which elementwise fusion leaves
// beside the select: the select's loop is inlined into it, choosing between
// the new value and the loop's own output argument (the old value).
// CHECK-LABEL: func.func @multi_result
// CHECK-SAME: (%[[OK:.+]]: tensor<f32>, %[[G:.+]]: tensor<4xf32>, %[[P:.+]]: tensor<4xf32>, %[[M:.+]]: tensor<4xf32>)
// CHECK: %[[R:.+]]:2 = linalg.generic
// CHECK-SAME: ins(%[[G]], %[[OK]] : tensor<4xf32>, tensor<f32>)
// CHECK-SAME: outs(%[[P]], %[[M]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[GI:.+]]: f32, %[[C:.+]]: f32, %[[PO:.+]]: f32, %[[MO:.+]]: f32):
// CHECK: %[[NEWM:.+]] = arith.addf %[[MO]], %[[GI]]
// CHECK: %[[NEWP:.+]] = arith.subf %[[PO]], %[[NEWM]]
// CHECK: %[[COND:.+]] = arith.cmpf une, %[[C]]
// CHECK: %[[SEL:.+]] = arith.select %[[COND]], %[[NEWP]], %[[PO]] : f32
// CHECK: linalg.yield %[[SEL]], %[[NEWM]] : f32, f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1
#id2 = affine_map<(d0) -> (d0)>
#scalar2 = affine_map<(d0) -> ()>
func.func @multi_result(%ok: tensor<f32>, %g: tensor<4xf32>, %p: tensor<4xf32>, %m: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %u:2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel"]}
      ins(%g : tensor<4xf32>) outs(%p, %m : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%gi: f32, %po: f32, %mo: f32):
    %newm = arith.addf %mo, %gi : f32
    %newp = arith.subf %po, %newm : f32
    linalg.yield %newp, %newm : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %s = linalg.generic {indexing_maps = [#scalar2, #id2, #id2, #id2], iterator_types = ["parallel"]}
      ins(%ok, %u#0, %p : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%c: f32, %new: f32, %old: f32, %unused: f32):
    %cond = arith.cmpf une, %c, %zero : f32
    %sel = arith.select %cond, %new, %old : f32
    linalg.yield %sel : f32
  } -> tensor<4xf32>
  return %s, %u#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The fused loop takes the producer's place: its other result is used
// before the select's loop.
// CHECK-LABEL: func.func @other_result_used_first
// CHECK: %[[R:.+]]:2 = linalg.generic
// CHECK: %[[NEG:.+]] = linalg.generic {{.*}} ins(%[[R]]#1 : tensor<4xf32>)
// CHECK: return %[[R]]#0, %[[NEG]]
#id4 = affine_map<(d0) -> (d0)>
#scalar4 = affine_map<(d0) -> ()>
func.func @other_result_used_first(%ok: tensor<f32>, %g: tensor<4xf32>, %p: tensor<4xf32>, %m: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %u:2 = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel"]}
      ins(%g : tensor<4xf32>) outs(%p, %m : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%gi: f32, %po: f32, %mo: f32):
    %newm = arith.addf %mo, %gi : f32
    %newp = arith.subf %po, %newm : f32
    linalg.yield %newp, %newm : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %first = tensor.empty() : tensor<4xf32>
  %neg = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel"]}
      ins(%u#1 : tensor<4xf32>) outs(%first : tensor<4xf32>) {
  ^bb0(%a: f32, %unused: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#scalar4, #id4, #id4, #id4], iterator_types = ["parallel"]}
      ins(%ok, %u#0, %p : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%c: f32, %new: f32, %old: f32, %unused: f32):
    %cond = arith.cmpf une, %c, %zero : f32
    %sel = arith.select %cond, %new, %old : f32
    linalg.yield %sel : f32
  } -> tensor<4xf32>
  return %s, %neg : tensor<4xf32>, tensor<4xf32>
}

// -----

// A loop that reads another loop's result but not the value it replaces is
// left alone (plain producer-consumer fusion is upstream's).
// CHECK-LABEL: func.func @unrelated
// CHECK-COUNT-2: linalg.generic
#id3 = affine_map<(d0) -> (d0)>
func.func @unrelated(%g: tensor<4xf32>, %p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %u:2 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel"]}
      ins(%g : tensor<4xf32>) outs(%p, %p : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%gi: f32, %po: f32, %po2: f32):
    %n = arith.addf %po, %gi : f32
    linalg.yield %n, %n : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %s = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel"]}
      ins(%u#0, %q : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %unused: f32):
    %x = arith.mulf %a, %b : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// The apply step zeroes each accumulator after the optimizer's loop has read
// it: the fill becomes an output of that loop, which reads the old value
// through its output argument and yields zero into it. The earlier reader
// (the window check's reduction) is left alone.
// CHECK-LABEL: func.func @zeroing_folds_into_the_update
// CHECK-SAME: (%[[G:.+]]: tensor<4xf32>, %[[P:.+]]: tensor<4xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[CHECK:.+]] = linalg.generic {{.*}} ins(%[[G]] : tensor<4xf32>)
// CHECK: %[[R:.+]]:2 = linalg.generic
// CHECK-SAME: ins(%[[P]] : tensor<4xf32>) outs(%[[P]], %[[G]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[PI:.+]]: f32, %[[PO:.+]]: f32, %[[GO:.+]]: f32):
// CHECK: %[[NEW:.+]] = arith.subf %[[PI]], %[[GO]] : f32
// CHECK: linalg.yield %[[NEW]], %[[ZERO]] : f32, f32
// CHECK-NOT: linalg.fill
// CHECK: return %[[CHECK]], %[[R]]#0, %[[R]]#1
#id3 = affine_map<(d0) -> (d0)>
#all3 = affine_map<(d0) -> ()>
func.func @zeroing_folds_into_the_update(%g: tensor<4xf32>, %p: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %check = linalg.generic {indexing_maps = [#id3, #all3], iterator_types = ["reduction"]}
      ins(%g : tensor<4xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%gi: f32, %a: f32):
    %d = arith.subf %gi, %gi : f32
    %s = arith.addf %a, %d : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %u = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel"]}
      ins(%g, %p : tensor<4xf32>, tensor<4xf32>) outs(%p : tensor<4xf32>) {
  ^bb0(%gi: f32, %pi: f32, %o: f32):
    %new = arith.subf %pi, %gi : f32
    linalg.yield %new : f32
  } -> tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%g : tensor<4xf32>) -> tensor<4xf32>
  return %check, %u, %z : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Not folded: the last reader reads the tensor transposed (writing it in
// place would overwrite elements other iterations still read), or is not a
// loop at all.
// CHECK-LABEL: func.func @zeroing_stays_apart
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK: tensor.extract
// CHECK: linalg.fill
#id4 = affine_map<(d0, d1) -> (d0, d1)>
#tr4 = affine_map<(d0, d1) -> (d1, d0)>
func.func @zeroing_stays_apart(%g: tensor<4x4xf32>, %p: tensor<4x4xf32>, %h: tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, f32, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %u = linalg.generic {indexing_maps = [#tr4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<4x4xf32>) outs(%p : tensor<4x4xf32>) {
  ^bb0(%gi: f32, %o: f32):
    %new = arith.subf %o, %gi : f32
    linalg.yield %new : f32
  } -> tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%g : tensor<4x4xf32>) -> tensor<4x4xf32>
  %x = tensor.extract %h[%c0] : tensor<4xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%h : tensor<4xf32>) -> tensor<4xf32>
  return %u, %z, %x, %zh : tensor<4x4xf32>, tensor<4x4xf32>, f32, tensor<4xf32>
}

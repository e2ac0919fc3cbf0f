// cleave-check in its rematerialisation mode (docs/user/cleave-check.md):
// the artifact that recomputes activations in the backward pass against the
// same split holding them; the same bits in every window (rtol 0). The
// pass's rules are tested in test/Conversion/cleave-rematerialize.mlir,
// under the sanitizers too; these compile and train twice each, which the
// sanitized build would spend minutes on.
//
// REQUIRES: cleave-runtime
// UNSUPPORTED: sanitized

// The MLP recomputes its ReLUs' outputs (--remat=auto);
// LeNet with budget 0 recomputes what the cost model allows, GEMMs,
// convolutions and pooling included.
// RUN: cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 --accumulate=2 \
// RUN:   --remat=auto --windows=2 | FileCheck %s --check-prefix=REMAT-MLP
// REMAT-MLP:      micro-step:     arena {{.+}}, of which 48.5 KiB held from forward to backward (3 values recomputed, {{.+}}) rematerialised
// REMAT-MLP-NEXT:                 arena {{.+}}, of which 80.5 KiB held from forward to backward without
// REMAT-MLP-NEXT: rematerialised: micro-batch 8, 2 micro-steps per optimizer step, activations recomputed
// REMAT-MLP-NEXT: reference:      the same, every activation held
// REMAT-MLP:        fc1.weight         0.00e+00    0.00e+00
// REMAT-MLP-NOT:  *
// REMAT-MLP:      agree: the rematerialised step gives bit-identical losses, parameters and buffers in every window
// RUN: cleave-check %cleave_src/examples/lenet.mlir --micro-batch=16 --accumulate=2 \
// RUN:   --optimizer=adam --remat-budget=0 --windows=2 | FileCheck %s --check-prefix=REMAT-LENET
// REMAT-LENET:      micro-step:     {{.+}} MFLOP more) rematerialised
// REMAT-LENET:        conv1.weight       0.00e+00    0.00e+00
// REMAT-LENET:      agree: the rematerialised step gives bit-identical
// RUN: not cleave-check %cleave_src/examples/mlp.mlir --micro-batch=8 --remat=auto \
// RUN:   --rtol=1e-3 2>&1 | FileCheck %s --check-prefix=REMAT-RTOL
// REMAT-RTOL: cleave-check: error: --rtol: a rematerialised step recomputes the same ops on the same values, so the check requires the same bits


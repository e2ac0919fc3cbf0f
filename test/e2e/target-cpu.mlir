// --target-cpu / --target-features: the manifest records the CPU and every
// feature it enables, code is generated for exactly that, and a CPU or
// feature LLVM does not know is refused before anything is compiled. (The
// runtime's refusal of an artifact whose features this machine lacks is in
// BadInputTest.ArtifactForAnotherCpu.)
//
// REQUIRES: cleave-runtime
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --target-cpu=x86-64-v2 --compile-to=bufferize | FileCheck %s --check-prefix=V2
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --target-cpu=x86-64-v2 --target-features=+avx2,-popcnt --compile-to=bufferize | FileCheck %s --check-prefix=EXTRA
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --compile-to=bufferize | FileCheck %s --check-prefix=HOST

// Baseline x86-64 code runs on every machine this runs on.
// RUN: cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --target-cpu=x86-64-v2 -o %t.v2.cleave
// RUN: cleave-run %t.v2.cleave --input image=0.5 --samples=1 | FileCheck %s --check-prefix=RAN

// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --target-cpu=pentium9 -o %t.bad.cleave 2>&1 | FileCheck %s --check-prefix=BADCPU
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --target-features=+avx9 -o %t.bad.cleave 2>&1 | FileCheck %s --check-prefix=BADFEATURE
// RUN: not cleave-compile %cleave_src/examples/mlp.mlir --micro-batch=4 --target-features=avx2 -o %t.bad.cleave 2>&1 | FileCheck %s --check-prefix=BADFEATURE

// V2: \22target\22:{\22cpu\22:\22x86-64-v2\22,\22features\22:[
// V2-SAME: \22popcnt\22
// V2-SAME: \22sse4.2\22
// V2-NOT: avx
// V2: rt.target = {cpu = "x86-64-v2", features = [

// EXTRA: \22target\22:{\22cpu\22:\22x86-64-v2\22,\22features\22:[
// EXTRA-SAME: \22avx\22,\22avx2\22
// EXTRA-NOT: \22popcnt\22
// EXTRA: rt.target

// The host's CPU by its LLVM name, never "host".
// HOST: \22target\22:{\22cpu\22:\22
// HOST-NOT: \22cpu\22:\22host\22
// HOST: rt.target

// RAN: eval_step.prediction: f32 [4, 10]

// BADCPU: cleave-compile: error: unknown target CPU 'pentium9'
// BADFEATURE: cleave-compile: error: unknown target feature '{{\+avx9|avx2}}'; expected +name or -name

//===- Passes.td - Writing the artifact -------------------*- tablegen -*-===//
//
// The manifest and the exported symbols of an artifact.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_ARTIFACT_PASSES
#define CLEAVE_ARTIFACT_PASSES

include "mlir/Pass/PassBase.td"

def CleaveWriteManifest : Pass<"cleave-write-manifest", "::mlir::ModuleOp"> {
  let summary = "Describe the artifact in a manifest and drop the train globals";
  let description = [{
    Runs once entry points have their final arguments (after
    `cleave-plan-memory` and `cleave-lower-runtime-calls`). Writes the
    manifest of `docs/design/runtime-abi.md` as JSON into the module's
    `rt.manifest_json` attribute: globals with kinds, shapes and
    initialisers, hyperparameters with their defaults, data inputs, each
    entry point's argument list, the kernel table and the split's
    `train.manifest` (accumulation count, reduction, warnings). Exact initial
    values (elements attributes) are packed, 64-byte aligned, into
    `rt.init_data`. The `train.global` ops are then erased.

    The target CPU (`target-cpu`, default `host`: this machine's, and
    `target-features` on top of it) is resolved here to an LLVM CPU name and
    every feature it enables; the manifest's `target` records them, so the
    runtime can refuse an artifact that needs features its machine lacks,
    and the `rt.target` module attribute hands them to code generation.
  }];
  let dependentDialects = ["::mlir::cleave::train::TrainDialect",
                           "::mlir::cleave::rt::RtDialect"];
  let options = [
    Option<"targetCpu", "target-cpu", "std::string", /*default=*/"\"host\"",
           "The CPU to generate code for: an LLVM CPU name (x86-64-v3, "
           "skylake-avx512, znver4, ...) or host">,
    Option<"targetFeatures", "target-features", "std::string",
           /*default=*/"\"\"",
           "Features to add or remove on top of the CPU's, in LLVM's syntax "
           "(+avx512f,-avx512fp16)">,
    Option<"device", "device", "::mlir::cleave::rt::Device",
           /*default=*/"::mlir::cleave::rt::Device::cpu",
           "The device the artifact's code runs on (the manifest's device)",
           "::mlir::cleave::enumValues<::mlir::cleave::rt::Device>()">,
    Option<"gpuArches", "gpu-arch", "std::string",
           /*default=*/"\"sm_80,sm_90\"",
           "With device=cuda: the SM architectures with a cubin in the "
           "artifact (the lowest also as PTX)">,
  ];
}

def CleaveEmitArtifactAbi : Pass<"cleave-emit-artifact-abi",
                                 "::mlir::ModuleOp"> {
  let summary = "Emit the artifact's exported symbols in the LLVM dialect";
  let description = [{
    After lowering to the LLVM dialect (entry points take the kernel context
    and one bare pointer per argument), adds `cleave_entry_<name>(ptr ctx,
    ptr args)` for each entry point, which loads each argument pointer from
    the `args` array and calls the entry, plus `cleave_abi_version`,
    `cleave_manifest` (the `rt.manifest_json` attribute) and
    `cleave_init_data` (the `rt.init_data` attribute, or null).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cleave::rt::RtDialect"];
}

def CleaveGpuModuleToFatbin : Pass<"cleave-gpu-module-to-fatbin",
                                   "::mlir::ModuleOp"> {
  let summary = "Each NVVM gpu.module to a gpu.binary holding one CUDA fatbin";
  let description = [{
    The CUDA counterpart of upstream `gpu-module-to-binary`, which makes one
    object per target: the runtime hands the driver one blob per module
    (`mgpuModuleLoad`), and `cuModuleLoadData` picks the image that fits the
    device only from a fatbin. For every `#nvvm.target` of a module (in
    order), MLIR's NVVM serializer makes a cubin (LLVM's NVPTX back end, then
    `ptxas`); the PTX of the lowest architecture is kept from the same run.
    The CUDA toolkit's `fatbinary` combines them, and the module becomes a
    `gpu.binary` with that single object and `#gpu.select_object<0>`, whose
    translation embeds it and loads it from a global constructor.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // CLEAVE_ARTIFACT_PASSES

//===- GpuTarget.h - The GPUs a cuda artifact's kernels are built for -*- C++ -*-===//
//
// `--gpu-arch` parsed and checked once (cleave-compile refuses a bad list
// before it reads a model), and the CUDA toolkit's tools found the way
// MLIR's NVVM target finds them, so that a missing toolkit is reported as
// one line before any work.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_GPUTARGET_H
#define CLEAVE_COMPILER_ARTIFACT_GPUTARGET_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace mlir::cleave {

/// Splits a comma-separated list of SM architectures (`sm_80,sm_90`,
/// `sm_90a`), keeping its order, and checks each against LLVM's NVPTX back
/// end. Fails with `error` for an empty list, a duplicate, an unknown
/// architecture or a family-specific one (`sm_100f`: the runtime does not
/// know which GPUs run it).
FailureOr<SmallVector<std::string>> parseGpuArches(StringRef list,
                                                   std::string &error);

/// The SM number of `arch` (`sm_90a` -> 90).
unsigned smNumber(StringRef arch);

/// The architecture whose PTX the artifact embeds, so that newer GPUs can
/// JIT it: the lowest of `arches` without the `a` suffix. PTX for `sm_90a`
/// runs on sm_90 only, which its cubin covers already, so an artifact whose
/// every architecture is specific embeds none (nullopt).
std::optional<std::string> ptxGpuArch(ArrayRef<std::string> arches);

/// The CUDA toolkit's directory: CUDA_ROOT, CUDA_HOME or CUDA_PATH (as
/// MLIR's NVVM target reads them), else the toolkit whose `bin/ptxas` is on
/// PATH, else /usr/local/cuda (CUDA's default install location); nullopt
/// if none has `bin/ptxas`. MLIR's serializer gets it explicitly, so that
/// ptxas and libdevice come from the same toolkit as fatbinary.
std::optional<std::string> findCudaToolkit();

/// The path of a CUDA toolkit program (`ptxas`, `fatbinary`) in
/// `findCudaToolkit()`'s `bin`.
std::optional<std::string> findCudaTool(StringRef tool);

/// Whether the tools a cuda artifact needs are there; `error` says what is
/// missing and how to point Cleave at the toolkit.
LogicalResult checkCudaToolkit(std::string &error);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_GPUTARGET_H

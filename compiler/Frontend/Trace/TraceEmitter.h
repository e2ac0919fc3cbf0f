//===- TraceEmitter.h - Traced graphs to split-level IR ---------*- C++ -*-===//
//
// Turns a traced graph (TraceGraph.h) into the IR `cleave-split-step`
// produces: persistent tensors as `train.global`s and the graph as one entry
// function marked `train.entry`, ready for `buildCpuBackendPipeline`.
//
// Gradient requests are not traced op by op: each requested loss becomes a
// function of the parameters it is differentiated with respect to,
// `cleave-autodiff` builds its gradient, and the gradient's body is inlined
// into the entry, where the gradients are added into their accumulators
// with `train.accumulate` exactly as in `@micro_step`.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_FRONTEND_TRACE_TRACEEMITTER_H
#define CLEAVE_COMPILER_FRONTEND_TRACE_TRACEEMITTER_H

#include "compiler/Frontend/Trace/TraceGraph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::cleave::trace {

struct EmitOptions {
  /// The entry's name (`train.entry` and the symbol), also the name the
  /// manifest lists it under.
  std::string entry = "graph";
  /// The batch capacity B substituted for kBatch; ignored when the graph has
  /// no batched value.
  int64_t batch = 0;
  /// Canonicalise and CSE the result (which also merges the forward pass
  /// computed for the caller with its copy inside the inlined gradient).
  bool cleanup = true;
};

/// Emits `graph`. The module carries `train.manifest = {kind = "graph"}` so
/// that the artifact's manifest says it is a graph artifact. Malformed
/// graphs (bad indices, types that disagree with the op) are reported through
/// the context's diagnostics and give a null module; nothing asserts.
OwningOpRef<ModuleOp> emitTraceModule(MLIRContext &context, const Graph &graph,
                                      const EmitOptions &options);

} // namespace mlir::cleave::trace

#endif // CLEAVE_COMPILER_FRONTEND_TRACE_TRACEEMITTER_H

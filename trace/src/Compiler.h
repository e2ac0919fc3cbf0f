//===- Compiler.h - Traced graphs to artifacts ------------------*- C++ -*-===//
//
// The tracer's only door into MLIR. These functions never throw and never
// let an exception cross MLIR code: errors come back as text (the compiler's
// diagnostics), which the caller turns into a cleave::Error.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRACE_COMPILER_H
#define CLEAVE_TRACE_COMPILER_H

#include "compiler/Frontend/Trace/TraceGraph.h"

#include <cstdint>
#include <string>

namespace cleave::detail {

/// The entry name of every traced graph's artifact.
inline constexpr const char *kGraphEntry = "graph";

/// The split-level IR of `graph` for batch capacity `batch`. False, with
/// `error` set, when the graph cannot be emitted.
bool emitGraphIR(const mlir::cleave::trace::Graph &graph, int64_t batch,
                 std::string &ir, std::string &error);

/// What a graph is compiled for.
struct GraphTarget {
  /// The cuda back end (kernels for `gpuArch`), else the CPU's.
  bool cuda = false;
  /// cleave-compile's --gpu-arch; empty: its default.
  std::string gpuArch;
};

/// Checks `target` before anything is traced with it: the architectures
/// LLVM knows and, for cuda, the CUDA toolkit the kernels need. False, with
/// `error` set (one line), if it cannot be compiled for.
bool checkGraphTarget(const GraphTarget &target, std::string &error) noexcept;

/// Compiles `graph` for batch capacity `batch` through `target`'s back end
/// into the graph artifact `artifactPath`. With a non-empty `dumpPath`, the
/// split-level IR is also written there. False, with `error` set, on
/// failure.
bool compileGraph(const mlir::cleave::trace::Graph &graph, int64_t batch,
                  const GraphTarget &target, const std::string &artifactPath,
                  const std::string &dumpPath, std::string &error) noexcept;

/// The 64-bit hash of a graph's cache key (LLVM's xxh3).
uint64_t hashKey(const std::string &key) noexcept;

} // namespace cleave::detail

#endif // CLEAVE_TRACE_COMPILER_H

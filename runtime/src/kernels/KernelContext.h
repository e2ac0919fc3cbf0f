//===- KernelContext.h - The `ctx` of generated code ------------*- C++ -*-===//
//
// KernelContext is what one session's (or executable's) generated code
// receives as the opaque `void *ctx` of runtime/include/cleave/kernel_abi.h
// and passes to every kernel call: the kernel library of the device it runs
// on (kernels/KernelLibrary.h), the device's loader of the artifact's own GPU
// code (device/KernelModules.h; null on the CPU), and the collectives of the
// session's ranks (collectives/Collectives.h). Kernel calls return nothing, so
// the context also holds the first error one of them hit, for the caller of the
// entry point to report.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_KERNELCONTEXT_H
#define CLEAVE_RUNTIME_KERNELS_KERNELCONTEXT_H

#include "Status.h"
#include "kernels/KernelLibrary.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cleave::rt {

class Collectives;
class KernelModules;

/// A kernel call cannot return an error (kernel_abi.h), and generated code
/// runs on past a failed one to the end of its entry point. So a call that
/// fails (a library error, or a call that breaks the ABI) records its error in
/// the context, and from then on every kernel call on the context does
/// nothing, reading no kernel and writing no tensor, until the error is
/// cleared. The caller of the entry point checks `error()` when it returns.
///
/// Not thread-safe: a context runs one kernel at a time (kernels share
/// transient memory). Sessions that run concurrently each need their own.
class KernelContext {
public:
  /// A context on the oneDNN kernels of the manifest's "kernels" array
  /// (OneDnnKernels::create). Returns nullptr and sets `error` (one clear
  /// line: kernel id, op, what is wrong) on bad input.
  static std::unique_ptr<KernelContext> create(const nlohmann::json &kernels,
                                               std::string &error);
  /// A context whose kernel calls go to `library`, and whose artifact GPU
  /// code is looked up and launched through `modules` (not owned; null on
  /// the CPU).
  static std::unique_ptr<KernelContext>
  create(std::unique_ptr<KernelLibrary> library,
         KernelModules *modules = nullptr);
  ~KernelContext();
  KernelContext(const KernelContext &) = delete;
  KernelContext &operator=(const KernelContext &) = delete;

  /// Attaches the collectives cleave_cross_rank_reduce,
  /// cleave_reduce_scatter, cleave_all_gather and cleave_shard use (not
  /// owned); nullptr, the default, is a job of one rank.
  void setCollectives(Collectives *collectives);
  Collectives &collectives() const { return *collectives_; }

  /// Where every kernel call goes.
  KernelLibrary &library() const { return *library_; }
  /// What the mgpu* functions use on the context's device
  /// (device/KernelModules.h); null on the CPU.
  KernelModules *modules() const { return modules_; }

  size_t numKernels() const { return library_->numKernels(); }
  /// One line for logs: the kernel's op, implementation and layouts. Empty
  /// for an unknown id.
  std::string describeKernel(int64_t id) const {
    return library_->describeKernel(id);
  }
  /// Bytes of transient memory (staging copies, workspaces, scratchpads)
  /// shared by all kernels, allocated once when the library was made.
  size_t arenaBytes() const { return library_->arenaBytes(); }

  /// Lets convolutions keep the blocked copies of parameters read as
  /// weights, and the window's weight gradients in the blocked layout, from
  /// one call to the next (LayoutCache.h). In exchange the caller keeps
  /// these rules:
  /// * `parameters` change only between beginParameterUpdate and
  ///   endParameterUpdate, or followed by parametersChanged;
  /// * kernel calls outside such a pair only add into `accumulators`, and
  ///   settleAccumulators runs before anything else reads or writes them.
  /// Nothing is cached in a context where this was never called.
  void enableLayoutCache(std::vector<BufferRange> parameters,
                         std::vector<BufferRange> accumulators);
  /// The parameters were written (outside an update): the blocked copies
  /// made before are stale.
  void parametersChanged();
  /// Settles the accumulators, then until endParameterUpdate parameters may
  /// change under any kernel call (nothing is cached) and accumulators may
  /// be read: brackets an apply step.
  Status beginParameterUpdate();
  void endParameterUpdate();
  /// Adds the window's blocked weight gradients held back so far into their
  /// accumulators, which then hold every gradient of the window.
  Status settleAccumulators();
  /// Every parameter and accumulator was overwritten (a checkpoint was
  /// loaded): the blocked copies are stale and the gradients held back
  /// belong to no window any more.
  void globalsReplaced();
  /// Bytes the layout cache holds.
  size_t layoutCacheBytes() const;

  /// The first error a kernel call recorded since the context was created or
  /// last cleared; ok() if none.
  const Status &error() const { return error_; }
  bool failed() const { return !error_.ok(); }
  /// Records `error` unless an error is already recorded: the first one is
  /// the cause, later ones would be its consequences.
  void fail(Status error);
  void clearError() { error_ = Status(); }

  /// Kernel calls made with a NULL `ctx` have no context to record their
  /// error in: they record it for the calling thread instead (entry points
  /// run on their caller's thread), first error first, like `fail`.
  static void failWithoutContext(Status error);
  /// Returns the calling thread's error of kernel calls with a NULL context
  /// (ok() if none) and clears it.
  static Status takeErrorWithoutContext();

private:
  KernelContext(std::unique_ptr<KernelLibrary> library, KernelModules *modules);

  std::unique_ptr<KernelLibrary> library_;
  KernelModules *modules_ = nullptr;
  Collectives *collectives_;
  Status error_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_KERNELCONTEXT_H

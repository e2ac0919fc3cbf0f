//===- OneDnnKernels.h - The kernel table on oneDNN -------------*- C++ -*-===//
//
// The KernelLibrary of a CPU session: one oneDNN primitive per entry of the
// manifest's `kernels` array, the in-order CPU stream they run on, the arena
// that holds their transient memory, and the layout cache. Creating it
// creates every primitive; afterwards a call binds the caller's pointers,
// executes and waits, and allocates nothing (but for the layout cache's
// copies, made by the first call that needs each one). oneDNN parallelises
// inside a kernel with OpenMP; the library never sets thread counts
// (OMP_NUM_THREADS governs).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_ONEDNNKERNELS_H
#define CLEAVE_RUNTIME_KERNELS_ONEDNNKERNELS_H

#include "kernels/KernelLibrary.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>

namespace dnnl {
struct stream;
} // namespace dnnl

namespace cleave::rt {

class Kernel;

class OneDnnKernels final : public KernelLibrary {
public:
  /// Creates every primitive described by the manifest's "kernels" array.
  /// Returns nullptr and sets `error` (one clear line: kernel id, op, what is
  /// wrong) on bad input. Entries may come in any order, but their ids must
  /// be exactly 0 .. size-1.
  static std::unique_ptr<OneDnnKernels> create(const nlohmann::json &kernels,
                                               std::string &error);
  ~OneDnnKernels() override;

  Status matmul(int64_t id, const void *a, const void *b, const float *bias,
                float *c) override;
  Status convolution(KernelKind kind, int64_t id, const void *in0,
                     const void *in1, const float *bias, void *out) override;
  Status poolForward(int64_t id, const float *src, float *dst) override;
  Status poolBackward(int64_t id, const float *src, const float *diffDst,
                      float *diffSrc) override;
  Status attentionForward(int64_t id, const void *q, const void *k,
                          const void *v, const void *mask, const void *keep,
                          void *o, float *lse) override;
  Status attentionBackward(int64_t id,
                           const AttentionGradients &operands) override;
  Status copy(float *dst, const float *src, int64_t floats) override;
  Status zero(float *dst, int64_t floats) override;

  size_t numKernels() const override;
  std::string describeKernel(int64_t id) const override;
  size_t arenaBytes() const override;

  void enableLayoutCache(std::vector<BufferRange> parameters,
                         std::vector<BufferRange> accumulators) override;
  void parametersChanged() override;
  Status beginUpdate() override;
  void endUpdate() override;
  Status settle() override;
  void globalsReplaced() override;
  size_t layoutCacheBytes() const override;

  /// The kernel with manifest id `id`, or nullptr if there is none.
  Kernel *kernel(int64_t id) const;
  /// The in-order CPU stream every kernel executes on.
  dnnl::stream &stream();

private:
  struct Impl;
  explicit OneDnnKernels(std::unique_ptr<Impl> impl);
  /// Kernel `id` if it is of `kind`, else null with `error` set.
  Kernel *find(int64_t id, KernelKind kind, Status &error) const;
  /// Runs `fn(kernel, stream)` on kernel `id` (of `kind`, as a K) and waits
  /// for it; what oneDNN throws becomes the error, naming the kernel and its
  /// implementation.
  template <typename K, typename Fn>
  Status run(int64_t id, KernelKind kind, Fn &&fn);

  std::unique_ptr<Impl> impl_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_ONEDNNKERNELS_H

//===- Kernel.h - Base of the runtime's oneDNN kernels ----------*- C++ -*-===//
//
// The pieces every kernel is built from: the Kernel base class, the arena
// planner that gives kernels their transient memory, and Operand, which binds
// a caller's plain row-major tensor to whatever layout a primitive chose.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_KERNEL_H
#define CLEAVE_RUNTIME_KERNELS_KERNEL_H

#include "kernels/KernelLibrary.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cleave::rt {

class LayoutCache;

/// Plans the transient memory of all kernels of a context: staging copies in
/// a primitive's preferred layout, pooling workspaces, primitive scratchpads.
/// A context runs one kernel at a time and nothing transient survives a call,
/// so all kernels share one arena: its size is the largest single kernel's
/// need, not the sum.
class ArenaPlanner {
public:
  /// Starts the slots of the next kernel at offset 0 again.
  void beginKernel() { cursor_ = 0; }
  /// Reserves room for `memory` (created with DNNL_MEMORY_NONE) in the current
  /// kernel; its handle is set by `bind`. Empty descriptors take no room.
  void place(const dnnl::memory &memory);
  /// Bytes the arena needs.
  size_t bytes() const { return size_; }
  /// Points every placed memory into the arena at `base` (bytes() long).
  void bind(char *base);

  /// Alignment of every slot: a cache line, and what oneDNN asks of buffers.
  static constexpr size_t kAlignment = 64;

private:
  std::vector<std::pair<dnnl::memory, size_t>> slots_;
  size_t cursor_ = 0;
  size_t size_ = 0;
};

/// What a kernel needs while it creates its primitives.
struct BuildEnv {
  dnnl::engine &engine;
  ArenaPlanner &arena;
  /// Copies kept across calls (LayoutCache.h); outlives the kernels.
  LayoutCache *cache = nullptr;
};

/// Primitive attributes every kernel uses: scratchpads come from the arena
/// (user mode) so that no call allocates.
dnnl::primitive_attr makeAttr();

/// Describes `dims` as a dense row-major f32 tensor.
dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims);

/// The bytes from a tensor's first element to past its last: for a strided
/// view (a crop of a larger tensor), the span its elements reach, which
/// oneDNN's get_size() (the size of the dense tensor the strides imply)
/// exceeds; for any other layout, get_size().
size_t extentBytes(const dnnl::memory::desc &desc);

/// A memory object for `desc` whose handle is set later (per call, or by the
/// arena planner).
dnnl::memory unboundMemory(const dnnl::memory::desc &desc,
                           const dnnl::engine &engine);

/// One primitive with its argument map built once. The map holds shared
/// handles to the kernel's memory objects, so per-call handle updates on those
/// objects are what the primitive sees.
struct Step {
  /// Adds the primitive's scratchpad (if any) as an arena slot.
  Step(dnnl::primitive primitive, const dnnl::primitive_desc_base &pd,
       BuildEnv &env);
  void execute(dnnl::stream &stream) { primitive.execute(stream, args); }

  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

/// A tensor argument as the caller passes it (a dense row-major pointer) and
/// as a primitive wants it. When the primitive chose another layout, the
/// operand owns an arena-backed copy in that layout and a reorder between the
/// two, run before (inputs) or after (outputs) the primitive.
class Operand {
public:
  enum class Role {
    /// Read by the primitive.
    Input,
    /// Written by the primitive (overwritten).
    Output,
    /// Written by the primitive, then added into the caller's tensor: for
    /// primitives without a sum post-op. Always staged.
    AccumulatedOutput,
  };

  Operand() = default;
  /// `plain` is the caller's layout, `wanted` the primitive's (from its
  /// primitive descriptor).
  Operand(Role role, const dnnl::memory::desc &plain,
          const dnnl::memory::desc &wanted, BuildEnv &env);

  /// The memory to pass to the primitive.
  const dnnl::memory &forPrimitive() const {
    return staged_ ? internal_ : user_;
  }
  /// Binds the caller's pointer for this call.
  void bind(const void *data) {
    user_.set_data_handle(const_cast<void *>(data));
  }
  /// Runs the reorder into the primitive's layout (staged inputs).
  void stageIn(dnnl::stream &stream);
  /// Runs the reorder back into the caller's tensor (staged outputs).
  void stageOut(dnnl::stream &stream);
  bool staged() const { return staged_; }

private:
  Role role_ = Role::Input;
  bool staged_ = false;
  dnnl::memory user_;
  dnnl::memory internal_;
  std::optional<Step> reorder_;
};

/// Base of every kernel: identity and kind. Derived classes own primitives
/// created once in their constructor and expose a `run` taking the pointers
/// of their entry point.
class Kernel {
public:
  Kernel(KernelKind kind, int64_t id, std::string op)
      : kind_(kind), id_(id), op_(std::move(op)) {}
  virtual ~Kernel();
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  KernelKind kind() const { return kind_; }
  int64_t id() const { return id_; }
  /// The manifest `op` ("conv2d_fwd", ...).
  const std::string &op() const { return op_; }
  /// One line for logs: the oneDNN implementations and layouts in use.
  virtual std::string describe() const = 0;

private:
  KernelKind kind_;
  int64_t id_;
  std::string op_;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_KERNEL_H

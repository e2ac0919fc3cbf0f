//===- KernelContext.cpp - The `ctx` of generated code --------------------===//
//
// Creation of every kernel of a manifest, and the arena they share.
//
//===----------------------------------------------------------------------===//

#include "kernels/KernelContext.h"
#include "kernels/Convolution.h"
#include "kernels/Kernel.h"
#include "kernels/KernelSpec.h"
#include "kernels/LayoutCache.h"
#include "kernels/Matmul.h"
#include "kernels/Pooling.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <new>
#include <utility>

namespace cleave::rt {

namespace {

struct FreeDeleter {
  void operator()(char *p) const { std::free(p); }
};

/// The manifest ops and how to build each.
struct OpInfo {
  const char *name;
  std::unique_ptr<Kernel> (*build)(KernelSpec &, BuildEnv &);
};

template <KernelKind Kind>
std::unique_ptr<Kernel> buildConv(KernelSpec &spec, BuildEnv &env) {
  return std::make_unique<ConvolutionKernel>(spec, env, Kind);
}
template <KernelKind Kind, bool Max>
std::unique_ptr<Kernel> buildPool(KernelSpec &spec, BuildEnv &env) {
  return std::make_unique<PoolingKernel>(spec, env, Kind, Max);
}

constexpr OpInfo kOps[] = {
    {"matmul",
     [](KernelSpec &spec, BuildEnv &env) -> std::unique_ptr<Kernel> {
       return std::make_unique<MatmulKernel>(spec, env);
     }},
    {"conv2d_fwd", buildConv<KernelKind::ConvolutionForward>},
    {"conv2d_bwd_data", buildConv<KernelKind::ConvolutionBackwardData>},
    {"conv2d_bwd_weights", buildConv<KernelKind::ConvolutionBackwardWeights>},
    {"max_pool2d_fwd", buildPool<KernelKind::PoolingForward, true>},
    {"avg_pool2d_fwd", buildPool<KernelKind::PoolingForward, false>},
    {"max_pool2d_bwd", buildPool<KernelKind::PoolingBackward, true>},
    {"avg_pool2d_bwd", buildPool<KernelKind::PoolingBackward, false>},
};

std::string knownOps() {
  std::string out;
  for (const OpInfo &op : kOps)
    out += (out.empty() ? "" : ", ") + std::string(op.name);
  return out;
}

/// Reads the `id` of entry `index`, failing with a message that names the
/// entry by its position (it has no usable id).
int64_t readId(const nlohmann::json &entry, size_t index, size_t count) {
  std::string where = "kernels[" + std::to_string(index) + "]";
  if (!entry.is_object())
    throw KernelSpecError(where + ": must be an object, got " +
                          jsonTypeName(entry));
  auto it = entry.find("id");
  if (it == entry.end())
    throw KernelSpecError(where + ": missing field 'id'");
  if (!it->is_number_integer())
    throw KernelSpecError(where + ": field 'id' must be an integer, got " +
                          jsonTypeName(*it));
  bool negative = !it->is_number_unsigned() && it->get<int64_t>() < 0;
  if (negative || it->get<uint64_t>() >= count)
    throw KernelSpecError(
        where + ": id " + it->dump() + " is out of range: the manifest has " +
        std::to_string(count) + " kernels, so ids must be 0.." +
        std::to_string(count - 1));
  return it->get<int64_t>();
}

/// Reads the `op` of kernel `id` and returns how to build it.
const OpInfo &readOp(const nlohmann::json &entry, int64_t id) {
  std::string where = "kernel " + std::to_string(id);
  auto it = entry.find("op");
  if (it == entry.end())
    throw KernelSpecError(where + ": missing field 'op'");
  if (!it->is_string())
    throw KernelSpecError(where + ": field 'op' must be a string, got " +
                          jsonTypeName(*it));
  std::string op = it->get<std::string>();
  for (const OpInfo &info : kOps)
    if (op == info.name)
      return info;
  throw KernelSpecError(where + ": unknown op '" + op + "' (expected one of " +
                        knownOps() + ")");
}

} // namespace

struct KernelContext::Impl {
  // Declaration order is destruction order reversed: kernels (which hold
  // primitives and memories of the engine) go before the arena and engine.
  dnnl::engine engine;
  dnnl::stream stream;
  std::unique_ptr<char, FreeDeleter> arena;
  size_t arenaBytes = 0;
  LayoutCache cache;
  std::vector<std::unique_ptr<Kernel>> kernels;
  Communicator *comm = nullptr;
  ShardedCollectives *sharded = nullptr;
  DeviceCollectives *deviceCollectives = nullptr;
};

KernelContext::KernelContext(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
KernelContext::~KernelContext() = default;

std::unique_ptr<KernelContext>
KernelContext::create(const nlohmann::json &kernels, std::string &error) {
  if (!kernels.is_array()) {
    error = std::string("manifest field 'kernels' must be an array, got ") +
            jsonTypeName(kernels);
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  std::string current = "the oneDNN CPU engine";
  try {
    impl->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    impl->stream = dnnl::stream(impl->engine);
    impl->kernels.resize(kernels.size());
    ArenaPlanner planner;
    BuildEnv env{impl->engine, planner, &impl->cache};
    for (size_t i = 0; i < kernels.size(); ++i) {
      const nlohmann::json &entry = kernels[i];
      current = "kernels[" + std::to_string(i) + "]";
      int64_t id = readId(entry, i, kernels.size());
      current = "kernel " + std::to_string(id);
      if (impl->kernels[id])
        throw KernelSpecError(current + ": duplicate id (kernels[" +
                              std::to_string(i) + "] reuses it)");
      const OpInfo &op = readOp(entry, id);
      current += std::string(" (") + op.name + ")";
      KernelSpec spec(entry, id, op.name);
      planner.beginKernel();
      impl->kernels[id] = op.build(spec, env);
    }
    current = "the kernel arena";
    impl->arenaBytes = planner.bytes();
    if (impl->arenaBytes > 0) {
      size_t rounded = (impl->arenaBytes + ArenaPlanner::kAlignment - 1) /
                       ArenaPlanner::kAlignment * ArenaPlanner::kAlignment;
      impl->arena.reset(static_cast<char *>(
          std::aligned_alloc(ArenaPlanner::kAlignment, rounded)));
      if (!impl->arena)
        throw std::bad_alloc();
      planner.bind(impl->arena.get());
    }
  } catch (const KernelSpecError &e) {
    error = e.what();
    return nullptr;
  } catch (const dnnl::error &e) {
    error = current + ": oneDNN cannot create the primitive: " + e.what() +
            " (" + dnnl_status2str(e.status) + ")";
    return nullptr;
  } catch (const std::bad_alloc &) {
    error = current + ": out of memory" +
            (impl->arenaBytes
                 ? " allocating " + std::to_string(impl->arenaBytes) + " bytes"
                 : std::string());
    return nullptr;
  } catch (const std::exception &e) {
    error = current + ": " + e.what();
    return nullptr;
  }
  return std::unique_ptr<KernelContext>(new KernelContext(std::move(impl)));
}

std::unique_ptr<KernelContext>
KernelContext::createForDevice(std::unique_ptr<DeviceKernels> kernels,
                               KernelModules *modules) {
  std::unique_ptr<KernelContext> context(
      new KernelContext(std::make_unique<Impl>()));
  context->device_ = std::move(kernels);
  context->modules_ = modules;
  return context;
}

void KernelContext::setCommunicator(Communicator *comm) { impl_->comm = comm; }
Communicator *KernelContext::communicator() const { return impl_->comm; }
void KernelContext::setShardedCollectives(ShardedCollectives *collectives) {
  impl_->sharded = collectives;
}
ShardedCollectives *KernelContext::shardedCollectives() const {
  return impl_->sharded;
}
void KernelContext::setDeviceCollectives(DeviceCollectives *collectives) {
  impl_->deviceCollectives = collectives;
}
DeviceCollectives *KernelContext::deviceCollectives() const {
  return impl_->deviceCollectives;
}
size_t KernelContext::numKernels() const { return impl_->kernels.size(); }

Kernel *KernelContext::kernel(int64_t id) const {
  if (id < 0 || static_cast<uint64_t>(id) >= impl_->kernels.size())
    return nullptr;
  return impl_->kernels[id].get();
}

std::string KernelContext::describeKernel(int64_t id) const {
  Kernel *k = kernel(id);
  return k ? k->describe() : std::string();
}

size_t KernelContext::arenaBytes() const { return impl_->arenaBytes; }

dnnl::stream &KernelContext::stream() { return impl_->stream; }

void KernelContext::enableLayoutCache(std::vector<BufferRange> parameters,
                                      std::vector<BufferRange> accumulators) {
  // A GPU context has no oneDNN kernels to cache for.
  if (!device_)
    impl_->cache.enable(impl_->engine, std::move(parameters),
                        std::move(accumulators));
}

void KernelContext::parametersChanged() { impl_->cache.parametersChanged(); }

Status KernelContext::beginParameterUpdate() {
  CLEAVE_RETURN_IF_ERROR(settleAccumulators());
  impl_->cache.beginUpdate();
  return Status::success();
}

void KernelContext::endParameterUpdate() { impl_->cache.endUpdate(); }

Status KernelContext::settleAccumulators() {
  if (!impl_->cache.unsettled())
    return Status::success();
  try {
    impl_->cache.settle(impl_->stream);
  } catch (const dnnl::error &e) {
    return Status(e.status == dnnl_out_of_memory ? CLEAVE_OUT_OF_MEMORY
                                                 : CLEAVE_INTERNAL,
                  std::string("adding the window's weight gradients into "
                              "their accumulators: oneDNN error: ") +
                      e.what() + " (" + dnnl_status2str(e.status) + ")");
  }
  return Status::success();
}

void KernelContext::globalsReplaced() {
  impl_->cache.discardPartialSums();
  impl_->cache.parametersChanged();
}

size_t KernelContext::layoutCacheBytes() const { return impl_->cache.bytes(); }

void KernelContext::fail(Status error) {
  if (error_.ok())
    error_ = std::move(error);
}

namespace {
// Two variables rather than one thread_local Status: a trivially destructible
// flag costs the hot path no TLS destructor registration (which allocates),
// and the Status is only touched once something failed.
thread_local bool failedWithoutContext = false;
Status &errorWithoutContext() {
  thread_local Status error;
  return error;
}
} // namespace

void KernelContext::failWithoutContext(Status error) {
  if (failedWithoutContext)
    return;
  failedWithoutContext = true;
  errorWithoutContext() = std::move(error);
}

Status KernelContext::takeErrorWithoutContext() {
  if (!failedWithoutContext)
    return Status();
  failedWithoutContext = false;
  return std::exchange(errorWithoutContext(), Status());
}

} // namespace cleave::rt

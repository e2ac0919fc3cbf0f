//===- KernelContext.cpp - The `ctx` of generated code --------------------===//
//
// See KernelContext.h.
//
//===----------------------------------------------------------------------===//

#include "kernels/KernelContext.h"
#include "kernels/OneDnnKernels.h"

#include "collectives/Collectives.h"

#include <utility>

namespace cleave::rt {

namespace {
LocalCollectives oneRank;
} // namespace

KernelContext::KernelContext(std::unique_ptr<KernelLibrary> library,
                             KernelModules *modules)
    : library_(std::move(library)), modules_(modules), collectives_(&oneRank) {}
KernelContext::~KernelContext() = default;

std::unique_ptr<KernelContext>
KernelContext::create(const nlohmann::json &kernels, std::string &error) {
  std::unique_ptr<OneDnnKernels> library =
      OneDnnKernels::create(kernels, error);
  if (!library)
    return nullptr;
  return create(std::move(library));
}

std::unique_ptr<KernelContext>
KernelContext::create(std::unique_ptr<KernelLibrary> library,
                      KernelModules *modules) {
  return std::unique_ptr<KernelContext>(
      new KernelContext(std::move(library), modules));
}

void KernelContext::setCollectives(Collectives *collectives) {
  collectives_ = collectives ? collectives : &oneRank;
}

void KernelContext::enableLayoutCache(std::vector<BufferRange> parameters,
                                      std::vector<BufferRange> accumulators) {
  library_->enableLayoutCache(std::move(parameters), std::move(accumulators));
}

void KernelContext::parametersChanged() { library_->parametersChanged(); }

Status KernelContext::beginParameterUpdate() { return library_->beginUpdate(); }

void KernelContext::endParameterUpdate() { library_->endUpdate(); }

Status KernelContext::settleAccumulators() { return library_->settle(); }

void KernelContext::globalsReplaced() { library_->globalsReplaced(); }

size_t KernelContext::layoutCacheBytes() const {
  return library_->layoutCacheBytes();
}

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

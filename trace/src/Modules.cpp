//===- Modules.cpp - Layers and their PyTorch-default initialisers --------===//
//
// Parameters are drawn from the tracer's seeded generator, which is the
// runtime's (docs/design/runtime.md): a weight W [out, in...] uniform in
// ±1/sqrt(fan_in), row-major, then its bias with the same bound. That is
// torch.nn.Linear's and torch.nn.Conv2d's default (kaiming_uniform with
// a = sqrt(5) gives exactly that bound), and what a session initialises an
// artifact's `kaiming_uniform` and `fan_in_uniform` globals to from the same
// seed.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cmath>

namespace cleave {

using namespace detail;

namespace {

Tensor makeParameter(const Shape &shape) {
  auto impl = makeMaterialized(Type{DType::F32, shape, false}, Role::Parameter);
  impl->requiresGrad = true;
  return Tensor(impl);
}

/// Fills `p` uniformly in ±1/sqrt(fanIn), row-major.
void fill(const Tensor &p, int64_t fanIn, Generator &gen) {
  double bound = 1.0 / std::sqrt(double(fanIn));
  auto *data = reinterpret_cast<float *>(p.impl()->storage->data());
  for (int64_t i = 0, n = p.numel(); i < n; ++i)
    data[i] = float(gen.uniform(-bound, bound));
}

/// Draws a layer's weight, then its bias, recording where in the stream.
template <typename DrawsT>
void drawWeightAndBias(const Tensor &weight, const Tensor &bias, int64_t fanIn,
                       Generator &gen, DrawsT &draws) {
  draws.start = std::make_shared<const Generator>(gen);
  draws.begin = gen.draws();
  fill(weight, fanIn, gen);
  if (bias.defined())
    fill(bias, fanIn, gen);
  draws.end = gen.draws();
}

bool untouched(const Tensor &p) {
  return !p.impl()->isPending() && !p.impl()->leaf && !p.impl()->grad;
}

Pool2dOptions poolOptions(int64_t kernel, int64_t stride, int64_t padding) {
  Pool2dOptions o;
  o.kernel = {kernel, kernel};
  o.stride = {stride, stride};
  o.padding = {padding, padding};
  return o;
}

} // namespace

Module::~Module() = default;

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto &[name, t] : namedParameters())
    out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::namedParameters() const {
  return {};
}

Linear::Linear(int64_t in, int64_t out, bool withBias) {
  if (in < 1 || out < 1)
    fail(CLEAVE_INVALID_ARGUMENT, "Linear: features must be positive, got " +
                                      std::to_string(in) + " -> " +
                                      std::to_string(out));
  weight = makeParameter({out, in});
  if (withBias)
    bias = makeParameter({out});
  drawWeightAndBias(weight, bias, in, Tracer::get().generator(), draws_);
}

void Linear::redraw(Generator &generator) {
  drawWeightAndBias(weight, bias, weight.size(1), generator, draws_);
}

Tensor Linear::forward(const Tensor &x) { return linear(x, weight, bias); }

std::vector<std::pair<std::string, Tensor>> Linear::namedParameters() const {
  std::vector<std::pair<std::string, Tensor>> out = {{"weight", weight}};
  if (bias.defined())
    out.push_back({"bias", bias});
  return out;
}

Conv2d::Conv2d(int64_t in, int64_t out, std::pair<int64_t, int64_t> kernel,
               const Conv2dOptions &opts, bool withBias)
    : options(opts) {
  if (in < 1 || out < 1 || kernel.first < 1 || kernel.second < 1 ||
      opts.groups < 1 || in % opts.groups != 0 || out % opts.groups != 0)
    fail(CLEAVE_INVALID_ARGUMENT,
         "Conv2d: channels and kernel must be positive and channels "
         "divisible by groups");
  weight = makeParameter({out, in / opts.groups, kernel.first, kernel.second});
  if (withBias)
    bias = makeParameter({out});
  drawWeightAndBias(weight, bias, weight.numel() / out,
                    Tracer::get().generator(), draws_);
}

void Conv2d::redraw(Generator &generator) {
  drawWeightAndBias(weight, bias, weight.numel() / weight.size(0), generator,
                    draws_);
}

Tensor Conv2d::forward(const Tensor &x) {
  return conv2d(x, weight, bias, options);
}

std::vector<std::pair<std::string, Tensor>> Conv2d::namedParameters() const {
  std::vector<std::pair<std::string, Tensor>> out = {{"weight", weight}};
  if (bias.defined())
    out.push_back({"bias", bias});
  return out;
}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : options(poolOptions(kernel, stride, padding)) {}

Tensor MaxPool2d::forward(const Tensor &x) { return max_pool2d(x, options); }

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : options(poolOptions(kernel, stride, padding)) {}

Tensor AvgPool2d::forward(const Tensor &x) { return avg_pool2d(x, options); }

Tensor Sequential::forward(const Tensor &x) {
  Tensor y = x;
  for (const std::shared_ptr<Module> &m : layers)
    y = m->forward(y);
  return y;
}

Module::Draws Sequential::draws() const {
  Draws all;
  for (const std::shared_ptr<Module> &m : layers) {
    Draws d = m->draws();
    if (d.empty())
      continue;
    if (all.empty() || d.begin < all.begin) {
      all.begin = d.begin;
      all.start = d.start;
    }
    all.end = std::max(all.end, d.end);
  }
  return all;
}

void Sequential::redraw(Generator &generator) {
  for (const std::shared_ptr<Module> &m : layers)
    m->redraw(generator);
}

void Sequential::drawInLayerOrder() {
  std::vector<Draws> spans;
  for (const std::shared_ptr<Module> &m : layers)
    if (Draws d = m->draws(); !d.empty())
      spans.push_back(d);
  bool inOrder = true;
  for (size_t i = 1; i < spans.size(); ++i)
    inOrder &= spans[i - 1].end <= spans[i].begin;
  if (inOrder)
    return;
  // Only layers constructed as the arguments of this constructor are
  // redrawn: their draws are the last ones and tile one span, and nothing
  // has read their parameters yet.
  Draws all = draws();
  uint64_t total = 0;
  for (const Draws &d : spans)
    total += d.end - d.begin;
  Generator &gen = Tracer::get().generator();
  if (all.end != gen.draws() || total != all.end - all.begin)
    return;
  for (const Tensor &p : parameters())
    if (!untouched(p))
      return;
  gen = *all.start;
  redraw(gen);
}

std::vector<std::pair<std::string, Tensor>>
Sequential::namedParameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < layers.size(); ++i)
    for (auto &[name, t] : layers[i]->namedParameters())
      out.push_back({std::to_string(i) + "." + name, t});
  return out;
}

} // namespace cleave

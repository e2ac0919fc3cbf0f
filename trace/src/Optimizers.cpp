//===- Optimizers.cpp - Recording parameter updates -----------------------===//
//
// An optimizer step records, for every parameter with a gradient, the
// train dialect's update op on the parameter, its gradient and its state,
// and assigns the results back (pending until mark_step writes them into
// the parameter's storage in place). Each hyperparameter is one scalar input
// leaf per step, so its value is data, never part of the graph's structure.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>

namespace cleave {

using namespace detail;

namespace {

void checkHyper(const char *optimizer, const char *name, double value) {
  if (!std::isfinite(value) || value < 0)
    fail(CLEAVE_INVALID_ARGUMENT, std::string(optimizer) + ": " + name +
                                      " must be a finite non-negative "
                                      "number, got " +
                                      std::to_string(value));
}

/// Zero optimizer state belonging to `param`.
Tensor makeState(const Tensor &param) {
  auto impl = makeMaterialized(param.impl()->type, Role::State);
  impl->ofStorage = param.impl()->storage;
  return Tensor(impl);
}

Node::Use hyper(double value) { return hyperLeaf(value, DType::F32); }

} // namespace

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i)
    if (!params_[i].defined() || params_[i].impl()->role != Role::Parameter)
      fail(CLEAVE_INVALID_ARGUMENT,
           "optimizer: params[" + std::to_string(i) +
               "] is not a parameter (use a module's parameters() or "
               "Tensor::parameter)");
}

Optimizer::~Optimizer() = default;

void Optimizer::zero_grad() {
  for (const Tensor &p : params_) {
    const std::shared_ptr<TensorImpl> &grad = p.impl()->grad;
    if (!grad)
      continue;
    std::shared_ptr<Node> zero =
        recordNode(tg::OpKind::Constant, {}, {grad->type}, {}, {0.0}, false);
    assign(grad, {zero, 0});
  }
}

void Optimizer::set_lr(double lr) {
  checkHyper("optimizer", "lr", lr);
  lr_ = lr;
}

SGD::SGD(std::vector<Tensor> params, double lr, double momentum,
         double weightDecay, bool nesterov)
    : Optimizer(std::move(params)), momentum_(momentum),
      weightDecay_(weightDecay), nesterov_(nesterov) {
  checkHyper("SGD", "lr", lr);
  checkHyper("SGD", "momentum", momentum);
  checkHyper("SGD", "weight_decay", weightDecay);
  if (nesterov && momentum <= 0)
    fail(CLEAVE_INVALID_ARGUMENT, "SGD: Nesterov momentum needs momentum > 0");
  lr_ = lr;
}

void SGD::set_momentum(double momentum) {
  checkHyper("SGD", "momentum", momentum);
  if (nesterov_ && momentum <= 0)
    fail(CLEAVE_INVALID_ARGUMENT, "SGD: Nesterov momentum needs momentum > 0");
  momentum_ = momentum;
}

void SGD::set_weight_decay(double weightDecay) {
  checkHyper("SGD", "weight_decay", weightDecay);
  weightDecay_ = weightDecay;
}

void SGD::step() {
  NoGradGuard noGrad;
  // Momentum buffers exist (zero) before their first update, as in
  // PyTorch's first step (buf = g), so every update graph is the same.
  if (momentum_ != 0 && buffers_.empty())
    for (const Tensor &p : params_)
      buffers_.push_back(makeState(p));
  Node::Use lr = hyper(lr_), wd = hyper(weightDecay_);
  Node::Use m = momentum_ != 0 ? hyper(momentum_) : Node::Use();
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::shared_ptr<TensorImpl> &p = params_[i].impl();
    if (!p->grad)
      continue;
    const Type &t = p->type;
    if (momentum_ == 0) {
      std::shared_ptr<Node> n =
          recordNode(tg::OpKind::Sgd, {valueOf(p), valueOf(p->grad), lr, wd},
                     {t}, {}, {}, false);
      assign(p, {n, 0});
      continue;
    }
    const std::shared_ptr<TensorImpl> &buf = buffers_[i].impl();
    std::shared_ptr<Node> n =
        recordNode(tg::OpKind::Momentum,
                   {valueOf(p), valueOf(p->grad), valueOf(buf), lr, m, wd},
                   {t, t}, {nesterov_ ? 1 : 0}, {}, false);
    assign(p, {n, 0});
    assign(buf, {n, 1});
  }
}

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2,
           double eps, double weightDecay)
    : Adam(std::move(params), lr, beta1, beta2, eps, weightDecay,
           /*decoupled=*/false) {}

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2,
           double eps, double weightDecay, bool decoupled)
    : Optimizer(std::move(params)), beta1_(beta1), beta2_(beta2), eps_(eps),
      weightDecay_(weightDecay), decoupled_(decoupled) {
  const char *name = decoupled ? "AdamW" : "Adam";
  checkHyper(name, "lr", lr);
  checkHyper(name, "eps", eps);
  checkHyper(name, "weight_decay", weightDecay);
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    fail(CLEAVE_INVALID_ARGUMENT,
         std::string(name) + ": betas must lie in [0, 1)");
  lr_ = lr;
  for (const Tensor &p : params_) {
    m_.push_back(makeState(p));
    v_.push_back(makeState(p));
  }
}

void Adam::step() {
  NoGradGuard noGrad;
  ++steps_;
  Node::Use t = hyperLeaf(double(steps_), DType::I64);
  Node::Use lr = hyper(lr_), b1 = hyper(beta1_), b2 = hyper(beta2_),
            eps = hyper(eps_), wd = hyper(weightDecay_);
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::shared_ptr<TensorImpl> &p = params_[i].impl();
    if (!p->grad)
      continue;
    const Type &type = p->type;
    const std::shared_ptr<TensorImpl> &m = m_[i].impl(), &v = v_[i].impl();
    std::shared_ptr<Node> n =
        recordNode(tg::OpKind::Adam,
                   {valueOf(p), valueOf(p->grad), valueOf(m), valueOf(v), t, lr,
                    b1, b2, eps, wd},
                   {type, type, type}, {decoupled_ ? 1 : 0}, {}, false);
    assign(p, {n, 0});
    assign(m, {n, 1});
    assign(v, {n, 2});
  }
}

//===----------------------------------------------------------------------===//
// Clipping
//===----------------------------------------------------------------------===//

Tensor clip_grad_norm_(const std::vector<Tensor> &params, double maxNorm) {
  if (!std::isfinite(maxNorm) || maxNorm <= 0)
    fail(CLEAVE_INVALID_ARGUMENT,
         "clip_grad_norm_: max_norm must be a finite positive number, got " +
             std::to_string(maxNorm));
  NoGradGuard noGrad;
  const Type scalar{DType::F32, {}, false};
  std::vector<std::shared_ptr<TensorImpl>> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].defined() || params[i].impl()->role != Role::Parameter)
      fail(CLEAVE_INVALID_ARGUMENT,
           "clip_grad_norm_: params[" + std::to_string(i) +
               "] is not a parameter");
    if (params[i].impl()->grad)
      grads.push_back(params[i].impl()->grad);
  }
  if (grads.empty())
    fail(CLEAVE_INVALID_ARGUMENT,
         "clip_grad_norm_: no parameter has a gradient (call backward() "
         "first)");
  // n = sqrt(sum of squares); scale = min(1, c / (n + 1e-6)), written as
  // c / (c + relu(n + 1e-6 - c)) with the ops a trace has: the two agree
  // exactly when n + 1e-6 <= c (scale 1) and otherwise (c / (n + 1e-6)).
  Node::Use squares;
  for (const std::shared_ptr<TensorImpl> &g : grads) {
    Node::Use gv = valueOf(g);
    Node::Use sq = {recordNode(tg::OpKind::Mul, {gv, gv}, {g->type}, {}, {},
                               false),
                    0};
    Node::Use sum = {
        recordNode(tg::OpKind::ReduceSum, {sq}, {scalar}, {0}, {}, false), 0};
    squares = squares.node ? Node::Use{recordNode(tg::OpKind::Add,
                                                  {squares, sum}, {scalar},
                                                  {}, {}, false),
                                       0}
                           : sum;
  }
  Tensor result = record(tg::OpKind::Sqrt, {squares}, {scalar}, {}, {},
                         /*differentiableOp=*/false)[0];
  Node::Use norm = result.impl()->pending;
  Node::Use c = hyper(maxNorm);
  Node::Use eps = {
      recordNode(tg::OpKind::Constant, {}, {scalar}, {}, {1e-6}, false), 0};
  Node::Use padded = {
      recordNode(tg::OpKind::Add, {norm, eps}, {scalar}, {}, {}, false), 0};
  Node::Use excess = {
      recordNode(tg::OpKind::Sub, {padded, c}, {scalar}, {}, {}, false), 0};
  Node::Use over = {
      recordNode(tg::OpKind::Relu, {excess}, {scalar}, {}, {}, false), 0};
  Node::Use denom = {
      recordNode(tg::OpKind::Add, {c, over}, {scalar}, {}, {}, false), 0};
  Node::Use scale = {
      recordNode(tg::OpKind::Div, {c, denom}, {scalar}, {}, {}, false), 0};
  for (const std::shared_ptr<TensorImpl> &g : grads)
    assign(g, {recordNode(tg::OpKind::Mul, {valueOf(g), scale}, {g->type}, {},
                          {}, false),
               0});
  return result;
}

//===----------------------------------------------------------------------===//
// GradAccumulator
//===----------------------------------------------------------------------===//

GradAccumulator::GradAccumulator(Optimizer &optimizer, int64_t n,
                                 GradAccumulatorOptions options)
    : optimizer_(optimizer), n_(n), options_(std::move(options)) {
  Tracer &tracer = Tracer::get();
  if (n < 1)
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator: n (micro-steps per window) must be >= 1, got " +
             std::to_string(n));
  if (options_.clipNorm < 0 || !std::isfinite(options_.clipNorm))
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator: clipNorm must be a finite number >= 0 (0: no "
         "clipping), got " +
             std::to_string(options_.clipNorm));
  if (tracer.accumulator)
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator: another accumulator exists; one at a time");
  if (options_.schedule) {
    if (std::isnan(options_.schedule->lr))
      options_.schedule->lr = optimizer.lr();
    // Checks every field now rather than at the first update.
    (void)lrScheduleValue(*options_.schedule, 0);
  }
  tracer.accumulator = this;
  tracer.backwardBatches.clear();
}

GradAccumulator::~GradAccumulator() {
  Tracer &tracer = Tracer::get();
  if (tracer.accumulator == this) {
    tracer.accumulator = nullptr;
    tracer.backwardBatches.clear();
  }
}

bool GradAccumulator::step() {
  Tracer &tracer = Tracer::get();
  if (tracer.backwardBatches.empty())
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator::step: no loss.backward() since the last step()");
  int64_t samples = tracer.backwardBatches.front();
  for (int64_t k : tracer.backwardBatches)
    if (k != samples)
      fail(CLEAVE_INVALID_ARGUMENT,
           "GradAccumulator::step: the backward() calls of one micro-step "
           "saw batches of " +
               std::to_string(samples) + " and " + std::to_string(k) +
               " samples; a micro-step is one batch");
  tracer.backwardBatches.clear();
  mark_step();
  ++microSteps_;
  windowSamples_ += samples;
  if (microSteps_ < n_)
    return false;
  update();
  return true;
}

bool GradAccumulator::flush() {
  if (!Tracer::get().backwardBatches.empty())
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator::flush: a loss.backward() is pending; call step() "
         "first");
  if (microSteps_ == 0)
    return false;
  update();
  return true;
}

void GradAccumulator::set_accumulate(int64_t n) {
  if (n < 1)
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator::set_accumulate: n must be >= 1, got " +
             std::to_string(n));
  if (microSteps_ != 0)
    fail(CLEAVE_INVALID_ARGUMENT,
         "GradAccumulator::set_accumulate: the current window has " +
             std::to_string(microSteps_) +
             " micro-steps; change n after an update (or flush() first)");
  n_ = n;
}

void GradAccumulator::update() {
  {
    NoGradGuard noGrad;
    // The gradients hold sums over the window's samples: divide by their
    // count, an input of the graph.
    Node::Use inverse = hyper(1.0 / double(windowSamples_));
    for (const Tensor &p : optimizer_.params())
      if (const std::shared_ptr<TensorImpl> &g = p.impl()->grad)
        assign(g, {recordNode(tg::OpKind::Mul, {valueOf(g), inverse},
                              {g->type}, {}, {}, false),
                   0});
  }
  if (options_.clipNorm > 0)
    clip_grad_norm_(optimizer_.params(), options_.clipNorm);
  if (options_.schedule)
    optimizer_.set_lr(lrScheduleValue(*options_.schedule, optimizerSteps_));
  optimizer_.step();
  optimizer_.zero_grad();
  mark_step();
  microSteps_ = 0;
  windowSamples_ = 0;
  ++optimizerSteps_;
}

} // namespace cleave

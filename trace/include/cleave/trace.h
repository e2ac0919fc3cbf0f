//===- trace.h - Cleave's lazy tensor API -----------------------*- C++ -*-===//
//
// Write the model and the training loop in C++; operations are recorded, not
// run, and cleave::mark_step() cuts the pending graph, compiles it once
// (cached by its structure) and runs it. The loop gradient accumulation
// needs works verbatim:
//
//   cleave::manual_seed(0);
//   cleave::Sequential model(cleave::Flatten(), cleave::Linear(784, 512),
//                            cleave::ReLU(), cleave::Linear(512, 10));
//   cleave::SGD opt(model.parameters(), /*lr=*/0.01);
//   for (int64_t i = 0; i < steps; ++i) {
//     cleave::Tensor x = cleave::Tensor::fromBatch(images, {k, 1, 28, 28});
//     cleave::Tensor y = cleave::Tensor::fromBatch(labels, {k});
//     cleave::Tensor loss = cleave::cross_entropy(model(x), y) / N;
//     loss.backward();
//     cleave::mark_step();   // graph 1: forward + backward, grads +=
//     if ((i + 1) % N == 0) {
//       opt.step();
//       opt.zero_grad();
//       cleave::mark_step(); // graph 2: optimizer update, grads = 0
//     }
//   }
//
// A whole run compiles these two graphs once each, also when the learning
// rate changes or the last micro-batch of an epoch is smaller
// (cleave::trace::stats() counts). docs/user/tracing.md is the guide,
// docs/design/tracing.md the design.
//
// Errors (shape mismatches, unsupported uses, compilation failures) throw
// cleave::Error (cleave/runtime.hpp) with a one-line message; a failed call
// records nothing. The tracer is single-threaded: use it from one thread.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRACE_H
#define CLEAVE_TRACE_H

#include "cleave/runtime.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cleave {

using Shape = std::vector<int64_t>;

/// Element types: f32 for values, i64 for class labels.
enum class DType { F32, I64 };

namespace detail {
struct TensorImpl;
class Generator;
} // namespace detail

/// A handle to a value: either materialised host memory or a node of the
/// pending trace. Copies share the value (like PyTorch tensors).
class Tensor {
public:
  /// An undefined tensor.
  Tensor();

  /// A batch of `shape[0]` samples copied from `data` (row-major): dimension
  /// 0 is the batch. Graphs are compiled for a batch capacity, and a smaller
  /// batch is padded with samples of weight 0.
  static Tensor fromBatch(const float *data, const Shape &shape);
  static Tensor fromBatch(const int64_t *data, const Shape &shape);
  static Tensor fromBatch(const std::vector<float> &data, const Shape &shape);
  static Tensor fromBatch(const std::vector<int64_t> &data, const Shape &shape);
  /// A tensor without a batch dimension, copied from `data`.
  static Tensor fromData(const float *data, const Shape &shape);
  static Tensor fromData(const std::vector<float> &data, const Shape &shape);
  /// A materialised tensor of zeros (f32).
  static Tensor zeros(const Shape &shape);
  /// A trainable parameter holding a copy of `data`: backward() computes its
  /// gradient and optimizers update it.
  static Tensor parameter(const std::vector<float> &data, const Shape &shape);

  bool defined() const { return impl_ != nullptr; }
  const Shape &shape() const;
  int64_t dim() const;
  /// The size of dimension `d` (negative counts from the end).
  int64_t size(int64_t d) const;
  int64_t numel() const;
  DType dtype() const;
  /// Dimension 0 is a batch (made by fromBatch or computed from one).
  bool isBatched() const;
  /// Not yet computed: a node of the pending trace.
  bool isPending() const;
  /// Gradients flow into it (a parameter, or computed from one with
  /// gradients enabled).
  bool requiresGrad() const;

  /// The value of a one-element tensor. A pending tensor is computed first:
  /// an implicit mark_step of just the graph it needs (which compiles a graph
  /// of its own: read values after mark_step in a training loop).
  double item() const;
  /// The elements, row-major (computing a pending tensor as item() does).
  std::vector<float> toFloatVector() const;
  std::vector<int64_t> toInt64Vector() const;

  /// Records "add d(this)/d(p) to p.grad for every parameter p this scalar
  /// depends on". The gradients are derived when the graph is compiled.
  void backward() const;
  /// The gradient accumulator of a parameter (undefined before its first
  /// backward). It reads like any tensor: pending until the next mark_step.
  Tensor grad() const;

  Tensor operator-() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  /// GELU, erf form, or its tanh approximation.
  Tensor gelu(bool tanhApproximation = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor pow(double exponent) const;
  /// Matrix product of the last two dimensions (leading dimensions equal,
  /// or `other` a matrix).
  Tensor matmul(const Tensor &other) const;
  /// Same elements, new shape; at most one -1. A batched tensor keeps its
  /// batch: `shape[0]` must be its batch size or -1.
  Tensor reshape(const Shape &shape) const;
  /// Collapses dimensions [startDim, rank) into one.
  Tensor flatten(int64_t startDim = 1) const;
  /// Swaps two dimensions (not the batch dimension of a batched tensor).
  Tensor transpose(int64_t dim0, int64_t dim1) const;

  /// Sum / mean of all elements. Over a batched tensor only the real samples
  /// count: mean divides by their number, not the padded capacity.
  Tensor sum() const;
  Tensor mean() const;
  /// Reductions over `dims` (not the batch dimension of a batched tensor).
  Tensor sum(const std::vector<int64_t> &dims, bool keepDim = false) const;
  Tensor mean(const std::vector<int64_t> &dims, bool keepDim = false) const;
  Tensor max(const std::vector<int64_t> &dims, bool keepDim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor logSoftmax(int64_t dim) const;

  /// Implementation access for the library itself.
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl);
  const std::shared_ptr<detail::TensorImpl> &impl() const { return impl_; }

private:
  std::shared_ptr<detail::TensorImpl> impl_;
};

/// Elementwise arithmetic with numpy broadcasting. A double is a constant of
/// the graph (part of its structure: use a hyperparameter of an optimizer
/// for values that change).
Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator+(const Tensor &a, double b);
Tensor operator-(const Tensor &a, double b);
Tensor operator*(const Tensor &a, double b);
Tensor operator/(const Tensor &a, double b);
Tensor operator+(double a, const Tensor &b);
Tensor operator-(double a, const Tensor &b);
Tensor operator*(double a, const Tensor &b);
Tensor operator/(double a, const Tensor &b);

Tensor matmul(const Tensor &a, const Tensor &b);
/// x @ weight^T + bias (PyTorch's layout: weight is [out, in]); `bias` may
/// be undefined.
Tensor linear(const Tensor &x, const Tensor &weight, const Tensor &bias);

struct Conv2dOptions {
  std::pair<int64_t, int64_t> stride{1, 1};
  std::pair<int64_t, int64_t> padding{0, 0};
  std::pair<int64_t, int64_t> dilation{1, 1};
  int64_t groups = 1;
};
/// NCHW input, OIHW weight; `bias` [O] may be undefined.
Tensor conv2d(const Tensor &x, const Tensor &weight, const Tensor &bias,
              const Conv2dOptions &options = {});

struct Pool2dOptions {
  std::pair<int64_t, int64_t> kernel{2, 2};
  /// {0, 0}: the kernel size (PyTorch's default).
  std::pair<int64_t, int64_t> stride{0, 0};
  std::pair<int64_t, int64_t> padding{0, 0};
  bool ceilMode = false;
  /// Average pooling only: divide by the whole window, padding included.
  bool countIncludePad = true;
};
Tensor max_pool2d(const Tensor &x, const Pool2dOptions &options);
Tensor avg_pool2d(const Tensor &x, const Pool2dOptions &options);

/// Softmax cross-entropy of logits [B, C] against i64 labels [B], averaged
/// over the real samples (PyTorch's default reduction).
Tensor cross_entropy(const Tensor &logits, const Tensor &labels);
/// Mean squared error over all elements of the real samples.
Tensor mse_loss(const Tensor &input, const Tensor &target);

/// Operations recorded while a NoGradGuard lives are constants to
/// backward() (evaluation, manual updates). Guards nest.
class NoGradGuard {
public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard &) = delete;
  NoGradGuard &operator=(const NoGradGuard &) = delete;
};

/// Cuts the pending graph: everything a live tensor, a requested gradient or
/// a recorded update needs is compiled (once per structure) and run, and
/// those tensors become materialised. Does nothing if nothing is pending.
void mark_step();

/// Seeds the generator parameters are initialised from (std::mt19937_64, as
/// the runtime's initialisers; docs/design/runtime.md). The default seed is
/// 0.
void manual_seed(uint64_t seed);

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

/// A layer. Modules own their parameters as Tensor handles, so copies of a
/// module share them (as sharing a torch.nn.Module does).
///
/// Parameters are drawn from the seeded generator when a layer is
/// constructed. The layers of `Sequential(A(...), B(...))` are constructed
/// in an order C++ leaves unspecified (GCC goes right to left); Sequential
/// redraws them in layer order, so a seed gives the same model as PyTorch's
/// left-to-right `nn.Sequential(A(...), B(...))` with any compiler.
class Module {
public:
  virtual ~Module();
  virtual Tensor forward(const Tensor &x) = 0;
  Tensor operator()(const Tensor &x) { return forward(x); }
  /// Every parameter, in registration order (submodules in order).
  std::vector<Tensor> parameters() const;
  /// Parameters with dotted names ("0.weight", "2.bias" in a Sequential).
  virtual std::vector<std::pair<std::string, Tensor>> namedParameters() const;

protected:
  /// The span [begin, end) of the generator's stream this module's
  /// parameters were drawn from, and the generator's state at `begin`.
  struct Draws {
    uint64_t begin = 0, end = 0;
    std::shared_ptr<const detail::Generator> start;
    bool empty() const { return begin == end; }
  };
  virtual Draws draws() const { return {}; }
  /// Draws the parameters again, in their order, from `generator`.
  virtual void redraw(detail::Generator &) {}
  friend class Sequential;
};

/// y = x W^T + b. Initialised as torch.nn.Linear: weight and bias uniform in
/// ±1/sqrt(in) from the seeded generator (weight first).
class Linear : public Module {
public:
  Linear(int64_t in, int64_t out, bool bias = true);
  Tensor forward(const Tensor &x) override;
  std::vector<std::pair<std::string, Tensor>> namedParameters() const override;
  Tensor weight, bias;

protected:
  Draws draws() const override { return draws_; }
  void redraw(detail::Generator &generator) override;

private:
  Draws draws_;
};

/// 2-D convolution, initialised as torch.nn.Conv2d (uniform in ±1/sqrt(fan
/// in), fan in = in / groups * kernel area).
class Conv2d : public Module {
public:
  Conv2d(int64_t in, int64_t out, std::pair<int64_t, int64_t> kernel,
         const Conv2dOptions &options = {}, bool bias = true);
  Conv2d(int64_t in, int64_t out, int64_t kernel,
         const Conv2dOptions &options = {}, bool bias = true)
      : Conv2d(in, out, {kernel, kernel}, options, bias) {}
  Tensor forward(const Tensor &x) override;
  std::vector<std::pair<std::string, Tensor>> namedParameters() const override;
  Tensor weight, bias;
  Conv2dOptions options;

protected:
  Draws draws() const override { return draws_; }
  void redraw(detail::Generator &generator) override;

private:
  Draws draws_;
};

class MaxPool2d : public Module {
public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  explicit MaxPool2d(const Pool2dOptions &options) : options(options) {}
  Tensor forward(const Tensor &x) override;
  Pool2dOptions options;
};

class AvgPool2d : public Module {
public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  explicit AvgPool2d(const Pool2dOptions &options) : options(options) {}
  Tensor forward(const Tensor &x) override;
  Pool2dOptions options;
};

class ReLU : public Module {
public:
  Tensor forward(const Tensor &x) override { return x.relu(); }
};
class Sigmoid : public Module {
public:
  Tensor forward(const Tensor &x) override { return x.sigmoid(); }
};
class Tanh : public Module {
public:
  Tensor forward(const Tensor &x) override { return x.tanh(); }
};
class GELU : public Module {
public:
  explicit GELU(bool tanhApproximation = false)
      : tanhApproximation(tanhApproximation) {}
  Tensor forward(const Tensor &x) override { return x.gelu(tanhApproximation); }
  bool tanhApproximation;
};
class Flatten : public Module {
public:
  explicit Flatten(int64_t startDim = 1) : startDim(startDim) {}
  Tensor forward(const Tensor &x) override { return x.flatten(startDim); }
  int64_t startDim;
};

/// Modules applied in order.
class Sequential : public Module {
public:
  Sequential() = default;
  Sequential(const Sequential &) = default;
  Sequential(Sequential &&) = default;
  Sequential &operator=(const Sequential &) = default;
  Sequential &operator=(Sequential &&) = default;
  /// The layers, copied (copies share parameters); see Module for the order
  /// their parameters are drawn in.
  template <typename... Modules,
            typename = std::enable_if_t<
                (std::is_base_of_v<Module, std::decay_t<Modules>> && ...) &&
                (sizeof...(Modules) != 1 ||
                 !(std::is_same_v<std::decay_t<Modules>, Sequential> && ...))>>
  explicit Sequential(Modules &&...modules) {
    (push_back(std::forward<Modules>(modules)), ...);
    drawInLayerOrder();
  }
  template <typename M, typename = std::enable_if_t<
                            std::is_base_of_v<Module, std::decay_t<M>>>>
  void push_back(M &&module) {
    layers.push_back(
        std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  void push_back(std::shared_ptr<Module> module) {
    layers.push_back(std::move(module));
  }
  Tensor forward(const Tensor &x) override;
  std::vector<std::pair<std::string, Tensor>> namedParameters() const override;
  std::vector<std::shared_ptr<Module>> layers;

protected:
  Draws draws() const override;
  void redraw(detail::Generator &generator) override;

private:
  /// If the layers' parameters were drawn out of layer order, and last,
  /// rewinds the generator and draws them again in layer order.
  void drawInLayerOrder();
};

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Records parameter updates. Hyperparameters are inputs of the update
/// graph, not constants: changing them never recompiles. Optimizer state is
/// created (zero) with the optimizer, so the first and later update graphs
/// are the same.
class Optimizer {
public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer();
  /// Records the update of every parameter that has a gradient.
  virtual void step() = 0;
  /// Records p.grad = 0 for every parameter that has a gradient.
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr);
  const std::vector<Tensor> &params() const { return params_; }

protected:
  std::vector<Tensor> params_;
  double lr_ = 0.0;
};

/// torch.optim.SGD (dampening 0): weight decay, momentum, Nesterov.
class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0.0,
      double weightDecay = 0.0, bool nesterov = false);
  void step() override;
  double momentum() const { return momentum_; }
  double weightDecay() const { return weightDecay_; }
  void set_momentum(double momentum);
  void set_weight_decay(double weightDecay);

private:
  double momentum_, weightDecay_;
  bool nesterov_;
  std::vector<Tensor> buffers_;
};

/// torch.optim.Adam / AdamW (`decoupled` weight decay). The step count used
/// for bias correction is kept here and passed to each update as an input.
class Adam : public Optimizer {
public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9,
       double beta2 = 0.999, double eps = 1e-8, double weightDecay = 0.0);
  void step() override;
  int64_t stepCount() const { return steps_; }
  void set_weight_decay(double weightDecay) { weightDecay_ = weightDecay; }

protected:
  Adam(std::vector<Tensor> params, double lr, double beta1, double beta2,
       double eps, double weightDecay, bool decoupled);

private:
  double beta1_, beta2_, eps_, weightDecay_;
  bool decoupled_;
  int64_t steps_ = 0;
  std::vector<Tensor> m_, v_;
};

class AdamW : public Adam {
public:
  AdamW(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9,
        double beta2 = 0.999, double eps = 1e-8, double weightDecay = 1e-2)
      : Adam(std::move(params), lr, beta1, beta2, eps, weightDecay,
             /*decoupled=*/true) {}
};

/// torch.nn.utils.clip_grad_norm_: with `n` the L2 norm of the gradients of
/// all `params` together (those that have one), multiplies every gradient by
/// min(1, maxNorm / (n + 1e-6)) and returns `n` (pending). `maxNorm` is an
/// input of the graph, not a constant: changing it never recompiles.
Tensor clip_grad_norm_(const std::vector<Tensor> &params, double maxNorm);

//===----------------------------------------------------------------------===//
// Gradient accumulation
//===----------------------------------------------------------------------===//

struct GradAccumulatorOptions {
  /// > 0: the window's gradient is clipped to this global L2 norm
  /// (clip_grad_norm_) before the update, as cleave-compile --clip-norm.
  double clipNorm = 0.0;
  /// The learning rate of each optimizer step, from the runtime's schedules
  /// (cleave/runtime.h: makeLrSchedule, docs/design/lr-schedules.md),
  /// indexed by optimizer steps. A NaN peak `lr` takes the optimizer's lr
  /// when the accumulator is made.
  std::optional<cleave_lr_schedule> schedule;
};

/// Gradient accumulation over windows of `n` micro-batches, exact for any
/// micro-batch sizes (the shape of MindSpore's `Accumulator`):
///
///   cleave::GradAccumulator acc(opt, N);
///   for (each micro-batch x, y of k_i samples) {
///     cleave::Tensor loss = cleave::cross_entropy(model(x), y);  // a mean
///     loss.backward();
///     acc.step();          // graph 1 every call; graph 2 every N-th call
///   }
///   acc.flush();           // the last, partial window, if any
///
/// While an accumulator exists, loss.backward() adds the gradient of
/// k_i * loss, where k_i is the number of samples of the micro-batch the
/// loss was computed from: the sum of the per-sample gradients when the
/// loss is their mean (PyTorch's default reduction). The update then
/// divides by the window's sample count K = sum of k_i, so a window of
/// ragged micro-batches (a short last one, a partial window at the end of
/// an epoch) steps with the gradient of its mean loss over all K samples,
/// as one batch of K samples would; the hand-written `loss / N` is exact
/// only when every micro-batch is full. K, the clip norm and the learning
/// rate are inputs of the graphs: a whole run compiles two graphs.
///
/// One accumulator at a time; the optimizer must outlive it.
class GradAccumulator {
public:
  GradAccumulator(Optimizer &optimizer, int64_t n,
                  GradAccumulatorOptions options = {});
  ~GradAccumulator();
  GradAccumulator(const GradAccumulator &) = delete;
  GradAccumulator &operator=(const GradAccumulator &) = delete;

  /// Ends a micro-step, after loss.backward(): runs it (mark_step), and when
  /// it is the n-th of its window, the update (scale by 1/K, clip, schedule,
  /// optimizer step, zero_grad, mark_step). Returns whether it updated.
  bool step();
  /// Updates from the micro-steps of an unfinished window, if there are any
  /// (the end of an epoch). Returns whether it updated.
  bool flush();

  /// Micro-steps in the current window, and their samples.
  int64_t microSteps() const { return microSteps_; }
  int64_t windowSamples() const { return windowSamples_; }
  /// Optimizer steps taken (the schedule's index).
  int64_t optimizerSteps() const { return optimizerSteps_; }
  int64_t accumulate() const { return n_; }
  /// A new window length, from the next window on (the current one must be
  /// empty: call it after an update).
  void set_accumulate(int64_t n);

private:
  void update();

  Optimizer &optimizer_;
  int64_t n_;
  GradAccumulatorOptions options_;
  int64_t microSteps_ = 0;
  int64_t windowSamples_ = 0;
  int64_t optimizerSteps_ = 0;
};

//===----------------------------------------------------------------------===//
// Counters and settings
//===----------------------------------------------------------------------===//

namespace trace {

struct Stats {
  /// Calls of cleave::mark_step().
  int64_t markSteps = 0;
  /// Graphs run (explicit and implicit cuts that had something to compute).
  int64_t graphsRun = 0;
  /// Graphs compiled: cache misses, plus recompilations for a batch larger
  /// than the cached capacity.
  int64_t compilations = 0;
  /// Graphs found compiled in the cache.
  int64_t cacheHits = 0;
  /// Implicit cuts made by item() / toFloatVector() of a pending value.
  int64_t implicitCuts = 0;
  /// Wall-clock seconds spent compiling.
  double compileSeconds = 0.0;
};

/// The counters since the start of the process (or the last reset).
Stats stats();
void reset_stats();

struct Options {
  /// When non-empty, each compiled graph's IR at split level is written to
  /// `<dir>/graph-<hash>-b<capacity>.mlir`.
  std::string dumpDir;
  /// Report each compilation on stderr.
  bool verbose = false;
  /// When positive, OpenMP threads used to run graphs compiled from now on
  /// (0: leave OpenMP alone, i.e. OMP_NUM_THREADS).
  int numThreads = 0;
  /// Where graphs compiled from now on run: "cpu" (the default), "cuda"
  /// (GPU 0) or "cuda:N". Tensors stay in host memory: on a GPU each run
  /// copies a graph's inputs and state to the device and its outputs and
  /// state back. Changing it (or gpuArch) drops the compiled graphs.
  std::string device = "cpu";
  /// With a cuda device: the SM architectures to build the kernels for, as
  /// cleave-compile's --gpu-arch (empty: its default, sm_80,sm_90).
  std::string gpuArch;
};
void set_options(const Options &options);
const Options &options();

/// Drops every compiled graph (the next cut of each structure compiles).
void clear_cache();

/// The split-level IR (nn and train dialects) of the graph mark_step() would
/// cut now, for a batch capacity of the pending batch size; "" if nothing is
/// pending. Compiles and runs nothing.
std::string pending_ir();

} // namespace trace

} // namespace cleave

#endif // CLEAVE_TRACE_H

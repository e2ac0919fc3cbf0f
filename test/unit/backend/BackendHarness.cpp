//===- BackendHarness.cpp - Compiled artifacts vs the reference interpreter ===//
//
// Implements the model builder, the two compilations of a case and the
// lock-step run of the runtime and the interpreter.
//
//===----------------------------------------------------------------------===//

#include "BackendHarness.h"

#include "test/unit/compiler/TestSupport.h"

#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "dialects/Train/IR/TrainOps.h"

#include "cleave/runtime.hpp"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <unistd.h>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::backend_test;
using interp::DType;
using interp::State;
using interp::Tensor;
using train::TrainDialect;

//===----------------------------------------------------------------------===//
// ModelBuilder
//===----------------------------------------------------------------------===//

ModelBuilder::ModelBuilder(MLIRContext *ctx, std::mt19937_64 &rng,
                           int64_t batch)
    : ctx(ctx), random(rng), batchSize(batch), location(UnknownLoc::get(ctx)),
      builder(ctx) {
  ctx->loadDialect<nn::NNDialect, train::TrainDialect, func::FuncDialect,
                   arith::ArithDialect>();
  module = ModuleOp::create(location);
  builder.setInsertionPointToEnd(module->getBody());
  forward = func::FuncOp::create(builder, location, "forward",
                                 builder.getFunctionType({}, {}));
  builder.setInsertionPointToStart(forward.addEntryBlock());
}

int64_t backend_test::randomDim(std::mt19937_64 &rng, int64_t lo,
                                int64_t hi) {
  return lo + static_cast<int64_t>(rng() % uint64_t(hi - lo + 1));
}

int64_t ModelBuilder::dim(int64_t lo, int64_t hi) {
  return randomDim(random, lo, hi);
}

Value ModelBuilder::addArgument(Type type, ArrayRef<NamedAttribute> attrs) {
  argAttrs.push_back(DictionaryAttr::get(ctx, attrs));
  return forward.getBody().front().addArgument(type, location);
}

DenseElementsAttr ModelBuilder::randomValues(RankedTensorType type, double lo,
                                             double hi) {
  std::vector<double> v =
      test::uniform(random, type.getNumElements(), lo, hi);
  std::vector<float> f(v.begin(), v.end());
  return DenseElementsAttr::get(type, ArrayRef<float>(f));
}

static SmallVector<int64_t> withBatch(int64_t batch, ArrayRef<int64_t> sample) {
  SmallVector<int64_t> shape = {batch};
  shape.append(sample.begin(), sample.end());
  return shape;
}

Value ModelBuilder::input(StringRef name, ArrayRef<int64_t> sample, double lo,
                          double hi) {
  EXPECT_TRUE(names.insert(name.str()).second) << "duplicate name " << name.str();
  inputs.push_back({name.str(), DType::f32, sample.vec(), lo, hi});
  return addArgument(
      RankedTensorType::get(withBatch(batchSize, sample), builder.getF32Type()),
      {builder.getNamedAttr(TrainDialect::kInputAttr,
                            builder.getStringAttr(name))});
}

Value ModelBuilder::indexInput(StringRef name, ArrayRef<int64_t> sample,
                               int64_t bound, bool i32) {
  EXPECT_TRUE(names.insert(name.str()).second) << "duplicate name " << name.str();
  inputs.push_back({name.str(), i32 ? DType::i32 : DType::i64, sample.vec(), 0,
                    double(bound)});
  Type elt = i32 ? builder.getI32Type() : builder.getI64Type();
  return addArgument(
      RankedTensorType::get(withBatch(batchSize, sample), elt),
      {builder.getNamedAttr(TrainDialect::kInputAttr,
                            builder.getStringAttr(name))});
}

Value ModelBuilder::param(StringRef name, ArrayRef<int64_t> shape, double lo,
                          double hi) {
  EXPECT_TRUE(names.insert(name.str()).second) << "duplicate name " << name.str();
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  return addArgument(
      type, {builder.getNamedAttr(TrainDialect::kParamAttr,
                                  builder.getStringAttr(name)),
             builder.getNamedAttr(TrainDialect::kInitAttr,
                                  randomValues(type, lo, hi))});
}

Value ModelBuilder::buffer(StringRef name, ArrayRef<int64_t> shape, double lo,
                           double hi) {
  EXPECT_TRUE(names.insert(name.str()).second) << "duplicate name " << name.str();
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  return addArgument(
      type, {builder.getNamedAttr(TrainDialect::kBufferAttr,
                                  builder.getStringAttr(name)),
             builder.getNamedAttr(TrainDialect::kInitAttr,
                                  randomValues(type, lo, hi))});
}

Value ModelBuilder::seed() {
  return addArgument(RankedTensorType::get({}, builder.getI64Type()),
                     {builder.getNamedAttr("train.rng", builder.getUnitAttr())});
}

void ModelBuilder::observe(StringRef name, Value y) {
  auto t = cast<RankedTensorType>(y.getType());
  EXPECT_TRUE(t.getRank() >= 1 && t.getDimSize(0) == batchSize)
      << name.str() << ": observe() needs a [B, ...] value";
  Value probe = param((name + ".probe").str(), t.getShape().drop_front());
  Value term = nn::MulOp::create(builder, location, y, probe);
  if (t.getRank() > 1) {
    SmallVector<int64_t> axes;
    for (int64_t d = 1; d < t.getRank(); ++d)
      axes.push_back(d);
    term = nn::ReduceSumOp::create(builder, location, term, axes, false);
  }
  batchTerms.push_back(term);
}

void ModelBuilder::observeGlobal(StringRef name, Value y) {
  auto t = cast<RankedTensorType>(y.getType());
  Value probe = param((name + ".probe").str(), t.getShape());
  Value term = nn::MulOp::create(builder, location, y, probe);
  globalTerms.push_back(nn::ReduceSumOp::create(
      builder, location, term, ArrayRef<int64_t>{}, false));
}

void ModelBuilder::updateBuffer(StringRef name, Value v) {
  buffers.push_back({name.str(), v});
}

Value ModelBuilder::scaled(StringRef name, Value x, ArrayRef<int64_t> shape,
                           double lo, double hi) {
  return nn::MulOp::create(builder, location, x, param(name, shape, lo, hi));
}

Model ModelBuilder::finish() {
  Value loss;
  for (Value t : batchTerms)
    loss = loss ? nn::AddOp::create(builder, location, loss, t).getResult() : t;
  for (Value t : globalTerms)
    loss = loss ? nn::AddOp::create(builder, location, loss, t).getResult()
                : nn::BroadcastToOp::create(builder, location, t,
                                            ArrayRef<int64_t>{batchSize})
                      .getResult();
  SmallVector<Value> results = {loss};
  for (auto &[name, v] : buffers)
    results.push_back(v);
  func::ReturnOp::create(builder, location, results);
  forward.setFunctionType(FunctionType::get(
      ctx, forward.getBody().front().getArgumentTypes(),
      ValueRange(results).getTypes()));
  forward.setAllArgAttrs(argAttrs);
  for (auto [i, entry] : llvm::enumerate(buffers))
    forward.setResultAttr(i + 1, TrainDialect::kBufferAttr,
                       builder.getStringAttr(entry.first));
  EXPECT_TRUE(succeeded(verify(*module))) << "the built model is invalid";
  Model m;
  m.module = std::move(module);
  m.batch = batchSize;
  m.inputs = std::move(inputs);
  return m;
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

uint64_t backend_test::caseSeed(const Case &c, uint64_t extra) {
  uint64_t seed = llvm::xxh3_64bits(c.name) ^ extra;
  if (const char *env = std::getenv("CLEAVE_BACKEND_SEED"))
    seed ^= std::strtoull(env, nullptr, 0) * 0x9E3779B97F4A7C15ULL;
  return seed;
}

/// The case's options, set from their names as `cleave-opt` spells them.
static void setTrainingOptions(TrainingPipelineOptions &o, const Case &c,
                               int64_t batch) {
  o.loss = *nn::symbolizeEnum<nn::LossKind>(c.loss);
  o.microBatch = batch;
  o.optimizer = *train::symbolizeEnum<train::OptimizerKind>(c.optimizer);
  o.lr = c.lr;
  o.momentum = c.momentum;
  o.weightDecay = c.weightDecay;
  o.clipNorm = c.clipNorm;
  o.accumulate = 1;
  o.reduce = *train::symbolizeEnum<train::RankReduction>(c.reduce);
}

OwningOpRef<ModuleOp> backend_test::buildSplit(MLIRContext *ctx, const Case &c,
                                               uint64_t seed, Model *model,
                                               std::string &errors,
                                               bool cudaBf16) {
  std::mt19937_64 rng(seed);
  *model = c.build(ctx, rng);
  if (!model->module) {
    errors = "the case built no model";
    return nullptr;
  }
  OwningOpRef<ModuleOp> split(model->module->clone());
  test::DiagnosticCollector diags(ctx);
  PassManager pm(ctx);
  TrainingPipelineOptions options;
  setTrainingOptions(options, c, model->batch);
  if (cudaBf16) {
    options.target = rt::Device::cuda;
    options.precision = rt::KernelPrecision::bf16;
  }
  buildTrainingPipeline(pm, options, Phase::Split);
  if (failed(pm.run(*split))) {
    errors = "training pipeline failed:\n" + diags.str();
    return nullptr;
  }
  return split;
}

/// Whether `op` is a convolution (or its gradient) that multiplies in bf16:
/// all but one with a single input channel and no groups. On cuda its
/// result is bf16 too.
static bool isBf16Convolution(Operation *op) {
  auto channels = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape()[1];
  };
  if (auto conv = dyn_cast<nn::Conv2DOp>(op))
    return !(channels(conv.getWeight()) == 1 && conv.getGroups() == 1);
  if (auto grad = dyn_cast<nn::Conv2DGradInputOp>(op))
    return !(channels(grad.getWeight()) == 1 && grad.getGroups() == 1);
  if (auto grad = dyn_cast<nn::Conv2DGradWeightOp>(op))
    return !(channels(grad.getInput()) == 1 && grad.getGroups() == 1);
  return false;
}

/// Whether the back end multiplies `op` (a split-level nn op) in bf16 under
/// precision=bf16 with every matmul in bf16 (bf16-min-matmul-k=0: the
/// cases' reductions are mostly shorter than the pipelines' threshold):
/// the rule of compiler/Conversion/Precision/Bf16Rule.h on the ops the
/// kernels come from. Every matmul and linear layer; every convolution but
/// one with a single input channel and no groups.
static bool multipliesInBf16(Operation *op) {
  if (isa<nn::MatmulOp, nn::LinearOp, nn::FusedAttentionOp,
          nn::FusedAttentionGradOp>(op))
    return true;
  return isBf16Convolution(op);
}

/// The split module through the CPU back end (or, with `gpuKernelsOnHost`,
/// the cuda target's kernels run on the host) into the artifact `path`.
static LogicalResult compileArtifact(ModuleOp split, StringRef path,
                                     bool gpuKernelsOnHost, bool bf16,
                                     std::string &errors,
                                     std::map<std::string, double> &seconds) {
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
        .count();
  };
  auto start = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> lowered(split.clone());
  MLIRContext *ctx = split.getContext();
  test::DiagnosticCollector diags(ctx);
  PassManager pm(ctx);
  // The kernel options each target's pipeline gives (TrainingPipelineOptions::
  // lowerRuntimeCallsOptions): cuDNN's bf16 convolutions store every operand
  // in bf16, the result included.
  CleaveLowerRuntimeCallsOptions kernels;
  if (bf16) {
    kernels.precision = rt::KernelPrecision::bf16;
    kernels.bf16ConvolutionResults = gpuKernelsOnHost;
    // Every matmul in bf16, whatever its K (the pipelines keep short ones
    // f32, which would leave most of these small cases f32).
    kernels.bf16MinMatmulK = 0;
  }
  if (gpuKernelsOnHost)
    buildGpuKernelsOnHostPipeline(pm, {}, kernels);
  else
    buildCpuBackendPipeline(pm, {}, Phase::LLVM, kernels);
  if (failed(pm.run(*lowered))) {
    errors = "CPU back end failed:\n" + diags.str();
    return failure();
  }
  if (std::getenv("CLEAVE_BACKEND_KEEP")) {
    // For debugging a failure: the IR the interpreter runs and the IR just
    // before code generation.
    OwningOpRef<ModuleOp> bufferized(split.clone());
    PassManager dump(ctx);
    buildCpuBackendPipeline(dump, {}, Phase::Bufferize);
    (void)dump.run(*bufferized);
    std::error_code ec;
    llvm::raw_fd_ostream splitOs((path + ".split.mlir").str(), ec);
    split.print(splitOs);
    llvm::raw_fd_ostream bufOs((path + ".bufferized.mlir").str(), ec);
    bufferized->print(bufOs);
  }
  seconds["artifact: back end"] += since(start);
  start = std::chrono::steady_clock::now();
  double codegen = 0;
  LogicalResult written = writeArtifact(*lowered, path, errors, &codegen);
  seconds["artifact: machine code"] += codegen;
  seconds["artifact: link"] += since(start) - codegen;
  return written;
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

namespace {

/// Adds the wall time of its lifetime to `seconds[phase]`.
class Timer {
public:
  Timer(Outcome &out, const char *phase)
      : out(out), phase(phase), start(std::chrono::steady_clock::now()) {}
  ~Timer() {
    out.seconds[phase] += std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  }

private:
  Outcome &out;
  const char *phase;
  std::chrono::steady_clock::time_point start;
};

int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// One micro-batch: `samples` real rows of every input, as the runtime takes
/// them (raw bytes) and as the interpreter takes them (padded to B as the
/// runtime pads, by repeating the last real row, plus the sample weights).
struct MicroBatch {
  int64_t samples = 0;
  std::map<std::string, std::vector<char>> bytes;
  std::map<std::string, Tensor> padded;
};

MicroBatch drawBatch(std::mt19937_64 &rng, const Model &model,
                     int64_t samples) {
  MicroBatch mb;
  mb.samples = samples;
  for (const InputSpec &in : model.inputs) {
    int64_t row = product(in.sample);
    SmallVector<int64_t> shape = withBatch(model.batch, in.sample);
    Tensor t(in.dtype, shape);
    std::vector<double> v = test::uniform(rng, samples * row, in.lo, in.hi);
    std::vector<char> &raw = mb.bytes[in.name];
    for (int64_t i = 0; i < samples * row; ++i) {
      if (interp::isFloat(in.dtype)) {
        t.setDouble(i, v[i]);
      } else {
        t.setInt(i, std::min<int64_t>(static_cast<int64_t>(std::floor(v[i])),
                                      int64_t(in.hi) - 1));
      }
    }
    for (int64_t i = samples * row; i < model.batch * row; ++i) {
      int64_t from = (samples - 1) * row + i % row;
      if (interp::isFloat(in.dtype))
        t.setDouble(i, t.getDouble(from));
      else
        t.setInt(i, t.getInt(from));
    }
    // The runtime's rows are the interpreter's first `samples` rows.
    auto append = [&](const void *p, size_t n) {
      const char *c = static_cast<const char *>(p);
      raw.insert(raw.end(), c, c + n);
    };
    switch (in.dtype) {
    case DType::f32:
      append(t.data<float>().data(), samples * row * sizeof(float));
      break;
    case DType::f64:
      append(t.data<double>().data(), samples * row * sizeof(double));
      break;
    case DType::i32:
      append(t.data<int32_t>().data(), samples * row * sizeof(int32_t));
      break;
    case DType::i64:
      append(t.data<int64_t>().data(), samples * row * sizeof(int64_t));
      break;
    }
    mb.padded.emplace(in.name, std::move(t));
  }
  Tensor weights(DType::f32, {model.batch});
  for (int64_t i = 0; i < samples; ++i)
    weights.setDouble(i, 1.0);
  mb.padded.emplace("weights", std::move(weights));
  return mb;
}

/// |t| for float tensors; integer tensors (indices, counters) unchanged.
Tensor magnitudeOf(const Tensor &t) {
  if (!interp::isFloat(t.getDType()))
    return t;
  Tensor r = t;
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    r.setDouble(i, std::fabs(t.getDouble(i)));
  return r;
}

State magnitudeOf(const State &s) {
  State r;
  for (const std::string &name : s.getNames())
    r.set(name, magnitudeOf(*s.lookup(name)));
  return r;
}

MicroBatch magnitudeOf(const MicroBatch &mb) {
  MicroBatch r;
  r.samples = mb.samples;
  for (auto &[name, t] : mb.padded)
    r.padded.emplace(name, magnitudeOf(t));
  return r;
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

/// The spacing of f32 values at magnitude `x`.
double ulp(double x) {
  float f = static_cast<float>(x);
  return double(std::nextafter(f, INFINITY)) - double(f);
}

/// max |v_i|, ignoring NaN.
double infNorm(ArrayRef<double> v) {
  double n = 0;
  for (double x : v)
    if (std::fabs(x) > n)
      n = std::fabs(x);
  return n;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

class Comparator {
public:
  explicit Comparator(Outcome &out) : out(out) {}

  /// `max |got - ref| <= rtol * max(||ref||_inf, floor) + slack`: the error
  /// relative to the magnitude of the compared terms, `floor` standing in
  /// for terms a sum cancelled, `slack` for a final rounding both sides do.
  void values(StringRef kind, const std::string &what, ArrayRef<double> got,
              ArrayRef<double> ref, double rtol, double floor = 0,
              double slack = 0) {
    ++out.comparisons;
    if (got.size() != ref.size()) {
      fail(kind.str() + " " + what + ": " + std::to_string(got.size()) +
           " values, reference has " + std::to_string(ref.size()));
      return;
    }
    double err = 0;
    size_t at = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double e = std::fabs(got[i] - ref[i]);
      if (std::isnan(e) || std::isnan(got[i]) || std::isnan(ref[i]))
        e = std::numeric_limits<double>::infinity();
      if (e > err) {
        err = e;
        at = i;
      }
    }
    double scale = std::max(infNorm(ref), floor);
    double excess = std::max(0.0, err - slack);
    double rel = excess == 0 ? 0 : scale > 0 ? excess / scale : INFINITY;
    double &worst = out.worst[kind.str()];
    worst = std::max(worst, rel);
    if (!(rel <= rtol))
      fail(kind.str() + " " + what + ": max |got - ref| = " + fmt(err) +
           " at element " + std::to_string(at) + " (got " + fmt(got[at]) +
           ", reference " + fmt(ref[at]) + "), scale " + fmt(scale) +
           (slack > 0 ? ", rounding allowance " + fmt(slack) : "") +
           ", relative " + fmt(rel) + " > " + fmt(rtol));
  }

  /// Bit-for-bit equality (counters, untouched state, initial values).
  void exact(const std::string &what, ArrayRef<double> got,
             ArrayRef<double> ref) {
    ++out.comparisons;
    if (got.size() != ref.size()) {
      fail(what + ": size differs");
      return;
    }
    for (size_t i = 0; i < got.size(); ++i)
      if (!(got[i] == ref[i])) {
        fail(what + ": element " + std::to_string(i) + " is " + fmt(got[i]) +
             ", expected exactly " + fmt(ref[i]));
        return;
      }
  }

  void fail(const std::string &message) { out.failures.push_back(message); }

private:
  Outcome &out;
};

//===----------------------------------------------------------------------===//
// The runtime side
//===----------------------------------------------------------------------===//

/// Globals as the runtime describes them.
struct GlobalDesc {
  std::string name;
  cleave_global_kind kind;
  std::string of;
  DType dtype;
  SmallVector<int64_t> shape;
};

DType fromRuntime(cleave_dtype d) {
  switch (d) {
  case CLEAVE_DTYPE_F32:
    return DType::f32;
  case CLEAVE_DTYPE_F64:
    return DType::f64;
  case CLEAVE_DTYPE_I32:
    return DType::i32;
  case CLEAVE_DTYPE_I64:
    return DType::i64;
  default: // globals have none of the narrow types
    break;
  }
  return DType::f32;
}

Tensor readGlobal(const ::cleave::Session &s, const GlobalDesc &g) {
  Tensor t(g.dtype, g.shape);
  switch (g.dtype) {
  case DType::f32: {
    std::vector<float> v = s.readGlobal<float>(g.name);
    std::copy(v.begin(), v.end(), t.data<float>().begin());
    break;
  }
  case DType::f64: {
    std::vector<double> v = s.readGlobal<double>(g.name);
    std::copy(v.begin(), v.end(), t.data<double>().begin());
    break;
  }
  case DType::i32: {
    std::vector<int32_t> v = s.readGlobal<int32_t>(g.name);
    std::copy(v.begin(), v.end(), t.data<int32_t>().begin());
    break;
  }
  case DType::i64: {
    std::vector<int64_t> v = s.readGlobal<int64_t>(g.name);
    std::copy(v.begin(), v.end(), t.data<int64_t>().begin());
    break;
  }
  }
  return t;
}

/// Arguments of entry `f` from the batch's padded inputs and the
/// hyperparameter defaults (which the runtime starts from too).
std::vector<Tensor> entryArgs(func::FuncOp f, const MicroBatch *mb,
                              Comparator &cmp) {
  std::vector<Tensor> args;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
    if (auto name =
            f.getArgAttrOfType<StringAttr>(i, TrainDialect::kInputAttr)) {
      const Tensor *value = nullptr;
      if (mb)
        if (auto it = mb->padded.find(name.str()); it != mb->padded.end())
          value = &it->second;
      if (!value) {
        cmp.fail("no data for input '" + name.str() + "' of @" +
                 f.getSymName().str());
        args.emplace_back(*interp::getDType(type.getElementType()),
                          type.getShape());
        continue;
      }
      args.push_back(*value);
    } else if (auto value = f.getArgAttrOfType<FloatAttr>(
                   i, TrainDialect::kDefaultAttr)) {
      args.push_back(Tensor::scalar(*interp::getDType(type.getElementType()),
                                    value.getValueAsDouble()));
    } else {
      cmp.fail("argument #" + std::to_string(i) + " of @" +
               f.getSymName().str() + " is neither an input nor a hyper");
      args.emplace_back(DType::f32, type.getShape());
    }
  }
  return args;
}

/// Whether the initial value of `g` is exact (not drawn by the runtime's
/// generator, which the interpreter does not reproduce).
bool hasExactInit(train::GlobalOp g) {
  auto init = g.getInitialValueAttr();
  if (!init || isa<DenseElementsAttr>(init))
    return true;
  if (auto i = dyn_cast<train::InitializerAttr>(init))
    return i.getKind() == train::InitKind::zeros ||
           i.getKind() == train::InitKind::ones ||
           i.getKind() == train::InitKind::constant;
  return false;
}

class Runner {
public:
  Runner(const Case &c, const RunOptions &options, Outcome &out)
      : c(c), options(options), out(out), cmp(out) {}
  ~Runner() {
    // The loaded artifact stays mapped; only its file goes.
    if (!dir.empty() && !std::getenv("CLEAVE_BACKEND_KEEP"))
      llvm::sys::fs::remove_directories(dir);
  }

  void run();

private:
  void compileBoth();
  void checkInitialState();
  void syncFromRuntime();
  void microStep(const MicroBatch &mb, int window);
  void compareAfterMicroStep(const std::string &where,
                             const State &magnitudes);
  void applyStep(int window);
  void evalStep(const MicroBatch &mb, int window);
  std::vector<double> values(const GlobalDesc &g) {
    return readGlobal(*session, g).toDoubles();
  }
  std::vector<double> reference(const GlobalDesc &g) {
    const Tensor *t = state.lookup(g.name);
    if (!t) {
      cmp.fail("the interpreter has no global '" + g.name + "'");
      return {};
    }
    return t->toDoubles();
  }
  std::vector<Tensor> interpret(StringRef entry, ArrayRef<Tensor> args) {
    return interpret(entry, args, state);
  }
  std::vector<Tensor> interpret(StringRef entry, ArrayRef<Tensor> args,
                                State &on) {
    Timer t(out, "interpreter");
    interp::InterpretOptions rounding;
    if (options.bf16) {
      rounding.roundsOperandsToBf16 = multipliesInBf16;
      // cuda's bf16 convolutions and fused attention write bf16 results
      // (cuDNN).
      if (options.gpuKernelsOnHost)
        rounding.roundsResultsToBf16 = [](Operation *op) {
          return isBf16Convolution(op) ||
                 isa<nn::FusedAttentionOp, nn::FusedAttentionGradOp>(op);
        };
    }
    return test::run(*split, entry, args, on, rounding);
  }
  func::FuncOp entry(StringRef name) {
    return split->lookupSymbol<func::FuncOp>(name);
  }

  const Case &c;
  const RunOptions &options;
  Outcome &out;
  Comparator cmp;
  std::unique_ptr<MLIRContext> ctx;
  Model model;
  OwningOpRef<ModuleOp> split;
  std::string dir;
  std::optional<::cleave::Artifact> artifact;
  std::optional<::cleave::Session> session;
  std::vector<GlobalDesc> globals;
  State state;
  std::mt19937_64 dataRng;
};

void Runner::compileBoth() {
  ctx = test::makeContext();
  uint64_t seed = caseSeed(c, options.seed);
  dataRng.seed(seed ^ 0xDA7A);
  std::string errors;
  {
    Timer t(out, "split");
    split = buildSplit(ctx.get(), c, seed, &model, errors,
                       options.gpuKernelsOnHost && options.bf16);
  }
  if (model.module) {
    llvm::raw_string_ostream os(out.modelText);
    model.module->print(os);
  }
  if (!split) {
    cmp.fail(errors);
    return;
  }
  SmallString<128> base(CLEAVE_BACKEND_TMPDIR);
  llvm::sys::fs::create_directories(base);
  llvm::sys::path::append(base, c.name + "-" + std::to_string(::getpid()));
  llvm::sys::fs::create_directories(base);
  dir = std::string(base);
  std::string path = dir + "/" + c.name + ".cleave";
  {
    Timer t(out, "artifact");
    if (failed(compileArtifact(*split, path, options.gpuKernelsOnHost,
                               options.bf16, errors, out.seconds))) {
      cmp.fail(errors);
      return;
    }
  }
  Timer t(out, "runtime");
  artifact.emplace(::cleave::Artifact::load(path));
  ::cleave::SessionOptions opts;
  // apply_step runs only when the test flushes.
  opts.accumulate = int64_t(1) << 40;
  opts.numThreads = 1;
  session.emplace(*artifact, opts);
  for (const ::cleave::GlobalInfo &g : artifact->globals())
    globals.push_back({g.tensor.name, g.kind, g.of, fromRuntime(g.tensor.dtype),
                       SmallVector<int64_t>(g.tensor.shape.begin(),
                                            g.tensor.shape.end())});
  FailureOr<State> init = State::fromModule(*split);
  if (failed(init)) {
    cmp.fail("the interpreter cannot build the state");
    return;
  }
  state = std::move(*init);
}

void Runner::checkInitialState() {
  // Parameters and buffers with explicit values, zero-initialised state and
  // counters: the runtime must start exactly where the interpreter does.
  for (auto g : split->getOps<train::GlobalOp>()) {
    if (!hasExactInit(g))
      continue;
    auto it = llvm::find_if(globals, [&](const GlobalDesc &d) {
      return d.name == g.getSymName();
    });
    if (it == globals.end()) {
      cmp.fail("global '" + g.getSymName().str() + "' is not in the manifest");
      continue;
    }
    cmp.exact("initial value of " + it->name, values(*it), reference(*it));
  }
}

void Runner::syncFromRuntime() {
  for (const GlobalDesc &g : globals) {
    Tensor t = readGlobal(*session, g);
    if (g.name == options.perturbation.global)
      for (int64_t i = 0; i < t.getNumElements(); ++i)
        t.setDouble(i, t.getDouble(i) * (1 + options.perturbation.relative));
    state.set(g.name, std::move(t));
  }
}

void Runner::microStep(const MicroBatch &mb, int window) {
  std::string where = "window " + std::to_string(window) + ", micro-batch of " +
                      std::to_string(mb.samples) + "/" +
                      std::to_string(model.batch);
  // The runtime.
  ::cleave::Batch batch(mb.samples);
  for (const ::cleave::TensorInfo &in : artifact->inputs()) {
    auto it = mb.bytes.find(in.name);
    if (it == mb.bytes.end()) {
      cmp.fail("the artifact has an input '" + in.name +
               "' the case does not describe");
      return;
    }
    batch.add(it->second.data(), it->second.size());
  }
  {
    Timer t(out, "runtime");
    session->microStep(batch);
  }
  double got = session->output<float>("micro_step", "loss").at(0);

  // The same micro-step on the magnitudes of everything: the scale every
  // comparison of its results is relative to.
  State magState = magnitudeOf(state);
  MicroBatch magBatch = magnitudeOf(mb);
  std::vector<Tensor> magLoss =
      interpret("micro_step", entryArgs(entry("micro_step"), &magBatch, cmp),
                magState);
  std::vector<Tensor> ref =
      interpret("micro_step", entryArgs(entry("micro_step"), &mb, cmp));
  if (ref.empty() || magLoss.empty()) {
    cmp.fail(where + ": the interpreter failed");
    return;
  }
  cmp.values("loss", where, {got}, {ref[0].getDouble(0)},
             options.tolerances.kernels, std::fabs(magLoss[0].getDouble(0)));
  compareAfterMicroStep(where, magState);
}

void Runner::compareAfterMicroStep(const std::string &where,
                                   const State &magnitudes) {
  for (const GlobalDesc &g : globals) {
    std::vector<double> got = values(g), ref = reference(g);
    const Tensor *mag = magnitudes.lookup(g.name);
    double terms = mag ? infNorm(mag->toDoubles()) : 0;
    switch (g.kind) {
    case CLEAVE_GLOBAL_ACCUMULATOR:
      // The window's loss is summed by kernels like the gradients; the
      // sample count is exact.
      if (g.name == "train.loss")
        cmp.values("loss", where + ": " + g.name, got, ref,
                   options.tolerances.kernels, terms);
      else if (g.of.empty())
        cmp.exact(where + ": " + g.name, got, ref);
      else
        cmp.values("gradient", where + ": " + g.name, got, ref,
                   options.tolerances.kernels, terms);
      break;
    case CLEAVE_GLOBAL_BUFFER:
      cmp.values("buffer", where + ": " + g.name, got, ref,
                 options.tolerances.kernels, terms);
      break;
    default:
      // Parameters, optimizer state and counters: untouched or counted.
      cmp.exact(where + ": " + g.name, got, ref);
    }
  }
}

void Runner::applyStep(int window) {
  std::string where = "window " + std::to_string(window);
  if (c.clipNorm > 0) {
    // Clipping must be active for the comparison to test it.
    double samples = 0, sq = 0;
    for (const GlobalDesc &g : globals)
      if (g.name == "train.samples")
        samples = values(g)[0];
    for (const GlobalDesc &g : globals)
      if (g.kind == CLEAVE_GLOBAL_ACCUMULATOR && !g.of.empty())
        for (double v : values(g))
          sq += (v / samples) * (v / samples);
    if (!(std::sqrt(sq) > 2 * c.clipNorm))
      cmp.fail(where + ": gradient norm " + fmt(std::sqrt(sq)) +
               " does not exceed twice the clip norm " + fmt(c.clipNorm) +
               "; the case does not test clipping");
  }
  // From identical accumulators, parameters and state.
  syncFromRuntime();
  std::map<std::string, std::vector<double>> before;
  for (const GlobalDesc &g : globals)
    if (g.kind == CLEAVE_GLOBAL_PARAM)
      before[g.name] = reference(g);
  {
    Timer t(out, "runtime");
    session->flush();
  }
  interpret("apply_step", entryArgs(entry("apply_step"), nullptr, cmp));
  for (const GlobalDesc &g : globals) {
    std::vector<double> got = values(g), ref = reference(g);
    std::string what = where + ": " + g.name;
    switch (g.kind) {
    case CLEAVE_GLOBAL_PARAM: {
      // The update itself, not the parameter: an error in a small update
      // would hide behind the parameter's magnitude. Each side rounds the
      // parameter to f32 up to twice (AdamW's decay, then the step), so
      // they may differ by two ulps of the parameter on top of the
      // update's own error.
      const std::vector<double> &p = before[g.name];
      std::vector<double> dGot(got.size()), dRef(ref.size());
      for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
        dGot[i] = got[i] - p[i];
        dRef[i] = ref[i] - p[i];
      }
      cmp.values("update", what, dGot, dRef, options.tolerances.update, 0,
                 2 * ulp(infNorm(p)));
      break;
    }
    case CLEAVE_GLOBAL_STATE:
      cmp.values("optimizer state", what, got, ref, options.tolerances.update);
      break;
    case CLEAVE_GLOBAL_BUFFER:
      cmp.exact(what, got, ref);
      break;
    default:
      // Counters, and accumulators which must be zero again.
      cmp.exact(what, got, ref);
    }
  }
  syncFromRuntime();
}

void Runner::evalStep(const MicroBatch &mb, int window) {
  std::string where = "window " + std::to_string(window) + ", " +
                      std::to_string(mb.samples) + "/" +
                      std::to_string(model.batch) + " samples";
  ::cleave::Batch batch(mb.samples);
  for (const ::cleave::TensorInfo &in : artifact->inputs()) {
    auto it = mb.bytes.find(in.name);
    batch.add(it == mb.bytes.end() ? nullptr : it->second.data(),
              it == mb.bytes.end() ? 0 : it->second.size());
  }
  {
    Timer t(out, "runtime");
    session->eval(batch);
  }
  std::vector<float> got = session->output<float>("eval_step", "prediction");
  std::vector<Tensor> ref =
      interpret("eval_step", entryArgs(entry("eval_step"), &mb, cmp));
  State magState = magnitudeOf(state);
  MicroBatch magBatch = magnitudeOf(mb);
  std::vector<Tensor> mag = interpret(
      "eval_step", entryArgs(entry("eval_step"), &magBatch, cmp), magState);
  if (ref.empty() || mag.empty())
    return;
  cmp.values("eval", where, std::vector<double>(got.begin(), got.end()),
             ref[0].toDoubles(), options.tolerances.kernels,
             infNorm(mag[0].toDoubles()));
}

void Runner::run() {
  try {
    compileBoth();
    if (!out.failures.empty() || !session)
      return;
    checkInitialState();
    for (int w = 0; w < c.windows; ++w) {
      syncFromRuntime();
      // A full micro-batch and a short one (padding with weight 0).
      int64_t lo = std::min(c.minShortBatch, model.batch - 1);
      int64_t k = model.batch > 1
                      ? lo + int64_t(dataRng() % uint64_t(model.batch - lo))
                      : 1;
      for (int64_t samples : {model.batch, k}) {
        microStep(drawBatch(dataRng, model, samples), w);
        if (::testing::Test::HasFailure())
          return;
      }
      applyStep(w);
      evalStep(drawBatch(dataRng, model, k), w);
    }
  } catch (const ::cleave::Error &e) {
    cmp.fail(std::string("runtime error: ") + e.what());
  } catch (const std::exception &e) {
    cmp.fail(std::string("exception: ") + e.what());
  }
}

} // namespace

Outcome backend_test::runCase(const Case &c, const RunOptions &options) {
  Outcome out;
  Runner runner(c, options, out);
  runner.run();
  return out;
}

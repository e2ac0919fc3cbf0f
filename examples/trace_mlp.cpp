//===- trace_mlp.cpp - Fashion-MNIST with the tracing API -----------------===//
//
// The 784-512-512-10 MLP trained on Fashion-MNIST with Cleave's lazy tensor
// API and the RATEX loop: mark_step() after backward, and every N
// micro-batches optimizer.step(); optimizer.zero_grad(); mark_step(). The
// whole run compiles two training graphs (micro-step, optimizer step) plus
// one evaluation graph (the forward pass under NoGradGuard), whatever the
// number of epochs, the learning-rate schedule or the short last batches.
//
//   trace_mlp [--data=DIR] [--epochs=3] [--limit=N] [--micro-batch=32]
//             [--accumulate=4] [--lr=0.01] [--momentum=0.9] [--lr-decay=0.5]
//             [--seed=0] [--eval-batch=1000] [--device=cpu|cuda|cuda:N]
//
// --limit keeps the first N samples of each split (0: all); --lr-decay
// multiplies the learning rate after every epoch (a schedule that never
// recompiles); --device says where the graphs run (trace::Options).
//
//===----------------------------------------------------------------------===//

#include "cleave/trace.h"

#include "data/Dataset.h"
#include "data/MicroBatcher.h"
#include "data/Shuffle.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t epochs = 3;
  int64_t limit = 0;
  int64_t microBatch = 32;
  int64_t accumulate = 4;
  double lr = 0.01;
  double momentum = 0.9;
  double lrDecay = 0.5;
  uint64_t seed = 0;
  int64_t evalBatch = 1000;
  std::string device = "cpu";
};

bool parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string key = arg.substr(0, eq);
    const char *value = eq == std::string::npos ? nullptr : argv[i] + eq + 1;
    auto integer = [&](int64_t &out, int64_t min) {
      char *end = nullptr;
      long long v = value ? std::strtoll(value, &end, 10) : 0;
      if (!value || *end || v < min)
        return false;
      out = v;
      return true;
    };
    auto real = [&](double &out) {
      char *end = nullptr;
      double v = value ? std::strtod(value, &end) : 0;
      if (!value || *end || !(v >= 0))
        return false;
      out = v;
      return true;
    };
    int64_t seed = 0;
    bool ok = false;
    if (key == "--data" && value) {
      o.data = value;
      ok = true;
    } else if (key == "--device" && value) {
      o.device = value; // trace::set_options checks it
      ok = true;
    } else if (key == "--seed" && integer(seed, 0)) {
      o.seed = uint64_t(seed);
      ok = true;
    } else {
      ok = key == "--epochs"        ? integer(o.epochs, 1)
           : key == "--limit"       ? integer(o.limit, 0)
           : key == "--micro-batch" ? integer(o.microBatch, 1)
           : key == "--accumulate"  ? integer(o.accumulate, 1)
           : key == "--eval-batch"  ? integer(o.evalBatch, 1)
           : key == "--lr"          ? real(o.lr)
           : key == "--momentum"    ? real(o.momentum)
           : key == "--lr-decay"    ? real(o.lrDecay)
                                    : false;
    }
    if (!ok) {
      std::fprintf(stderr, "trace_mlp: bad argument '%s'\n", arg.c_str());
      return false;
    }
  }
  return true;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

/// Top-1 accuracy on `test`: the forward pass traced under NoGradGuard, one
/// graph for every batch (the last one padded).
double evaluate(cleave::Module &model, const cleave::data::Dataset &test,
                cleave::data::MicroBatcher &batcher) {
  cleave::NoGradGuard noGrad;
  int64_t correct = 0;
  for (int64_t start = 0; start < test.size(); start += batcher.capacity()) {
    int64_t k = std::min(batcher.capacity(), test.size() - start);
    if (!batcher.gatherRange(start, k).ok())
      std::abort(); // in range by construction
    cleave::Tensor x = cleave::Tensor::fromBatch(
        batcher.inputs(),
        {k, 1, test.inputs.sampleShape[0], test.inputs.sampleShape[1]});
    cleave::Tensor logits = model(x);
    cleave::mark_step();
    std::vector<float> z = logits.toFloatVector();
    for (int64_t i = 0; i < k; ++i) {
      const float *row = &z[size_t(i) * 10];
      int64_t best = 0;
      for (int64_t c = 1; c < 10; ++c)
        if (row[c] > row[best])
          best = c;
      correct += best == batcher.labels()[i];
    }
  }
  return double(correct) / double(test.size());
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse(argc, argv, o))
    return 2;

  cleave::data::Dataset train, test;
  cleave::data::DatasetOptions dataOptions;
  dataOptions.limit = o.limit;
  for (auto [split, out] : {std::pair(cleave::data::Split::Train, &train),
                            std::pair(cleave::data::Split::Test, &test)}) {
    cleave::rt::Status s =
        cleave::data::loadIdxDataset(o.data, split, dataOptions, *out);
    if (!s.ok()) {
      std::fprintf(stderr, "trace_mlp: %s\n", s.message().c_str());
      return 1;
    }
  }
  std::unique_ptr<cleave::data::MicroBatcher> batcher, evalBatcher;
  if (!cleave::data::MicroBatcher::create(train, o.microBatch, batcher).ok() ||
      !cleave::data::MicroBatcher::create(test, o.evalBatch, evalBatcher)
           .ok()) {
    std::fprintf(stderr, "trace_mlp: cannot allocate the batches\n");
    return 1;
  }
  std::printf("Fashion-MNIST: %lld training and %lld test images; "
              "micro-batch %lld, N = %lld\n",
              (long long)train.size(), (long long)test.size(),
              (long long)o.microBatch, (long long)o.accumulate);

  try {
    cleave::trace::Options traceOptions;
    traceOptions.device = o.device;
    cleave::trace::set_options(traceOptions);
    cleave::manual_seed(o.seed);
    cleave::Sequential model(cleave::Flatten(), cleave::Linear(784, 512),
                             cleave::ReLU(), cleave::Linear(512, 512),
                             cleave::ReLU(), cleave::Linear(512, 10));
    cleave::SGD opt(model.parameters(), o.lr, o.momentum);
    const int64_t N = o.accumulate;
    int64_t trainingCompilations = 0, evalCompilations = 0;

    int64_t i = 0;
    for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
      auto start = std::chrono::steady_clock::now();
      int64_t before = cleave::trace::stats().compilations;
      std::vector<uint32_t> order = cleave::data::epochOrder(
          o.seed, uint64_t(epoch), uint32_t(train.size()));
      double lossSum = 0;
      for (int64_t first = 0; first < train.size(); first += o.microBatch) {
        int64_t k = std::min(o.microBatch, train.size() - first);
        if (!batcher->gather(order.data() + first, k).ok())
          std::abort(); // in range by construction
        cleave::Tensor x = cleave::Tensor::fromBatch(
            batcher->inputs(),
            {k, 1, train.inputs.sampleShape[0], train.inputs.sampleShape[1]});
        cleave::Tensor y = cleave::Tensor::fromBatch(batcher->labels(), {k});

        cleave::Tensor loss = cleave::cross_entropy(model(x), y) / N;
        loss.backward();
        cleave::mark_step(); // graph 1: forward + backward, grads +=
        if (++i % N == 0) {
          opt.step();
          opt.zero_grad();
          cleave::mark_step(); // graph 2: optimizer update, grads = 0
        }
        lossSum += loss.item() * double(N * k);
      }
      trainingCompilations += cleave::trace::stats().compilations - before;
      double trainSeconds = seconds(start);

      before = cleave::trace::stats().compilations;
      double accuracy = evaluate(model, test, *evalBatcher);
      evalCompilations += cleave::trace::stats().compilations - before;
      std::printf("epoch %lld: lr %.4g, train loss %.4f, test accuracy "
                  "%.2f%% (%.1f s training)\n",
                  (long long)epoch + 1, opt.lr(),
                  lossSum / double(train.size()), 100 * accuracy, trainSeconds);
      std::fflush(stdout);
      opt.set_lr(opt.lr() * o.lrDecay);
    }

    cleave::trace::Stats s = cleave::trace::stats();
    std::printf("trace: %lld compilations (training: %lld, evaluation: "
                "%lld) in %.2f s, %lld graphs run, %lld cache hits\n",
                (long long)s.compilations, (long long)trainingCompilations,
                (long long)evalCompilations, s.compileSeconds,
                (long long)s.graphsRun, (long long)s.cacheHits);
  } catch (const cleave::Error &e) {
    std::fprintf(stderr, "trace_mlp: %s\n", e.what());
    return 1;
  }
  return 0;
}

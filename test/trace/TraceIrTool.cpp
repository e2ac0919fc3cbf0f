//===- TraceIrTool.cpp - Print the IR a traced scenario cuts --------------===//
//
// cleave-trace-ir <scenario> traces one of the scenarios below with the
// public API and prints the split-level IR mark_step() would compile
// (trace::pending_ir()), for the FileCheck tests of this directory:
//
//   micro-step      the RATEX micro-step: MLP forward, loss / N, backward
//   sgd-step        a plain SGD step and zero_grad
//   momentum-step   SGD with Nesterov momentum and weight decay
//   adam-step       an AdamW step
//   conv-eval       a CNN's forward pass under NoGradGuard
//   mse-mean        mse_loss and Tensor::mean on a short batch
//
//===----------------------------------------------------------------------===//

#include "cleave/trace.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

using namespace cleave;

namespace {

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = float(i % 7) / 7.0f - 0.5f;
  return v;
}

Sequential mlp() {
  return Sequential(Flatten(), Linear(16, 12), ReLU(), Linear(12, 3));
}

/// Runs one micro-step of `model` on a batch of 8, so that every parameter
/// has a gradient.
void microStep(Module &model) {
  Tensor x = Tensor::fromBatch(ramp(8 * 16), {8, 1, 4, 4});
  Tensor y = Tensor::fromBatch(std::vector<int64_t>(8, 1), {8});
  Tensor loss = cross_entropy(model(x), y) / 4;
  loss.backward();
  mark_step();
}

std::string microStepIr() {
  Sequential model = mlp();
  Tensor x = Tensor::fromBatch(ramp(8 * 16), {8, 1, 4, 4});
  Tensor y = Tensor::fromBatch(std::vector<int64_t>(8, 1), {8});
  Tensor loss = cross_entropy(model(x), y) / 4;
  loss.backward();
  return trace::pending_ir();
}

std::string stepIr(Optimizer &opt) {
  opt.step();
  opt.zero_grad();
  return trace::pending_ir();
}

std::string sgdStepIr() {
  Sequential model = mlp();
  microStep(model);
  SGD opt(model.parameters(), 0.1);
  return stepIr(opt);
}

std::string momentumStepIr() {
  Sequential model(Flatten(), Linear(16, 3));
  microStep(model);
  SGD opt(model.parameters(), 0.1, 0.9, 1e-4, /*nesterov=*/true);
  return stepIr(opt);
}

std::string adamStepIr() {
  Sequential model(Flatten(), Linear(16, 3));
  microStep(model);
  AdamW opt(model.parameters());
  return stepIr(opt);
}

std::string convEvalIr() {
  Conv2dOptions conv;
  conv.padding = {1, 1};
  Sequential model(Conv2d(1, 2, 3, conv), ReLU(), MaxPool2d(2), Flatten(),
                   Linear(18, 3));
  NoGradGuard noGrad;
  Tensor x = Tensor::fromBatch(ramp(5 * 36), {5, 1, 6, 6});
  Tensor logits = model(x);
  return trace::pending_ir();
}

std::string mseMeanIr() {
  Linear layer(16, 2);
  Tensor x = Tensor::fromBatch(ramp(3 * 16), {3, 16});
  Tensor t = Tensor::fromBatch(ramp(3 * 2), {3, 2});
  Tensor loss = mse_loss(layer(x), t);
  Tensor mean = x.mean();
  loss.backward();
  return trace::pending_ir();
}

} // namespace

int main(int argc, char **argv) {
  std::map<std::string, std::function<std::string()>> scenarios = {
      {"micro-step", microStepIr},       {"sgd-step", sgdStepIr},
      {"momentum-step", momentumStepIr}, {"adam-step", adamStepIr},
      {"conv-eval", convEvalIr},         {"mse-mean", mseMeanIr},
  };
  auto it = argc == 2 ? scenarios.find(argv[1]) : scenarios.end();
  if (it == scenarios.end()) {
    std::fprintf(stderr, "usage: cleave-trace-ir <scenario>; scenarios:");
    for (const auto &[name, fn] : scenarios)
      std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  try {
    std::fputs(it->second().c_str(), stdout);
  } catch (const Error &e) {
    std::fprintf(stderr, "cleave-trace-ir: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

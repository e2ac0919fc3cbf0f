//===- TraceTestUtil.cpp - Helpers of the tracing tests -------------------===//

#include "TraceTestUtil.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace cleave::tracetest {

Data Data::slice(int64_t start, int64_t count) const {
  Data d;
  d.samples = count;
  d.features = features;
  d.x.assign(x.begin() + start * features,
             x.begin() + (start + count) * features);
  d.labels.assign(labels.begin() + start, labels.begin() + start + count);
  return d;
}

Data makeData(int64_t samples, int64_t features, int64_t classes,
              uint64_t seed) {
  // The runtime's uniform01 (docs/design/runtime.md): the values do not
  // depend on the standard library.
  std::mt19937_64 engine(seed);
  auto uniform01 = [&] { return double(engine() >> 11) * 0x1.0p-53; };
  Data d;
  d.samples = samples;
  d.features = features;
  for (int64_t i = 0; i < samples * features; ++i)
    d.x.push_back(float(2 * uniform01() - 1));
  int64_t segment = features / classes;
  for (int64_t i = 0; i < samples; ++i) {
    int64_t best = 0;
    double bestSum = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
      double sum = 0;
      for (int64_t j = c * segment; j < (c + 1) * segment; ++j)
        sum += d.x[i * features + j];
      if (sum > bestSum) {
        bestSum = sum;
        best = c;
      }
    }
    d.labels.push_back(best);
  }
  return d;
}

ReferenceMlp ReferenceMlp::from(const std::vector<Tensor> &params) {
  ReferenceMlp r;
  for (const Tensor &p : params) {
    std::vector<float> v = p.toFloatVector();
    r.params.emplace_back(v.begin(), v.end());
  }
  r.hidden = int64_t(r.params[1].size());
  return r;
}

std::vector<double> ReferenceMlp::forward(const Data &d) const {
  std::vector<double> logits;
  const auto &w1 = params[0], &b1 = params[1], &w2 = params[2], &b2 = params[3];
  for (int64_t s = 0; s < d.samples; ++s) {
    std::vector<double> h(hidden);
    for (int64_t j = 0; j < hidden; ++j) {
      double a = b1[j];
      for (int64_t i = 0; i < 16; ++i)
        a += w1[j * 16 + i] * d.x[s * 16 + i];
      h[j] = std::max(a, 0.0);
    }
    for (int64_t c = 0; c < 3; ++c) {
      double a = b2[c];
      for (int64_t j = 0; j < hidden; ++j)
        a += w2[c * hidden + j] * h[j];
      logits.push_back(a);
    }
  }
  return logits;
}

double ReferenceMlp::meanLoss(const Data &d,
                              std::vector<std::vector<double>> *grads) const {
  const auto &w1 = params[0], &w2 = params[2];
  if (grads) {
    grads->clear();
    for (const auto &p : params)
      grads->emplace_back(p.size(), 0.0);
  }
  std::vector<double> logits = forward(d);
  double total = 0;
  double scale = 1.0 / double(d.samples);
  for (int64_t s = 0; s < d.samples; ++s) {
    const double *z = &logits[s * 3];
    double m = std::max({z[0], z[1], z[2]});
    double sum = 0;
    for (int c = 0; c < 3; ++c)
      sum += std::exp(z[c] - m);
    double lse = m + std::log(sum);
    total += lse - z[d.labels[s]];
    if (!grads)
      continue;
    // dL/dz = softmax - onehot, scaled by 1/samples (the mean).
    double dz[3];
    for (int c = 0; c < 3; ++c)
      dz[c] = (std::exp(z[c] - lse) - (c == d.labels[s] ? 1.0 : 0.0)) * scale;
    std::vector<double> pre(hidden), h(hidden), dh(hidden, 0.0);
    for (int64_t j = 0; j < hidden; ++j) {
      double a = params[1][j];
      for (int64_t i = 0; i < 16; ++i)
        a += w1[j * 16 + i] * d.x[s * 16 + i];
      pre[j] = a;
      h[j] = std::max(a, 0.0);
    }
    for (int c = 0; c < 3; ++c) {
      (*grads)[3][c] += dz[c];
      for (int64_t j = 0; j < hidden; ++j) {
        (*grads)[2][c * hidden + j] += dz[c] * h[j];
        dh[j] += dz[c] * w2[c * hidden + j];
      }
    }
    for (int64_t j = 0; j < hidden; ++j) {
      double g = pre[j] > 0 ? dh[j] : 0.0;
      (*grads)[1][j] += g;
      for (int64_t i = 0; i < 16; ++i)
        (*grads)[0][j * 16 + i] += g * d.x[s * 16 + i];
    }
  }
  return total * scale;
}

Sequential makeMlp(int64_t hidden) {
  return Sequential(Flatten(), Linear(16, hidden), ReLU(), Linear(hidden, 3));
}

Sequential makeCnn() {
  Conv2dOptions conv;
  conv.padding = {1, 1};
  return Sequential(Conv2d(1, 2, 3, conv), ReLU(), MaxPool2d(2), Flatten(),
                    Linear(18, 3));
}

Tensor images(const Data &data, int64_t side) {
  return Tensor::fromBatch(data.x, {data.samples, 1, side, side});
}

Tensor labels(const Data &data) {
  return Tensor::fromBatch(data.labels, {data.samples});
}

double maxRelativeError(const std::vector<float> &a,
                        const std::vector<float> &b) {
  return maxRelativeError(a, std::vector<double>(b.begin(), b.end()));
}

double maxRelativeError(const std::vector<float> &a,
                        const std::vector<double> &b) {
  if (a.size() != b.size())
    return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) /
                                std::max(1.0, std::abs(b[i])));
  return worst;
}

std::vector<std::vector<float>> snapshot(const std::vector<Tensor> &params) {
  std::vector<std::vector<float>> out;
  for (const Tensor &p : params)
    out.push_back(p.toFloatVector());
  return out;
}

void resetTracer() {
  mark_step();
  trace::clear_cache();
  trace::reset_stats();
  manual_seed(0);
}

} // namespace cleave::tracetest

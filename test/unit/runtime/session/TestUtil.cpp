//===- TestUtil.cpp - Helpers of the session tests ------------------------===//

#include "TestUtil.h"

#include <dlfcn.h>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace cleave::test {

Data Data::slice(int64_t start, int64_t count) const {
  Data out;
  out.samples = count;
  out.x.assign(x.begin() + start * kFeatures,
               x.begin() + (start + count) * kFeatures);
  out.labels.assign(labels.begin() + start, labels.begin() + start + count);
  return out;
}

Batch Data::batch() const {
  Batch b(samples);
  b.add(x).add(labels);
  return b;
}

Data makeData(int64_t samples, uint32_t seed) {
  std::mt19937 gen(seed);
  Data d;
  d.samples = samples;
  for (int64_t i = 0; i < samples * kFeatures; ++i)
    d.x.push_back(float(int64_t(gen() % 2001) - 1000) / 1000.0f);
  for (int64_t i = 0; i < samples; ++i)
    d.labels.push_back(int64_t(gen() % kClasses));
  return d;
}

ReferenceSgd ReferenceSgd::fromSession(const Session &session) {
  auto toDouble = [](const std::vector<float> &v) {
    return std::vector<double>(v.begin(), v.end());
  };
  ReferenceSgd r;
  r.weight = toDouble(session.readGlobal<float>("fc.weight"));
  r.bias = toDouble(session.readGlobal<float>("fc.bias"));
  r.weightMomentum = toDouble(session.readGlobal<float>("fc.weight.momentum"));
  r.biasMomentum = toDouble(session.readGlobal<float>("fc.bias.momentum"));
  return r;
}

namespace {

/// Softmax probabilities and the loss of one sample.
double sampleLoss(const ReferenceSgd &m, const float *x, int64_t label,
                  std::vector<double> &probs) {
  std::vector<double> z(kClasses);
  for (int64_t c = 0; c < kClasses; ++c) {
    z[c] = m.bias[c];
    for (int64_t d = 0; d < kFeatures; ++d)
      z[c] += m.weight[c * kFeatures + d] * x[d];
  }
  double mx = *std::max_element(z.begin(), z.end());
  double s = 0;
  for (double v : z)
    s += std::exp(v - mx);
  double lse = mx + std::log(s);
  probs.resize(kClasses);
  for (int64_t c = 0; c < kClasses; ++c)
    probs[c] = std::exp(z[c] - lse);
  return lse - z[label];
}

} // namespace

void ReferenceSgd::step(const Data &window, double lr, double momentum) {
  std::vector<double> gw(weight.size(), 0.0), gb(bias.size(), 0.0);
  std::vector<double> probs;
  for (int64_t i = 0; i < window.samples; ++i) {
    const float *x = &window.x[i * kFeatures];
    sampleLoss(*this, x, window.labels[i], probs);
    for (int64_t c = 0; c < kClasses; ++c) {
      double g = probs[c] - (c == window.labels[i] ? 1.0 : 0.0);
      gb[c] += g;
      for (int64_t d = 0; d < kFeatures; ++d)
        gw[c * kFeatures + d] += g * x[d];
    }
  }
  auto update = [&](std::vector<double> &p, std::vector<double> &v,
                    const std::vector<double> &g) {
    for (size_t j = 0; j < p.size(); ++j) {
      v[j] = momentum * v[j] + g[j] / double(window.samples);
      p[j] -= lr * v[j];
    }
  };
  update(weight, weightMomentum, gw);
  update(bias, biasMomentum, gb);
}

double ReferenceSgd::meanLoss(const Data &data) const {
  std::vector<double> probs;
  double total = 0;
  for (int64_t i = 0; i < data.samples; ++i)
    total += sampleLoss(*this, &data.x[i * kFeatures], data.labels[i], probs);
  return total / double(data.samples);
}

double maxRelativeError(const std::vector<float> &a,
                        const std::vector<double> &b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]) /
                                std::max(1.0, std::fabs(b[i])));
  return worst;
}

std::optional<std::string> noCudaReason() {
#ifdef CLEAVE_RUNTIME_HAS_CUDA
  if (void *driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(driver);
    return std::nullopt;
  }
  return "no CUDA driver (libcuda.so.1 not found)";
#else
  return "this runtime was built without CUDA support";
#endif
}

std::string makeTempDir(const std::string &name) {
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = std::string(CLEAVE_TEST_TMPDIR) + "/" +
                    info->test_suite_name() + "." + info->name() + "." + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::pair<std::string, std::string>>
snapshotGlobals(const Session &session) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const GlobalInfo &g : session.artifact().globals()) {
    std::string bytes(g.tensor.bytes, '\0');
    check(cleave_session_read_global(session.get(), g.tensor.name.c_str(),
                                     bytes.data(), bytes.size()));
    out.emplace_back(g.tensor.name, std::move(bytes));
  }
  return out;
}

CallResult result(cleave_status status) {
  return {status, status == CLEAVE_OK ? "" : cleave_last_error_message()};
}

} // namespace cleave::test

//===- TestUtil.h - Helpers of the session tests ----------------*- C++ -*-===//
//
// Synthetic data for the fake artifacts, a double-precision reference of the
// SGD fake (FakeArtifact.c), and scratch files.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_SESSION_TESTUTIL_H
#define CLEAVE_TEST_UNIT_RUNTIME_SESSION_TESTUTIL_H

#include "cleave/runtime.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cleave::test {

/// Shapes of the fake artifacts (FakeArtifact.c).
inline constexpr int64_t kMicroBatch = 8;
inline constexpr int64_t kFeatures = 5;
inline constexpr int64_t kClasses = 3;

/// `samples` rows of features and labels.
struct Data {
  std::vector<float> x;
  std::vector<int64_t> labels;
  int64_t samples = 0;

  /// Rows [start, start + count).
  Data slice(int64_t start, int64_t count) const;
  /// A batch over all rows (pointers into this object).
  Batch batch() const;
};

/// Deterministic synthetic data: features in [-1, 1), labels in [0, 3).
Data makeData(int64_t samples, uint32_t seed);

/// The SGD fake's model, in double: parameters and momentum buffers.
struct ReferenceSgd {
  std::vector<double> weight, bias, weightMomentum, biasMomentum;

  /// Starts from the session's current parameters and momentum buffers.
  static ReferenceSgd fromSession(const Session &session);
  /// One optimizer step on the union of `windows` samples: gradient of the
  /// summed loss divided by the sample count, momentum, update.
  void step(const Data &window, double lr, double momentum);
  /// Mean cross-entropy of `data` under the current parameters.
  double meanLoss(const Data &data) const;
};

/// Max over i of |a[i] - b[i]| / max(1, |b[i]|).
double maxRelativeError(const std::vector<float> &a,
                        const std::vector<double> &b);

/// A fresh directory under the test binary's tmp directory.
/// Why a cuda session or executable cannot start here, in the runtime's
/// words (after the artifact's path): no CUDA driver, or a runtime built
/// without CUDA (CLEAVE_RUNTIME_HAS_CUDA undefined in the test); nullopt
/// where a driver is present.
std::optional<std::string> noCudaReason();

std::string makeTempDir(const std::string &name);
std::string readFile(const std::string &path);
void writeFile(const std::string &path, const std::string &bytes);
bool fileExists(const std::string &path);

/// Every global of `session`, by name, as raw bytes.
std::vector<std::pair<std::string, std::string>>
snapshotGlobals(const Session &session);

/// Runs `call` (a C API call) and returns its status; stores the message.
struct CallResult {
  cleave_status status;
  std::string message;
};
CallResult result(cleave_status status);

} // namespace cleave::test

#endif // CLEAVE_TEST_UNIT_RUNTIME_SESSION_TESTUTIL_H

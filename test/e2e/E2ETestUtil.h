//===- E2ETestUtil.h - Helpers of the end-to-end tests ----------*- C++ -*-===//
//
// Paths of the artifacts compiled at build time, child processes with
// captured output, temporary directories and small idx datasets.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_E2E_E2ETESTUTIL_H
#define CLEAVE_TEST_E2E_E2ETESTUTIL_H

#include <sys/types.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace cleave::e2e {

/// `<CLEAVE_E2E_ARTIFACT_DIR>/<name>.cleave`, compiled by the build with the
/// real cleave-compile (test/e2e/CMakeLists.txt lists them).
std::string artifactPath(const std::string &name);

/// The Fashion-MNIST directory (dataset-fashion-mnist).
std::string fashionMnistDir();

/// A fresh, empty directory under the build tree, named after the running
/// test; removed again when the object dies unless the test failed.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string operator/(const std::string &name) const {
    return path_ + "/" + name;
  }

private:
  std::string path_;
};

/// How a child process ended and what it wrote.
struct ProcessResult {
  bool exited = false; ///< ended by exit() (else by a signal, or timed out)
  int exitCode = -1;
  int signal = 0; ///< the signal that ended it, if any
  bool timedOut = false;
  std::string out, err;
  /// A description for failure messages.
  std::string describe() const;
};

/// Starts `argv` with stdout and stderr going to `outPath` and `errPath`,
/// `env` (NAME=VALUE) added to this process's environment.
pid_t spawn(const std::vector<std::string> &argv, const std::string &outPath,
            const std::string &errPath,
            const std::vector<std::string> &env = {});
/// Waits for `pid` up to `timeoutSeconds`, then kills it (a hang).
ProcessResult wait(pid_t pid, const std::string &outPath,
                   const std::string &errPath, double timeoutSeconds);
/// spawn + wait, output captured in temporary files of `dir`.
ProcessResult run(const std::vector<std::string> &argv, const TempDir &dir,
                  const std::vector<std::string> &env = {},
                  double timeoutSeconds = 300);

std::string readFile(const std::string &path);
/// Whether /proc/cpuinfo lists avx512_bf16, which bf16 artifacts need.
bool hostHasBf16();

/// Skips a bf16 test where it cannot run: the compiler refuses bf16 for a
/// target without AVX512-BF16 and the runtime refuses a bf16 artifact on
/// such a CPU (mixed-precision.md, "Which CPUs"). CI machines vary.
#define CLEAVE_E2E_SKIP_WITHOUT_BF16()                                         \
  do {                                                                         \
    if (!::cleave::e2e::hostHasBf16())                                         \
      GTEST_SKIP() << "this CPU has no AVX512-BF16 (avx512_bf16 in "           \
                      "/proc/cpuinfo), which bf16 artifacts need";             \
  } while (false)
void writeFile(const std::string &path, const std::string &bytes);
std::string gzipBytes(const std::string &bytes);

/// `samples` random 28x28 images (pixels uniform in [0, 1), drawn first)
/// and labels in 0..9 (drawn next) from `rng`: a micro-batch of the MNIST
/// examples' shape.
void randomImagesAndLabels(std::mt19937 &rng, int64_t samples,
                           std::vector<float> &images,
                           std::vector<int64_t> &labels);

/// A synthetic MNIST-style split: `count` images of rows x cols with pixel
/// values from a fixed pattern and labels i % 10.
struct IdxFiles {
  std::string images, labels;
};
IdxFiles makeIdx(int64_t count, int64_t rows, int64_t cols);
/// Writes both splits (train and t10k) of a synthetic dataset into `dir`,
/// gzipped or plain.
void writeDataset(const std::string &dir, int64_t trainCount, int64_t testCount,
                  int64_t rows, int64_t cols, bool gzip);

} // namespace cleave::e2e

#endif // CLEAVE_TEST_E2E_E2ETESTUTIL_H

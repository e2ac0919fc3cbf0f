//===- E2ETestUtil.cpp - Helpers of the end-to-end tests ------------------===//

#include "E2ETestUtil.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char **environ;

namespace fs = std::filesystem;

namespace cleave::e2e {

std::string artifactPath(const std::string &name) {
  return std::string(CLEAVE_E2E_ARTIFACT_DIR) + "/" + name + ".cleave";
}

std::string fashionMnistDir() { return "/usr/share/datasets/fashion-mnist"; }

TempDir::TempDir() {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      info ? std::string(info->test_suite_name()) + "." + info->name() : "e2e";
  for (char &c : name)
    if (c == '/')
      c = '_';
  path_ = std::string(CLEAVE_E2E_TMPDIR) + "/" + name;
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  // Keep what a failed test left, for inspection.
  if (!::testing::Test::HasFailure()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

std::string ProcessResult::describe() const {
  std::ostringstream os;
  if (timedOut)
    os << "timed out (killed)";
  else if (exited)
    os << "exit code " << exitCode;
  else
    os << "killed by signal " << signal << " (" << strsignal(signal) << ")";
  os << "\n--- stdout ---\n" << out << "--- stderr ---\n" << err;
  return os.str();
}

pid_t spawn(const std::vector<std::string> &argv, const std::string &outPath,
            const std::string &errPath, const std::vector<std::string> &env) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);

  // This process's environment, without the variables `env` sets.
  auto nameOf = [](const std::string &entry) {
    return entry.substr(0, entry.find('='));
  };
  std::vector<std::string> envStrings;
  for (char **e = environ; *e; ++e) {
    std::string entry = *e;
    bool overridden = false;
    for (const std::string &add : env)
      overridden |= nameOf(add) == nameOf(entry);
    if (!overridden)
      envStrings.push_back(entry);
  }
  envStrings.insert(envStrings.end(), env.begin(), env.end());
  std::vector<char *> envp;
  for (const std::string &e : envStrings)
    envp.push_back(const_cast<char *>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, outPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  pid_t pid = -1;
  int rc =
      posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv[0] + ": " +
                             std::strerror(rc));
  return pid;
}

ProcessResult wait(pid_t pid, const std::string &outPath,
                   const std::string &errPath, double timeoutSeconds) {
  ProcessResult r;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeoutSeconds);
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!r.timedOut) {
    r.exited = WIFEXITED(status);
    r.exitCode = r.exited ? WEXITSTATUS(status) : -1;
    r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  r.out = readFile(outPath);
  r.err = readFile(errPath);
  return r;
}

ProcessResult run(const std::vector<std::string> &argv, const TempDir &dir,
                  const std::vector<std::string> &env, double timeoutSeconds) {
  std::string out = dir / "stdout.txt", err = dir / "stderr.txt";
  return wait(spawn(argv, out, err, env), out, err, timeoutSeconds);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

bool hostHasBf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" avx512_bf16 ") != std::string::npos;
  return false;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

std::string gzipBytes(const std::string &bytes) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&zs, uLong(bytes.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  zs.avail_in = uInt(bytes.size());
  zs.next_out = reinterpret_cast<Bytef *>(out.data());
  zs.avail_out = uInt(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END)
    throw std::runtime_error("deflate failed");
  return out;
}

namespace {
void putBigEndian(std::string &s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    s.push_back(char((v >> shift) & 0xff));
}
} // namespace

void randomImagesAndLabels(std::mt19937 &rng, int64_t samples,
                           std::vector<float> &images,
                           std::vector<int64_t> &labels) {
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  images.resize(size_t(samples) * 28 * 28);
  labels.resize(size_t(samples));
  for (float &x : images)
    x = pixel(rng);
  for (int64_t &y : labels)
    y = int64_t(rng() % 10);
}

IdxFiles makeIdx(int64_t count, int64_t rows, int64_t cols) {
  IdxFiles f;
  putBigEndian(f.images, 0x803);
  putBigEndian(f.images, uint32_t(count));
  putBigEndian(f.images, uint32_t(rows));
  putBigEndian(f.images, uint32_t(cols));
  for (int64_t i = 0; i < count; ++i)
    for (int64_t p = 0; p < rows * cols; ++p)
      f.images.push_back(char((i * 31 + p * 7) % 256));
  putBigEndian(f.labels, 0x801);
  putBigEndian(f.labels, uint32_t(count));
  for (int64_t i = 0; i < count; ++i)
    f.labels.push_back(char(i % 10));
  return f;
}

void writeDataset(const std::string &dir, int64_t trainCount, int64_t testCount,
                  int64_t rows, int64_t cols, bool gzip) {
  fs::create_directories(dir);
  const std::string suffix = gzip ? ".gz" : "";
  auto put = [&](const std::string &name, const std::string &bytes) {
    writeFile(dir + "/" + name + suffix, gzip ? gzipBytes(bytes) : bytes);
  };
  IdxFiles train = makeIdx(trainCount, rows, cols);
  IdxFiles test = makeIdx(testCount, rows, cols);
  put("train-images-idx3-ubyte", train.images);
  put("train-labels-idx1-ubyte", train.labels);
  put("t10k-images-idx3-ubyte", test.images);
  put("t10k-labels-idx1-ubyte", test.labels);
}

} // namespace cleave::e2e

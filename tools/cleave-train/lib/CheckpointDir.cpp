//===- CheckpointDir.cpp - The checkpoints of one training run ------------===//

#include "CheckpointDir.h"

#include "Error.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace cleave::train {

namespace {
constexpr const char *kPrefix = "checkpoint-";
constexpr const char *kSuffix = ".ckpt";
} // namespace

void CheckpointDir::create() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw tools::Error(dir_ + ": cannot create the checkpoint directory (" +
                       ec.message() + ")");
  if (!fs::is_directory(dir_, ec))
    throw tools::Error(dir_ + ": not a directory (--checkpoint-dir)");
}

std::optional<int64_t> CheckpointDir::parseName(const std::string &name) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() ||
      name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

std::vector<std::pair<int64_t, std::string>> CheckpointDir::list() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::exists(dir_, ec))
    return found;
  fs::directory_iterator it(dir_, ec), end;
  if (ec)
    throw tools::Error(dir_ + ": cannot read the checkpoint directory (" +
                       ec.message() + ")");
  for (; it != end; it.increment(ec)) {
    if (ec)
      throw tools::Error(dir_ + ": cannot read the checkpoint directory (" +
                         ec.message() + ")");
    if (auto steps = parseName(it->path().filename().string()))
      if (it->is_regular_file(ec))
        found.emplace_back(*steps, it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<std::string> CheckpointDir::newest() const {
  auto all = list();
  if (all.empty())
    return std::nullopt;
  return all.back().second;
}

std::string CheckpointDir::pathFor(int64_t microSteps) const {
  char name[64];
  std::snprintf(name, sizeof(name), "%s%010lld%s", kPrefix,
                (long long)microSteps, kSuffix);
  return (fs::path(dir_) / name).string();
}

void CheckpointDir::prune() const {
  auto all = list();
  for (size_t i = 0; i + size_t(keep_) < all.size(); ++i) {
    std::error_code ec;
    fs::remove(all[i].second, ec);
    if (ec)
      throw tools::Error(all[i].second + ": cannot remove an old checkpoint (" +
                         ec.message() + ")");
  }
}

} // namespace cleave::train

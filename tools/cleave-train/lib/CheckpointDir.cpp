//===- CheckpointDir.cpp - The checkpoints of one training run ------------===//

#include "CheckpointDir.h"

#include "Error.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
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

namespace {

/// Digits only, at most 18 (an int64_t); -1 otherwise.
int64_t parseDigits(const std::string &digits) {
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

} // namespace

std::optional<CheckpointDir::Name>
CheckpointDir::parseAnyName(const std::string &name) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() ||
      name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string body =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  Name parsed;
  const size_t dot = body.find('.');
  parsed.microSteps = parseDigits(body.substr(0, dot));
  if (parsed.microSteps < 0)
    return std::nullopt;
  if (dot == std::string::npos)
    return parsed;
  // ".ranks-<R>"
  const std::string tag = body.substr(dot + 1), word = "ranks-";
  if (tag.compare(0, word.size(), word) != 0)
    return std::nullopt;
  const int64_t ranks = parseDigits(tag.substr(word.size()));
  if (ranks < 2 || ranks > (1 << 24))
    return std::nullopt;
  parsed.ranks = int(ranks);
  return parsed;
}

std::optional<int64_t> CheckpointDir::parseName(const std::string &name) {
  std::optional<Name> parsed = parseAnyName(name);
  if (!parsed || parsed->ranks != 1)
    return std::nullopt;
  return parsed->microSteps;
}

std::vector<std::pair<CheckpointDir::Name, std::string>>
CheckpointDir::scan() const {
  std::vector<std::pair<Name, std::string>> found;
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
    if (auto name = parseAnyName(it->path().filename().string()))
      if (it->is_regular_file(ec))
        found.emplace_back(*name, it->path().string());
  }
  return found;
}

std::vector<std::pair<int64_t, std::string>> CheckpointDir::list() const {
  std::vector<std::pair<int64_t, std::string>> mine;
  for (const auto &[name, path] : scan())
    if (name.ranks == ranks_)
      mine.emplace_back(name.microSteps, path);
  std::sort(mine.begin(), mine.end());
  return mine;
}

std::optional<std::string> CheckpointDir::newest() const {
  auto all = list();
  if (all.empty())
    return std::nullopt;
  return all.back().second;
}

std::vector<int> CheckpointDir::otherRunSizes() const {
  std::set<int> sizes;
  for (const auto &[name, path] : scan())
    if (name.ranks != ranks_)
      sizes.insert(name.ranks);
  return std::vector<int>(sizes.begin(), sizes.end());
}

std::optional<std::string> CheckpointDir::newestOfAnyRun() const {
  std::optional<std::pair<int64_t, std::string>> newest;
  for (const auto &[name, path] : scan())
    if (!newest || std::make_pair(name.microSteps, path) > *newest)
      newest = std::make_pair(name.microSteps, path);
  if (!newest)
    return std::nullopt;
  return newest->second;
}

std::string CheckpointDir::pathFor(int64_t microSteps) const {
  char name[96];
  if (ranks_ == 1)
    std::snprintf(name, sizeof(name), "%s%010lld%s", kPrefix,
                  (long long)microSteps, kSuffix);
  else
    std::snprintf(name, sizeof(name), "%s%010lld.ranks-%d%s", kPrefix,
                  (long long)microSteps, ranks_, kSuffix);
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

//===- ArtifactSchemaTest.cpp - Manifests are canonical llvm::json --------===//
//
// Step 0 of docs/design/artifact-schema.md: before the manifest's writer and
// reader are generated from one schema, pin the bytes they must keep. Every
// manifest the compiler writes is llvm::json's compact form (objects with
// sorted keys, no whitespace, integers as integers, doubles as %.17g), so
// parsing one with llvm::json and printing it again must give back the very
// bytes embedded in the artifact. A schema-generated writer that reproduces
// that form leaves every artifact, and so every checkpoint's model identity
// (the manifest's CRC), unchanged.
//
// The corpora are the artifacts the build compiles for the end-to-end,
// data-parallel and tracing tests (CLEAVE_SCHEMA_ARTIFACT_DIRS, separated
// by '|').
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::vector<std::string> artifactDirs() {
  std::vector<std::string> dirs;
  std::stringstream list(CLEAVE_SCHEMA_ARTIFACT_DIRS);
  for (std::string dir; std::getline(list, dir, '|');)
    if (!dir.empty())
      dirs.push_back(dir);
  return dirs;
}

/// The manifest embedded in the artifact at `path`: the NUL-terminated
/// JSON object that starts with {"abi_version" (the key sorts first).
std::optional<std::string> embeddedManifest(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  size_t begin = bytes.find("{\"abi_version\"");
  if (begin == std::string::npos)
    return std::nullopt;
  size_t end = bytes.find('\0', begin);
  if (end == std::string::npos)
    return std::nullopt;
  return bytes.substr(begin, end - begin);
}

/// "offset N: ...<40 bytes>... | ...<40 bytes>...", where two texts part.
std::string firstDifference(const std::string &a, const std::string &b) {
  auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  size_t at = size_t(ia - a.begin());
  size_t from = at > 40 ? at - 40 : 0;
  return "offset " + std::to_string(at) + ": written '" + a.substr(from, 80) +
         "', printed '" + b.substr(from, 80) + "'";
}

class ArtifactSchema : public ::testing::TestWithParam<std::string> {};

TEST_P(ArtifactSchema, ManifestsAreCanonicalJson) {
  const fs::path dir = GetParam();
  ASSERT_TRUE(fs::is_directory(dir))
      << dir << " does not exist: build the test artifacts first";
  std::vector<fs::path> artifacts;
  for (const fs::directory_entry &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cleave")
      artifacts.push_back(e.path());
  std::sort(artifacts.begin(), artifacts.end());
  ASSERT_FALSE(artifacts.empty()) << "no artifacts in " << dir;
  for (const fs::path &artifact : artifacts) {
    SCOPED_TRACE(artifact.string());
    std::optional<std::string> written = embeddedManifest(artifact);
    ASSERT_TRUE(written) << "no manifest";
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*written);
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    std::string printed;
    llvm::raw_string_ostream os(printed);
    os << *parsed;
    os.flush();
    EXPECT_EQ(printed.size(), written->size());
    EXPECT_TRUE(printed == *written) << firstDifference(*written, printed);
  }
}

INSTANTIATE_TEST_SUITE_P(
    BuildTree, ArtifactSchema, ::testing::ValuesIn(artifactDirs()),
    [](const ::testing::TestParamInfo<std::string> &info) {
      // "test/e2e/artifacts" -> "e2e"
      fs::path p(info.param);
      std::string name = p.parent_path().filename().string();
      name.erase(std::remove_if(name.begin(), name.end(),
                                [](char c) { return !std::isalnum(c); }),
                 name.end());
      return name;
    });

} // namespace

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
// Steps 2 and 3: each manifest read by the schema's reader and written by
// its writer gives back the same bytes (T0 = W(R(T0))), so the table says
// everything the compiler writes, in the form it writes it.
//
// Step 1: every key of those manifests is a row of artifact_schema.def
// under its object, allowed for its case of the object's discriminator,
// with an enum's spelling where the row says so; and every row the table
// requires for that case is there.
//
// Step 4: the compiler carries parts of a manifest as MLIR dictionaries
// (rt.kernels, rt.abi, train.manifest; compiler/Artifact/SchemaDict.h);
// every manifest, taken to dictionaries and back, is the same values.
//
// The corpora are the artifacts the build compiles for the end-to-end,
// data-parallel and tracing tests (CLEAVE_SCHEMA_ARTIFACT_DIRS, separated
// by '|').
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/SchemaDict.h"
#include "compiler/Artifact/SchemaWrite.h"
#include "runtime/src/schema/Schema.h"
#include "runtime/src/schema/SchemaRead.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace abi = cleave::abi;

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

std::vector<fs::path> artifactsIn(const fs::path &dir) {
  std::vector<fs::path> artifacts;
  if (fs::is_directory(dir))
    for (const fs::directory_entry &e : fs::directory_iterator(dir))
      if (e.path().extension() == ".cleave")
        artifacts.push_back(e.path());
  std::sort(artifacts.begin(), artifacts.end());
  return artifacts;
}

/// Checks JSON `value` at `path` against the schema's struct `s`, adding
/// one line per disagreement to `errors`.
void checkObject(const llvm::json::Value &value, const abi::StructDesc &s,
                 const std::string &path, std::vector<std::string> &errors);

void checkValue(const llvm::json::Value &value, const abi::FieldDesc &f,
                const std::string &path, std::vector<std::string> &errors) {
  auto nested = [&]() -> const abi::StructDesc * {
    const abi::StructDesc *n = abi::nestedStruct(f);
    if (!n)
      errors.push_back(path + ": the table has no struct " + f.typeText);
    return n;
  };
  switch (f.type) {
  case abi::TypeKind::Enum: {
    const abi::EnumDesc *e = abi::findEnum(abi::typeArgument(f).c_str());
    std::optional<llvm::StringRef> text = value.getAsString();
    bool known = false;
    for (size_t c = 0; e && text && c < e->count; ++c)
      known |= *text == e->cases[c].spelling;
    if (!known)
      errors.push_back(path + ": not a spelling of " + f.typeText);
    return;
  }
  case abi::TypeKind::Object:
    if (const abi::StructDesc *n = nested())
      checkObject(value, *n, path, errors);
    return;
  case abi::TypeKind::List:
    if (const abi::StructDesc *n = nested()) {
      const llvm::json::Array *list = value.getAsArray();
      if (!list) {
        errors.push_back(path + ": not a list");
        return;
      }
      for (size_t i = 0; i < list->size(); ++i)
        checkObject((*list)[i], *n, path + "[" + std::to_string(i) + "]",
                    errors);
    }
    return;
  case abi::TypeKind::Map:
    if (const abi::StructDesc *n = nested()) {
      const llvm::json::Object *map = value.getAsObject();
      if (!map) {
        errors.push_back(path + ": not an object");
        return;
      }
      for (const auto &[key, v] : *map)
        checkObject(v, *n, path + "." + key.str(), errors);
    }
    return;
  default:
    return;
  }
}

void checkObject(const llvm::json::Value &value, const abi::StructDesc &s,
                 const std::string &path, std::vector<std::string> &errors) {
  const llvm::json::Object *obj = value.getAsObject();
  if (!obj) {
    errors.push_back(path + ": not an object");
    return;
  }
  // The column: the case of the discriminator's field, or its default.
  size_t column = 0;
  std::string columnName = "every case";
  if (const abi::EnumDesc *e = s.columns()) {
    const abi::FieldDesc *f = abi::discriminatorField(s);
    std::string spelling = f ? f->presence.codes[0].defaultText : "";
    if (std::optional<llvm::StringRef> v =
            f ? obj->getString(f->key) : std::nullopt)
      spelling = v->str();
    column = e->count;
    for (size_t c = 0; c < e->count; ++c)
      if (spelling == e->cases[c].spelling)
        column = c;
    if (column == e->count) {
      errors.push_back(path + ": no case of " + s.discriminator + " ('" +
                       spelling + "') to check " + s.name + " against");
      return;
    }
    columnName = s.discriminator + std::string(" ") + spelling;
  }
  for (const auto &[key, v] : *obj) {
    const std::string at = path + (path.empty() ? "" : ".") + key.str();
    const abi::FieldDesc *field = nullptr;
    for (size_t i = 0; i < s.count && !field; ++i)
      if (key == s.fields[i].key)
        field = &s.fields[i];
    if (!field) {
      errors.push_back(at + ": no row of " + s.name + " has this key");
      continue;
    }
    if (field->presence.codes[column].kind == abi::PresenceKind::Forbidden)
      errors.push_back(at + ": the table forbids it for " + columnName);
    checkValue(v, *field, at, errors);
  }
  for (size_t i = 0; i < s.count; ++i)
    if (s.fields[i].presence.codes[column].kind ==
            abi::PresenceKind::Required &&
        !obj->get(s.fields[i].key))
      errors.push_back(path + (path.empty() ? "" : ".") + s.fields[i].key +
                       ": required for " + columnName + ", missing");
}

TEST_P(ArtifactSchema, EveryKeyIsARowOfTheTable) {
  const abi::StructDesc *top = nullptr;
  for (const abi::StructDesc &s : abi::kStructs)
    if (std::string_view(s.path).empty())
      top = &s;
  ASSERT_NE(top, nullptr) << "the table has no top-level struct (path \"\")";
  std::vector<fs::path> artifacts = artifactsIn(GetParam());
  ASSERT_FALSE(artifacts.empty()) << "no artifacts in " << GetParam();
  for (const fs::path &artifact : artifacts) {
    SCOPED_TRACE(artifact.string());
    std::optional<std::string> written = embeddedManifest(artifact);
    ASSERT_TRUE(written) << "no manifest";
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*written);
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    std::vector<std::string> errors;
    checkObject(*parsed, *top, "", errors);
    std::string all;
    for (const std::string &e : errors)
      all += "\n  " + e;
    EXPECT_TRUE(errors.empty()) << errors.size() << " disagreements:" << all;
  }
}

TEST_P(ArtifactSchema, ReadThenWrittenIsTheSameBytes) {
  std::vector<fs::path> artifacts = artifactsIn(GetParam());
  ASSERT_FALSE(artifacts.empty()) << "no artifacts in " << GetParam();
  for (const fs::path &artifact : artifacts) {
    SCOPED_TRACE(artifact.string());
    std::optional<std::string> written = embeddedManifest(artifact);
    ASSERT_TRUE(written) << "no manifest";
    abi::Manifest manifest;
    std::string error;
    ASSERT_TRUE(abi::readManifestText(*written, manifest, error)) << error;
    std::string again = mlir::cleave::writeManifestText(manifest);
    EXPECT_EQ(again.size(), written->size());
    EXPECT_TRUE(again == *written) << firstDifference(*written, again);
    // And reading it again gives the same values.
    abi::Manifest reread;
    ASSERT_TRUE(abi::readManifestText(again, reread, error)) << error;
    EXPECT_TRUE(reread == manifest);
  }
}

TEST_P(ArtifactSchema, AsDictionariesTheSameValues) {
  std::vector<fs::path> artifacts = artifactsIn(GetParam());
  ASSERT_FALSE(artifacts.empty()) << "no artifacts in " << GetParam();
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  for (const fs::path &artifact : artifacts) {
    SCOPED_TRACE(artifact.string());
    std::optional<std::string> written = embeddedManifest(artifact);
    ASSERT_TRUE(written) << "no manifest";
    abi::Manifest manifest;
    std::string error;
    ASSERT_TRUE(abi::readManifestText(*written, manifest, error)) << error;
    mlir::DictionaryAttr dict = abi::toDict(b, manifest);
    abi::Manifest back;
    abi::DictFault fault;
    ASSERT_TRUE(abi::fromDict(dict, back, fault)) << fault.message();
    EXPECT_TRUE(back == manifest);
    EXPECT_EQ(abi::toDict(b, back), dict);
    EXPECT_TRUE(mlir::cleave::writeManifestText(back) == *written);
  }
}

// The fuzzer's manifest seeds: older compilers' output, which must come
// back byte for byte, and hand-written ones (spaced, keys unsorted), whose
// written form must be a fixed point: W(R(W(R(T)))) = W(R(T)).
TEST(ArtifactSchemaSeeds, ReadThenWrittenIsStable) {
  std::vector<fs::path> seeds;
  for (const fs::directory_entry &e :
       fs::directory_iterator(CLEAVE_SCHEMA_SEED_DIR))
    if (e.path().extension() == ".json")
      seeds.push_back(e.path());
  std::sort(seeds.begin(), seeds.end());
  ASSERT_FALSE(seeds.empty()) << "no seeds in " << CLEAVE_SCHEMA_SEED_DIR;
  size_t canonical = 0;
  for (const fs::path &seed : seeds) {
    SCOPED_TRACE(seed.string());
    std::ifstream in(seed, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
      text.pop_back();
    abi::Manifest manifest;
    std::string error;
    ASSERT_TRUE(abi::readManifestText(text, manifest, error)) << error;
    std::string written = mlir::cleave::writeManifestText(manifest);
    // Compact: no space after the first key's colon.
    const std::string compact = "{\"abi_version\":";
    if (text.rfind(compact, 0) == 0 && text.size() > compact.size() &&
        std::isdigit(static_cast<unsigned char>(text[compact.size()]))) {
      ++canonical;
      EXPECT_TRUE(written == text) << firstDifference(text, written);
      continue;
    }
    abi::Manifest again;
    ASSERT_TRUE(abi::readManifestText(written, again, error)) << error;
    EXPECT_TRUE(again == manifest);
    std::string twice = mlir::cleave::writeManifestText(again);
    EXPECT_TRUE(twice == written) << firstDifference(written, twice);
  }
  // The seeds written by compilers (four when this test was written).
  EXPECT_GE(canonical, 4u);
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

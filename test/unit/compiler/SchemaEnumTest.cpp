//===- SchemaEnumTest.cpp - The IR's enums against the wire's -------------===//
//
// Every case of an ODS enum that reaches a manifest has a spelling in
// artifact_schema.def (toWire maps it by that spelling), and every wire case
// is an IR case, except the ones the manifest writer produces from
// something else, named here with why. compiler/Artifact/SchemaAttr.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/SchemaAttr.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

using namespace mlir::cleave;
namespace abi = ::cleave::abi;

/// Checks the pair (Ir, its wire enum): each of the `maxValue + 1` IR cases
/// is spelled by the wire enum and maps to that case; each wire case not in
/// `wireOnly` is an IR case.
template <class Ir>
void expectPaired(unsigned maxValue, std::set<std::string> wireOnly) {
  using Wire = typename WireOf<Ir>::type;
  std::set<std::string> irSpellings;
  for (unsigned v = 0; v <= maxValue; ++v) {
    auto ir = static_cast<Ir>(v);
    std::string spelling = stringifyEnum(ir).str();
    irSpellings.insert(spelling);
    std::optional<Wire> wire = abi::parse<Wire>(spelling);
    ASSERT_TRUE(wire.has_value())
        << abi::EnumInfo<Wire>::name << " has no case '" << spelling
        << "', which the IR's enum has";
    EXPECT_EQ(std::string(abi::name(toWire(ir))), spelling);
  }
  for (size_t c = 0; c < abi::kCaseCount<Wire>; ++c) {
    std::string spelling = abi::EnumInfo<Wire>::cases[c].spelling;
    if (wireOnly.erase(spelling))
      continue;
    EXPECT_TRUE(irSpellings.count(spelling))
        << abi::EnumInfo<Wire>::name << "'s '" << spelling
        << "' is not a case of the IR's enum";
  }
  EXPECT_TRUE(wireOnly.empty())
      << "a wire-only case named here is not in the table";
}

TEST(SchemaEnum, GlobalKind) {
  expectPaired<train::GlobalKind>(train::getMaxEnumValForGlobalKind(), {});
}

TEST(SchemaEnum, InitKind) {
  // `data`: the writer's spelling for a global whose initial value the
  // artifact carries (a constant in the IR, not an initializer kind).
  expectPaired<train::InitKind>(train::getMaxEnumValForInitKind(), {"data"});
}

TEST(SchemaEnum, RankReduction) {
  // `sum`: accepted by the runtime (hand-written artifacts, the fakes), never
  // written by the compiler.
  expectPaired<train::RankReduction>(train::getMaxEnumValForRankReduction(),
                                     {"sum"});
}

TEST(SchemaEnum, Device) {
  expectPaired<rt::Device>(rt::getMaxEnumValForDevice(), {});
}

TEST(SchemaEnum, KernelKind) {
  expectPaired<rt::KernelKind>(rt::getMaxEnumValForKernelKind(), {});
}

TEST(SchemaEnum, KernelPrecision) {
  expectPaired<rt::KernelPrecision>(rt::getMaxEnumValForKernelPrecision(), {});
}

} // namespace

//===- EnumOption.h - Command-line options of ODS enum types ----*- C++ -*-===//
//
// Lets a pass, pipeline or tool option take an ODS enum (`--optimizer=adam`,
// `reduce=mean`) spelled exactly as the enum prints, so the dialect's enum
// is the one list of valid values: parsing rejects anything else, and
// `--help` lists them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECTS_COMMON_ENUMOPTION_H
#define CLEAVE_DIALECTS_COMMON_ENUMOPTION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace mlir::cleave {

/// A `llvm::cl` modifier (like `cl::values`) that adds every case of the
/// ODS enum `EnumT` as a literal value of the option. ODS numbers the cases
/// of Cleave's `I32EnumAttr`s from 0 without gaps, and `stringifyEnum`
/// returns an empty string past the last one.
template <typename EnumT> struct EnumValues {
  template <typename OptionT> void apply(OptionT &option) const {
    for (unsigned i = 0;; ++i) {
      auto value = static_cast<EnumT>(i);
      llvm::StringRef name = stringifyEnum(value);
      if (name.empty())
        break;
      option.getParser().addLiteralOption(name, value, name);
    }
  }
};

/// `EnumValues<EnumT>()`, for option declarations in ODS.
template <typename EnumT> EnumValues<EnumT> enumValues() { return {}; }

} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_COMMON_ENUMOPTION_H

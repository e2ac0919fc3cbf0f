//===- SchemaAttr.h - The IR's enums as the manifest spells them -*- C++
//-*-===//
//
// The wire enums of artifact_schema.def (runtime/src/schema/Schema.h) are
// the source of the manifest's spellings; the ODS enums of the dialects are
// the source of the IR's. Each pair is listed once here, and `toWire` maps
// an IR value to the wire's by its spelling. SchemaEnumTest walks every
// case of every pair both ways, so an IR case without a wire spelling, or a
// wire case the IR lacks beyond the ones named there, fails a test instead
// of reaching a manifest (docs/design/artifact-schema.md, "Enums and ODS").
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_SCHEMAATTR_H
#define CLEAVE_COMPILER_ARTIFACT_SCHEMAATTR_H

#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainOps.h"
#include "runtime/src/schema/Schema.h"

#include <cassert>

namespace mlir::cleave {

/// The wire enum an IR enum is written as.
template <class Ir> struct WireOf;
template <> struct WireOf<train::GlobalKind> {
  using type = ::cleave::abi::GlobalKind;
};
template <> struct WireOf<train::InitKind> {
  using type = ::cleave::abi::InitKind;
};
template <> struct WireOf<train::RankReduction> {
  using type = ::cleave::abi::Reduce;
};
template <> struct WireOf<rt::Device> { using type = ::cleave::abi::Device; };
template <> struct WireOf<rt::KernelKind> {
  using type = ::cleave::abi::KernelOp;
};
template <> struct WireOf<rt::KernelPrecision> {
  using type = ::cleave::abi::Math;
};

/// `value` as the manifest spells it.
template <class Ir> typename WireOf<Ir>::type toWire(Ir value) {
  auto wire = ::cleave::abi::parse<typename WireOf<Ir>::type>(
      std::string_view(stringifyEnum(value)));
  assert(wire && "an IR enum case the schema does not spell "
                 "(SchemaEnumTest names it)");
  return *wire;
}

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_SCHEMAATTR_H

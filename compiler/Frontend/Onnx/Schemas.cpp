//===- Schemas.cpp - The ONNX checker for opsets newer than the library ---===//
//
// The system ONNX library (1.12) knows the default domain up to opset 17.
// Its checker looks each node up as the newest schema at or below the
// model's opset, so an op whose form changed later (ReduceMean's axes input
// at 18, Split's num_outputs and Pad's axes at 18, Cast's saturate at 19)
// fails as a "bad
// node spec", and an op added later (Gelu at 20) has no schema at all. The
// checker takes its schemas from a registry it is given: this one adds the
// newer forms of the ops the importer maps and defers to the library's for
// everything else, so a model of opset 18 to 21 is checked as thoroughly
// as one of opset 17.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <map>
#include <unordered_map>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

using onnx::AttributeProto;
using onnx::OpSchema;

/// The newest IR version of the opsets the importer reads (opset 21 is IR
/// 10). The library's protobuf parses such files; what they may hold beyond
/// IR 8 (float8 and 4-bit types) is refused when the importer converts
/// types.
constexpr int64_t kMaxIrVersion = 10;

std::vector<std::string> withBool(std::vector<std::string> types) {
  types.push_back("tensor(bool)");
  return types;
}

/// The schemas of the default-domain forms newer than opset 17.
class NewerOpsetRegistry final : public onnx::ISchemaRegistry {
public:
  NewerOpsetRegistry() {
    // Opset 18: every reduction takes its axes as an optional input (and
    // from 20 ReduceMax/ReduceMin take booleans, which the types include).
    for (const char *name :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2"}) {
      OpSchema &s = add(name, 18);
      s.Input(0, "data", "", "T")
          .Input(1, "axes", "", "tensor(int64)", OpSchema::Optional)
          .Output(0, "reduced", "", "T")
          .Attr("keepdims", "", AttributeProto::INT, int64_t(1))
          .Attr("noop_with_empty_axes", "", AttributeProto::INT, int64_t(0))
          .TypeConstraint("T", withBool(OpSchema::all_numeric_types()), "");
    }
    add("Split", 18)
        .Input(0, "input", "", "T")
        .Input(1, "split", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "outputs", "", "T", OpSchema::Variadic)
        .Attr("axis", "", AttributeProto::INT, int64_t(0))
        .Attr("num_outputs", "", AttributeProto::INT, /*required=*/false)
        .TypeConstraint("T", OpSchema::all_tensor_types(), "");
    // Opset 18 adds Pad's axes input, 19 its wrap mode.
    add("Pad", 18)
        .Input(0, "data", "", "T")
        .Input(1, "pads", "", "tensor(int64)")
        .Input(2, "constant_value", "", "T", OpSchema::Optional)
        .Input(3, "axes", "", "Tind", OpSchema::Optional)
        .Output(0, "output", "", "T")
        .Attr("mode", "", AttributeProto::STRING, std::string("constant"))
        .TypeConstraint("T", withBool(OpSchema::all_numeric_types()), "")
        .TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "");
    add("Cast", 19)
        .Input(0, "input", "", "T1")
        .Output(0, "output", "", "T2")
        .Attr("to", "", AttributeProto::INT, /*required=*/true)
        .Attr("saturate", "", AttributeProto::INT, int64_t(1))
        .TypeConstraint("T1", OpSchema::all_tensor_types(), "")
        .TypeConstraint("T2", OpSchema::all_tensor_types(), "");
    add("Gelu", 20)
        .Input(0, "X", "", "T")
        .Output(0, "Y", "", "T")
        .Attr("approximate", "", AttributeProto::STRING, std::string("none"))
        .TypeConstraint("T",
                        {"tensor(float16)", "tensor(float)", "tensor(double)",
                         "tensor(bfloat16)"},
                        "");
    // Opset 18: Resize's axes, antialias and keep_aspect_ratio_policy (19
    // only adds a coordinate mode, a value the importer checks).
    add("Resize", 18)
        .Input(0, "X", "", "T1")
        .Input(1, "roi", "", "T2", OpSchema::Optional)
        .Input(2, "scales", "", "tensor(float)", OpSchema::Optional)
        .Input(3, "sizes", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "Y", "", "T1")
        .Attr("antialias", "", AttributeProto::INT, int64_t(0))
        .Attr("axes", "", AttributeProto::INTS, /*required=*/false)
        .Attr("coordinate_transformation_mode", "", AttributeProto::STRING,
              std::string("half_pixel"))
        .Attr("cubic_coeff_a", "", AttributeProto::FLOAT, -0.75f)
        .Attr("exclude_outside", "", AttributeProto::INT, int64_t(0))
        .Attr("extrapolation_value", "", AttributeProto::FLOAT, 0.0f)
        .Attr("keep_aspect_ratio_policy", "", AttributeProto::STRING,
              std::string("stretch"))
        .Attr("mode", "", AttributeProto::STRING, std::string("nearest"))
        .Attr("nearest_mode", "", AttributeProto::STRING,
              std::string("round_prefer_floor"))
        .TypeConstraint("T1", OpSchema::all_tensor_types(), "")
        .TypeConstraint("T2",
                        {"tensor(float16)", "tensor(float)", "tensor(double)"},
                        "");
    // GroupNormalization: opset 18 (scale and bias per group), 21 (per
    // channel, and stash_type).
    for (int since : {18, 21}) {
      OpSchema &s = add("GroupNormalization", since);
      s.Input(0, "X", "", "T")
          .Input(1, "scale", "", "T")
          .Input(2, "bias", "", "T")
          .Output(0, "Y", "", "T")
          .Attr("epsilon", "", AttributeProto::FLOAT, 1e-5f)
          .Attr("num_groups", "", AttributeProto::INT, /*required=*/true)
          .TypeConstraint("T",
                          {"tensor(float16)", "tensor(float)",
                           "tensor(double)", "tensor(bfloat16)"},
                          "");
      if (since == 21)
        s.Attr("stash_type", "", AttributeProto::INT, int64_t(1));
    }
    for (auto &[name, versions] : schemas)
      for (OpSchema &s : versions)
        s.Finalize();
  }

  const OpSchema *GetSchema(const std::string &key, const int maxVersion,
                            const std::string &domain) const override {
    const OpSchema *known =
        onnx::OpSchemaRegistry::Instance()->GetSchema(key, maxVersion, domain);
    if (!domain.empty() && domain != "ai.onnx")
      return known;
    auto it = schemas.find(key);
    if (it == schemas.end())
      return known;
    const OpSchema *newest = known;
    for (const OpSchema &s : it->second)
      if (s.SinceVersion() <= maxVersion &&
          (!newest || s.SinceVersion() > newest->SinceVersion()))
        newest = &s;
    return newest;
  }

private:
  OpSchema &add(const char *name, int since) {
    std::vector<OpSchema> &versions = schemas[name];
    versions.emplace_back();
    OpSchema &s = versions.back();
    s.SetName(name).SetDomain("").SinceVersion(since);
    return s;
  }

  /// Each op's newer schemas; std::map keeps references stable.
  std::map<std::string, std::vector<OpSchema>> schemas;
};

} // namespace

void importer::checkModel(const onnx::ModelProto &model) {
  static const NewerOpsetRegistry registry;
  if (model.ir_version() > kMaxIrVersion)
    fail_check("the IR version ", model.ir_version(), " is newer than ",
               kMaxIrVersion);
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  std::unordered_map<std::string, int> imports;
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (!imports.emplace(set.domain(), static_cast<int>(set.version())).second)
      fail_check("the model imports domain '", set.domain(), "' twice");
  ctx.set_opset_imports(imports);
  ctx.set_schema_registry(&registry);
  onnx::checker::LexicalScopeContext scope;
  onnx::checker::check_graph(model.graph(), ctx, scope);
  if (model.ir_version() >= 8)
    onnx::checker::check_model_local_functions(model, ctx, scope);
}

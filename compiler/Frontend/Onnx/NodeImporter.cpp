//===- NodeImporter.cpp - What an op importer reads and writes ------------===//
//
// One node as its op importer sees it: attributes with ONNX's defaults,
// inputs as tensors, constants or shape values, and its outputs.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *NodeImporter::getAttr(StringRef name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool NodeImporter::hasAttr(StringRef name) const { return getAttr(name); }

LogicalResult NodeImporter::checkAttrs(ArrayRef<StringRef> known) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (!llvm::is_contained(known, a.name()))
      return emitError() << node.op_type() << " attribute '" << a.name()
                         << "' is not supported";
  return success();
}

FailureOr<int64_t> NodeImporter::getInt(StringRef name,
                                        std::optional<int64_t> dflt) {
  const onnx::AttributeProto *a = getAttr(name);
  if (!a) {
    if (dflt)
      return *dflt;
    return emitError() << node.op_type() << " needs attribute '" << name << "'";
  }
  if (a->type() != onnx::AttributeProto::INT)
    return emitError() << node.op_type() << " attribute '" << name
                       << "' must be an integer";
  return a->i();
}

FailureOr<double> NodeImporter::getFloat(StringRef name,
                                         std::optional<double> dflt) {
  const onnx::AttributeProto *a = getAttr(name);
  if (!a) {
    if (dflt)
      return *dflt;
    return emitError() << node.op_type() << " needs attribute '" << name << "'";
  }
  if (a->type() != onnx::AttributeProto::FLOAT)
    return emitError() << node.op_type() << " attribute '" << name
                       << "' must be a float";
  return widenFloat(a->f());
}

FailureOr<SmallVector<int64_t>>
NodeImporter::getInts(StringRef name, std::optional<ArrayRef<int64_t>> dflt) {
  const onnx::AttributeProto *a = getAttr(name);
  if (!a) {
    if (dflt)
      return SmallVector<int64_t>(dflt->begin(), dflt->end());
    return emitError() << node.op_type() << " needs attribute '" << name << "'";
  }
  if (a->type() != onnx::AttributeProto::INTS)
    return emitError() << node.op_type() << " attribute '" << name
                       << "' must be a list of integers";
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

FailureOr<std::string> NodeImporter::getString(StringRef name,
                                               std::optional<StringRef> dflt) {
  const onnx::AttributeProto *a = getAttr(name);
  if (!a) {
    if (dflt)
      return dflt->str();
    return emitError() << node.op_type() << " needs attribute '" << name << "'";
  }
  if (a->type() != onnx::AttributeProto::STRING)
    return emitError() << node.op_type() << " attribute '" << name
                       << "' must be a string";
  return a->s();
}

FailureOr<ImportedValue *> NodeImporter::requireInput(unsigned i) {
  if (!hasInput(i))
    return emitError() << node.op_type() << " needs input " << i;
  ImportedValue *v = graph.lookup(node.input(i));
  if (!v)
    return emitError() << "input '" << node.input(i) << "' is not defined";
  return v;
}

ImportedValue &NodeImporter::input(unsigned i) {
  ImportedValue *v = graph.lookup(node.input(i));
  assert(v && "inputs are checked before the op importer runs");
  return *v;
}

FailureOr<DenseElementsAttr> NodeImporter::symbolicValue(unsigned i,
                                                         ImportedValue &v) {
  if (std::optional<DenseElementsAttr> c = constantOfSymbolic(v))
    return *c;
  return emitError() << "'" << node.input(i)
                     << "' depends on the batch size and can only be used "
                        "as a shape";
}

FailureOr<Value> NodeImporter::tensor(unsigned i) {
  auto v = requireInput(i);
  if (failed(v))
    return failure();
  switch ((*v)->kind) {
  case ImportedValue::Kind::Tensor:
    return (*v)->tensor;
  case ImportedValue::Kind::Constant:
    return graph.materialize((*v)->constant, loc);
  case ImportedValue::Kind::Symbolic: {
    auto attr = symbolicValue(i, **v);
    if (failed(attr))
      return failure();
    return graph.materialize(*attr, loc);
  }
  }
  llvm_unreachable("unknown value kind");
}

FailureOr<Value> NodeImporter::floatTensor(unsigned i) {
  auto v = tensor(i);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (!isa<FloatType>(type.getElementType()))
    return emitError() << node.op_type() << " input '" << node.input(i)
                       << "' must be a floating-point tensor, got " << type;
  return v;
}

FailureOr<Value> NodeImporter::numericTensor(unsigned i) {
  auto v = tensor(i);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  Type elt = type.getElementType();
  if (!isa<FloatType>(elt) && !elt.isSignlessInteger(32) &&
      !elt.isSignlessInteger(64))
    return emitError() << node.op_type() << " input '" << node.input(i)
                       << "' must be a float, int32 or int64 tensor, got "
                       << type;
  return v;
}

bool NodeImporter::isConstant(unsigned i) {
  ImportedValue *v = hasInput(i) ? graph.lookup(node.input(i)) : nullptr;
  return v && v->kind != ImportedValue::Kind::Tensor;
}

FailureOr<DenseElementsAttr> NodeImporter::constant(unsigned i,
                                                    StringRef what) {
  auto v = requireInput(i);
  if (failed(v))
    return failure();
  if ((*v)->kind == ImportedValue::Kind::Constant)
    return (*v)->constant;
  if ((*v)->kind == ImportedValue::Kind::Symbolic)
    return symbolicValue(i, **v);
  InFlightDiagnostic diag = emitError() << node.op_type() << " " << what
                                        << " ('" << node.input(i)
                                        << "') must be a compile-time constant";
  if (StringRef state = graph.stateName((*v)->tensor); !state.empty())
    diag << ", not the trainable initializer '" << state << "'";
  else if (StringRef input = graph.sourceInputName((*v)->tensor);
           !input.empty() && input != node.input(i))
    diag << "; it is computed from the graph input '" << input << "'";
  return diag;
}

FailureOr<SmallVector<SymInt>> NodeImporter::symbolicInts(unsigned i,
                                                          StringRef what) {
  auto v = requireInput(i);
  if (failed(v))
    return failure();
  if ((*v)->kind == ImportedValue::Kind::Symbolic)
    return (*v)->symbolic;
  if ((*v)->kind == ImportedValue::Kind::Constant)
    return emitError() << node.op_type() << " " << what << " ('"
                       << node.input(i) << "') must be integers of rank 0 "
                       << "or 1, got " << (*v)->constant.getType();
  InFlightDiagnostic diag =
      emitError() << node.op_type() << " " << what << " ('" << node.input(i)
                  << "') is computed at run time; it must fold to a "
                     "constant";
  if (StringRef input = graph.sourceInputName((*v)->tensor);
      !input.empty() && input != node.input(i))
    diag << "; it is computed from the graph input '" << input << "'";
  return diag;
}

FailureOr<SmallVector<int64_t>> NodeImporter::constantInts(unsigned i,
                                                           StringRef what) {
  auto sym = symbolicInts(i, what);
  if (failed(sym))
    return failure();
  SmallVector<int64_t> ints;
  for (SymInt s : *sym) {
    if (!s.isConstant())
      return emitError() << node.op_type() << " " << what << " ('"
                         << node.input(i) << "') depends on the batch size";
    ints.push_back(s.coeff);
  }
  return ints;
}

FailureOr<double> NodeImporter::constantScalar(unsigned i, StringRef what) {
  auto attr = constant(i, what);
  if (failed(attr))
    return failure();
  if (attr->getNumElements() != 1)
    return emitError() << node.op_type() << " " << what << " ('"
                       << node.input(i) << "') must be a single value, got "
                       << attr->getType();
  Type elt = attr->getElementType();
  if (elt.isF32())
    return widenFloat(*attr->getValues<float>().begin());
  if (isa<FloatType>(elt))
    return (*attr->getValues<APFloat>().begin()).convertToDouble();
  if (elt.isInteger(1))
    return *attr->getValues<bool>().begin() ? 1.0 : 0.0;
  return static_cast<double>(
      (*attr->getValues<APInt>().begin()).getSExtValue());
}

bool NodeImporter::isOutputUsed(unsigned i) const {
  return (int)i < node.output_size() && !node.output(i).empty() &&
         graph.numUses(node.output(i)) > 0;
}

LogicalResult NodeImporter::requireUnused(unsigned first, StringRef what) {
  for (unsigned i = first; i < getNumOutputs(); ++i)
    if (isOutputUsed(i))
      return emitError() << node.op_type() << "'s " << what << " output ('"
                         << node.output(i) << "') is not supported";
  return success();
}

void NodeImporter::setOutput(unsigned i, Value v) {
  setOutput(i, ImportedValue::ofTensor(v));
}

void NodeImporter::setOutput(unsigned i, ImportedValue v) {
  if ((int)i < node.output_size() && !node.output(i).empty())
    graph.define(node.output(i), std::move(v));
}

FailureOr<Value> NodeImporter::reshape(Value v, ArrayRef<SymInt> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> target;
  unsigned batchDependent = 0;
  for (SymInt s : shape) {
    if (s.isConstant()) {
      target.push_back(s.coeff);
    } else {
      target.push_back(-1);
      ++batchDependent;
    }
  }
  if (batchDependent > 1)
    return emitError() << "more than one dimension of the new shape ["
                       << ArrayRef(shape) << "] depends on the batch size";
  if (batchDependent && type.hasStaticShape())
    return emitError() << "cannot reshape " << type
                       << " to a shape that depends on the batch size";
  if (type.hasStaticShape() && type.getShape() == ArrayRef(target))
    return v;
  auto op = create<nn::ReshapeOp>(v, target);
  if (failed(op))
    return failure();
  return op->getResult();
}

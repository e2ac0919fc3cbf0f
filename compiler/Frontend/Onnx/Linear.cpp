//===- Linear.cpp - Gemm and MatMul ---------------------------------------===//
//
// Gemm in the layout PyTorch exports nn.Linear with (transB = 1, unit
// alpha and beta, a vector bias) is nn.linear; any other Gemm is a matmul
// with transpose flags, scaled and offset. MatMul follows numpy, including
// vector operands.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

LogicalResult importGemm(NodeImporter &n) {
  if (failed(n.checkAttrs({"alpha", "beta", "transA", "transB"})))
    return failure();
  FailureOr<double> alpha = n.getFloat("alpha", 1.0);
  FailureOr<double> beta = n.getFloat("beta", 1.0);
  FailureOr<int64_t> transA = n.getInt("transA", 0);
  FailureOr<int64_t> transB = n.getInt("transB", 0);
  FailureOr<Value> a = n.floatTensor(0);
  FailureOr<Value> b = n.floatTensor(1);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB) ||
      failed(a) || failed(b))
    return failure();
  for (Value v : {*a, *b})
    if (cast<RankedTensorType>(v.getType()).getRank() != 2)
      return n.emitError() << "Gemm operands must be matrices, got "
                           << v.getType();
  Value c;
  if (n.hasInput(2) && *beta != 0.0) {
    FailureOr<Value> bias = n.floatTensor(2);
    if (failed(bias))
      return failure();
    c = *bias;
  }

  bool vectorBias = !c || (*beta == 1.0 &&
                           cast<RankedTensorType>(c.getType()).getRank() == 1);
  if (!*transA && *transB && *alpha == 1.0 && vectorBias)
    return n.createOutput<nn::LinearOp>(*a, *b, c);

  auto product = n.create<nn::MatmulOp>(*a, *b, *transA != 0, *transB != 0);
  if (failed(product))
    return failure();
  Value y = product->getResult();
  if (*alpha != 1.0) {
    auto scaled = n.create<nn::MulOp>(y, scalarLike(n, y, *alpha));
    if (failed(scaled))
      return failure();
    y = scaled->getResult();
  }
  if (c) {
    if (*beta != 1.0) {
      auto scaled = n.create<nn::MulOp>(c, scalarLike(n, c, *beta));
      if (failed(scaled))
        return failure();
      c = scaled->getResult();
    }
    auto sum = n.create<nn::AddOp>(y, c);
    if (failed(sum))
      return failure();
    y = sum->getResult();
  }
  n.setOutput(0, y);
  return success();
}

/// `v` of symbolic shape `shape` broadcast so that its leading (batch)
/// dimensions are `batch`; a batch-size entry takes the batch from a data
/// input.
FailureOr<Value> broadcastBatch(NodeImporter &n, Value v,
                                ArrayRef<SymInt> shape,
                                ArrayRef<SymInt> batch) {
  SmallVector<SymInt> target(batch);
  target.append(shape.end() - 2, shape.end());
  if (ArrayRef(target) == shape)
    return v;
  SmallVector<int64_t> sizes;
  for (SymInt d : target) {
    if (d.isConstant())
      sizes.push_back(d.coeff);
    else if (d == SymInt::batch())
      sizes.push_back(-1);
    else
      return n.emitError() << "MatMul broadcasting to [" << ArrayRef(target)
                           << "] is not supported: a batch-dependent size "
                              "other than B (B is the batch size)";
  }
  Value source;
  if (llvm::is_contained(sizes, -1) && !(source = n.getGraph().batchSource()))
    return n.emitError() << "MatMul broadcasting to a batch-dependent shape "
                            "needs a data input with a batch dimension";
  auto op = n.create<nn::BroadcastToOp>(v, sizes, source);
  if (failed(op))
    return failure();
  return op->getResult();
}

LogicalResult importMatMul(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> a = n.floatTensor(0);
  FailureOr<Value> b = n.floatTensor(1);
  if (failed(a) || failed(b))
    return failure();
  GraphImporter &g = n.getGraph();
  auto aShape = g.symbolicShape(*a, n.getLoc());
  auto bShape = g.symbolicShape(*b, n.getLoc());
  if (failed(aShape) || failed(bShape))
    return failure();
  if (aShape->empty() || bShape->empty())
    return n.emitError() << "MatMul of a scalar";

  // numpy: a vector lhs is a row, a vector rhs a column, and the unit
  // dimension goes again afterwards.
  bool rowVector = aShape->size() == 1, columnVector = bShape->size() == 1;
  if (rowVector) {
    a = n.reshape(*a, {SymInt::constant(1), (*aShape)[0]});
    if (failed(a))
      return failure();
  }
  if (columnVector) {
    b = n.reshape(*b, {(*bShape)[0], SymInt::constant(1)});
    if (failed(b))
      return failure();
  }
  // nn.matmul takes equal batch dimensions or a shared right-hand matrix;
  // numpy broadcasts the batch dimensions in general. A right-hand side
  // whose batch dimensions are all 1 is a shared matrix; otherwise both
  // sides are broadcast to the common batch dimensions.
  SmallVector<SymInt> as(*aShape), bs(*bShape);
  if (rowVector)
    as.insert(as.begin(), SymInt::constant(1));
  if (columnVector)
    bs.push_back(SymInt::constant(1));
  ArrayRef<SymInt> aBatch = ArrayRef(as).drop_back(2),
                   bBatch = ArrayRef(bs).drop_back(2);
  bool sharedRhs =
      llvm::all_of(bBatch, [](SymInt d) { return d == SymInt::constant(1); });
  if (sharedRhs && !bBatch.empty() && aBatch.size() >= bBatch.size()) {
    b = n.reshape(*b, ArrayRef(bs).take_back(2));
    if (failed(b))
      return failure();
  } else if (!bBatch.empty() && !(aBatch == bBatch)) {
    size_t rank = std::max(aBatch.size(), bBatch.size());
    SmallVector<SymInt> batch(rank);
    for (size_t i = 0; i < rank; ++i) {
      SymInt x = i + aBatch.size() < rank ? SymInt::constant(1)
                                          : aBatch[i + aBatch.size() - rank];
      SymInt y = i + bBatch.size() < rank ? SymInt::constant(1)
                                          : bBatch[i + bBatch.size() - rank];
      if (x == y || y == SymInt::constant(1))
        batch[i] = x;
      else if (x == SymInt::constant(1))
        batch[i] = y;
      else
        return n.emitError()
               << "MatMul batch dimensions [" << aBatch << "] and [" << bBatch
               << "] do not broadcast (B is the batch size)";
    }
    a = broadcastBatch(n, *a, as, batch);
    if (failed(a))
      return failure();
    b = broadcastBatch(n, *b, bs, batch);
    if (failed(b))
      return failure();
  }
  auto product = n.create<nn::MatmulOp>(*a, *b);
  if (failed(product))
    return failure();
  Value y = product->getResult();
  if (rowVector || columnVector) {
    auto shape = g.symbolicShape(y, n.getLoc());
    if (failed(shape))
      return failure();
    if (columnVector)
      shape->pop_back();
    if (rowVector)
      shape->erase(shape->end() - (columnVector ? 1 : 2));
    FailureOr<Value> r = n.reshape(y, *shape);
    if (failed(r))
      return failure();
    y = *r;
  }
  n.setOutput(0, y);
  return success();
}

/// `v` with its dimensions, named by `from`, permuted to the order `to`
/// (an nn.transpose unless the orders agree).
FailureOr<Value> permuteTo(NodeImporter &n, Value v, StringRef from,
                           StringRef to) {
  if (from == to)
    return v;
  SmallVector<int64_t> perm;
  for (char c : to)
    perm.push_back(from.find(c));
  auto op = n.create<nn::TransposeOp>(v, perm);
  if (failed(op))
    return failure();
  return op->getResult();
}

/// Einsum in general, for the equations that are not a matrix product:
/// any number of operands, implicit outputs, `...`, repeated letters
/// (diagonals). Each operand's diagonals are taken (a product with an
/// identity mask, summed over the second axis), its dimensions are
/// transposed to one order of all letters (output letters first) with
/// size-1 dimensions for the letters it lacks, the operands are multiplied
/// with broadcasting and the contracted letters summed. The product is an
/// outer one: fine for the small, non-GEMM forms this path serves; a
/// (batched) matrix product takes importEinsum's nn.matmul instead.
LogicalResult importGeneralEinsum(NodeImporter &n, StringRef given,
                                  StringRef equation) {
  auto refuse = [&](StringRef why) {
    return n.emitError() << "Einsum equation '" << given
                         << "' is not supported: " << why;
  };
  auto [inputsPart, outPart] = equation.split("->");
  bool implicit = inputsPart.size() == equation.size();
  SmallVector<StringRef> terms;
  inputsPart.split(terms, ',');
  if (terms.size() != n.getNumInputs())
    return refuse("it names " + std::to_string(terms.size()) +
                  " operands, the node has " +
                  std::to_string(n.getNumInputs()));
  SmallVector<Value> values;
  for (unsigned i = 0; i < terms.size(); ++i) {
    FailureOr<Value> v = n.floatTensor(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  // "..." becomes digits, aligned at the right across operands as numpy
  // broadcasts them.
  auto expand = [](StringRef term, int64_t rank,
                   int64_t &dots) -> std::optional<std::string> {
    size_t at = term.find("...");
    std::string letters = term.str();
    if (at == StringRef::npos) {
      dots = 0;
      return letters;
    }
    letters.erase(at, 3);
    dots = rank - static_cast<int64_t>(letters.size());
    if (dots < 0 || dots > 9)
      return std::nullopt;
    std::string fill;
    for (int64_t d = 0; d < dots; ++d)
      fill.push_back(static_cast<char>('0' + (9 - dots + 1 + d)));
    letters.insert(at, fill);
    return letters;
  };
  SmallVector<std::string> named;
  int64_t maxDots = 0;
  for (auto [term, v] : llvm::zip_equal(terms, values)) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank(), dots;
    std::optional<std::string> letters = expand(term, rank, dots);
    if (!letters || (int64_t)letters->size() != rank)
      return refuse("its terms do not match the operands' ranks");
    for (char c : *letters)
      if (!llvm::isAlpha(c) && !llvm::isDigit(c))
        return refuse("terms are letters and '...'");
    maxDots = std::max(maxDots, dots);
    named.push_back(*letters);
  }
  std::string ellipsis;
  for (int64_t d = 0; d < maxDots; ++d)
    ellipsis.push_back(static_cast<char>('0' + (9 - maxDots + 1 + d)));
  std::string out;
  if (implicit) {
    // numpy's implicit output: the broadcast dimensions, then the letters
    // that appear once, in alphabetical order.
    out = ellipsis;
    std::string once;
    for (char c = 'A'; c <= 'z'; ++c) {
      if (!llvm::isAlpha(c))
        continue;
      int count = 0;
      for (const std::string &t : named)
        count += llvm::count(t, c);
      if (count == 1)
        once.push_back(c);
    }
    out += once;
  } else {
    std::string o = outPart.str();
    if (size_t at = o.find("..."); at != std::string::npos)
      o.replace(at, 3, ellipsis);
    out = o;
  }
  // An index loop: before C++20 a lambda cannot capture a structured
  // binding (Clang refuses; the sanitizer build compiles with Clang).
  for (size_t i = 0; i < out.size(); ++i) {
    char letter = out[i];
    if (StringRef(out).drop_front(i + 1).contains(letter) ||
        llvm::none_of(named, [&](const std::string &t) {
          return StringRef(t).contains(letter);
        }))
      return refuse("an output dimension repeated or in no operand");
  }
  std::string all = out;
  for (const std::string &t : named)
    for (char c : t)
      if (!StringRef(all).contains(c))
        all.push_back(c);

  GraphImporter &g = n.getGraph();
  Composer c(n);
  Value product;
  for (auto [letters, value] : llvm::zip_equal(named, values)) {
    Value v = value;
    // Diagonals: keep the elements whose indices agree, one axis at a time.
    for (size_t p = 0; p < letters.size(); ++p) {
      size_t q;
      while ((q = StringRef(letters).find(letters[p], p + 1)) !=
             StringRef::npos) {
        auto type = cast<RankedTensorType>(v.getType());
        int64_t size = type.getDimSize(p);
        if (ShapedType::isDynamic(size) || size != type.getDimSize(q))
          return refuse("a diagonal of dimensions of different or "
                        "batch-dependent sizes");
        SmallVector<int64_t> maskShape(type.getRank(), 1);
        maskShape[p] = maskShape[q] = size;
        SmallVector<Attribute> eye;
        for (int64_t i = 0; i < size; ++i)
          for (int64_t j = 0; j < size; ++j)
            eye.push_back(elementAttr(type.getElementType(), i == j));
        Value mask = g.materialize(
            DenseElementsAttr::get(
                RankedTensorType::get(maskShape, type.getElementType()), eye),
            n.getLoc());
        v = c.op<nn::ReduceSumOp>(c.op<nn::MulOp>(v, mask),
                                  ArrayRef<int64_t>{static_cast<int64_t>(q)},
                                  false);
        if (!v)
          return failure();
        letters.erase(q, 1);
      }
    }
    // To the order of `all`, with size-1 dimensions for missing letters.
    std::string mine;
    for (char l : all)
      if (StringRef(letters).contains(l))
        mine.push_back(l);
    FailureOr<Value> ordered = permuteTo(n, v, letters, mine);
    if (failed(ordered))
      return failure();
    auto shape = g.symbolicShape(*ordered, n.getLoc());
    if (failed(shape))
      return failure();
    SmallVector<SymInt> full;
    for (char l : all) {
      size_t at = StringRef(mine).find(l);
      full.push_back(at == StringRef::npos ? SymInt::constant(1)
                                           : (*shape)[at]);
    }
    // Leading size-1 dimensions broadcast as they are.
    size_t lead = 0;
    while (lead < all.size() && !StringRef(mine).contains(all[lead]))
      ++lead;
    FailureOr<Value> shaped =
        mine.size() == all.size()
            ? ordered
            : n.reshape(*ordered, ArrayRef(full).drop_front(lead));
    if (failed(shaped))
      return failure();
    product = product ? c.op<nn::MulOp>(product, *shaped) : *shaped;
    if (!product)
      return failure();
  }
  // Every operand may lack the leading letters: broadcast to the full rank.
  auto ptype = cast<RankedTensorType>(product.getType());
  if (ptype.getRank() < (int64_t)all.size()) {
    auto shape = g.symbolicShape(product, n.getLoc());
    if (failed(shape))
      return failure();
    SmallVector<SymInt> full(all.size() - ptype.getRank(), SymInt::constant(1));
    full.append(shape->begin(), shape->end());
    FailureOr<Value> r = n.reshape(product, full);
    if (failed(r))
      return failure();
    product = *r;
  }
  SmallVector<int64_t> contracted;
  for (int64_t d = out.size(); d < (int64_t)all.size(); ++d)
    contracted.push_back(d);
  Value y = contracted.empty()
                ? product
                : c.op<nn::ReduceSumOp>(product, ArrayRef(contracted), false);
  return c.output(y);
}

/// Einsum of two operands whose equation is a (batched) matrix product, the
/// forms attention is written with ("bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd",
/// "bij,jk->ik" ...): one letter is contracted, one letter of each input
/// appears in the output only with it (the rows m and the columns n), and
/// the other output letters are batch dimensions, in both inputs or, with
/// a right-hand matrix shared by the batch, in the left one only. The
/// operands become one nn.matmul, its transpose flags taking the
/// contraction where it already is; other orders are nn.transposes.
LogicalResult importEinsum(NodeImporter &n) {
  if (failed(n.checkAttrs({"equation"})))
    return failure();
  FailureOr<std::string> given = n.getString("equation");
  if (failed(given))
    return failure();
  std::string equation;
  for (char c : *given)
    if (c != ' ')
      equation.push_back(c);
  auto refuse = [&](StringRef why) {
    return n.emitError() << "Einsum equation '" << *given
                         << "' is not supported: " << why;
  };
  StringRef eq(equation), inputs, out;
  std::tie(inputs, out) = eq.split("->");
  auto general = [&] { return importGeneralEinsum(n, *given, equation); };
  if (inputs.size() == eq.size())
    return general();
  auto [lhs, rhs] = inputs.split(',');
  if (rhs.contains(',') || rhs.empty() || n.getNumInputs() != 2)
    return general();
  auto distinctLetters = [](StringRef term) {
    for (auto [i, c] : llvm::enumerate(term))
      if (!llvm::isAlpha(c) || term.drop_front(i + 1).contains(c))
        return false;
    return true;
  };
  if (!distinctLetters(lhs) || !distinctLetters(rhs) || !distinctLetters(out))
    return general();
  std::string batch, lhsOnly, rhsOnly, contracted;
  for (char c : lhs) {
    bool inRhs = rhs.contains(c), inOut = out.contains(c);
    if (inRhs && inOut)
      batch.push_back(c);
    else if (inRhs)
      contracted.push_back(c);
    else if (inOut)
      lhsOnly.push_back(c);
    else
      return general();
  }
  for (char c : rhs) {
    if (lhs.contains(c))
      continue;
    if (!out.contains(c))
      return general();
    rhsOnly.push_back(c);
  }
  for (char c : out)
    if (!lhs.contains(c) && !rhs.contains(c))
      return refuse("an output dimension in neither operand");
  if (contracted.size() != 1 || rhsOnly.size() != 1 || lhsOnly.empty() ||
      (lhsOnly.size() > 1 && !batch.empty()))
    return general();
  // The left operand's rows; its other own letters batch a shared matrix.
  char m = lhsOnly.back(), k = contracted[0], cols = rhsOnly[0];
  std::string lhsBatch = batch + lhsOnly.substr(0, lhsOnly.size() - 1);
  // Batch letters in the left operand's order.
  std::string lhsBatchOrdered;
  for (char c : lhs)
    if (StringRef(lhsBatch).contains(c))
      lhsBatchOrdered.push_back(c);
  std::string rhsBatch;
  for (char c : lhsBatchOrdered)
    if (StringRef(batch).contains(c))
      rhsBatch.push_back(c);

  FailureOr<Value> a = n.floatTensor(0);
  FailureOr<Value> b = n.floatTensor(1);
  if (failed(a) || failed(b))
    return failure();
  auto typeA = cast<RankedTensorType>(a->getType());
  auto typeB = cast<RankedTensorType>(b->getType());
  if (typeA.getRank() != (int64_t)lhs.size() ||
      typeB.getRank() != (int64_t)rhs.size())
    return refuse("its terms do not match the operands' ranks");
  for (char c : batch)
    if (typeA.getDimSize(lhs.find(c)) != typeB.getDimSize(rhs.find(c)))
      return general();

  std::string rowsFirst = lhsBatchOrdered + m + k;
  std::string rowsLast = lhsBatchOrdered + k + m;
  bool transposeA = lhs == StringRef(rowsLast);
  a = permuteTo(n, *a, lhs, transposeA ? rowsLast : rowsFirst);
  std::string kFirst = rhsBatch + k + cols, kLast = rhsBatch + cols + k;
  bool transposeB = rhs == StringRef(kLast);
  b = permuteTo(n, *b, rhs, transposeB ? kLast : kFirst);
  if (failed(a) || failed(b))
    return failure();
  auto product = n.create<nn::MatmulOp>(*a, *b, transposeA, transposeB);
  if (failed(product))
    return failure();
  FailureOr<Value> y =
      permuteTo(n, product->getResult(), lhsBatchOrdered + m + cols, out);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

} // namespace

void importer::populateLinearImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  addImporter(table, "Gemm", importGemm)
      .describe("any `alpha`, `beta`, `transA`, `transB` (`nn.Linear` "
                "on matrices exports `transB=1`)");
  addImporter(table, "MatMul", importMatMul)
      .describe(
          "matrices, vectors, and batches with numpy broadcasting of the "
          "leading dimensions (a right-hand side whose batch dimensions are "
          "all 1 is one shared matrix; otherwise both sides are broadcast to "
          "the common batch, the batch size taken from a data input); "
          "`MatMul(x, Transpose(W)) + b` (`nn.Linear` on 3-D inputs) is "
          "recomposed into a linear layer");
  addImporter(table, "Einsum", importEinsum)
      .describe(
          "two operands whose equation is a (batched) matrix product: one "
          "contracted letter, one row and one column letter, batch letters in "
          "both operands or (a shared right-hand matrix) in the left one only "
          "(`bhqd,bhkd->bhqk`, `bhqk,bhkd->bhqd`, `bij,jk->bik`); one "
          "`nn.matmul`, transposes where its flags cannot take the order. Any "
          "other equation (more operands, implicit output, `...`, diagonals, "
          "sums) is the broadcast product of the operands, diagonals taken and "
          "contracted letters summed: exact, but an outer product in memory");
}

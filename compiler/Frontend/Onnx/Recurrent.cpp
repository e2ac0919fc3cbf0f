//===- Recurrent.cpp - RNN, GRU and LSTM, unrolled over time -------------===//
//
// ONNX's recurrent layers are imported unrolled over their (static) sequence
// length: one matrix product of the whole input sequence with the input
// weights, then per step the recurrent product, the gates and the state
// update, all nn ops. The gradient through time is then the chain of the
// ops' own gradients (backpropagation through time), and the parameters
// (W, R, B, P) train like any other. docs/design/onnx-import.md says why
// unrolling rather than a loop op.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

enum class Cell { Rnn, Gru, Lstm };

/// The gates of a cell, in the order its weights stack them.
int64_t numGates(Cell cell) {
  switch (cell) {
  case Cell::Rnn:
    return 1;
  case Cell::Gru:
    return 3; // z, r, h
  case Cell::Lstm:
    return 4; // i, o, f, c
  }
  llvm_unreachable("unknown cell");
}

/// The activations a direction uses, ONNX's defaults when absent.
SmallVector<std::string> defaultActivations(Cell cell) {
  switch (cell) {
  case Cell::Rnn:
    return {"Tanh"};
  case Cell::Gru:
    return {"Sigmoid", "Tanh"};
  case Cell::Lstm:
    return {"Sigmoid", "Tanh", "Tanh"};
  }
  llvm_unreachable("unknown cell");
}

/// A recurrent node being unrolled: its shapes, attributes and the nn ops
/// it builds.
class Unroller {
public:
  Unroller(NodeImporter &n, Cell cell) : n(n), c(n), cell(cell) {}

  LogicalResult run();

private:
  /// `v` sliced to [start, start + size) along `axis`; -1 keeps a dynamic
  /// dimension whole.
  Value slice(Value v, int64_t axis, int64_t start, int64_t size) {
    if (!v)
      return c.fail();
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), strides(type.getRank(), 1);
    SmallVector<int64_t> sizes;
    for (int64_t d : type.getShape())
      sizes.push_back(ShapedType::isDynamic(d) ? -1 : d);
    starts[axis] = start;
    sizes[axis] = size;
    return c.op<nn::SliceOp>(v, starts, sizes, strides);
  }
  /// `v` reshaped to `shape`, the batch size B where it is `batch`.
  Value reshape(Value v, ArrayRef<SymInt> shape) {
    if (!v)
      return c.fail();
    FailureOr<Value> r = n.reshape(v, shape);
    return failed(r) ? c.fail() : *r;
  }
  /// `a + b`, either of which may be absent (a zero state).
  Value add(Value a, Value b) {
    if (!a)
      return b;
    if (!b)
      return a;
    return c.op<nn::AddOp>(a, b);
  }
  Value mul(Value a, Value b) { return c.op<nn::MulOp>(a, b); }
  /// An activation of a pre-activation, clipped first if asked.
  Value activate(StringRef name, Value x) {
    if (clip)
      x = c.op<nn::ClampOp>(x, APFloat(-*clip), APFloat(*clip));
    if (name == "Sigmoid")
      return c.op<nn::SigmoidOp>(x);
    if (name == "Tanh")
      return c.op<nn::TanhOp>(x);
    return c.op<nn::ReluOp>(x);
  }
  /// Gate `k` of the [B, G*H] values `x`.
  Value gate(Value x, int64_t k) { return slice(x, 1, k * hidden, hidden); }
  /// Row `d` of a [D, ...] weight or state, without its leading dimension
  /// (a dynamic dimension is the batch).
  Value direction(Value w, int64_t d) {
    if (!w)
      return Value();
    auto type = cast<RankedTensorType>(w.getType());
    SmallVector<SymInt> shape;
    for (int64_t s : type.getShape().drop_front())
      shape.push_back(ShapedType::isDynamic(s) ? batch : SymInt::constant(s));
    return reshape(slice(w, 0, d, 1), shape);
  }

  /// Runs direction `d` over the sequence (backwards if `reverse`); returns
  /// its outputs, each step's state [1, 1, B, H] in time order, and the
  /// final hidden and cell states [1, B, H].
  LogicalResult unroll(int64_t d, bool reverse, ArrayRef<std::string> acts,
                       SmallVector<Value> &steps, Value &lastH, Value &lastC);

  NodeImporter &n;
  Composer c;
  Cell cell;
  int64_t hidden = 0, length = 0;
  std::optional<double> clip;
  bool linearBeforeReset = false;
  SymInt batch;
  Value x, w, r, bias, initialH, initialC, peepholes;
};

LogicalResult Unroller::unroll(int64_t d, bool reverse,
                               ArrayRef<std::string> acts,
                               SmallVector<Value> &steps, Value &lastH,
                               Value &lastC) {
  int64_t gates = numGates(cell);
  SymInt h = SymInt::constant(hidden);
  // The input projection of the whole sequence, [T, B, G*H].
  Value projected = c.op<nn::MatmulOp>(x, direction(w, d), false, true);
  Value recurrent = direction(r, d);
  // Input and recurrent biases, [G*H] each.
  Value inBias, recBias;
  if (bias) {
    Value both = direction(bias, d);
    inBias = slice(both, 0, 0, gates * hidden);
    recBias = slice(both, 0, gates * hidden, gates * hidden);
  }
  Value state = initialH ? direction(initialH, d) : Value();
  Value cellState = initialC ? direction(initialC, d) : Value();
  Value peep = peepholes ? direction(peepholes, d) : Value();
  auto biasOf = [&](Value b, int64_t k) {
    return b ? slice(b, 0, k * hidden, hidden) : Value();
  };
  steps.assign(length, Value());
  for (int64_t i = 0; i < length; ++i) {
    int64_t t = reverse ? length - 1 - i : i;
    Value xt = reshape(slice(projected, 0, t, 1),
                       {batch, SymInt::constant(gates * hidden)});
    // The recurrent product with the state (absent while the state is 0).
    Value ht =
        state ? c.op<nn::MatmulOp>(state, recurrent, false, true) : Value();
    // Each intermediate is named, so the ops come out in the same order
    // whatever compiler built Cleave (argument order is unspecified).
    auto preactivation = [&](int64_t k) {
      Value input = gate(xt, k);
      Value sum = add(input, biasOf(inBias, k));
      if (ht) {
        Value fromState = gate(ht, k);
        sum = add(sum, fromState);
      }
      return add(sum, biasOf(recBias, k));
    };
    // peephole(k) * s: the LSTM's peephole term for gate k (of i, o, f).
    auto peephole = [&](int64_t k, Value s) {
      return peep && s ? mul(slice(peep, 0, k * hidden, hidden), s) : Value();
    };
    Value next;
    switch (cell) {
    case Cell::Rnn:
      next = activate(acts[0], preactivation(0));
      break;
    case Cell::Gru: {
      Value z = activate(acts[0], preactivation(0));
      Value rg = activate(acts[0], preactivation(1));
      // The candidate: the reset gate applies to the state before the
      // recurrent product (ONNX's default) or after it (PyTorch's,
      // linear_before_reset = 1).
      Value recurrentPart;
      if (state && linearBeforeReset) {
        Value fromState = gate(ht, 2);
        recurrentPart = mul(rg, add(fromState, biasOf(recBias, 2)));
      } else if (state) {
        Value reset = mul(rg, state);
        Value weights = slice(recurrent, 0, 2 * hidden, hidden);
        Value rh = c.op<nn::MatmulOp>(reset, weights, false, true);
        recurrentPart = add(rh, biasOf(recBias, 2));
      } else if (recBias) {
        recurrentPart = linearBeforeReset ? mul(rg, biasOf(recBias, 2))
                                          : biasOf(recBias, 2);
      }
      Value input = gate(xt, 2);
      Value sum = add(input, biasOf(inBias, 2));
      Value candidate = activate(acts[1], add(sum, recurrentPart));
      // (1 - z) * candidate + z * state.
      Value keep = c.op<nn::SubOp>(c.scalar(z, 1.0), z);
      Value fresh = mul(keep, candidate);
      next = add(fresh, state ? mul(z, state) : Value());
      break;
    }
    case Cell::Lstm: {
      Value pi = preactivation(0);
      Value in = activate(acts[0], add(pi, peephole(0, cellState)));
      Value pf = preactivation(2);
      Value forget = activate(acts[0], add(pf, peephole(2, cellState)));
      Value candidate = activate(acts[1], preactivation(3));
      Value kept = cellState ? mul(forget, cellState) : Value();
      Value nextCell = add(kept, mul(in, candidate));
      Value po = preactivation(1);
      Value out = activate(acts[0], add(po, peephole(1, nextCell)));
      next = mul(out, activate(acts[2], nextCell));
      cellState = nextCell;
      break;
    }
    }
    state = next;
    steps[t] =
        reshape(state, {SymInt::constant(1), SymInt::constant(1), batch, h});
  }
  lastH = reshape(state, {SymInt::constant(1), batch, h});
  if (cell == Cell::Lstm)
    lastC = reshape(cellState, {SymInt::constant(1), batch, h});
  return success(!c.hasFailed());
}

LogicalResult Unroller::run() {
  SmallVector<StringRef> attrs = {"activations", "clip", "direction",
                                  "hidden_size", "layout"};
  if (cell == Cell::Gru)
    attrs.push_back("linear_before_reset");
  if (cell == Cell::Lstm)
    attrs.push_back("input_forget");
  // activation_alpha and activation_beta only parameterise activations
  // (LeakyRelu, Elu, ...) that are not supported here.
  if (failed(n.checkAttrs(attrs)))
    return failure();
  FailureOr<int64_t> hiddenSize = n.getInt("hidden_size");
  FailureOr<int64_t> layout = n.getInt("layout", 0);
  FailureOr<std::string> dir = n.getString("direction", "forward");
  FailureOr<int64_t> lbr = n.getInt("linear_before_reset", 0);
  FailureOr<int64_t> inputForget = n.getInt("input_forget", 0);
  if (failed(hiddenSize) || failed(layout) || failed(dir) || failed(lbr) ||
      failed(inputForget))
    return failure();
  hidden = *hiddenSize;
  linearBeforeReset = *lbr != 0;
  if (*inputForget)
    return n.emitError() << "LSTM input_forget = 1 (coupled input and "
                            "forget gates) is not supported";
  if (n.hasAttr("clip")) {
    FailureOr<double> given = n.getFloat("clip");
    if (failed(given))
      return failure();
    clip = *given;
  }
  int64_t directions = *dir == "bidirectional" ? 2 : 1;
  if (*dir != "forward" && *dir != "reverse" && *dir != "bidirectional")
    return n.emitError() << n.getOpType() << " direction '" << *dir
                         << "' is not one of forward, reverse, bidirectional";
  SmallVector<std::string> acts = defaultActivations(cell);
  if (n.hasAttr("activations")) {
    const onnx::AttributeProto *given = n.getAttr("activations");
    size_t per = acts.size();
    if (static_cast<size_t>(given->strings_size()) != per * directions)
      return n.emitError() << n.getOpType() << " needs " << per * directions
                           << " activations, got " << given->strings_size();
    for (int i = 0; i < given->strings_size(); ++i) {
      StringRef name = given->strings(i);
      if (name != "Sigmoid" && name != "Tanh" && name != "Relu")
        return n.emitError() << n.getOpType() << " activation '" << name
                             << "' is not supported (Sigmoid, Tanh and Relu "
                                "are)";
      // Both directions must use the same ones (they nearly always do).
      if (i >= static_cast<int>(per) && name != given->strings(i - per))
        return n.emitError() << n.getOpType()
                             << " with different activations per direction "
                                "is not supported";
      if (i < static_cast<int>(per))
        acts[i] = name.str();
    }
  }

  FailureOr<Value> input = n.floatTensor(0);
  FailureOr<Value> weights = n.floatTensor(1);
  FailureOr<Value> recurrentWeights = n.floatTensor(2);
  if (failed(input) || failed(weights) || failed(recurrentWeights))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  if (type.getRank() != 3)
    return n.emitError() << n.getOpType()
                         << " needs an input sequence of rank 3, got " << type;
  x = *input;
  if (*layout == 1) {
    // [B, T, I] to [T, B, I].
    FailureOr<nn::TransposeOp> t =
        n.create<nn::TransposeOp>(x, ArrayRef<int64_t>{1, 0, 2});
    if (failed(t))
      return failure();
    x = t->getResult();
  } else if (*layout != 0) {
    return n.emitError() << n.getOpType() << " layout " << *layout
                         << " is not 0 or 1";
  }
  FailureOr<SmallVector<SymInt>> shape =
      n.getGraph().symbolicShape(x, n.getLoc());
  if (failed(shape))
    return failure();
  if (!(*shape)[0].isConstant() || !(*shape)[2].isConstant())
    return n.emitError() << n.getOpType()
                         << " needs the sequence length and input size known "
                            "at compile time (the sequence is unrolled), got "
                         << x.getType();
  length = (*shape)[0].coeff;
  batch = (*shape)[1];
  int64_t gates = numGates(cell), inputSize = (*shape)[2].coeff;
  auto expect = [&](Value v, ArrayRef<int64_t> dims,
                    StringRef what) -> LogicalResult {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getShape() != dims)
      return n.emitError() << n.getOpType() << " " << what << " is " << t
                           << ", expected shape [" << dims << "]";
    return success();
  };
  w = *weights;
  r = *recurrentWeights;
  if (failed(expect(w, {directions, gates * hidden, inputSize}, "W")) ||
      failed(expect(r, {directions, gates * hidden, hidden}, "R")))
    return failure();
  if (n.hasInput(3)) {
    FailureOr<Value> b = n.floatTensor(3);
    if (failed(b) || failed(expect(*b, {directions, 2 * gates * hidden}, "B")))
      return failure();
    bias = *b;
  }
  if (n.hasInput(4)) {
    // Per-sample lengths: supported when every sample has the full length.
    FailureOr<DenseElementsAttr> lens = n.constant(4, "sequence_lens");
    if (failed(lens))
      return failure();
    for (APInt len : lens->getValues<APInt>())
      if (len.getSExtValue() != length)
        return n.emitError()
               << n.getOpType() << " sequence_lens shorter than the sequence ("
               << len.getSExtValue() << " of " << length
               << ") are not supported";
  }
  // The initial states, [D, B, H] ([B, D, H] in layout 1).
  auto state = [&](unsigned i, StringRef what) -> FailureOr<Value> {
    if (!n.hasInput(i))
      return Value();
    FailureOr<Value> s = n.floatTensor(i);
    if (failed(s))
      return failure();
    auto t = cast<RankedTensorType>(s->getType());
    if (t.getRank() != 3 || t.getDimSize(*layout == 1 ? 1 : 0) != directions ||
        t.getDimSize(2) != hidden)
      return n.emitError() << n.getOpType() << " " << what << " is " << t
                           << ", expected " << (*layout == 1 ? "[B, " : "[")
                           << directions << (*layout == 1 ? ", " : ", B, ")
                           << hidden << "]";
    return *s;
  };
  FailureOr<Value> h0 = state(5, "initial_h");
  if (failed(h0))
    return failure();
  initialH = *h0;
  if (cell == Cell::Lstm) {
    FailureOr<Value> c0 = state(6, "initial_c");
    if (failed(c0))
      return failure();
    initialC = *c0;
    if (n.hasInput(7)) {
      FailureOr<Value> p = n.floatTensor(7);
      if (failed(p) || failed(expect(*p, {directions, 3 * hidden}, "P")))
        return failure();
      peepholes = *p;
    }
  }
  if (*layout == 1)
    for (Value *s : {&initialH, &initialC})
      if (*s) {
        // [B, D, H] to [D, B, H].
        FailureOr<nn::TransposeOp> t =
            n.create<nn::TransposeOp>(*s, ArrayRef<int64_t>{1, 0, 2});
        if (failed(t))
          return failure();
        *s = t->getResult();
      }

  SmallVector<Value> outputs, lastHs, lastCs;
  for (int64_t d = 0; d < directions; ++d) {
    bool reverse = *dir == "reverse" || d == 1;
    SmallVector<Value> steps;
    Value lastH, lastC;
    if (failed(unroll(d, reverse, acts, steps, lastH, lastC)))
      return failure();
    // [T, 1, B, H].
    outputs.push_back(
        length == 1
            ? steps[0]
            : c.op<nn::ConcatOp>(ValueRange(steps), static_cast<uint64_t>(0)));
    lastHs.push_back(lastH);
    lastCs.push_back(lastC);
  }
  auto join = [&](ArrayRef<Value> parts, uint64_t axis) {
    return parts.size() == 1 ? parts[0]
                             : c.op<nn::ConcatOp>(ValueRange(parts), axis);
  };
  Value y = join(outputs, 1), yh = join(lastHs, 0);
  Value yc = cell == Cell::Lstm ? join(lastCs, 0) : Value();
  if (*layout == 1) {
    // [T, D, B, H] to [B, T, D, H]; [D, B, H] to [B, D, H].
    y = c.op<nn::TransposeOp>(y, ArrayRef<int64_t>{2, 0, 1, 3});
    yh = c.op<nn::TransposeOp>(yh, ArrayRef<int64_t>{1, 0, 2});
    if (yc)
      yc = c.op<nn::TransposeOp>(yc, ArrayRef<int64_t>{1, 0, 2});
  }
  if (c.hasFailed())
    return failure();
  Value results[] = {y, yh, yc};
  for (unsigned i = 0; i < n.getNumOutputs() && i < 3; ++i)
    if (!n.getNode().output(i).empty())
      n.setOutput(i, results[i]);
  return success();
}

template <Cell cell> LogicalResult importRecurrent(NodeImporter &n) {
  return Unroller(n, cell).run();
}

} // namespace

void importer::populateRecurrentImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  // sequence_lens (input 4) must be a constant. The opset-14 forms only
  // added `layout`, whose default is the earlier forms' meaning.
  addImporter(table, "RNN", importRecurrent<Cell::Rnn>)
      .constants(1u << 4)
      .describe(
          "unrolled over a static sequence length (its gradient is "
          "backpropagation through time); directions forward, reverse and "
          "bidirectional, both layouts, `clip`; activations Sigmoid, Tanh and "
          "Relu; `sequence_lens` only at the full length");
  addImporter(table, "GRU", importRecurrent<Cell::Gru>)
      .constants(1u << 4)
      .describe(
          "unrolled over a static sequence length (its gradient is "
          "backpropagation through time); directions forward, reverse and "
          "bidirectional, both layouts, `clip`, `linear_before_reset` "
          "(PyTorch's is 1); activations Sigmoid, Tanh and Relu; "
          "`sequence_lens` only at the full length");
  addImporter(table, "LSTM", importRecurrent<Cell::Lstm>)
      .constants(1u << 4)
      .describe(
          "unrolled over a static sequence length (its gradient is "
          "backpropagation through time); directions forward, reverse and "
          "bidirectional, both layouts, `clip`, peepholes; activations "
          "Sigmoid, Tanh and Relu; `sequence_lens` only at the full length; "
          "not `input_forget`");
}

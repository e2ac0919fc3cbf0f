//===- Tracer.cpp - Cutting, hashing, caching and running graphs ----------===//
//
// mark_step() takes the tensors with pending values that are still alive,
// collects the nodes they need and puts them in canonical form
// (TraceGraph.h): nodes in creation order, one argument per materialised
// tensor in order of first use, the batch dimension abstracted. The
// canonical graph, serialised, is the cache key; its 64-bit hash selects the
// bucket and a byte comparison confirms the hit, so a collision can never
// run the wrong code. Data and hyperparameter values are argument values,
// outside the key.
//
// A hit runs the cached executable: materialised tensors are passed in place
// (parameters, gradients and optimizer state are updated in place), a short
// batch is copied into a staging buffer padded with zero rows whose sample
// weight is 0, and fresh outputs get new buffers that become the tensors'
// storage. A miss compiles first (Compiler.cpp); a batch larger than the
// cached capacity recompiles at the larger size.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "Compiler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <unistd.h>
#include <unordered_map>

namespace cleave::detail {

namespace {

//===----------------------------------------------------------------------===//
// Canonical form
//===----------------------------------------------------------------------===//

/// Where an argument's value comes from at run time.
struct Source {
  std::shared_ptr<Storage> storage; // null for hyperparameters
  double hyper = 0.0;
  Type type;
};

/// A cut graph: the canonical structure and what binds it to this trace.
struct Cut {
  tg::Graph graph;
  /// The number of real samples (0: nothing is batched).
  int64_t batch = 0;
  std::vector<Source> sources;
  /// Per output: the tensors that receive it.
  std::vector<std::vector<std::shared_ptr<TensorImpl>>> outputImpls;
  /// Per update: the state tensor it writes.
  std::vector<std::shared_ptr<TensorImpl>> updateImpls;
  /// Per root (partial cuts): its output.
  std::vector<size_t> rootOutputs;
};

class Canonicalizer {
public:
  explicit Canonicalizer(Cut &cut) : cut(cut) {}

  void run(const std::vector<std::shared_ptr<TensorImpl>> &roots,
           bool writeBack);

private:
  /// The argument of materialised `storage`, created on first use.
  uint32_t argumentFor(const std::shared_ptr<Storage> &storage,
                       tg::ArgumentKind kind, const Type &type,
                       const std::shared_ptr<Storage> &ofStorage);
  void addNode(const Node &n);
  void addLeaf(const Node &n);
  tg::ValueRef ref(const Node::Use &u) const {
    return {index.at(u.node.get()), u.result};
  }
  void noteBatch(const Type &t);

  Cut &cut;
  std::map<const Storage *, uint32_t> arguments;
  /// The Argument node of each argument that is read.
  std::map<uint32_t, uint32_t> argumentNodes;
  std::map<const Node *, uint32_t> index;
};

void Canonicalizer::noteBatch(const Type &t) {
  if (!t.batched)
    return;
  if (cut.batch != 0 && cut.batch != t.shape[0])
    fail(CLEAVE_INVALID_ARGUMENT, "mark_step: the graph mixes batches of " +
                                      std::to_string(cut.batch) + " and " +
                                      std::to_string(t.shape[0]) +
                                      " samples; a graph has one batch size");
  cut.batch = t.shape[0];
}

uint32_t Canonicalizer::argumentFor(const std::shared_ptr<Storage> &storage,
                                    tg::ArgumentKind kind, const Type &type,
                                    const std::shared_ptr<Storage> &ofStorage) {
  if (auto it = arguments.find(storage.get()); it != arguments.end())
    return it->second;
  int32_t of = -1;
  if (kind == tg::ArgumentKind::Gradient || kind == tg::ArgumentKind::State) {
    // The parameter a gradient or state slot belongs to is declared (as a
    // global) even if this graph does not read it: it is part of the
    // structure, and declaring it costs nothing.
    if (!ofStorage)
      fail(CLEAVE_INTERNAL, "mark_step: a gradient or optimizer state tensor "
                            "has lost its parameter");
    of = int32_t(
        argumentFor(ofStorage, tg::ArgumentKind::Parameter, type, nullptr));
  }
  uint32_t a = uint32_t(cut.graph.arguments.size());
  cut.graph.arguments.push_back({kind, type.canonical(), of});
  cut.sources.push_back({storage, 0.0, type});
  arguments[storage.get()] = a;
  noteBatch(type);
  return a;
}

void Canonicalizer::addNode(const Node &n) {
  tg::Node c;
  c.kind = n.kind;
  c.ints = n.ints;
  c.floats = n.floats;
  c.differentiable = n.differentiable;
  for (const Type &t : n.results) {
    c.results.push_back(t.canonical());
    noteBatch(t);
  }
  for (const Node::Use &u : n.operands)
    c.operands.push_back(ref(u));
  index[&n] = uint32_t(cut.graph.nodes.size());
  cut.graph.nodes.push_back(std::move(c));
}

void Canonicalizer::addLeaf(const Node &n) {
  uint32_t a;
  if (n.leafKind == tg::ArgumentKind::Hyper) {
    a = uint32_t(cut.graph.arguments.size());
    cut.graph.arguments.push_back(
        {tg::ArgumentKind::Hyper, n.results[0].canonical(), -1});
    cut.sources.push_back({nullptr, n.hyper, n.results[0]});
  } else {
    a = argumentFor(n.storage, n.leafKind, n.results[0], n.ofStorage);
  }
  // Leaves of one storage (a cached leaf and a new one after a write-back
  // reset the cache) are one argument and one node.
  if (auto it = argumentNodes.find(a); it != argumentNodes.end()) {
    index[&n] = it->second;
    return;
  }
  argumentNodes[a] = uint32_t(cut.graph.nodes.size());
  tg::Node c;
  c.kind = tg::OpKind::Argument;
  c.ints = {int64_t(a)};
  c.results = {cut.graph.arguments[a].type};
  c.differentiable = n.differentiable;
  index[&n] = uint32_t(cut.graph.nodes.size());
  cut.graph.nodes.push_back(std::move(c));
}

void Canonicalizer::run(const std::vector<std::shared_ptr<TensorImpl>> &roots,
                        bool writeBack) {
  // Everything the roots need, in creation order (a topological order).
  std::vector<const Node *> nodes;
  std::set<const Node *> seen;
  std::vector<const Node *> stack;
  for (const auto &r : roots)
    if (seen.insert(r->pending.node.get()).second)
      stack.push_back(r->pending.node.get());
  while (!stack.empty()) {
    const Node *n = stack.back();
    stack.pop_back();
    nodes.push_back(n);
    for (const Node::Use &u : n->operands)
      if (seen.insert(u.node.get()).second)
        stack.push_back(u.node.get());
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const Node *a, const Node *b) { return a->id < b->id; });

  // Leaves are placed where they are first used, not by their creation:
  // a tensor's leaf may be cached from an earlier step, and the structure
  // must not depend on when it was first read.
  for (const Node *n : nodes) {
    if (n->kind == tg::OpKind::Argument)
      continue;
    for (const Node::Use &u : n->operands)
      if (u.node->kind == tg::OpKind::Argument && !index.count(u.node.get()))
        addLeaf(*u.node);
    addNode(*n);
  }
  for (const auto &r : roots)
    if (r->pending.node->kind == tg::OpKind::Argument &&
        !index.count(r->pending.node.get()))
      addLeaf(*r->pending.node);

  // Updates of state, then fresh outputs, each in the order of the values
  // they take, so that the order does not depend on how the roots were
  // found.
  auto valueLess = [&](const std::shared_ptr<TensorImpl> &a,
                       const std::shared_ptr<TensorImpl> &b) {
    tg::ValueRef x = ref(a->pending), y = ref(b->pending);
    return std::tie(x.node, x.result) < std::tie(y.node, y.result);
  };
  std::vector<std::shared_ptr<TensorImpl>> updates, outputs;
  for (const auto &r : roots)
    (writeBack && r->role != Role::Value ? updates : outputs).push_back(r);
  std::stable_sort(updates.begin(), updates.end(), valueLess);
  for (const auto &u : updates) {
    tg::ArgumentKind kind =
        u->role == Role::Parameter  ? tg::ArgumentKind::Parameter
        : u->role == Role::Gradient ? tg::ArgumentKind::Gradient
                                    : tg::ArgumentKind::State;
    uint32_t a = argumentFor(u->storage, kind, u->type, u->ofStorage);
    cut.graph.updates.push_back({a, ref(u->pending)});
    cut.updateImpls.push_back(u);
  }
  std::vector<size_t> order(outputs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return valueLess(outputs[a], outputs[b]);
  });
  std::vector<size_t> outputOf(outputs.size());
  for (size_t i : order) {
    tg::ValueRef v = ref(outputs[i]->pending);
    if (cut.graph.outputs.empty() || !(cut.graph.outputs.back() == v)) {
      cut.graph.outputs.push_back(v);
      cut.outputImpls.emplace_back();
    }
    cut.outputImpls.back().push_back(outputs[i]);
    outputOf[i] = cut.graph.outputs.size() - 1;
  }
  if (!writeBack)
    cut.rootOutputs = outputOf;
}

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

void put(std::string &out, uint64_t v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof v);
}

void put(std::string &out, const tg::TensorType &t) {
  put(out, uint64_t(t.elementType));
  put(out, t.shape.size());
  for (int64_t d : t.shape)
    put(out, uint64_t(d));
}

/// Everything that determines the compiled code, and nothing else.
std::string serialize(const tg::Graph &g) {
  std::string out;
  put(out, g.arguments.size());
  for (const tg::Argument &a : g.arguments) {
    put(out, uint64_t(a.kind));
    put(out, a.type);
    put(out, uint64_t(int64_t(a.of)));
  }
  put(out, g.nodes.size());
  for (const tg::Node &n : g.nodes) {
    put(out, uint64_t(n.kind));
    put(out, uint64_t(n.differentiable));
    put(out, n.operands.size());
    for (tg::ValueRef v : n.operands) {
      put(out, v.node);
      put(out, v.result);
    }
    put(out, n.results.size());
    for (const tg::TensorType &t : n.results)
      put(out, t);
    put(out, n.ints.size());
    for (int64_t i : n.ints)
      put(out, uint64_t(i));
    put(out, n.floats.size());
    for (double f : n.floats) {
      uint64_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      put(out, bits);
    }
  }
  put(out, g.updates.size());
  for (const tg::Update &u : g.updates) {
    put(out, u.argument);
    put(out, u.value.node);
    put(out, u.value.result);
  }
  put(out, g.outputs.size());
  for (tg::ValueRef v : g.outputs) {
    put(out, v.node);
    put(out, v.result);
  }
  return out;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

size_t bytesAt(const tg::TensorType &t, int64_t batch) {
  size_t n = t.elementType == tg::ElementType::F32 ||
                     t.elementType == tg::ElementType::I32
                 ? 4
                 : 8;
  for (size_t i = 0; i < t.shape.size(); ++i)
    n *= size_t(i == 0 && t.isBatched() ? batch : t.shape[i]);
  return n;
}

} // namespace

//===----------------------------------------------------------------------===//
// Compiled graphs
//===----------------------------------------------------------------------===//

/// One compiled graph and the buffers its calls reuse.
struct Compiled {
  std::string key;
  uint64_t hash = 0;
  int64_t capacity = 0;
  cleave_executable *exe = nullptr;

  /// What each argument of the entry is.
  struct Slot {
    enum Kind { Argument, Weights, Output } kind = Argument;
    size_t index = 0;
  };
  std::vector<Slot> slots;
  std::vector<void *> args;
  /// Per argument: the padded copy of a short batch, or a hyperparameter.
  std::vector<std::shared_ptr<Storage>> staging;
  std::shared_ptr<Storage> weights;
  int64_t weightsSamples = -1;

  ~Compiled() { cleave_executable_destroy(exe); }
};

class Cache {
public:
  Compiled *find(uint64_t hash, const std::string &key) {
    auto it = buckets_.find(hash);
    if (it == buckets_.end())
      return nullptr;
    for (const auto &c : it->second)
      if (c->key == key)
        return c.get();
    return nullptr;
  }

  Compiled *insert(std::unique_ptr<Compiled> c) {
    auto &bucket = buckets_[c->hash];
    for (auto &old : bucket)
      if (old->key == c->key) {
        old = std::move(c);
        return old.get();
      }
    bucket.push_back(std::move(c));
    return bucket.back().get();
  }

  void clear() { buckets_.clear(); }

private:
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Compiled>>> buckets_;
};

namespace {

[[noreturn]] void runtimeFailure(const std::string &what) {
  fail(CLEAVE_INTERNAL, what + ": " + cleave_last_error_message());
}

/// Binds the executable's arguments, by their manifest names, to the cut's
/// arguments, the weights and the outputs, checking every size.
void bind(Compiled &c, const Cut &cut) {
  size_t count = 0;
  if (cleave_executable_num_args(c.exe, kGraphEntry, &count) != CLEAVE_OK)
    runtimeFailure("mark_step: reading the compiled graph");
  const tg::Graph &g = cut.graph;
  std::map<std::string, Compiled::Slot> byName;
  for (size_t i = 0; i < g.arguments.size(); ++i)
    byName[tg::argumentName(g, i)] = {Compiled::Slot::Argument, i};
  byName[tg::weightsInputName()] = {Compiled::Slot::Weights, 0};
  for (size_t k = 0; k < g.outputs.size(); ++k)
    byName[tg::outputName(k)] = {Compiled::Slot::Output, k};
  for (size_t i = 0; i < count; ++i) {
    cleave_arg_info info;
    if (cleave_executable_arg(c.exe, kGraphEntry, i, &info) != CLEAVE_OK)
      runtimeFailure("mark_step: reading the compiled graph");
    auto it = byName.find(info.tensor.name);
    if (it == byName.end())
      fail(CLEAVE_INTERNAL, std::string("mark_step: the compiled graph takes "
                                        "an unknown argument '") +
                                info.tensor.name + "'");
    Compiled::Slot slot = it->second;
    size_t expected = slot.kind == Compiled::Slot::Weights
                          ? size_t(c.capacity) * 4
                      : slot.kind == Compiled::Slot::Output
                          ? bytesAt(g.nodes[g.outputs[slot.index].node]
                                        .results[g.outputs[slot.index].result],
                                    c.capacity)
                          : bytesAt(g.arguments[slot.index].type, c.capacity);
    if (info.tensor.bytes != expected)
      fail(CLEAVE_INTERNAL,
           std::string("mark_step: argument '") + info.tensor.name +
               "' of the compiled graph "
               "has " +
               std::to_string(info.tensor.bytes) + " bytes, the trace " +
               std::to_string(expected));
    c.slots.push_back(slot);
  }
  c.args.assign(count, nullptr);
  c.staging.resize(g.arguments.size());
  c.weights = Storage::allocate(size_t(c.capacity) * 4);
}

/// Where Options::device and gpuArch say graphs run.
struct Placement {
  GraphTarget target;
  int32_t ordinal = 0;
};

/// Parses Options::device ("cpu", "cuda", "cuda:N"); nullopt if it is none
/// of these.
std::optional<Placement> tryParsePlacement(const trace::Options &options) {
  Placement p;
  const std::string &d = options.device;
  if (d == "cpu")
    return p;
  if (d.rfind("cuda", 0) != 0)
    return std::nullopt;
  p.target.cuda = true;
  p.target.gpuArch = options.gpuArch;
  if (d.size() == 4)
    return p;
  if (d[4] != ':' || d.size() == 5 || d.size() > 9)
    return std::nullopt;
  int32_t ordinal = 0;
  for (size_t i = 5; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9')
      return std::nullopt;
    ordinal = ordinal * 10 + (d[i] - '0');
  }
  p.ordinal = ordinal;
  return p;
}

/// The placement of options set_options accepted.
Placement parsePlacement(const trace::Options &options) {
  std::optional<Placement> p = tryParsePlacement(options);
  return p ? *p : Placement();
}

/// A private directory for artifacts while they are loaded.
std::string makeTempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/cleave-trace-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    fail(CLEAVE_IO_ERROR, "mark_step: cannot create a directory for compiled "
                          "graphs (" +
                              pattern + "): " + std::strerror(errno));
  return buf.data();
}

std::unique_ptr<Compiled> compile(const Cut &cut, std::string key,
                                  uint64_t hash, int64_t capacity,
                                  trace::Stats &stats,
                                  const trace::Options &options) {
  auto c = std::make_unique<Compiled>();
  c->key = std::move(key);
  c->hash = hash;
  c->capacity = capacity;
  std::string name = "graph-" + hex(hash) + "-b" + std::to_string(capacity);
  std::string dump =
      options.dumpDir.empty() ? "" : options.dumpDir + "/" + name + ".mlir";

  auto start = std::chrono::steady_clock::now();
  std::string dir = makeTempDir();
  std::string path = dir + "/" + name + ".cleave";
  std::string error;
  const Placement placement = parsePlacement(options);
  bool ok =
      compileGraph(cut.graph, capacity, placement.target, path, dump, error);
  cleave_status status = CLEAVE_OK;
  if (ok) {
    cleave_executable_options exeOptions;
    cleave_executable_options_init(&exeOptions);
    exeOptions.num_threads = options.numThreads;
    exeOptions.device =
        placement.target.cuda ? CLEAVE_DEVICE_CUDA : CLEAVE_DEVICE_CPU;
    exeOptions.device_ordinal = placement.ordinal;
    status = cleave_executable_load(path.c_str(), &exeOptions, &c->exe);
    if (status != CLEAVE_OK)
      error = cleave_last_error_message();
  }
  // The loaded object stays mapped; the files are not needed any more.
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
  if (!ok || status != CLEAVE_OK)
    fail(CLEAVE_INTERNAL, std::string("mark_step: ") +
                              (ok ? "loading the compiled graph ("
                                  : "compiling the traced graph (") +
                              std::to_string(cut.graph.nodes.size()) +
                              " nodes) failed: " + error);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ++stats.compilations;
  stats.compileSeconds += seconds;
  if (options.verbose)
    std::cerr << "cleave-trace: compiled graph " << hex(hash) << " ("
              << cut.graph.nodes.size() << " nodes, batch capacity " << capacity
              << ") in " << seconds << " s\n";
  bind(*c, cut);
  return c;
}

/// Runs `c` on the cut's values; `outputs` receives one new buffer per
/// output.
void run(Compiled &c, const Cut &cut,
         std::vector<std::shared_ptr<Storage>> &outputs) {
  const tg::Graph &g = cut.graph;
  int64_t k = cut.batch;
  outputs.clear();
  for (tg::ValueRef o : g.outputs)
    outputs.push_back(Storage::allocate(
        bytesAt(g.nodes[o.node].results[o.result], c.capacity)));
  for (size_t i = 0; i < c.slots.size(); ++i) {
    const Compiled::Slot &slot = c.slots[i];
    if (slot.kind == Compiled::Slot::Output) {
      c.args[i] = outputs[slot.index]->data();
      continue;
    }
    if (slot.kind == Compiled::Slot::Weights) {
      if (c.weightsSamples != k) {
        auto *w = reinterpret_cast<float *>(c.weights->data());
        for (int64_t s = 0; s < c.capacity; ++s)
          w[s] = s < k ? 1.0f : 0.0f;
        c.weightsSamples = k;
      }
      c.args[i] = c.weights->data();
      continue;
    }
    const tg::Argument &a = g.arguments[slot.index];
    const Source &src = cut.sources[slot.index];
    std::shared_ptr<Storage> &staging = c.staging[slot.index];
    if (a.kind == tg::ArgumentKind::Hyper) {
      if (!staging)
        staging = Storage::allocate(8);
      if (a.type.elementType == tg::ElementType::I64)
        *reinterpret_cast<int64_t *>(staging->data()) = int64_t(src.hyper);
      else
        *reinterpret_cast<float *>(staging->data()) = float(src.hyper);
      c.args[i] = staging->data();
    } else if (a.type.isBatched() && k < c.capacity) {
      // A short batch: the real rows, then zero rows of weight 0.
      size_t bytes = bytesAt(a.type, k), full = bytesAt(a.type, c.capacity);
      if (!staging)
        staging = Storage::allocate(full);
      std::memcpy(staging->data(), src.storage->data(), bytes);
      std::memset(staging->data() + bytes, 0, full - bytes);
      c.args[i] = staging->data();
    } else {
      c.args[i] = src.storage->data();
    }
  }
  if (cleave_executable_run(c.exe, kGraphEntry, c.args.data(), c.args.size()) !=
      CLEAVE_OK)
    runtimeFailure("mark_step: running the compiled graph");
}

} // namespace

//===----------------------------------------------------------------------===//
// The tracer
//===----------------------------------------------------------------------===//

Tracer::Tracer() : cache_(std::make_unique<Cache>()) {}
Tracer::~Tracer() = default;

Tracer &Tracer::get() {
  // Never destroyed: compiled graphs hold oneDNN primitives, and oneDNN's
  // own static state may be torn down before a static tracer would be at
  // exit. The process reclaims it; clear_cache() releases graphs earlier.
  static Tracer *tracer = new Tracer();
  return *tracer;
}

void Tracer::notePending(const std::shared_ptr<TensorImpl> &impl) {
  pending_.push_back(impl);
  // Tensors die all the time (every temporary): drop their entries now and
  // then so that the list stays proportional to what is live.
  if (pending_.size() >= 2 * prunedSize_ + 1024) {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [](const std::weak_ptr<TensorImpl> &w) {
                                    auto p = w.lock();
                                    return !p || !p->isPending();
                                  }),
                   pending_.end());
    prunedSize_ = pending_.size();
  }
}

std::vector<std::shared_ptr<TensorImpl>> Tracer::livePending() {
  std::vector<std::shared_ptr<TensorImpl>> live;
  std::set<const TensorImpl *> seen;
  for (const std::weak_ptr<TensorImpl> &w : pending_)
    if (auto p = w.lock(); p && p->isPending() && seen.insert(p.get()).second)
      live.push_back(std::move(p));
  return live;
}

void Tracer::cut(const std::vector<std::shared_ptr<TensorImpl>> &roots,
                 bool writeBack, std::vector<std::shared_ptr<Storage>> *fresh) {
  Cut c;
  Canonicalizer(c).run(roots, writeBack);
  std::string key = serialize(c.graph);
  uint64_t hash = hashKey(key);
  // The batch capacity this run needs (0: nothing is batched).
  int64_t needed = c.graph.isBatched() ? std::max<int64_t>(c.batch, 1) : 0;

  Compiled *compiled = cache_->find(hash, key);
  if (compiled && compiled->capacity >= needed) {
    ++stats_.cacheHits;
  } else {
    // A miss, or a batch larger than the capacity compiled so far.
    compiled = cache_->insert(
        compile(c, std::move(key), hash, needed, stats_, options_));
  }
  std::vector<std::shared_ptr<Storage>> outputs;
  run(*compiled, c, outputs);
  ++stats_.graphsRun;

  // Nothing below can fail: the trace's state changes all at once.
  for (size_t k = 0; k < outputs.size(); ++k)
    for (const std::shared_ptr<TensorImpl> &impl : c.outputImpls[k]) {
      if (!writeBack && impl->role != Role::Value)
        continue; // State is written back only by mark_step.
      impl->storage = outputs[k];
      impl->pending = {};
      impl->leaf.reset();
    }
  for (const std::shared_ptr<TensorImpl> &impl : c.updateImpls) {
    impl->pending = {};
    impl->leaf.reset();
  }
  if (fresh) {
    fresh->clear();
    for (size_t out : c.rootOutputs)
      fresh->push_back(outputs[out]);
  }
}

void Tracer::markStep() {
  ++stats_.markSteps;
  std::vector<std::shared_ptr<TensorImpl>> roots = livePending();
  if (roots.empty()) {
    pending_.clear();
    return;
  }
  cut(roots, /*writeBack=*/true, nullptr);
  pending_.clear();
  prunedSize_ = 0;
}

void Tracer::computeNow(const std::shared_ptr<TensorImpl> &impl,
                        std::shared_ptr<Storage> &out) {
  ++stats_.implicitCuts;
  std::vector<std::shared_ptr<Storage>> fresh;
  cut({impl}, /*writeBack=*/false, &fresh);
  out = fresh.at(0);
}

std::string Tracer::pendingIR() {
  std::vector<std::shared_ptr<TensorImpl>> roots = livePending();
  if (roots.empty())
    return "";
  Cut c;
  Canonicalizer(c).run(roots, /*writeBack=*/true);
  std::string ir, error;
  if (!emitGraphIR(c.graph, c.graph.isBatched() ? c.batch : 0, ir, error))
    fail(CLEAVE_INTERNAL, "pending_ir: " + error);
  return ir;
}

} // namespace cleave::detail

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

namespace cleave {

void mark_step() { detail::Tracer::get().markStep(); }

void manual_seed(uint64_t seed) { detail::Tracer::get().seed(seed); }

namespace trace {

Stats stats() { return detail::Tracer::get().stats(); }
void reset_stats() { detail::Tracer::get().stats() = Stats(); }

void set_options(const Options &options) {
  if (options.numThreads < 0)
    detail::fail(CLEAVE_INVALID_ARGUMENT,
                 "set_options: numThreads must be >= 0");
  std::optional<detail::Placement> placement =
      detail::tryParsePlacement(options);
  if (!placement)
    detail::fail(CLEAVE_INVALID_ARGUMENT,
                 "set_options: device is '" + options.device +
                     "', expected cpu, cuda or cuda:N");
  if (!placement->target.cuda && !options.gpuArch.empty())
    detail::fail(CLEAVE_INVALID_ARGUMENT,
                 "set_options: gpuArch is for a cuda device; device is '" +
                     options.device + "'");
  std::string error;
  if (!detail::checkGraphTarget(placement->target, error))
    detail::fail(CLEAVE_FAILED_PRECONDITION, "set_options: " + error);
  detail::Tracer &tracer = detail::Tracer::get();
  // Compiled graphs are code for one device: a new one recompiles them.
  if (options.device != tracer.options().device ||
      options.gpuArch != tracer.options().gpuArch)
    tracer.cache().clear();
  tracer.options() = options;
}
const Options &options() { return detail::Tracer::get().options(); }

void clear_cache() { detail::Tracer::get().cache().clear(); }

std::string pending_ir() { return detail::Tracer::get().pendingIR(); }

} // namespace trace
} // namespace cleave

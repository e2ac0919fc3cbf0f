//===- CleaveModule.cpp - cleave._cleave: bindings of the C API -----------===//
//
// The native half of the `cleave` Python package: Artifact and Session over
// the runtime's C API (through the RAII wrappers of cleave/runtime.hpp), the
// exception types the runtime's statuses become, and the checks that turn a
// NumPy array or CPU torch tensor (host memory), or a CUDA torch tensor or
// other object with __cuda_array_interface__ (memory of a cuda session's
// GPU), into a cleave_batch without copying it.
// Policy (the module's initial state, resuming by checkpoint, the training
// loop) lives in python/cleave/; docs/design/python.md says why.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The exception types, created at import (see PYBIND11_MODULE).
struct ErrorTypes {
  PyObject *base = nullptr;
  PyObject *invalidArgument = nullptr;
  PyObject *notFound = nullptr;
  PyObject *io = nullptr;
  PyObject *invalidArtifact = nullptr;
  PyObject *invalidCheckpoint = nullptr;
  PyObject *failedPrecondition = nullptr;
  PyObject *outOfMemory = nullptr;
  PyObject *internal = nullptr;
  PyObject *nonFinite = nullptr;
};
ErrorTypes errors;

PyObject *errorType(cleave_status status) {
  switch (status) {
  case CLEAVE_INVALID_ARGUMENT:
    return errors.invalidArgument;
  case CLEAVE_NOT_FOUND:
    return errors.notFound;
  case CLEAVE_IO_ERROR:
    return errors.io;
  case CLEAVE_INVALID_ARTIFACT:
    return errors.invalidArtifact;
  case CLEAVE_INVALID_CHECKPOINT:
    return errors.invalidCheckpoint;
  case CLEAVE_FAILED_PRECONDITION:
    return errors.failedPrecondition;
  case CLEAVE_OUT_OF_MEMORY:
    return errors.outOfMemory;
  case CLEAVE_NON_FINITE:
    return errors.nonFinite;
  default:
    return errors.internal;
  }
}

/// Creates `cleave.<name>`, a subclass of cleave.Error and of `builtin` (a
/// ValueError for invalid arguments, ...), so that callers can catch either.
PyObject *makeError(py::module_ &m, const char *name, PyObject *builtin,
                    const char *doc) {
  std::string qualified = std::string("cleave.") + name;
  PyObject *bases = builtin ? PyTuple_Pack(2, errors.base, builtin)
                            : PyTuple_Pack(1, errors.base);
  PyObject *type =
      PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  if (!type)
    throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

//===----------------------------------------------------------------------===//
// Tensors in and out
//===----------------------------------------------------------------------===//

const char *numpyName(cleave_dtype dtype) {
  switch (dtype) {
  case CLEAVE_DTYPE_F32:
    return "float32";
  case CLEAVE_DTYPE_F64:
    return "float64";
  case CLEAVE_DTYPE_I32:
    return "int32";
  case CLEAVE_DTYPE_I64:
    return "int64";
  case CLEAVE_DTYPE_I8:
    return "int8";
  case CLEAVE_DTYPE_U8:
    return "uint8";
  case CLEAVE_DTYPE_I16:
    return "int16";
  case CLEAVE_DTYPE_U16:
    return "uint16";
  case CLEAVE_DTYPE_U32:
    return "uint32";
  case CLEAVE_DTYPE_F16:
    return "float16";
  case CLEAVE_DTYPE_BF16:
    return "bfloat16"; // a name for messages: NumPy has no such type
  }
  return "?";
}

py::dtype numpyDtype(cleave_dtype dtype) {
  // NumPy has no bfloat16.
  if (dtype == CLEAVE_DTYPE_BF16)
    throw cleave::Error(CLEAVE_INVALID_ARGUMENT,
                        "the model takes or returns bf16 tensors, which NumPy "
                        "has no type for; export it with float32 or float16 "
                        "inputs and outputs");
  const char *name = numpyName(dtype);
  if (std::strcmp(name, "?") == 0)
    throw cleave::Error(CLEAVE_INTERNAL, "unknown dtype");
  return py::dtype(name);
}

/// "(k, 784)": the shape a batch of an input must have.
std::string batchShape(const cleave::TensorInfo &info) {
  std::ostringstream os;
  os << "(k";
  for (size_t i = 1; i < info.shape.size(); ++i)
    os << ", " << info.shape[i];
  if (info.shape.size() == 1)
    os << ",";
  os << ")";
  return os.str();
}

/// `shape` as Python prints a tuple: "(3, 4)", "(5,)".
std::string shapeString(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

std::vector<int64_t> shapeVector(const py::array &array) {
  return std::vector<int64_t>(array.shape(), array.shape() + array.ndim());
}

std::string shapeOf(const py::array &array) {
  return shapeString(shapeVector(array));
}

bool isTorchTensor(py::handle value) {
  py::object type = py::type::of(value);
  return py::hasattr(type, "__module__") &&
         py::str(type.attr("__module__")).cast<std::string>() == "torch" &&
         py::hasattr(value, "detach") && py::hasattr(value, "device");
}

/// A NumPy view of `value` (an ndarray, or a torch tensor whose storage it
/// shares), or a TypeError naming `what`. `anyDevice` copies a torch tensor
/// off its device (set_params); batch inputs on a GPU are DeviceArrays.
py::array asArray(py::handle value, const std::string &what, bool anyDevice) {
  if (isTorchTensor(value)) {
    py::object tensor = value.attr("detach")();
    std::string device = py::str(tensor.attr("device").attr("type"));
    if (device != "cpu") {
      if (!anyDevice)
        throw py::type_error(
            what + " is a torch tensor on '" +
            py::str(tensor.attr("device")).cast<std::string>() +
            "', which this session cannot read: a CPU session reads host "
            "memory (pass a CPU tensor, .cpu()), a cuda session host memory "
            "or its own GPU's");
      tensor = tensor.attr("cpu")();
    }
    try {
      return tensor.attr("numpy")();
    } catch (py::error_already_set &e) {
      throw py::type_error(what + ": " + e.what());
    }
  }
  if (!py::isinstance<py::array>(value))
    throw py::type_error(
        what + " must be a NumPy array or a CPU torch.Tensor, not " +
        py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  return py::reinterpret_borrow<py::array>(value);
}

/// An input in GPU memory, read in place by a cuda session: a CUDA torch
/// tensor, or any object with the CUDA Array Interface
/// (`__cuda_array_interface__`: CuPy, Numba, JAX), which says where it is
/// and what it holds.
struct DeviceArray {
  /// What holds the memory (a contiguous copy of a strided torch tensor).
  py::object owner;
  const void *data = nullptr;
  std::vector<int64_t> shape;
  py::dtype dtype;
  /// Where it is, for messages: "cuda:0", or "a __cuda_array_interface__".
  std::string where;
};

/// Whether `value` is GPU memory: a torch tensor on a CUDA device, or an
/// object with the CUDA Array Interface (not a NumPy array).
bool isDeviceArray(py::handle value) {
  if (isTorchTensor(value))
    return py::str(value.attr("device").attr("type")).cast<std::string>() ==
           "cuda";
  return !py::isinstance<py::array>(value) &&
         py::hasattr(value, "__cuda_array_interface__");
}

/// Waits for the work a producer left on CUDA stream `stream` (the CUDA
/// Array Interface's `stream`: a CUstream, 1 for the legacy default stream,
/// 2 for the per-thread one, all three what the driver takes), so that the
/// session's copy reads finished data. The driver is the one the runtime
/// loaded for the session; GPU `ordinal`'s primary context is made current
/// around the wait (the default streams belong to the current context), and
/// the GIL is released while it waits.
void synchronizeProducer(uintptr_t stream, int ordinal,
                         const std::string &what) {
  void *driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto symbol = [&](const char *name) {
    return driver ? ::dlsym(driver, name) : nullptr;
  };
  auto deviceGet = reinterpret_cast<int (*)(int *, int)>(symbol("cuDeviceGet"));
  auto retain = reinterpret_cast<int (*)(void **, int)>(
      symbol("cuDevicePrimaryCtxRetain"));
  auto release =
      reinterpret_cast<int (*)(int)>(symbol("cuDevicePrimaryCtxRelease_v2"));
  auto push = reinterpret_cast<int (*)(void *)>(symbol("cuCtxPushCurrent_v2"));
  auto pop = reinterpret_cast<int (*)(void **)>(symbol("cuCtxPopCurrent_v2"));
  auto sync = reinterpret_cast<int (*)(void *)>(symbol("cuStreamSynchronize"));
  if (!deviceGet || !retain || !release || !push || !pop || !sync)
    throw py::type_error(what + " is GPU memory, but no CUDA driver is "
                                "loaded (a cuda session loads it)");
  int status = 0, device = 0;
  {
    py::gil_scoped_release unlocked;
    void *context = nullptr, *popped = nullptr;
    status = deviceGet(&device, ordinal);
    if (status == 0 && (status = retain(&context, device)) == 0) {
      if ((status = push(context)) == 0) {
        status = sync(reinterpret_cast<void *>(stream));
        pop(&popped);
      }
      release(device);
    }
  }
  if (status != 0)
    throw py::value_error(what + ": waiting for its producer's CUDA stream " +
                          std::to_string(stream) + " failed (CUresult " +
                          std::to_string(status) + ")");
}

/// `value` (isDeviceArray) as a DeviceArray on GPU `ordinal`: a strided
/// torch tensor is made contiguous on its GPU, other strided arrays are
/// refused; the producer's pending work is waited for (torch's current
/// stream on the tensor's device, or the interface's `stream`).
DeviceArray asDeviceArray(py::handle value, const std::string &what,
                          int ordinal) {
  DeviceArray a;
  py::object interface;
  if (isTorchTensor(value)) {
    py::object tensor = value.attr("detach")();
    if (!tensor.attr("is_contiguous")().cast<bool>())
      tensor = tensor.attr("contiguous")();
    // The tensor's writers run on torch's current stream of its device.
    py::module_::import("torch")
        .attr("cuda")
        .attr("current_stream")(tensor.attr("device"))
        .attr("synchronize")();
    a.where = py::str(tensor.attr("device")).cast<std::string>();
    interface = tensor.attr("__cuda_array_interface__");
    a.owner = tensor;
  } else {
    interface = value.attr("__cuda_array_interface__");
    a.where = "a __cuda_array_interface__";
    a.owner = py::reinterpret_borrow<py::object>(value);
  }
  auto bad = [&](const std::string &why) {
    return py::type_error(what + " (" + a.where + "): " + why);
  };
  if (!py::isinstance<py::dict>(interface))
    throw bad("__cuda_array_interface__ is not a dict");
  py::dict cai = interface;
  if (!cai.contains("shape") || !cai.contains("typestr") ||
      !cai.contains("data"))
    throw bad("__cuda_array_interface__ lacks shape, typestr or data");
  for (py::handle d : cai["shape"])
    a.shape.push_back(d.cast<int64_t>());
  a.dtype = py::dtype(py::str(cai["typestr"]).cast<std::string>());
  py::tuple data = cai["data"];
  a.data = reinterpret_cast<const void *>(data[0].cast<uintptr_t>());
  if (cai.contains("mask") && !cai["mask"].is_none())
    throw bad("masked arrays are not read");
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    // C-contiguous strides are allowed; anything else is refused.
    int64_t expected = a.dtype.itemsize();
    py::tuple strides = cai["strides"];
    for (size_t i = a.shape.size(); i-- > 0;) {
      if (a.shape[i] > 1 && strides[i].cast<int64_t>() != expected)
        throw bad("a strided GPU array is not read; pass a contiguous one");
      expected *= a.shape[i];
    }
  }
  if (cai.contains("stream") && !cai["stream"].is_none())
    synchronizeProducer(cai["stream"].cast<uintptr_t>(), ordinal, what);
  return a;
}

/// Checks an input's dtype and shape against `info`; returns its samples
/// (the first dimension).
int64_t checkDtypeAndShape(const py::dtype &dtype,
                           const std::vector<int64_t> &shape,
                           const cleave::TensorInfo &info) {
  std::string what = "input '" + info.name + "'";
  if (!dtype.is(numpyDtype(info.dtype))) {
    std::string wanted = numpyName(info.dtype);
    throw py::type_error(what + " has dtype " +
                         py::str(py::handle(dtype)).cast<std::string>() +
                         "; the artifact expects " + wanted + " of shape " +
                         batchShape(info) + " (convert it with .astype(np." +
                         wanted + ") or .to(torch." + wanted + "))");
  }
  bool ok = shape.size() == info.shape.size() && !shape.empty();
  for (size_t i = 1; ok && i < info.shape.size(); ++i)
    ok = shape[i] == info.shape[i];
  if (!ok || shape[0] < 1)
    throw py::value_error(what + " has shape " + shapeString(shape) +
                          "; the artifact expects " + batchShape(info) +
                          " with k >= 1 samples");
  return shape[0];
}

py::array checkInput(const py::array &array, const cleave::TensorInfo &info,
                     int64_t &rows) {
  rows = checkDtypeAndShape(array.dtype(), shapeVector(array), info);
  if (array.flags() & py::array::c_style)
    return array;
  return py::array::ensure(array, py::array::c_style | py::array::forcecast);
}

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

py::dict tensorDict(const cleave::TensorInfo &info) {
  py::dict d;
  d["name"] = info.name;
  d["dtype"] = numpyName(info.dtype);
  d["shape"] = py::tuple(py::cast(info.shape));
  return d;
}

const char *globalKindName(cleave_global_kind kind) {
  switch (kind) {
  case CLEAVE_GLOBAL_PARAM:
    return "param";
  case CLEAVE_GLOBAL_BUFFER:
    return "buffer";
  case CLEAVE_GLOBAL_ACCUMULATOR:
    return "accumulator";
  case CLEAVE_GLOBAL_STATE:
    return "state";
  case CLEAVE_GLOBAL_COUNTER:
    return "counter";
  }
  return "?";
}

/// A loaded artifact; Python code may hang attributes on it (compile() keeps
/// the module's initial state there).
class PyArtifact {
public:
  explicit PyArtifact(const std::string &path)
      : artifact_(cleave::Artifact::load(path)) {
    inputs_ = artifact_.inputs();
    if (artifact_.hasEntry("eval_step"))
      evalOutputs_ = artifact_.outputs("eval_step");
    globals_ = artifact_.globals();
  }

  const cleave::Artifact &get() const { return artifact_; }
  const std::vector<cleave::TensorInfo> &inputs() const { return inputs_; }
  const std::vector<cleave::TensorInfo> &evalOutputs() const {
    return evalOutputs_;
  }
  const std::vector<cleave::GlobalInfo> &globals() const { return globals_; }
  const cleave::GlobalInfo *global(const std::string &name) const {
    for (const cleave::GlobalInfo &g : globals_)
      if (g.tensor.name == name)
        return &g;
    return nullptr;
  }

private:
  cleave::Artifact artifact_;
  std::vector<cleave::TensorInfo> inputs_;
  std::vector<cleave::TensorInfo> evalOutputs_;
  std::vector<cleave::GlobalInfo> globals_;
};

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

/// Parses "cpu", "cuda", "cuda:K".
void parseDevice(const std::string &device, cleave::SessionOptions &options) {
  if (device == "cpu") {
    options.device = CLEAVE_DEVICE_CPU;
    return;
  }
  if (device == "cuda") {
    options.device = CLEAVE_DEVICE_CUDA;
    return;
  }
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
      device.find_first_not_of("0123456789", 5) == std::string::npos) {
    options.device = CLEAVE_DEVICE_CUDA;
    options.deviceOrdinal = std::stoi(device.substr(5));
    return;
  }
  throw py::value_error("device '" + device +
                        "' is not one of 'cpu', 'cuda', 'cuda:K'");
}

class PySession {
public:
  PySession(std::shared_ptr<PyArtifact> artifact, const std::string &device,
            int64_t threads, uint64_t seed, int64_t accumulate,
            const std::string &onNonfinite)
      : artifact_(std::move(artifact)), device_(device) {
    cleave::SessionOptions options;
    parseDevice(device, options);
    if (threads < 0)
      throw py::value_error("threads must be >= 0 (0: OpenMP's default)");
    if (accumulate < 0)
      throw py::value_error("accumulate must be >= 1");
    options.numThreads = static_cast<int32_t>(threads);
    options.seed = seed;
    options.accumulate = accumulate;
    if (onNonfinite == "stop")
      options.onNonfinite = CLEAVE_NONFINITE_STOP;
    else if (onNonfinite == "skip")
      options.onNonfinite = CLEAVE_NONFINITE_SKIP;
    else
      throw py::value_error("on_nonfinite '" + onNonfinite +
                            "' is not 'stop' or 'skip'");
    py::gil_scoped_release release;
    session_.emplace(artifact_->get(), options);
  }

  std::shared_ptr<PyArtifact> artifact() const { return artifact_; }
  const std::string &device() const { return device_; }
  /// K of "cuda:K" (0 for "cuda").
  int deviceOrdinal() const {
    return device_.rfind("cuda:", 0) == 0 ? std::stoi(device_.substr(5)) : 0;
  }

  void microStep(py::args args, py::kwargs kwargs) {
    Batch batch = gather(args, kwargs, "micro_step");
    int64_t b = artifact_->get().microBatch();
    if (batch.rows > b)
      throw py::value_error("micro_step takes at most the micro-batch (" +
                            std::to_string(b) + ") samples, not " +
                            std::to_string(batch.rows) +
                            "; train_batch splits larger batches");
    Lock lock(*this);
    py::gil_scoped_release release;
    session_->microStep(batch.view, batch.memory);
  }

  void trainBatch(py::args args, py::kwargs kwargs) {
    std::optional<int64_t> microSize;
    if (kwargs.contains("micro_size")) {
      py::object value = kwargs["micro_size"];
      if (!value.is_none())
        microSize = value.cast<int64_t>();
      PyDict_DelItemString(kwargs.ptr(), "micro_size");
    }
    int64_t b = artifact_->get().microBatch();
    int64_t size = microSize.value_or(b);
    if (size < 1 || size > b)
      throw py::value_error("micro_size must be between 1 and the "
                            "micro-batch (" +
                            std::to_string(b) + "), not " +
                            std::to_string(size));
    Batch batch = gather(args, kwargs, "train_batch");
    Lock lock(*this);
    py::gil_scoped_release release;
    session_->trainBatch(batch.view, size, batch.memory);
  }

  void flush() {
    Lock lock(*this);
    py::gil_scoped_release release;
    session_->flush();
  }

  /// eval_step over any number of samples, B at a time: one array per output
  /// (a single array for one output).
  py::object eval(py::args args, py::kwargs kwargs) {
    Batch batch = gather(args, kwargs, "eval", /*allowMissing=*/true);
    const auto &outputs = artifact_->evalOutputs();
    if (outputs.empty())
      throw cleave::Error(CLEAVE_FAILED_PRECONDITION,
                          "the artifact has no eval_step entry");
    int64_t b = artifact_->get().microBatch();
    std::vector<py::array> results;
    std::vector<size_t> rowBytes;
    for (const cleave::TensorInfo &out : outputs) {
      if (out.shape.empty() || out.shape[0] != b)
        throw cleave::Error(CLEAVE_INTERNAL, "eval_step output '" + out.name +
                                                 "' is not batched");
      std::vector<py::ssize_t> shape(out.shape.begin(), out.shape.end());
      shape[0] = batch.rows;
      results.emplace_back(numpyDtype(out.dtype), shape);
      rowBytes.push_back(out.bytes / static_cast<size_t>(b));
    }
    std::vector<char *> dst;
    for (py::array &r : results)
      dst.push_back(static_cast<char *>(r.mutable_data()));
    Lock lock(*this);
    {
      py::gil_scoped_release release;
      for (int64_t first = 0; first < batch.rows; first += b) {
        int64_t k = std::min(b, batch.rows - first);
        cleave::Batch chunk(k);
        for (size_t i = 0; i < batch.data.size(); ++i) {
          size_t row = batch.bytes[i] / static_cast<size_t>(batch.rows);
          const char *data = static_cast<const char *>(batch.data[i]);
          chunk.add(data ? data + first * row : nullptr, k * row);
        }
        session_->eval(chunk, batch.memory);
        for (size_t o = 0; o < outputs.size(); ++o) {
          const void *data = nullptr;
          size_t bytes = 0;
          cleave::check(cleave_session_output(session_->get(), "eval_step",
                                              outputs[o].name.c_str(), &data,
                                              &bytes));
          std::memcpy(dst[o] + first * rowBytes[o], data, k * rowBytes[o]);
        }
      }
    }
    if (results.size() == 1)
      return results[0];
    return py::tuple(py::cast(results));
  }

  double loss() const {
    Lock lock(*this);
    return session_->lastLoss();
  }
  int64_t lastCount() const {
    Lock lock(*this);
    return session_->lastCount();
  }
  int64_t step() const {
    Lock lock(*this);
    return session_->step();
  }
  std::vector<std::string> notes() const {
    Lock lock(*this);
    return session_->notes();
  }
  int64_t microSteps() const {
    Lock lock(*this);
    return session_->microSteps();
  }
  uint64_t seed() const {
    Lock lock(*this);
    return session_->seed();
  }
  int64_t accumulation() const {
    Lock lock(*this);
    return session_->accumulation();
  }
  void setAccumulation(int64_t n) {
    if (n < 1)
      throw py::value_error("accumulate must be >= 1, not " +
                            std::to_string(n));
    Lock lock(*this);
    py::gil_scoped_release release;
    session_->setAccumulation(n);
  }

  double hyper(const std::string &name) const {
    Lock lock(*this);
    return session_->hyperparameter(name);
  }
  void setHyper(const std::string &name, double value) {
    Lock lock(*this);
    session_->setHyperparameter(name, value);
  }

  /// Sets (kind given) or removes (None) the learning-rate schedule.
  void setLrSchedule(const std::optional<std::string> &kind, double lr,
                     double minLr, int64_t warmupSteps,
                     double warmupStartFactor, int64_t totalSteps,
                     int64_t stepSize, double gamma, double power) {
    Lock lock(*this);
    if (!kind) {
      session_->clearLrSchedule();
      return;
    }
    cleave_lr_schedule schedule;
    cleave_lr_schedule_init(&schedule);
    bool known = false;
    for (cleave_lr_schedule_kind k :
         {CLEAVE_LR_CONSTANT, CLEAVE_LR_COSINE, CLEAVE_LR_STEP,
          CLEAVE_LR_POLYNOMIAL, CLEAVE_LR_ONE_CYCLE})
      if (*kind == cleave_lr_schedule_kind_name(k)) {
        schedule.kind = k;
        known = true;
      }
    if (!known)
      throw py::value_error("learning-rate schedule '" + *kind +
                            "' is not one of constant, cosine, step, "
                            "polynomial, one-cycle");
    schedule.lr = lr;
    schedule.min_lr = minLr;
    schedule.warmup_steps = warmupSteps;
    schedule.warmup_start_factor = warmupStartFactor;
    schedule.total_steps = totalSteps;
    schedule.step_size = stepSize;
    schedule.gamma = gamma;
    schedule.power = power;
    session_->setLrSchedule(schedule);
  }

  /// The schedule as a dict (its peak lr resolved), or None.
  py::object lrSchedule() const {
    Lock lock(*this);
    std::optional<cleave_lr_schedule> s = session_->lrSchedule();
    if (!s)
      return py::none();
    py::dict d;
    d["kind"] = cleave_lr_schedule_kind_name(s->kind);
    d["lr"] = s->lr;
    d["min_lr"] = s->min_lr;
    d["warmup_steps"] = s->warmup_steps;
    d["warmup_start_factor"] = s->warmup_start_factor;
    d["total_steps"] = s->total_steps;
    d["step_size"] = s->step_size;
    d["gamma"] = s->gamma;
    d["power"] = s->power;
    return d;
  }
  std::vector<std::string> hyperNames() const {
    std::vector<std::string> names;
    for (const auto &h : artifact_->get().hyperparameters())
      names.push_back(h.name);
    return names;
  }

  /// The values of every global of `kind` (or of the given names), copied.
  py::dict read(const std::vector<cleave_global_kind> &kinds) const {
    Lock lock(*this);
    py::dict out;
    for (const cleave::GlobalInfo &g : artifact_->globals()) {
      if (std::find(kinds.begin(), kinds.end(), g.kind) == kinds.end())
        continue;
      out[py::str(g.tensor.name)] = readGlobal(g);
    }
    return out;
  }

  py::array readGlobal(const cleave::GlobalInfo &g) const {
    std::vector<py::ssize_t> shape(g.tensor.shape.begin(),
                                   g.tensor.shape.end());
    py::array value(numpyDtype(g.tensor.dtype), shape);
    cleave::check(
        cleave_session_read_global(session_->get(), g.tensor.name.c_str(),
                                   value.mutable_data(), g.tensor.bytes));
    return value;
  }

  py::array readNamed(const std::string &name) const {
    Lock lock(*this);
    const cleave::GlobalInfo *g = artifact_->global(name);
    if (!g)
      throw cleave::Error(CLEAVE_NOT_FOUND,
                          "the artifact has no global '" + name + "'");
    return readGlobal(*g);
  }

  /// Writes every entry of `values` (name -> array or tensor) after checking
  /// them all: nothing changes unless every entry is valid.
  void write(const py::dict &values, bool anyKind) {
    std::vector<std::pair<const cleave::GlobalInfo *, py::array>> checked;
    for (auto item : values) {
      std::string name = py::str(item.first);
      const cleave::GlobalInfo *g = artifact_->global(name);
      if (!g || (!anyKind && g->kind != CLEAVE_GLOBAL_PARAM &&
                 g->kind != CLEAVE_GLOBAL_BUFFER))
        throw cleave::Error(
            CLEAVE_NOT_FOUND,
            "'" + name + "' is not a " +
                (anyKind ? "global" : "parameter or buffer") +
                " of the artifact (session.params() and session.buffers() "
                "list them)");
      std::string what = "'" + name + "'";
      py::array array = asArray(item.second, what, /*anyDevice=*/true);
      if (!array.dtype().is(numpyDtype(g->tensor.dtype)))
        throw py::type_error(
            what + " has dtype " + py::str(array.dtype()).cast<std::string>() +
            "; the session holds " + numpyName(g->tensor.dtype));
      bool same =
          array.ndim() == static_cast<py::ssize_t>(g->tensor.shape.size());
      for (size_t i = 0; same && i < g->tensor.shape.size(); ++i)
        same = array.shape(i) == g->tensor.shape[i];
      if (!same)
        throw py::value_error(what + " has shape " + shapeOf(array) +
                              "; the session holds " +
                              shapeString(g->tensor.shape));
      checked.emplace_back(g, py::array::ensure(array, py::array::c_style));
    }
    Lock lock(*this);
    for (auto &[g, array] : checked)
      cleave::check(cleave_session_write_global(session_->get(),
                                                g->tensor.name.c_str(),
                                                array.data(), g->tensor.bytes));
  }

  void save(const std::string &path) const {
    Lock lock(*this);
    py::gil_scoped_release release;
    session_->saveCheckpoint(path);
  }
  void load(const std::string &path) {
    Lock lock(*this);
    py::gil_scoped_release release;
    session_->loadCheckpoint(path);
  }
  void setUserState(const std::string &key, py::bytes value) {
    Lock lock(*this);
    session_->setUserState(key, value);
  }

private:
  /// The C API allows one call at a time on a session; with the GIL released
  /// two Python threads could overlap, so each call that runs an entry point
  /// holds this lock and a second caller gets an error, not a race.
  class Lock {
  public:
    explicit Lock(const PySession &s) : lock_(s.busy_, std::try_to_lock) {
      if (!lock_.owns_lock())
        throw cleave::Error(CLEAVE_FAILED_PRECONDITION,
                            "the session is in use by another thread (a "
                            "session runs one call at a time)");
    }

  private:
    std::unique_lock<std::mutex> lock_;
  };

  /// The arrays of one call, kept alive while the step runs without the GIL.
  struct Batch {
    std::vector<py::array> arrays;
    std::vector<py::object> deviceArrays;
    std::vector<const void *> data;
    std::vector<size_t> bytes;
    int64_t rows = 0;
    /// CLEAVE_MEMORY_HOST, or CLEAVE_MEMORY_DEVICE when the inputs are in
    /// the GPU's memory (all of them: one call reads one kind).
    int memory = CLEAVE_MEMORY_HOST;
    cleave::Batch view;
  };

  /// The inputs of a call, by position (artifact input order) or by name.
  /// `allowMissing` (eval): an input not given is passed as NULL, which the
  /// runtime accepts for inputs the entry does not read (labels).
  Batch gather(const py::args &args, const py::kwargs &kwargs, const char *call,
               bool allowMissing = false) {
    const auto &inputs = artifact_->inputs();
    std::vector<py::object> given(inputs.size());
    if (args.size() > inputs.size())
      throw py::type_error(std::string(call) + " takes " +
                           std::to_string(inputs.size()) + " inputs (" +
                           names() + "), not " + std::to_string(args.size()));
    for (size_t i = 0; i < args.size(); ++i)
      given[i] = args[i];
    for (auto item : kwargs) {
      std::string name = py::str(item.first);
      size_t i = 0;
      while (i < inputs.size() && inputs[i].name != name)
        ++i;
      if (i == inputs.size())
        throw py::type_error(std::string(call) + "() got input '" + name +
                             "', which the artifact does not have (its "
                             "inputs: " +
                             names() + ")");
      if (given[i])
        throw py::type_error(std::string(call) + "() got input '" + name +
                             "' twice");
      given[i] = py::reinterpret_borrow<py::object>(item.second);
    }
    Batch batch;
    std::string first, firstHost, firstDevice;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!given[i] && allowMissing) {
        batch.data.push_back(nullptr);
        batch.bytes.push_back(0);
        continue;
      }
      if (!given[i])
        throw py::type_error(std::string(call) + "() is missing input '" +
                             inputs[i].name + "' (its inputs: " + names() +
                             ")");
      const std::string what = "input '" + inputs[i].name + "'";
      int64_t rows = 0;
      if (isDeviceArray(given[i])) {
        if (device_ == "cpu")
          throw py::type_error(
              what + " is GPU memory (" +
              (isTorchTensor(given[i])
                   ? py::str(given[i].attr("device")).cast<std::string>()
                   : std::string("a __cuda_array_interface__")) +
              ") but the session runs on the CPU: pass host memory (.cpu())");
        DeviceArray d = asDeviceArray(given[i], what, deviceOrdinal());
        rows = checkDtypeAndShape(d.dtype, d.shape, inputs[i]);
        if (firstDevice.empty())
          firstDevice = inputs[i].name;
        batch.data.push_back(d.data);
        size_t bytes = static_cast<size_t>(d.dtype.itemsize());
        for (int64_t extent : d.shape)
          bytes *= static_cast<size_t>(extent);
        batch.bytes.push_back(bytes);
        batch.deviceArrays.push_back(std::move(d.owner));
      } else {
        py::array array = checkInput(
            asArray(given[i], what, /*anyDevice=*/false), inputs[i], rows);
        if (firstHost.empty())
          firstHost = inputs[i].name;
        batch.data.push_back(array.data());
        batch.bytes.push_back(static_cast<size_t>(array.nbytes()));
        batch.arrays.push_back(std::move(array));
      }
      if (!firstHost.empty() && !firstDevice.empty())
        throw py::type_error(std::string(call) +
                             "() reads one kind of memory "
                             "per call: input '" +
                             firstDevice + "' is GPU memory and '" + firstHost +
                             "' host memory");
      if (batch.rows != 0 && rows != batch.rows)
        throw py::value_error("input '" + inputs[i].name + "' has " +
                              std::to_string(rows) + " samples but '" + first +
                              "' has " + std::to_string(batch.rows));
      if (batch.rows == 0)
        first = inputs[i].name;
      batch.rows = rows;
    }
    if (!firstDevice.empty())
      batch.memory = CLEAVE_MEMORY_DEVICE;
    if (batch.rows == 0)
      throw py::type_error(std::string(call) +
                           "() got no inputs (its "
                           "inputs: " +
                           names() + ")");
    batch.view.setSamples(batch.rows);
    for (size_t i = 0; i < batch.data.size(); ++i)
      batch.view.add(batch.data[i], batch.bytes[i]);
    return batch;
  }

  std::string names() const {
    std::string s;
    for (const cleave::TensorInfo &t : artifact_->inputs())
      s += (s.empty() ? "" : ", ") + t.name;
    return s;
  }

  std::shared_ptr<PyArtifact> artifact_;
  std::string device_;
  std::optional<cleave::Session> session_;
  mutable std::mutex busy_;
};

} // namespace

PYBIND11_MODULE(_cleave, m) {
  m.doc() = "Native bindings of the Cleave runtime's C API (use the `cleave` "
            "package).";

  errors.base = PyErr_NewExceptionWithDoc(
      "cleave.Error",
      "A failed runtime call. `status` is the runtime's status name "
      "(\"invalid argument\", \"non-finite\", ...).",
      PyExc_RuntimeError, nullptr);
  m.add_object("Error", py::handle(errors.base));
  errors.invalidArgument =
      makeError(m, "InvalidArgumentError", PyExc_ValueError,
                "A value out of range, a wrong size or count.");
  errors.notFound = makeError(
      m, "NotFoundError", PyExc_KeyError,
      "A name (global, hyperparameter, output) the artifact does not have.");
  errors.io = makeError(m, "IOError", PyExc_OSError,
                        "A file could not be opened, read or written.");
  errors.invalidArtifact = makeError(
      m, "InvalidArtifactError", nullptr,
      "Not a Cleave artifact, another ABI version, or an invalid manifest.");
  errors.invalidCheckpoint = makeError(
      m, "InvalidCheckpointError", nullptr,
      "A truncated or corrupt checkpoint, or one of a different model.");
  errors.failedPrecondition = makeError(
      m, "FailedPreconditionError", nullptr,
      "A call not valid for this artifact or session (training an "
      "inference artifact, a session whose kernel failed, a cuda session "
      "without a GPU).");
  errors.outOfMemory = makeError(m, "OutOfMemoryError", PyExc_MemoryError,
                                 "An allocation failed.");
  errors.internal = makeError(m, "InternalError", nullptr,
                              "A broken invariant inside the runtime.");
  errors.nonFinite = makeError(
      m, "NonFiniteError", PyExc_FloatingPointError,
      "A window's gradients or loss were not finite: its optimizer step was "
      "skipped (the session stays usable).");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const cleave::Error &e) {
      PyObject *type = errorType(e.status());
      py::object error = py::reinterpret_steal<py::object>(
          PyObject_CallFunction(type, "s", e.what()));
      if (!error)
        return; // the call set its own error
      error.attr("status") = cleave_status_string(e.status());
      PyErr_SetObject(type, error.ptr());
    }
  });

  m.def(
      "abi_version", [] { return CLEAVE_RUNTIME_ABI_VERSION; },
      "The artifact ABI version this runtime loads.");
  m.def(
      "checkpoint_user_state",
      [](const std::string &path, const std::string &key) {
        size_t bytes = 0;
        cleave::check(cleave_checkpoint_user_state(path.c_str(), key.c_str(),
                                                   nullptr, 0, &bytes));
        std::string value(bytes, '\0');
        cleave::check(cleave_checkpoint_user_state(
            path.c_str(), key.c_str(), value.data(), value.size(), &bytes));
        return py::bytes(value);
      },
      py::arg("path"), py::arg("key"),
      "The value under user-state `key` of the checkpoint at `path`.");

  py::class_<PyArtifact, std::shared_ptr<PyArtifact>>(m, "Artifact",
                                                      py::dynamic_attr())
      .def(py::init<const std::string &>(), py::arg("path"),
           "Loads and validates the artifact at `path`.")
      .def_property_readonly(
          "path", [](const PyArtifact &a) { return a.get().path(); },
          "The path the artifact was loaded from.")
      .def_property_readonly(
          "manifest_json",
          [](const PyArtifact &a) { return a.get().manifest(); },
          "The manifest as JSON text.")
      .def_property_readonly(
          "micro_batch",
          [](const PyArtifact &a) { return a.get().microBatch(); },
          "The micro-batch size B every graph was compiled for.")
      .def_property_readonly(
          "accumulate",
          [](const PyArtifact &a) { return a.get().accumulate(); },
          "The default accumulation count N.")
      .def_property_readonly(
          "window_samples",
          [](const PyArtifact &a) { return a.get().windowSamples(); },
          "Samples per window (per rank): accumulate x micro_batch, or fewer "
          "when the artifact was compiled with window_samples, whose "
          "windows end with a short micro-batch (fit() cuts them there).")
      .def_property_readonly(
          "inputs",
          [](const PyArtifact &a) {
            py::list l;
            for (const auto &t : a.inputs())
              l.append(tensorDict(t));
            return l;
          },
          "The data inputs a batch holds, in order: dicts of name, dtype and "
          "shape (dimension 0 is the micro-batch).")
      .def_property_readonly(
          "outputs",
          [](const PyArtifact &a) {
            py::list l;
            for (const auto &t : a.evalOutputs())
              l.append(tensorDict(t));
            return l;
          },
          "eval_step's outputs, in the order Session.eval returns them.")
      .def_property_readonly(
          "globals",
          [](const PyArtifact &a) {
            py::list l;
            for (const auto &g : a.globals()) {
              py::dict d = tensorDict(g.tensor);
              d["kind"] = globalKindName(g.kind);
              d["of"] = g.of;
              l.append(d);
            }
            return l;
          },
          "Every global a session holds: dicts of name, dtype, shape, kind "
          "(param, buffer, accumulator, state, counter) and `of` (the "
          "parameter an accumulator or optimizer state belongs to).")
      .def_property_readonly(
          "hyperparameters",
          [](const PyArtifact &a) {
            py::dict d;
            for (const auto &h : a.get().hyperparameters())
              d[py::str(h.name)] = h.defaultValue;
            return d;
          },
          "Hyperparameter names and their compiled-in defaults.");

  py::class_<PySession>(m, "Session", py::dynamic_attr())
      .def(py::init<std::shared_ptr<PyArtifact>, const std::string &, int64_t,
                    uint64_t, int64_t, const std::string &>(),
           py::arg("artifact"), py::arg("device") = "cpu",
           py::arg("threads") = 0, py::arg("seed") = 0,
           py::arg("accumulate") = 0, py::arg("on_nonfinite") = "stop")
      .def_property_readonly("artifact", &PySession::artifact,
                             "The session's artifact.")
      .def_property_readonly("device", &PySession::device,
                             "What runs the entry points: 'cpu' or 'cuda[:K]'.")
      .def("micro_step", &PySession::microStep,
           R"(micro_step(*inputs, **named_inputs)

Runs one micro-step on k <= micro_batch samples (a shorter batch is padded
and weighted out), then the apply step if the window now holds `accumulate`
micro-steps. Inputs are given in the artifact's input order or by name
(artifact.inputs), as NumPy arrays or CPU torch tensors of the input's dtype
with k rows; C-contiguous ones are read in place. A wrong dtype raises
TypeError, a wrong shape ValueError, both naming the input; the session is
unchanged by a refused call.)")
      .def("train_batch", &PySession::trainBatch,
           R"(train_batch(*inputs, micro_size=None, **named_inputs)

Trains on a batch of any number of samples: it is split into consecutive
micro-batches of `micro_size` samples (default: the micro-batch; the last
may be shorter) and each runs as micro_step, with the apply step after every
`accumulate` micro-steps. It does not flush a partial window.)")
      .def("flush", &PySession::flush,
           "Runs the apply step on the current window if it holds at least "
           "one micro-step (the end of an epoch).")
      .def("eval", &PySession::eval,
           R"(eval(*inputs, **named_inputs) -> numpy.ndarray | tuple

Evaluates the model (forward only, no state changes) on any number of
samples, micro_batch at a time. Returns eval_step's output (the prediction)
as a new array of k rows, or a tuple when the model has several outputs.)")
      .def_property_readonly(
          "loss", &PySession::loss,
          "The mean per-sample (or per-token) loss of the last micro_step, or "
          "of every sample of the last train_batch; NaN before the first.")
      .def_property_readonly(
          "last_count", &PySession::lastCount,
          "What `loss` is a mean over: real samples (or real tokens).")
      .def_property_readonly("step", &PySession::step,
                             "Optimizer steps taken (apply steps run).")
      .def_property_readonly(
          "notes", &PySession::notes,
          "What the device chose that changes speed but not results, one "
          "line each (an entry that runs without a CUDA graph, and why).")
      .def_property_readonly("micro_steps", &PySession::microSteps,
                             "Micro-steps in the current window.")
      .def_property_readonly("seed", &PySession::seed,
                             "The seed of the initial values.")
      .def_property("accumulate", &PySession::accumulation,
                    &PySession::setAccumulation,
                    "The accumulation count N, settable at run time (no "
                    "recompilation); a window that already holds N "
                    "micro-steps is applied at once.")
      .def("set_lr_schedule", &PySession::setLrSchedule, py::arg("kind"),
           py::kw_only(), py::arg("lr") = std::nan(""), py::arg("min_lr") = 0.0,
           py::arg("warmup_steps") = 0, py::arg("warmup_start_factor") = 0.0,
           py::arg("total_steps") = 0, py::arg("step_size") = 1,
           py::arg("gamma") = 0.1, py::arg("power") = 1.0,
           R"(set_lr_schedule(kind, *, lr=nan, min_lr=0, warmup_steps=0,
                warmup_start_factor=0, total_steps=0, step_size=1,
                gamma=0.1, power=1)

Makes hyperparameter `lr` a function of the optimizer step, set before each
apply step (never per micro-step; changing `accumulate` does not stretch
it), saved in checkpoints. `kind`: "constant", "cosine", "step",
"polynomial" or "one-cycle" (PyTorch's LinearLR warmup, CosineAnnealingLR,
StepLR, PolynomialLR, OneCycleLR in closed form:
docs/design/lr-schedules.md); None removes the schedule. `lr` is the peak
(default: the session's current lr), reached after `warmup_steps` of linear
warmup from warmup_start_factor * lr; cosine and polynomial decay to
`min_lr` at `total_steps`; step multiplies by `gamma` every `step_size`
steps. While a schedule is set, session.hyper["lr"] reads the lr of the
next step and refuses writes.)")
      .def_property_readonly("lr_schedule", &PySession::lrSchedule,
                             "The schedule as a dict (peak lr resolved), or "
                             "None.")
      .def("_hyper", &PySession::hyper)
      .def("_set_hyper", &PySession::setHyper)
      .def("_hyper_names", &PySession::hyperNames)
      .def(
          "params",
          [](const PySession &s) { return s.read({CLEAVE_GLOBAL_PARAM}); },
          "The trainable parameters: a dict of name -> NumPy array (copies).")
      .def(
          "buffers",
          [](const PySession &s) { return s.read({CLEAVE_GLOBAL_BUFFER}); },
          "The model's non-trainable state (batch-norm running statistics): "
          "a dict of name -> NumPy array (copies).")
      .def("read", &PySession::readNamed, py::arg("name"),
           "Any global by name (artifact.globals: optimizer state, "
           "accumulators, counters), copied.")
      .def(
          "set_params",
          [](PySession &s, const py::dict &values) { s.write(values, false); },
          py::arg("values"),
          "Overwrites parameters and buffers from a dict of name -> array "
          "(NumPy or torch, a state_dict included). Every entry is checked "
          "(name, dtype, shape) before anything is written.")
      .def(
          "write",
          [](PySession &s, const std::string &name, py::handle value) {
            py::dict d;
            d[py::str(name)] = value;
            s.write(d, true);
          },
          py::arg("name"), py::arg("value"), "Overwrites any global by name.")
      .def("_save", &PySession::save)
      .def("load", &PySession::load, py::arg("path"),
           "Restores a checkpoint of the same model into this session; on "
           "failure the session is unchanged.")
      .def("_set_user_state", &PySession::setUserState);
}

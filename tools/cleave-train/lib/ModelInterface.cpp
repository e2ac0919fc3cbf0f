//===- ModelInterface.cpp - What an artifact takes and predicts -----------===//

#include "ModelInterface.h"

#include "Error.h"
#include "data/Npy.h"
#include "schema/SchemaRead.h"

#include <algorithm>
#include <cstdio>

namespace cleave::train {

namespace {

using data::shapeString;

const char *dtypeName(cleave_dtype dtype) { return cleave_dtype_name(dtype); }

/// `shape` without its dimensions of size 1.
std::vector<int64_t> squeezed(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s;
  for (int64_t d : shape)
    if (d != 1)
      s.push_back(d);
  return s;
}

/// Whether rows of `data` feed a tensor whose per-sample shape is `model`:
/// the same shape up to dimensions of size 1 ([28, 28] feeds [1, 28, 28]),
/// or either is a flat vector of the same number of elements ([3, 32, 32]
/// feeds [3072], [784] feeds [1, 28, 28]).
bool feeds(const std::vector<int64_t> &data,
           const std::vector<int64_t> &model) {
  int64_t dataElements = 1, modelElements = 1;
  for (int64_t d : data)
    dataElements *= d;
  for (int64_t d : model)
    modelElements *= d;
  if (dataElements != modelElements)
    return false;
  return squeezed(data) == squeezed(model) || squeezed(data).size() <= 1 ||
         squeezed(model).size() <= 1;
}

/// The artifact's manifest, as the schema reads it (the runtime has
/// validated it when it loaded the artifact).
::cleave::abi::Manifest readManifest(const cleave::Artifact &artifact,
                                     const std::string &path) {
  ::cleave::abi::Manifest doc;
  std::string error;
  if (!::cleave::abi::readManifestText(artifact.manifest(), doc, error,
                                       ::cleave::abi::Kernels::Defer))
    throw tools::Error(path + ": " + error);
  return doc;
}

/// The manifest record of the input named `name`; an empty one if none.
::cleave::abi::Input manifestInput(const ::cleave::abi::Manifest &doc,
                                   const std::string &name) {
  if (doc.inputs)
    for (const ::cleave::abi::Input &in : *doc.inputs)
      if (in.name == name)
        return in;
  return {};
}

/// inspectModel for an artifact whose labels have a token dimension.
ModelInterface inspectLanguageModel(const cleave::Artifact &artifact,
                                    const ::cleave::abi::Manifest &doc,
                                    const std::string &path, ModelInterface m,
                                    const std::string &listed) {
  const std::vector<int64_t> &labels = m.target.shape;
  const std::vector<int64_t> &ids = m.input.shape;
  if (labels.size() != 2 || labels[0] != m.microBatch || labels[1] < 1)
    throw tools::Error(path + ": labels '" + m.target.name + "' are i64 " +
                       shapeString(labels) + "; cleave-train trains token " +
                       "labels of shape [" + std::to_string(m.microBatch) +
                       ", T] (a loss per token)");
  const int64_t t = labels[1];
  if (m.input.dtype != CLEAVE_DTYPE_I64 || ids != labels)
    throw tools::Error(
        path + ": input '" + m.input.name + "' is " + dtypeName(m.input.dtype) +
        " " + shapeString(ids) + " (its inputs: " + listed +
        "); cleave-train feeds a model with token labels " +
        shapeString(labels) + " i64 token ids of the same shape");
  const std::optional<int64_t> ignoreIndex =
      manifestInput(doc, m.target.name).ignoreIndex;
  if (!ignoreIndex)
    throw tools::Error(path + ": labels '" + m.target.name +
                       "' have no ignore_index in the manifest (expected "
                       "an artifact compiled with a loss per token)");
  m.tokens = true;
  m.ids = true;
  m.sequenceLength = t;
  m.ignoreIndex = *ignoreIndex;
  m.idBound = manifestInput(doc, m.input.name).indexBound.value_or(0);

  if (!artifact.hasEntry("eval_step"))
    throw tools::Error(path + " has no eval_step entry (cleave-train needs it "
                              "to evaluate the test split)");
  std::vector<cleave::TensorInfo> outputs = artifact.outputs("eval_step");
  if (outputs.size() != 1 || outputs[0].dtype != CLEAVE_DTYPE_F32 ||
      outputs[0].shape.size() != 3 || outputs[0].shape[0] != m.microBatch ||
      outputs[0].shape[1] != t || outputs[0].shape[2] < 1)
    throw tools::Error(path + ": eval_step must have one output of type f32 [" +
                       std::to_string(m.microBatch) + ", " + std::to_string(t) +
                       ", vocabulary] (the next-token logits) for "
                       "cleave-train to evaluate it");
  m.prediction = outputs[0].name;
  m.classes = outputs[0].shape[2];
  return m;
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / (1 << 20));
  return text;
}

} // namespace

void checkMemoryBudget(const cleave::Artifact &artifact,
                       const std::string &path, int64_t budget) {
  namespace abi = ::cleave::abi;
  const abi::Manifest doc = readManifest(artifact, path);
  if (!doc.memory)
    throw tools::Error(path + " has no memory report (an artifact from an "
                              "older cleave-compile): --memory-budget cannot "
                              "check it; compile it again");
  const int64_t report = doc.memory->total;
  const int64_t overhead = doc.memory->fixedOverhead.value_or(0);
  const bool device = doc.memory->space == abi::MemorySpace::device;
  if (report + overhead <= budget)
    return;
  throw tools::Error(
      path + " needs " + mib(report + overhead) + " of " +
      (device ? "device" : "host") + " memory (its memory report, " +
      mib(report) +
      (overhead
           ? ", plus the runtime's fixed overhead of about " + mib(overhead)
           : std::string()) +
      "), more than --memory-budget=" + mib(budget) +
      "; compile it with a smaller --micro-batch (and a larger --accumulate "
      "for the same window) or with --remat=auto or --remat-budget "
      "(cleave-compile --report=memory shows what it holds)");
}

ModelInterface inspectModel(const cleave::Artifact &artifact,
                            const std::string &path) {
  const ::cleave::abi::Manifest doc = readManifest(artifact, path);
  ModelInterface m;
  m.microBatch = artifact.microBatch();
  m.windowSamples = artifact.windowSamples();
  m.shortLastMicroBatch =
      m.windowSamples != artifact.accumulate() * m.microBatch;
  std::vector<cleave::TensorInfo> inputs = artifact.inputs();
  std::string listed;
  for (const auto &in : inputs)
    listed += (listed.empty() ? "" : ", ") + in.name + " " +
              dtypeName(in.dtype) + " " + shapeString(in.shape);
  if (inputs.size() != 2)
    throw tools::Error(path + " has " + std::to_string(inputs.size()) +
                       " data inputs (" + listed +
                       "); cleave-train feeds exactly two: the inputs (f32) "
                       "and the labels (i64 [B]) or targets (f32)");
  auto isTargets = [](const cleave::TensorInfo &t) {
    return t.dtype == CLEAVE_DTYPE_I64 ||
           (t.dtype == CLEAVE_DTYPE_F32 && t.name == "targets");
  };
  m.targetIndex = isTargets(inputs[0]) ? 0 : 1;
  // A language model's ids are integers too: its labels are the input with
  // an ignore index (cleave-compile adds them after the model's inputs).
  if (isTargets(inputs[0]) && isTargets(inputs[1]))
    m.targetIndex = manifestInput(doc, inputs[0].name).ignoreIndex ? 0 : 1;
  m.inputIndex = 1 - m.targetIndex;
  m.input = inputs[m.inputIndex];
  m.target = inputs[m.targetIndex];
  m.classifier = m.target.dtype == CLEAVE_DTYPE_I64;
  if (m.classifier && m.target.shape.size() > 1)
    return inspectLanguageModel(artifact, doc, path, std::move(m), listed);
  if (!isTargets(m.target) || (m.classifier && m.target.shape.size() != 1) ||
      (!m.classifier && m.target.shape.empty()))
    throw tools::Error(
        path + " has no label input of type i64 [" +
        std::to_string(m.microBatch) +
        "] and no f32 input named 'targets' (its inputs: " + listed +
        "); cleave-train trains classifiers on class indices "
        "and regressions (--loss=mse) on float targets");
  // A sequence classifier: integer ids [B, T], one label per sequence.
  if (m.classifier && m.input.dtype == CLEAVE_DTYPE_I64 &&
      m.input.shape.size() == 2 && m.input.shape[0] == m.microBatch &&
      m.input.shape[1] >= 1) {
    m.ids = true;
    m.sequenceLength = m.input.shape[1];
    m.idBound = manifestInput(doc, m.input.name).indexBound.value_or(0);
  } else if (m.input.dtype != CLEAVE_DTYPE_F32 || m.input.shape.empty()) {
    throw tools::Error(path + ": input '" + m.input.name + "' is " +
                       dtypeName(m.input.dtype) + " " +
                       shapeString(m.input.shape) +
                       ", cleave-train feeds f32 [B, ...] inputs, or i64 [B, "
                       "T] token ids to a classifier of sequences");
  }

  if (!artifact.hasEntry("eval_step"))
    throw tools::Error(path + " has no eval_step entry (cleave-train needs it "
                              "to evaluate the test split)");
  std::vector<cleave::TensorInfo> outputs = artifact.outputs("eval_step");
  if (m.classifier) {
    if (outputs.size() != 1 || outputs[0].dtype != CLEAVE_DTYPE_F32 ||
        outputs[0].shape.size() != 2 || outputs[0].shape[0] != m.microBatch ||
        outputs[0].shape[1] < 1)
      throw tools::Error(
          path + ": eval_step must have one output of type f32 [" +
          std::to_string(m.microBatch) +
          ", classes] (the prediction) for cleave-train to evaluate it");
    m.classes = outputs[0].shape[1];
  } else if (outputs.size() != 1 || outputs[0].dtype != CLEAVE_DTYPE_F32 ||
             outputs[0].shape != m.target.shape) {
    throw tools::Error(path + ": eval_step must have one output of type f32 " +
                       shapeString(m.target.shape) +
                       " (the prediction, shaped as the targets) for "
                       "cleave-train to evaluate it");
  }
  m.prediction = outputs[0].name;
  return m;
}

data::DatasetOptions datasetOptionsFor(const ModelInterface &m,
                                       data::DataFormat format, int64_t limit) {
  data::DatasetOptions options;
  const bool numpy = format == data::DataFormat::NpzFile ||
                     format == data::DataFormat::NpzDir ||
                     format == data::DataFormat::NpyDir;
  if ((numpy || m.ids) && m.classifier)
    options.numClasses = m.classes;
  if (m.ids) {
    data::TokenOptions tokens;
    tokens.sequenceLength = m.sequenceLength;
    tokens.idBound = m.idBound;
    tokens.ignoreIndex = m.ignoreIndex;
    tokens.labelPerToken = m.tokens;
    options.tokens = tokens;
  }
  options.limit = limit;
  return options;
}

void checkData(const ModelInterface &m, const data::Dataset &dataset,
               const std::string &path) {
  const data::SampleArray &x = dataset.inputs, &y = dataset.targets;
  // A token dataset was checked against the model as it was loaded
  // (datasetOptionsFor).
  if (m.ids != dataset.tokens)
    throw tools::Error(path + (m.ids ? std::string(m.tokens
                                                       ? " is a language model"
                                                       : " classifies sequences") +
                                           " (token ids " +
                                           shapeString(m.input.shape) +
                                           "), the data has no token "
                                           "sequences (" +
                                           x.source + ")"
                                     : " takes no token sequences, the "
                                       "data has them (" +
                                           x.source + ")"));
  if (m.ids)
    return;
  const std::vector<int64_t> sample(m.input.shape.begin() + 1,
                                    m.input.shape.end());
  if (!feeds(x.sampleShape, sample)) {
    std::vector<int64_t> a = x.sampleShape, b = sample;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    throw tools::Error(
        path + ": input '" + m.input.name + "' takes samples of " +
        shapeString(sample) + ", the data has " + shapeString(x.sampleShape) +
        " (" + x.source + ")" +
        (a == b && x.sampleShape.size() == 3
             ? "; channels-last data must be transposed to channels-first"
             : ""));
  }
  if (m.classifier) {
    if (!dataset.hasClassLabels())
      throw tools::Error(path + " is a classifier (i64 labels), the data has " +
                         std::string(data::elementTypeName(y.type)) +
                         " targets of shape " + shapeString(y.shape()) + " (" +
                         y.source + "; expected integer class labels [N])");
    if (m.classes < dataset.numClasses)
      throw tools::Error(path + " predicts " + std::to_string(m.classes) +
                         " classes, the dataset has " +
                         std::to_string(dataset.numClasses));
    return;
  }
  const std::vector<int64_t> target(m.target.shape.begin() + 1,
                                    m.target.shape.end());
  if (dataset.hasClassLabels())
    throw tools::Error(path + " regresses f32 targets of " +
                       shapeString(target) + " per sample, the data has " +
                       data::elementTypeName(y.type) + " labels (" + y.source +
                       "; expected float32 targets)");
  if (!feeds(y.sampleShape, target))
    throw tools::Error(path + ": input '" + m.target.name +
                       "' takes targets of " + shapeString(target) +
                       " per sample, the data has " +
                       shapeString(y.sampleShape) + " (" + y.source + ")");
}

} // namespace cleave::train

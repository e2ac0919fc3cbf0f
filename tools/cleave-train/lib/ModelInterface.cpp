//===- ModelInterface.cpp - What an artifact takes and predicts -----------===//

#include "ModelInterface.h"

#include "Error.h"
#include "data/Npy.h"

#include <algorithm>

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

} // namespace

ModelInterface inspectModel(const cleave::Artifact &artifact,
                            const std::string &path) {
  ModelInterface m;
  m.microBatch = artifact.microBatch();
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
  m.inputIndex = 1 - m.targetIndex;
  m.input = inputs[m.inputIndex];
  m.target = inputs[m.targetIndex];
  m.classifier = m.target.dtype == CLEAVE_DTYPE_I64;
  if (m.classifier && m.target.shape.size() > 1)
    throw tools::Error(
        path + " takes token labels " + shapeString(m.target.shape) +
        " (a loss per token); cleave-train trains classifiers and "
        "regressions only. Train it through the runtime API "
        "(cleave::Session::microStep with [B, T] ids and labels, "
        "docs/design/split.md)");
  if (!isTargets(m.target) || (m.classifier && m.target.shape.size() != 1) ||
      (!m.classifier && m.target.shape.empty()))
    throw tools::Error(
        path + " has no label input of type i64 [" +
        std::to_string(m.microBatch) +
        "] and no f32 input named 'targets' (its inputs: " + listed +
        "); cleave-train trains classifiers on class indices "
        "and regressions (--loss=mse) on float targets");
  if (m.input.dtype != CLEAVE_DTYPE_F32 || m.input.shape.empty())
    throw tools::Error(path + ": input '" + m.input.name + "' is " +
                       dtypeName(m.input.dtype) + " " +
                       shapeString(m.input.shape) +
                       ", cleave-train feeds f32 [B, ...] inputs");

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
  if (numpy && m.classifier)
    options.numClasses = m.classes;
  options.limit = limit;
  return options;
}

void checkData(const ModelInterface &m, const data::Dataset &dataset,
               const std::string &path) {
  const data::SampleArray &x = dataset.inputs, &y = dataset.targets;
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

//===- ModelInterface.h - What an artifact takes and predicts ---*- C++ -*-===//
//
// The artifact interface cleave-train (and cleave-check --data) feeds from a
// dataset: one f32 input and class labels or regression targets, or a
// language model's token ids and a label per token, checked against the
// artifact and against the data before any training.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_MODELINTERFACE_H
#define CLEAVE_TOOLS_MODELINTERFACE_H

#include "cleave/runtime.hpp"
#include "data/Dataset.h"

#include <cstdint>
#include <string>

namespace cleave::train {

/// Which of the artifact's inputs and outputs carry what.
struct ModelInterface {
  int64_t microBatch = 0;
  /// One rank's samples per window: the artifact's N x B, or fewer when the
  /// last micro-batch of each window is short
  /// (cleave_artifact_window_samples).
  int64_t windowSamples = 0;
  /// The artifact's windows end with a short micro-batch: its N is fixed
  /// and each window holds windowSamples samples.
  bool shortLastMicroBatch = false;
  /// Indices into the artifact's user inputs (cleave_artifact_input order).
  size_t inputIndex = 0, targetIndex = 0;
  cleave::TensorInfo input, target;
  /// A classifier takes i64 class labels and predicts [B, classes] logits;
  /// otherwise the model regresses f32 targets (an mse loss) and predicts
  /// values of the targets' shape.
  bool classifier = true;
  /// eval_step's output and, for a classifier, its number of classes (for
  /// a language model, its vocabulary).
  std::string prediction;
  int64_t classes = 0;
  /// A language model: integer ids [B, T] in, logits [B, T, classes] out,
  /// and i64 labels [B, T] with a loss per token (`classifier` is true too).
  bool tokens = false;
  /// The input is integer ids [B, T] (fed as int64, never standardised): a
  /// language model's, or a sequence classifier's (i64 labels [B], one per
  /// sequence, and [B, classes] predictions, `tokens` false).
  bool ids = false;
  /// For a language model or a sequence classifier: T, the labels' ignore
  /// index (language models), and the bound of the ids (the rows of the
  /// embedding they index; 0 if the manifest records none).
  int64_t sequenceLength = 0;
  int64_t ignoreIndex = -100;
  int64_t idBound = 0;
};

/// Checks the parts of the interface that do not depend on the data: one f32
/// input (or i64 ids [B, T]), and either i64 [B] labels and an eval_step
/// with one f32 [B, C] output, or f32 targets (named "targets", as cleave-compile --loss=mse
/// names them) and an eval_step with one output of their shape; or, for a
/// language model, i64 ids [B, T], i64 labels [B, T] with an
/// ignore index and an eval_step with one f32 [B, T, V] output. `path`
/// names the artifact in errors. Throws tools::Error.
ModelInterface inspectModel(const cleave::Artifact &artifact,
                            const std::string &path);

/// Refuses (tools::Error) an artifact whose session would hold more than
/// `budget` bytes: its manifest's memory report, plus the runtime's fixed
/// overhead on the CPU (docs/design/memory.md). Both numbers are named.
void checkMemoryBudget(const cleave::Artifact &artifact,
                       const std::string &path, int64_t budget);

/// How to load the dataset at `dataPath` (of `format`) for `m`: idx and
/// CIFAR-10 datasets have 10 classes, NumPy labels may be any of the
/// model's, a language model's NumPy data is a token dataset of its T,
/// vocabulary, id bound and ignore index; `limit` as DatasetOptions::limit.
data::DatasetOptions datasetOptionsFor(const ModelInterface &m,
                                       data::DataFormat format, int64_t limit);

/// Checks that `dataset` is what the artifact at `path` takes: inputs of the
/// model's per-sample shape (up to dimensions of size 1, or flattened), and
/// class labels in range for a classifier or f32 targets of the model's
/// shape for a regression. Throws tools::Error.
void checkData(const ModelInterface &m, const data::Dataset &dataset,
               const std::string &path);

} // namespace cleave::train

#endif // CLEAVE_TOOLS_MODELINTERFACE_H

//===- RandomBatch.h - Random micro-batches for any artifact ---*- C++ -*-===//
//
// The benchmarks' data: Gaussian f32 inputs and class labels or token ids
// spread over each input's index_bound, one full micro-batch, made through
// the runtime's public API (cleave-bench, cleave-roofline --paired).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_BENCH_RANDOMBATCH_H
#define CLEAVE_BENCH_RANDOMBATCH_H

#include "cleave/runtime.hpp"

#include <nlohmann/json.hpp>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace cleave::bench {

/// Random data for every user input of the artifact, as one full batch.
/// `batch` points into `inputs`: movable, not copyable.
struct RandomBatch {
  RandomBatch() = default;
  RandomBatch(RandomBatch &&) = default;
  RandomBatch &operator=(RandomBatch &&) = default;
  RandomBatch(const RandomBatch &) = delete;
  RandomBatch &operator=(const RandomBatch &) = delete;

  /// The first `rows` samples of every input: a window's short last
  /// micro-batch (window_samples), as cleave-train feeds it.
  cleave::Batch firstRows(int64_t rows) const {
    cleave::Batch first(rows);
    for (const auto &in : inputs)
      first.add(in.data(),
                in.size() / size_t(batch.view().samples) * size_t(rows));
    return first;
  }

  std::vector<std::vector<unsigned char>> inputs;
  cleave::Batch batch;
};

inline RandomBatch randomBatch(const cleave::Artifact &artifact,
                               int64_t microBatch) {
  RandomBatch d;
  d.batch.setSamples(microBatch);
  size_t count = 0;
  cleave_artifact_num_inputs(artifact.get(), &count);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  // Class labels and token ids must lie below their input's index_bound.
  const char *manifestText = nullptr;
  cleave_artifact_manifest(artifact.get(), &manifestText);
  nlohmann::json manifest = nlohmann::json::parse(manifestText);
  for (size_t i = 0; i < count; ++i) {
    cleave_tensor_info info;
    cleave_artifact_input(artifact.get(), i, &info);
    size_t elements = 1;
    for (int32_t r = 0; r < info.rank; ++r)
      elements *= size_t(info.shape[r]);
    std::vector<unsigned char> bytes;
    if (info.dtype == CLEAVE_DTYPE_F32) {
      std::vector<float> v(elements);
      for (float &x : v)
        x = normal(rng);
      bytes.assign(reinterpret_cast<unsigned char *>(v.data()),
                   reinterpret_cast<unsigned char *>(v.data() + elements));
    } else if (info.dtype == CLEAVE_DTYPE_I64) {
      // Class labels or token ids: spread over [0, index_bound).
      int64_t bound = 10;
      for (const nlohmann::json &in : manifest["inputs"])
        if (in.value("name", "") == info.name)
          bound = in.value("index_bound", bound);
      std::vector<int64_t> v(elements);
      for (size_t k = 0; k < elements; ++k)
        v[k] = int64_t(k) % bound;
      bytes.assign(reinterpret_cast<unsigned char *>(v.data()),
                   reinterpret_cast<unsigned char *>(v.data() + elements));
    } else {
      throw std::runtime_error("input " + std::to_string(i) +
                               " has an unsupported dtype");
    }
    d.inputs.push_back(std::move(bytes));
  }
  for (const auto &in : d.inputs)
    d.batch.add(in.data(), in.size());
  return d;
}

} // namespace cleave::bench

#endif // CLEAVE_BENCH_RANDOMBATCH_H

//===- KernelSpec.h - Reading manifest kernel entries -----------*- C++ -*-===//
//
// Typed, validated access to one entry of the manifest's `kernels` array.
// Every check that can be made on an entry is made here, at session creation,
// so that kernels never fail at call time.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_KERNELSPEC_H
#define CLEAVE_RUNTIME_KERNELS_KERNELSPEC_H

#include "schema/Schema.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace cleave::rt {

/// A manifest kernel entry that cannot be turned into a primitive. The message
/// is complete (it names the kernel); KernelContext::create reports it as is.
class KernelSpecError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Reads the fields of one kernel entry with the checks the ABI implies: the
/// field exists, has the right JSON type and lies in range. Fields are read
/// once each; `finish` then rejects fields no reader asked for, so that a
/// misspelt or misplaced attribute is an error instead of a silent default.
class KernelSpec {
public:
  /// `entry` must outlive the spec; `header` is its id and op, read by
  /// readKernelHeader.
  KernelSpec(const nlohmann::json &entry, const struct KernelHeader &header);

  int64_t id() const { return id_; }
  /// The op's spelling, for messages.
  const std::string &op() const { return op_; }
  abi::KernelOp kernelOp() const { return kernelOp_; }

  /// An integer field in [min, INT32_MAX]. The upper bound keeps every shape
  /// formula computed from fields free of int64 overflow.
  int64_t integer(const char *key, int64_t min);
  /// An array of exactly N integers, each in [min, INT32_MAX].
  template <size_t N>
  std::array<int64_t, N> integers(const char *key, int64_t min) {
    std::array<int64_t, N> out{};
    std::vector<int64_t> values = integerList(key, min, N);
    std::copy(values.begin(), values.end(), out.begin());
    return out;
  }
  bool boolean(const char *key);
  /// A finite number field.
  double number(const char *key);
  /// An optional boolean: `fallback` when absent.
  bool boolean(const char *key, bool fallback);
  /// A string field whose value must be one of `allowed`.
  std::string choice(const char *key,
                     std::initializer_list<const char *> allowed);
  std::string choice(const char *key, const std::vector<const char *> &allowed);
  /// An optional choice: `fallback` when absent.
  std::string choice(const char *key,
                     std::initializer_list<const char *> allowed,
                     const char *fallback);
  /// Whether the entry has `key`.
  bool has(const char *key) const { return entry_.contains(key); }

  /// Marks `key` as known without reading it (it was read elsewhere).
  void accept(const char *key) { seen_.insert(key); }
  /// Rejects the first field of the entry that no reader asked for.
  void finish() const;

  /// Throws KernelSpecError with `message` prefixed by the kernel's name.
  [[noreturn]] void fail(const std::string &message) const;

  /// Multiplies tensor dimensions, failing (naming `tensor`) when the tensor's
  /// size in bytes does not fit in int64.
  int64_t elementCount(const char *tensor,
                       std::initializer_list<int64_t> dims) const;

private:
  const nlohmann::json &field(const char *key);
  std::vector<int64_t> integerList(const char *key, int64_t min, size_t n);

  const nlohmann::json &entry_;
  int64_t id_;
  abi::KernelOp kernelOp_;
  std::string op_;
  std::set<std::string> seen_;
};

/// The `id` and `op` of one kernel-table entry, what decides how the rest of
/// it is read.
struct KernelHeader {
  int64_t id;
  abi::KernelOp op;
};

/// Reads and checks the `id` (in range for a table of `count` entries) and
/// `op` of entry `index`, with messages that name the entry by its position
/// until it has an id: the one reader of both kernel libraries. Throws
/// KernelSpecError.
KernelHeader readKernelHeader(const nlohmann::json &entry, size_t index,
                              size_t count);

/// Reads every field of an entry as its op's column of the `Kernel` rows of
/// artifact_schema.def says, in row order: a required field must be there
/// and in range, an absent optional one takes the row's default, an ignored
/// one is accepted; then `finish` refuses a key the op does not take.
abi::Kernel readKernel(KernelSpec &spec, abi::KernelOp op);

/// Reads every entry of a kernel table as the kernel libraries do (ids,
/// ops, each op's fields and rules) without building a kernel: the message
/// of the first fault, as KernelContext::create would report it, or empty.
std::string checkKernelTable(const nlohmann::json &kernels);

/// Name of a JSON value's type for messages ("string", "array", ...).
const char *jsonTypeName(const nlohmann::json &value);

/// Output size along one spatial dimension of a windowed op (convolution,
/// pooling): floor((in + padBegin + padEnd - effectiveKernel) / stride) + 1,
/// with effectiveKernel = dilation * (kernel - 1) + 1 and a 1-based dilation.
/// Returns 0 when the window does not fit in the padded input at all.
int64_t windowedOutputSize(int64_t in, int64_t kernel, int64_t stride,
                           int64_t padBegin, int64_t padEnd, int64_t dilation);

/// Checks that the spatial fields of a windowed op agree: `oh`/`ow` match the
/// output-size formula. `kernel`, `strides`, `dilations` are (h, w) pairs and
/// `padding` is (top, left, bottom, right), as in the manifest.
void checkWindowedShape(const KernelSpec &spec, int64_t h, int64_t w,
                        int64_t oh, int64_t ow,
                        const std::array<int64_t, 2> &kernel,
                        const std::array<int64_t, 2> &strides,
                        const std::array<int64_t, 4> &padding,
                        const std::array<int64_t, 2> &dilations);

/// The fields of a `matmul` entry, read, finished and checked (shapes,
/// `accumulate` only without bias or activation): what every backend's
/// matmul kernel is built from.
struct MatmulEntry {
  int64_t batch, m, k, n;
  bool transA, transB, bBatched, bias, relu, accumulate;
  /// `"math": "bf16"`.
  bool bf16;
  /// `"a_type"`, `"b_type"`: the operand is a dense bf16 buffer (math bf16
  /// only).
  bool aBf16, bBf16;
};
MatmulEntry readMatmulEntry(KernelSpec &spec);

/// The fields of a `conv2d_*` entry (which of the three its op says), read,
/// finished and checked (groups
/// divide the channels, the output size matches the window formula).
struct ConvEntry {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  std::array<int64_t, 2> strides, dilations;
  /// top, left, bottom, right.
  std::array<int64_t, 4> padding;
  /// Forward only.
  bool bias = false, relu = false;
  /// Backward-weights only.
  bool accumulate = false;
  bool bf16;
  /// `"src_type"` (forward, backward-weights), `"diff_dst_type"`
  /// (backward-data, backward-weights): the operand is a dense bf16 buffer
  /// (math bf16 only).
  bool srcBf16 = false, diffDstBf16 = false;
  /// `"wei_type"` (forward, backward-data): the weights are a dense bf16
  /// buffer; `"dst_type"`: the result (dst, diff_src or diff_weights) is
  /// written as one, which excludes bias, activation and accumulate (math
  /// bf16 only). cuDNN needs both for a bf16 convolution.
  bool weiBf16 = false, dstBf16 = false;
};
ConvEntry readConvEntry(KernelSpec &spec);

/// The fields of a pooling entry, read, finished and checked against the
/// window formula. `count_include_pad` is optional for max pooling (false).
struct PoolEntry {
  int64_t n, c, h, w, oh, ow;
  std::array<int64_t, 2> kernel, strides, dilations;
  std::array<int64_t, 4> padding;
  bool includePad;
};
PoolEntry readPoolEntry(KernelSpec &spec);

/// The fields of an `sdpa_fwd` or `sdpa_bwd` entry, read, finished and
/// checked (a finite non-zero scale, bf16 storage with bf16 math only).
struct SdpaEntry {
  /// The batch and head dimensions' product, T, S, D and Dv.
  int64_t batch, seqQ, seqKv, headDim, valueDim;
  double scale;
  bool causal, mask;
  /// The ratio of dropout on the probabilities, in [0, 1): 0 is none.
  double dropout;
  /// `"math": "bf16"`, which `"io_type": "bf16"` requires and implies.
  bool bf16;
};
SdpaEntry readSdpaEntry(KernelSpec &spec);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_KERNELSPEC_H

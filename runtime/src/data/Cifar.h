//===- Cifar.h - The binary version of CIFAR-10 -----------------*- C++ -*-===//
//
// cifar-10-binary.tar.gz unpacks to data_batch_1.bin .. data_batch_5.bin
// (the training split, 10000 images each) and test_batch.bin. Every file is
// a sequence of 3073-byte records: one label byte (0..9), then the 32x32
// image's red, green and blue planes, row-major: the [3, 32, 32] layout
// (channels first) of a PyTorch model input.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_CIFAR_H
#define CLEAVE_DATA_CIFAR_H

#include "Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cleave::data {

constexpr int64_t kCifarChannels = 3, kCifarRows = 32, kCifarCols = 32;
constexpr size_t kCifarImageBytes = 3 * 32 * 32;
constexpr size_t kCifarRecordBytes = 1 + kCifarImageBytes;
constexpr int64_t kCifarClasses = 10;

/// Parses the CIFAR-10 batch `bytes[0..size)` read from `path` (named in
/// errors), appending its images to `pixels` and its labels to `labels`.
/// The size must be a non-zero multiple of the record size and every label
/// below 10.
rt::Status parseCifarBatch(const std::string &path, const uint8_t *bytes,
                           size_t size, std::vector<uint8_t> &pixels,
                           std::vector<uint8_t> &labels);

/// The files of one split, in order: data_batch_1.bin .. data_batch_5.bin
/// for "train", test_batch.bin for "test".
std::vector<std::string> cifar10Files(bool train);

} // namespace cleave::data

#endif // CLEAVE_DATA_CIFAR_H

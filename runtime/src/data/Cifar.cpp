//===- Cifar.cpp - The binary version of CIFAR-10 -------------------------===//
//
// The files are copied into memory rather than mapped: labels and pixels
// interleave in the records, and the five training files together are only
// 150 MB.
//
//===----------------------------------------------------------------------===//

#include "Cifar.h"

#include "Dataset.h"
#include "MappedFile.h"

namespace cleave::data {

using rt::makeError;
using rt::Status;

std::vector<std::string> cifar10Files(bool train) {
  if (!train)
    return {"test_batch.bin"};
  std::vector<std::string> files;
  for (int i = 1; i <= 5; ++i)
    files.push_back("data_batch_" + std::to_string(i) + ".bin");
  return files;
}

Status parseCifarBatch(const std::string &path, const uint8_t *bytes,
                       size_t size, std::vector<uint8_t> &pixels,
                       std::vector<uint8_t> &labels) {
  if (size == 0 || size % kCifarRecordBytes != 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": ", size,
                     " bytes is not a whole number of CIFAR-10 records "
                     "(expected a multiple of ",
                     kCifarRecordBytes,
                     ": a label byte and a 3x32x32 image each)");
  const size_t records = size / kCifarRecordBytes;
  for (size_t r = 0; r < records; ++r)
    if (bytes[r * kCifarRecordBytes] >= kCifarClasses)
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ": label ",
                       int(bytes[r * kCifarRecordBytes]), " of record ", r,
                       " is out of range (expected 0 to 9; CIFAR-100's "
                       "records have two label bytes and are not read)");
  pixels.reserve(pixels.size() + records * kCifarImageBytes);
  labels.reserve(labels.size() + records);
  for (size_t r = 0; r < records; ++r) {
    const uint8_t *record = bytes + r * kCifarRecordBytes;
    labels.push_back(record[0]);
    pixels.insert(pixels.end(), record + 1, record + kCifarRecordBytes);
  }
  return Status::success();
}

Status loadCifar10Dataset(const std::string &dir, Split split,
                          const DatasetOptions &options, Dataset &out) {
  auto pixels = std::make_shared<std::vector<uint8_t>>();
  auto labels = std::make_shared<std::vector<uint8_t>>();
  const std::vector<std::string> files = cifar10Files(split == Split::Train);
  std::string first, last;
  for (const std::string &name : files) {
    const std::string path =
        dir + (dir.empty() || dir.back() == '/' ? "" : "/") + name;
    std::shared_ptr<const MappedFile> file;
    rt::Status opened = MappedFile::open(path, file);
    if (!opened.ok())
      return rt::Status(opened.code(),
                        opened.message() + " (the CIFAR-10 " +
                            splitName(split) + " split is " +
                            (files.size() == 1
                                 ? files[0]
                                 : files[0] + " .. " + files.back()) +
                            ")");
    CLEAVE_RETURN_IF_ERROR(
        parseCifarBatch(path, file->data(), file->size(), *pixels, *labels));
    (first.empty() ? first : last) = path;
  }

  Dataset d;
  d.format = "cifar-10";
  const std::string source = last.empty() ? first : first + " .. " + last;
  d.inputs.source = source;
  d.inputs.type = ElementType::U8;
  d.inputs.sampleShape = {kCifarChannels, kCifarRows, kCifarCols};
  d.inputs.count = int64_t(labels->size());
  d.inputs.data = pixels->data();
  d.targets.source = source;
  d.targets.type = ElementType::U8;
  d.targets.count = int64_t(labels->size());
  d.targets.data = labels->data();
  d.storage = {pixels, labels};
  CLEAVE_RETURN_IF_ERROR(finishDataset(options, d));
  out = std::move(d);
  return Status::success();
}

} // namespace cleave::data

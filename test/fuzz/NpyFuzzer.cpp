//===- NpyFuzzer.cpp - Fuzzing the NumPy and CIFAR-10 readers -------------===//
//
// The readers of cleave-train's other data formats, on bytes in memory as
// they get them from a mapped file: the input is parsed as a .npy array, as
// an .npz archive (every member listed, deflated ones inflated, each member
// parsed as .npy) and as a CIFAR-10 batch. A refusal must name the input; an
// accepted array must describe exactly the bytes it points to.
//
//===----------------------------------------------------------------------===//

#include "data/Cifar.h"
#include "data/Npy.h"
#include "data/Zip.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace cleave;

namespace {

void expectNamed(const rt::Status &status, const std::string &name) {
  if (!status.ok() && status.message().rfind(name, 0) != 0)
    std::abort();
}

void parseNpyChecked(const std::string &name, const uint8_t *bytes,
                     size_t size) {
  data::NpyArray array;
  rt::Status status = data::parseNpy(name, bytes, size, array);
  expectNamed(status, name);
  if (!status.ok())
    return;
  uint64_t elements = 1;
  for (int64_t d : array.shape) {
    if (d < 0)
      std::abort();
    elements *= uint64_t(d);
  }
  if (array.data < bytes || array.data + array.bytes != bytes + size ||
      elements * data::elementSize(array.type) != array.bytes)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  parseNpyChecked("x.npy", bytes, size);

  std::vector<data::ZipMember> members;
  rt::Status status = data::parseZip("d.npz", bytes, size, members);
  expectNamed(status, "d.npz");
  if (status.ok()) {
    for (const data::ZipMember &m : members) {
      if (m.dataOffset > size || m.compressedSize > size - m.dataOffset)
        std::abort();
      std::string name = "d.npz:" + m.name;
      if (m.method == 0) {
        parseNpyChecked(name, bytes + m.dataOffset, size_t(m.compressedSize));
        continue;
      }
      std::vector<uint8_t> inflated;
      rt::Status s = data::inflateZipMember("d.npz", bytes, m, inflated);
      expectNamed(s, "d.npz");
      if (s.ok()) {
        if (inflated.size() != m.size)
          std::abort();
        parseNpyChecked(name, inflated.data(), inflated.size());
      }
    }
  }

  std::vector<uint8_t> pixels, labels;
  status = data::parseCifarBatch("b.bin", bytes, size, pixels, labels);
  expectNamed(status, "b.bin");
  if (status.ok() && (labels.size() * data::kCifarImageBytes != pixels.size() ||
                      labels.size() * data::kCifarRecordBytes != size))
    std::abort();
  return 0;
}

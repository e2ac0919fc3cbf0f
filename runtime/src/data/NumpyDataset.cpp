//===- NumpyDataset.cpp - Datasets of .npy and .npz files -----------------===//
//
// The three layouts (Dataset.h) name, for each split, the file and the
// member of the inputs `x` and of the targets `y`. Files are memory-mapped;
// an array stored in an .npz as it is (np.savez) is a view of the mapping,
// a deflated one (np.savez_compressed) is inflated into memory.
//
//===----------------------------------------------------------------------===//

#include "Dataset.h"

#include "MappedFile.h"
#include "Npy.h"
#include "Zip.h"

#include <map>

namespace cleave::data {

using rt::makeError;
using rt::Status;

namespace {

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

/// Where one array of a split is: a .npy file, or a member of an .npz.
struct ArrayLocation {
  std::string path;
  /// The key of the array in the .npz archive; empty for a .npy file.
  std::string key;
};

/// Maps files once, also when both arrays of a split are in one archive.
class Files {
public:
  Status open(const std::string &path, std::shared_ptr<const MappedFile> &out) {
    auto it = files_.find(path);
    if (it == files_.end()) {
      std::shared_ptr<const MappedFile> file;
      CLEAVE_RETURN_IF_ERROR(MappedFile::open(path, file));
      it = files_.emplace(path, std::move(file)).first;
    }
    out = it->second;
    return Status::success();
  }

private:
  std::map<std::string, std::shared_ptr<const MappedFile>> files_;
};

/// Reads the array at `where`; `storage` receives what keeps its elements
/// alive and `source` the name that messages use.
Status readArray(Files &files, const ArrayLocation &where, NpyArray &out,
                 std::shared_ptr<const void> &storage, std::string &source) {
  std::shared_ptr<const MappedFile> file;
  CLEAVE_RETURN_IF_ERROR(files.open(where.path, file));
  if (where.key.empty()) {
    source = where.path;
    CLEAVE_RETURN_IF_ERROR(
        parseNpy(where.path, file->data(), file->size(), out));
    storage = file;
    return Status::success();
  }
  std::vector<ZipMember> members;
  CLEAVE_RETURN_IF_ERROR(
      parseZip(where.path, file->data(), file->size(), members));
  // np.savez names the member `key.npy`; np.load also finds a bare `key`.
  const ZipMember *member = nullptr;
  for (const std::string &name : {where.key + ".npy", where.key})
    for (const ZipMember &m : members)
      if (!member && m.name == name)
        member = &m;
  if (!member) {
    std::string listed;
    for (const ZipMember &m : members)
      listed += (listed.empty() ? "" : ", ") + m.name;
    return makeError(CLEAVE_INVALID_ARGUMENT, where.path, ": no array '",
                     where.key, "' (expected a member ", where.key,
                     ".npy; the archive holds ",
                     listed.empty() ? "nothing" : listed, ")");
  }
  source = where.path + ":" + member->name;
  if (member->method == 0) {
    CLEAVE_RETURN_IF_ERROR(parseNpy(source, file->data() + member->dataOffset,
                                    size_t(member->size), out));
    storage = file;
    return Status::success();
  }
  auto inflated = std::make_shared<std::vector<uint8_t>>();
  CLEAVE_RETURN_IF_ERROR(
      inflateZipMember(where.path, file->data(), *member, *inflated));
  CLEAVE_RETURN_IF_ERROR(
      parseNpy(source, inflated->data(), inflated->size(), out));
  storage = inflated;
  return Status::success();
}

/// Fills `out` from the parsed `array`: its first dimension counts samples.
Status toSampleArray(const std::string &source, const NpyArray &array,
                     SampleArray &out) {
  if (array.shape.empty())
    return makeError(CLEAVE_INVALID_ARGUMENT, source, ": a ",
                     elementTypeName(array.type),
                     " scalar (expected an array with one row per sample)");
  out.source = source;
  out.type = array.type;
  out.count = array.shape[0];
  out.sampleShape.assign(array.shape.begin() + 1, array.shape.end());
  out.data = array.data;
  return Status::success();
}

} // namespace

Status loadNumpyDataset(const std::string &path, DataFormat format, Split split,
                        const DatasetOptions &options, Dataset &out) {
  const std::string name = splitName(split);
  ArrayLocation x, y;
  switch (format) {
  case DataFormat::NpzFile:
    x = {path, "x_" + name};
    y = {path, "y_" + name};
    break;
  case DataFormat::NpzDir:
    x = {joinPath(path, name + ".npz"), "x"};
    y = {joinPath(path, name + ".npz"), "y"};
    break;
  case DataFormat::NpyDir:
    x = {joinPath(path, "x_" + name + ".npy"), ""};
    y = {joinPath(path, "y_" + name + ".npy"), ""};
    break;
  default:
    return makeError(CLEAVE_INTERNAL, path, ": not a NumPy dataset layout");
  }

  Files files;
  Dataset d;
  d.format = formatName(format);
  NpyArray xs, ys;
  std::shared_ptr<const void> xStorage, yStorage;
  std::string xSource, ySource;
  CLEAVE_RETURN_IF_ERROR(readArray(files, x, xs, xStorage, xSource));
  CLEAVE_RETURN_IF_ERROR(toSampleArray(xSource, xs, d.inputs));
  // Token ids are any integer type (finishDataset checks them).
  if (!options.tokens && xs.type != ElementType::U8 &&
      xs.type != ElementType::F32)
    return makeError(CLEAVE_INVALID_ARGUMENT, xSource, ": ",
                     elementTypeName(xs.type), " inputs of shape ",
                     shapeString(xs.shape),
                     " (expected float32, or uint8 pixels that become "
                     "p / 255; integer token ids need a model that takes "
                     "them: i64 [B, T] ids)");
  CLEAVE_RETURN_IF_ERROR(readArray(files, y, ys, yStorage, ySource));
  CLEAVE_RETURN_IF_ERROR(toSampleArray(ySource, ys, d.targets));
  d.storage = {xStorage, yStorage};
  CLEAVE_RETURN_IF_ERROR(finishDataset(options, d));
  out = std::move(d);
  return Status::success();
}

} // namespace cleave::data

//===- Npy.cpp - NumPy's .npy array format --------------------------------===//
//
// The header is parsed as the subset of Python literals numpy writes (and
// numpy's own reader, a safe literal_eval, accepts): a dict with the three
// keys, string values in single or double quotes, True/False, and a tuple
// of non-negative integers (Python 2's `3L` included).
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstring>

namespace cleave::data {

using rt::makeError;
using rt::Status;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

/// A cursor over the header text; every method reports errors through
/// `error`, naming what was expected at which offset.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text_(text) {}

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool atEnd() {
    skipSpace();
    return pos_ == text_.size();
  }
  bool parseString(std::string &out) {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return fail("a quoted string");
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string::npos)
      return fail("the end of a string");
    out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool parseBool(bool &out) {
    skipSpace();
    for (bool value : {true, false}) {
      const char *word = value ? "True" : "False";
      size_t n = std::strlen(word);
      if (text_.compare(pos_, n, word) == 0) {
        pos_ += n;
        out = value;
        return true;
      }
    }
    return fail("True or False");
  }
  bool parseShape(std::vector<int64_t> &out) {
    out.clear();
    if (!consume('('))
      return fail("a shape tuple");
    while (!consume(')')) {
      skipSpace();
      int64_t dim = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (dim > (int64_t(1) << 50))
          return fail("a dimension below 2^50");
        dim = dim * 10 + (text_[pos_++] - '0');
        ++digits;
      }
      if (digits == 0)
        return fail("a non-negative integer dimension");
      if (pos_ < text_.size() && text_[pos_] == 'L')
        ++pos_;
      out.push_back(dim);
      if (!consume(',')) {
        if (!consume(')'))
          return fail("',' or ')' in the shape");
        break;
      }
    }
    return true;
  }

  /// What was expected where, once a parse method returned false.
  std::string error() const { return error_; }

private:
  bool fail(const char *expected) {
    error_ = std::string("expected ") + expected + " at offset " +
             std::to_string(pos_) + " of the header";
    return false;
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string error_;
};

uint32_t littleEndian(const uint8_t *p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= uint32_t(p[i]) << (8 * i);
  return v;
}

/// Maps a dtype descriptor to an element type, or says why it is refused.
Status parseDescr(const std::string &name, const std::string &descr,
                  ElementType &out) {
  struct Known {
    const char *descr;
    ElementType type;
  };
  // '|' (no byte order) is what numpy writes for one-byte types; '<' and '='
  // on a little-endian machine mean the same for them.
  static const Known known[] = {
      {"|u1", ElementType::U8},  {"<u1", ElementType::U8},
      {"=u1", ElementType::U8},  {"<u2", ElementType::U16},
      {"<i4", ElementType::I32}, {"<i8", ElementType::I64},
      {"<f4", ElementType::F32},
  };
  for (const Known &k : known)
    if (descr == k.descr) {
      out = k.type;
      return Status::success();
    }
  if (!descr.empty() && descr[0] == '>')
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": big-endian dtype '",
                     descr,
                     "' (expected little-endian data: convert with "
                     "arr.astype(arr.dtype.newbyteorder('<')))");
  return makeError(CLEAVE_INVALID_ARGUMENT, name, ": unsupported dtype '",
                   descr,
                   "' (expected uint8 '|u1', uint16 '<u2', int32 '<i4', "
                   "int64 '<i8' or float32 '<f4')");
}

} // namespace

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Status parseNpy(const std::string &name, const uint8_t *bytes, size_t size,
                NpyArray &out) {
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0)
    return makeError(CLEAVE_INVALID_ARGUMENT, name,
                     ": not a .npy file (it does not start with the magic "
                     "\"\\x93NUMPY\")");
  const unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": .npy format version ",
                     major, ".", minor, " (expected 1.0, 2.0 or 3.0)");
  const size_t lengthBytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicSize + 2 + lengthBytes;
  if (size < prefix)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": truncated .npy file (",
                     size, " bytes, shorter than its ", prefix,
                     "-byte preamble)");
  const uint64_t headerLength = littleEndian(bytes + 8, lengthBytes);
  const uint64_t dataOffset = prefix + headerLength;
  if (size < dataOffset)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": truncated .npy file (",
                     size, " bytes, shorter than its ", dataOffset,
                     "-byte header)");
  const std::string header(reinterpret_cast<const char *>(bytes + prefix),
                           size_t(headerLength));

  HeaderParser p(header);
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  bool seenDescr = false, seenOrder = false, seenShape = false;
  auto bad = [&](const std::string &why) {
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": malformed .npy header (",
                     why, ")");
  };
  if (!p.consume('{'))
    return bad("expected '{' at its start");
  while (!p.consume('}')) {
    std::string key;
    if (!p.parseString(key))
      return bad(p.error());
    if (!p.consume(':'))
      return bad("expected ':' after '" + key + "'");
    bool parsed;
    if (key == "descr") {
      parsed = p.parseString(descr);
      seenDescr = true;
    } else if (key == "fortran_order") {
      parsed = p.parseBool(fortranOrder);
      seenOrder = true;
    } else if (key == "shape") {
      parsed = p.parseShape(shape);
      seenShape = true;
    } else {
      return bad("unexpected key '" + key + "'");
    }
    if (!parsed)
      return bad(p.error() + " (the value of '" + key + "')");
    if (!p.consume(',')) {
      if (!p.consume('}'))
        return bad("expected ',' or '}' after the value of '" + key + "'");
      break;
    }
  }
  if (!p.atEnd())
    return bad("unexpected text after the dict");
  if (!seenDescr || !seenOrder || !seenShape)
    return bad(std::string("missing key '") +
               (!seenDescr   ? "descr"
                : !seenOrder ? "fortran_order"
                             : "shape") +
               "'");

  ElementType type = ElementType::U8;
  CLEAVE_RETURN_IF_ERROR(parseDescr(name, descr, type));
  if (fortranOrder)
    return makeError(CLEAVE_INVALID_ARGUMENT, name,
                     ": Fortran-order array of shape ", shapeString(shape),
                     " (expected C order: save np.ascontiguousarray(arr))");

  uint64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && elements > kMaxNpyBytes / uint64_t(dim))
      return makeError(CLEAVE_INVALID_ARGUMENT, name, ": shape ",
                       shapeString(shape), " describes more than ",
                       kMaxNpyBytes, " bytes");
    elements *= uint64_t(dim);
  }
  const uint64_t dataBytes = elements * elementSize(type);
  if (dataBytes > kMaxNpyBytes)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": shape ",
                     shapeString(shape), " describes more than ", kMaxNpyBytes,
                     " bytes");
  const uint64_t have = size - dataOffset;
  if (have < dataBytes)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": truncated .npy file (",
                     elementTypeName(type), " ", shapeString(shape), " needs ",
                     dataBytes, " bytes of data, the file has ", have, ")");
  if (have > dataBytes)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": ", have - dataBytes,
                     " unexpected bytes after the data of ",
                     elementTypeName(type), " ", shapeString(shape),
                     " (expected exactly ", dataBytes, ")");
  out.type = type;
  out.shape = std::move(shape);
  out.data = bytes + dataOffset;
  out.bytes = size_t(dataBytes);
  return Status::success();
}

} // namespace cleave::data

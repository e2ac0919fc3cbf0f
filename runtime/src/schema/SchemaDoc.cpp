//===- SchemaDoc.cpp - cleave-schema-doc: the manifest's tables -----------===//
//
// Prints the tables of docs/design/runtime-abi.md that artifact_schema.def
// declares: one per manifest object (key, type, presence per case of its
// discriminator, who writes it, meaning) and the enums' spellings.
//
//   cleave-schema-doc               the tables, on stdout
//   cleave-schema-doc --check FILE  fails if FILE's generated section differs
//   cleave-schema-doc --update FILE rewrites FILE's generated section
//
// The section lies between kBegin and kEnd; everything else in FILE is
// prose, left as it is.
//
//===----------------------------------------------------------------------===//

#include "schema/Schema.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace cleave::abi;

namespace {

constexpr std::string_view kBegin =
    "<!-- BEGIN GENERATED: cleave-schema-doc -->";
constexpr std::string_view kEnd = "<!-- END GENERATED -->";

/// The HTML anchor of struct `name`'s table.
std::string anchor(const std::string &name) {
  std::string out = "schema-";
  for (char c : name)
    out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Where struct `name` is documented, as a markdown link.
std::string structLink(const std::string &name) {
  const StructDesc *s = findStruct(name.c_str());
  std::string path = s ? s->path : name;
  return "[`" + (path.empty() ? std::string("(top level)") : path) + "`](#" +
         anchor(name) + ")";
}

std::string typeText(const FieldDesc &f) {
  std::string arg = typeArgument(f);
  switch (f.type) {
  case TypeKind::Int:
    return "integer";
  case TypeKind::KInt:
    return "integer ≤ 2³¹−1";
  case TypeKind::Number:
    return "number";
  case TypeKind::Bool:
    return "boolean";
  case TypeKind::String:
    return "string";
  case TypeKind::Enum:
    return "string: [" + arg + "](#schema-enums)";
  case TypeKind::Shape:
    return "list of integers ≥ 0";
  case TypeKind::Ints:
    return arg == "0" ? "list of integers" : arg + " integers";
  case TypeKind::Strings:
    return "list of strings";
  case TypeKind::List:
    return "list of " + structLink(arg);
  case TypeKind::Map:
    return "object of " + structLink(arg) + " by name";
  case TypeKind::Object:
    return structLink(arg);
  }
  return f.typeText;
}

std::string checkText(const Check &c) {
  switch (c.kind) {
  case CheckKind::None:
    return "";
  case CheckKind::Min:
    return ", ≥ " + std::to_string(c.min);
  case CheckKind::NonEmpty:
    return ", not empty";
  case CheckKind::SmArch:
    return ", `sm_XY` or `sm_XYa`";
  }
  return "";
}

std::string presenceText(const Presence &p) {
  switch (p.kind) {
  case PresenceKind::Required:
    return "R";
  case PresenceKind::Optional:
    return *p.defaultText ? std::string("O: `") + p.defaultText + "`" : "O";
  case PresenceKind::Ignored:
    return "I";
  case PresenceKind::Forbidden:
    return "–";
  }
  return "?";
}

/// A table cell: pipes would split it.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

void printStruct(std::ostream &os, const StructDesc &s) {
  os << "<a id=\"" << anchor(s.name) << "\"></a>\n\n#### `"
     << (*s.path ? s.path : "(top level)") << "` (" << s.name << ")\n\n"
     << s.doc;
  const size_t docLength = std::strlen(s.doc);
  if (docLength > 0 && s.doc[docLength - 1] != '.')
    os << '.';
  if (s.strictness == Strictness::Strict)
    os << " Keys not listed here are refused.";
  os << "\n\n";
  const EnumDesc *columns = s.columns();
  os << "| key | type |";
  if (columns)
    for (size_t c = 0; c < columns->count; ++c)
      os << " `" << columns->cases[c].spelling << "` |";
  else
    os << " presence |";
  os << " written by | meaning |\n|---|---|";
  for (size_t c = 0; c < s.numColumns(); ++c)
    os << "---|";
  os << "---|---|\n";
  for (size_t i = 0; i < s.count; ++i) {
    const FieldDesc &f = s.fields[i];
    os << "| `" << f.key << "` | " << cell(typeText(f) + checkText(f.check))
       << " |";
    for (size_t c = 0; c < f.presence.count; ++c)
      os << " " << cell(presenceText(f.presence.codes[c])) << " |";
    os << " " << (f.origin == Origin::Written ? "the writer" : "a pass")
       << " | " << cell(f.doc) << " |\n";
  }
  os << "\n";
}

std::string generate() {
  std::ostringstream os;
  os << kBegin << "\n";
  os << "<!-- From runtime/include/cleave/artifact_schema.def; edit that file "
        "and run cleave-schema-doc --update (ninja update-abi-docs). -->\n\n";
  os << "Presence, per case of the object's discriminator: **R** required; "
        "**O** optional (`O: v`: absent means `v`; `O`: a default computed "
        "from other fields, which the meaning states); **I** allowed, "
        "checked and kept, but not used by the runtime; **–** not allowed. "
        "\"The writer\" is the compiler's manifest writer; \"a pass\" is an "
        "earlier pass, through `train.manifest`.\n\n";
  // Depth first from the top level, each struct after the one that holds
  // it (the table lists them leaf first); any left over last.
  std::vector<const StructDesc *> order;
  std::function<void(const StructDesc &)> visit = [&](const StructDesc &s) {
    if (std::find(order.begin(), order.end(), &s) != order.end())
      return;
    order.push_back(&s);
    for (size_t i = 0; i < s.count; ++i) {
      const FieldDesc &f = s.fields[i];
      if (f.type == TypeKind::List || f.type == TypeKind::Map ||
          f.type == TypeKind::Object)
        if (const StructDesc *n = nestedStruct(f))
          visit(*n);
    }
  };
  for (const StructDesc &s : kStructs)
    if (!*s.path)
      visit(s);
  for (const StructDesc &s : kStructs)
    visit(s);
  for (const StructDesc *s : order)
    printStruct(os, *s);
  os << "<a id=\"schema-enums\"></a>\n\n#### Enums\n\n| enum | spelling | "
        "meaning |\n|---|---|---|\n";
  for (const EnumDesc &e : kEnums)
    for (size_t c = 0; c < e.count; ++c)
      os << "| " << (c == 0 ? std::string(e.name) : std::string()) << " | `"
         << e.cases[c].spelling << "` | " << cell(e.cases[c].doc) << " |\n";
  os << "\n" << kEnd << "\n";
  return os.str();
}

bool readFile(const char *path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

int usage() {
  std::cerr << "usage: cleave-schema-doc [--check FILE | --update FILE]\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  const std::string tables = generate();
  if (argc == 1) {
    std::cout << tables;
    return 0;
  }
  if (argc != 3)
    return usage();
  const std::string_view mode = argv[1];
  const char *path = argv[2];
  if (mode != "--check" && mode != "--update")
    return usage();
  std::string text;
  if (!readFile(path, text)) {
    std::cerr << "cleave-schema-doc: cannot read " << path << ": "
              << std::strerror(errno) << "\n";
    return 1;
  }
  const size_t begin = text.find(kBegin);
  const size_t endMarker = text.find(kEnd);
  if (begin == std::string::npos || endMarker == std::string::npos ||
      endMarker < begin) {
    std::cerr << "cleave-schema-doc: " << path << " has no section between '"
              << kBegin << "' and '" << kEnd << "' for the generated tables\n";
    return 1;
  }
  size_t end = endMarker + kEnd.size();
  if (end < text.size() && text[end] == '\n')
    ++end;
  const std::string current = text.substr(begin, end - begin);
  if (mode == "--check") {
    if (current == tables)
      return 0;
    // The first line that differs, to say where.
    std::istringstream a(current), b(tables);
    std::string la, lb;
    size_t line =
        1 + size_t(std::count(text.begin(), text.begin() + long(begin), '\n'));
    while (std::getline(a, la) && std::getline(b, lb) && la == lb)
      ++line;
    std::cerr << path << ":" << line
              << ": the manifest tables differ from artifact_schema.def; run "
                 "cleave-schema-doc --update "
              << path << " (or ninja update-abi-docs)\n  in the file: " << la
              << "\n  generated:   " << lb << "\n";
    return 1;
  }
  text.replace(begin, end - begin, tables);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) {
    std::cerr << "cleave-schema-doc: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}

#include "sim/support/yaml_input.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/support/input_file.h"
#include "sim/support/text.h"

namespace simloop::config {

namespace fs = std::filesystem;

namespace {

// The length of the UTF-8 sequence starting at s[i] if it is valid and not
// a control character, else 0.
size_t text_char(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return (c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  // Overlong forms, surrogates, past U+10FFFF, and C1 controls but NEL.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  if (cp >= 0x80 && cp < 0xa0 && cp != 0x85) return 0;
  return n;
}

[[noreturn]] void fail_at(const std::string& name, int line, int col, const std::string& msg) {
  throw ConfigError(fmt::format("{}:{}:{}: {}", name, line, col, msg));
}

[[noreturn]] void fail_at(const std::string& name, const YAML::Mark& m, const std::string& msg) {
  if (m.is_null()) fail_at(name, 1, 1, msg);
  fail_at(name, m.line + 1, m.column + 1, msg);
}

// Walks every node as a reader would, following aliases, and refuses what
// would make that walk unbounded or the file ambiguous.
class Walker {
 public:
  Walker(const std::string& name, const YamlLimits& limits) : name_(name), limits_(limits) {}

  // `use` is where the node is used: its key in a map, else its own mark
  // (an alias has its anchor's mark).
  void walk(const YAML::Node& n, const YAML::Mark& use, const std::string& key, int depth) {
    // A node met again (its position and kind seen before: a block map
    // starts where its first key does) is an alias's copy.
    if (!n.Mark().is_null() &&
        !positions_.insert(static_cast<uint64_t>(n.Mark().pos) * 8 + n.Type()).second)
      ++copies_;
    if (++nodes_ > limits_.max_nodes) {
      if (copies_ == 0)
        fail_at(name_, use,
                fmt::format("{}: the document has more than {} nodes (keys, values and list "
                            "items), the most an input may have; no experiment, sweep or layout "
                            "needs as many",
                            key, limits_.max_nodes));
      fail_at(name_, use,
              fmt::format("{}: the document has more than {} nodes, the most an input may have, "
                          "counting each of its {} alias copies as a copy of what it refers to "
                          "(an alias bomb?)",
                          key, limits_.max_nodes, copies_));
    }
    if (!n.IsMap() && !n.IsSequence()) return;
    if (depth > limits_.max_depth)
      fail_at(name_, use,
              fmt::format("{}: maps and lists nest deeper than {} levels", key, limits_.max_depth));
    for (const auto& a : ancestors_)
      if (a.is(n))
        fail_at(name_, use, fmt::format("{}: a recursive alias: the value contains itself", key));
    ancestors_.push_back(n);
    if (n.IsMap()) {
      std::unordered_map<std::string, YAML::Mark> seen;
      for (const auto& kv : n) {
        const YAML::Mark km = kv.first.Mark().is_null() ? use : kv.first.Mark();
        std::string k = key;
        if (kv.first.IsScalar()) {
          k = printable(kv.first.Scalar());
          const auto [it, fresh] = seen.emplace(kv.first.Scalar(), km);
          if (!fresh)
            fail_at(name_, km,
                    fmt::format("{}: the key appears twice in this map, at line {} and here; "
                                "give it once",
                                k, it->second.line + 1));
        }
        walk(kv.first, km, k, depth + 1);
        walk(kv.second, km, k, depth + 1);
      }
    } else {
      size_t i = 0;
      for (const auto& v : n) {
        walk(v, v.Mark().is_null() ? use : v.Mark(), fmt::format("{}[{}]", key, i++), depth + 1);
      }
    }
    ancestors_.pop_back();
  }

 private:
  const std::string& name_;
  const YamlLimits& limits_;
  size_t nodes_ = 0;
  size_t copies_ = 0;                       // nodes met again through an alias
  std::unordered_set<uint64_t> positions_;  // (position, kind) of every node met
  std::vector<YAML::Node> ancestors_;
};

// Only where each document starts.
struct DocumentStart : YAML::EventHandler {
  YAML::Mark mark = YAML::Mark::null_mark();
  void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::string shown_path(const std::string& path) {
  return printable(path, 200);
}

}  // namespace

std::string printable(std::string_view text, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < text.size();) {
    if (chars == max_chars) {
      out += fmt::format("... ({} bytes)", text.size());
      return out;
    }
    const size_t n = text_char(text, i);
    if (n == 0 || text[i] == '\n' || text[i] == '\r' || text[i] == '\t') {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
    ++chars;
  }
  return out;
}

void check_text(std::string_view text, const std::string& name, const std::string& expected) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = text_char(text, i);
    if (n == 0) {
      const auto p = support::text_position(text, i);
      fail_at(name, p.line, p.col,
              fmt::format("byte 0x{:02x} is not UTF-8 text: expected {}",
                          static_cast<unsigned char>(text[i]), expected));
    }
    i += n;
  }
}

YAML::Node parse_yaml_text(std::string_view text, const std::string& name,
                           const YamlLimits& limits) {
  check_text(text, name, "a YAML file");
  // The documents are counted by the parser itself, two at most: yaml-cpp
  // 0.7's LoadAll never ends on some bad input (a ',' outside a flow
  // collection gives empty documents forever without reading on).
  DocumentStart first, second;
  bool has_first = false, has_second = false;
  YAML::Node doc;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    has_first = parser.HandleNextDocument(first);
    has_second = has_first && parser.HandleNextDocument(second);
    if (has_second && second.mark.pos == first.mark.pos) {
      const auto at = static_cast<size_t>(first.mark.pos);
      const char c = at < text.size() ? text[at] : ' ';
      fail_at(name, first.mark,
              c == ',' || c == ']' || c == '}'
                  ? fmt::format(
                        "YAML syntax error: '{}' outside a flow collection ([...] or {{...}})", c)
                  : std::string("YAML syntax error: the parser cannot read on from here"));
    }
    if (has_first) doc = YAML::Load(std::string(text));
  } catch (const YAML::DeepRecursion& e) {
    fail_at(name, e.mark, fmt::format("maps and lists nest deeper than {} levels", e.depth()));
  } catch (const YAML::Exception& e) {
    fail_at(name, e.mark, "YAML syntax error: " + e.msg);
  }
  if (!has_first || (doc.IsNull() && doc.Mark().is_null()))
    fail_at(name, 1, 1, "the file holds no YAML document (it is empty or only comments)");
  if (has_second)
    fail_at(name, second.mark,
            "a second YAML document starts here; a file holds one (remove the '---' line or "
            "split the file)");
  Walker w(name, limits);
  w.walk(doc, doc.Mark(), "document", 0);
  return doc;
}

namespace {
// Parsed files by path, with the limits they were read under (see
// cache_parsed_yaml).
struct Parsed {
  YamlLimits limits;
  YAML::Node doc;
};
bool g_cache_on = false;
uint64_t g_cache_id = 0;
std::unordered_map<std::string, Parsed> g_parsed;
}  // namespace

void cache_parsed_yaml(bool on) {
  if (on && !g_cache_on) ++g_cache_id;
  g_cache_on = on;
  if (!on) g_parsed.clear();
}

uint64_t parsed_yaml_cache_id() {
  return g_cache_on ? g_cache_id : 0;
}

YAML::Node read_yaml_file(const fs::path& file, const YamlLimits& limits) {
  const std::string name = shown_path(file.string());
  if (g_cache_on) {
    const auto at = g_parsed.find(file.string());
    if (at != g_parsed.end() && at->second.limits.max_bytes == limits.max_bytes &&
        at->second.limits.max_nodes == limits.max_nodes &&
        at->second.limits.max_depth == limits.max_depth)
      return at->second.doc;
  }
  std::string text;
  try {
    text = support::read_input_file(file, name, "a YAML file", limits.max_bytes);
  } catch (const support::InputFileError& e) {
    throw ConfigError(e.what());
  }
  if (text.size() > limits.max_bytes) {
    const auto p = support::text_position(text, limits.max_bytes);
    fail_at(name, p.line, p.col,
            fmt::format("the file goes on past {} bytes, the most an input file may have",
                        limits.max_bytes));
  }
  YAML::Node doc = parse_yaml_text(text, name, limits);
  if (g_cache_on) g_parsed[file.string()] = Parsed{limits, doc};
  return doc;
}

YamlLoc yaml_loc(const std::string& file, const YAML::Node& n) {
  const auto m = n.Mark();
  return {file, m.line + 1, m.column + 1};
}

std::string located(const YamlLoc& loc, const std::string& key, const std::string& msg) {
  if (loc.file.empty())
    return fmt::format("--set {}: {}", printable(key, 120), printable(msg, 3000));
  return fmt::format("{}:{}:{}: {}: {}", loc.file, loc.line, loc.col, printable(key, 120),
                     printable(msg, 3000));
}

std::string yaml_shape(const YAML::Node& n) {
  if (n.IsScalar()) return fmt::format("'{}'", printable(n.Scalar()));
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  return "nothing";
}

}  // namespace simloop::config

#include "sim/layout/build.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "sim/layout/link_map.h"
#include "sim/support/input_file.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"

namespace simloop::models {

namespace {
using support::parse_u64;
using support::words;
}  // namespace

CodeProfile load_profile(std::istream& in, const std::string& what) {
  CodeProfile p;
  Walk* walk = nullptr;
  std::vector<WalkItem>* items = nullptr;  // where run and call lines go: the walk's, or a call's
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto w = words(line);
    if (w.empty()) continue;
    auto fail = [&](const std::string& expected) {
      throw LayoutError(fmt::format("{}:{}: expected {}, got '{}'", what, lineno, expected,
                                    config::printable(line, 200)));
    };
    // A function is far smaller than this; a larger offset or length is a
    // broken profile, said at its line (and no sum of the two can wrap).
    constexpr uint64_t kMaxOffset = uint64_t{1} << 32;
    uint64_t off = 0, bytes = 0;
    if (w[0] == "walk") {
      double calls = 0;
      if (w.size() != 4 || !parse_u64(w[2], &off, 16)) fail("'walk SYMBOL ENTRY CALLS_PER_PACKET'");
      try {
        size_t used = 0;
        calls = std::stod(w[3], &used);
        if (used != w[3].size() || !(calls >= 0) || !std::isfinite(calls)) throw std::exception();
      } catch (const std::exception&) {
        fail("'walk SYMBOL ENTRY CALLS_PER_PACKET' (calls a number >= 0)");
      }
      walk = &p.walks[{w[1], off}];
      if (!walk->items.empty()) fail("one walk per routine (this one came before)");
      walk->calls_per_packet = calls;
      items = &walk->items;
    } else if (w[0] == "per-call") {
      // The K-th call of a packet's own walk, after the routine's.
      uint64_t k = 0;
      if (walk == nullptr) fail("a 'walk' line before 'per-call'");
      if (w.size() != 2 || !parse_u64(w[1], &k) || k != walk->per_call.size() + 1)
        fail(fmt::format("'per-call {}' (the calls numbered from 1, in order)",
                         walk->per_call.size() + 1));
      items = &walk->per_call.emplace_back();
    } else if (w[0] == "run") {
      if (walk == nullptr) fail("a 'walk' line before 'run'");
      if (w.size() != 3 || !parse_u64(w[1], &off, 16) || !parse_u64(w[2], &bytes) || bytes == 0)
        fail("'run OFFSET BYTES' (hex offset, bytes > 0)");
      if (off > kMaxOffset || bytes > kMaxOffset)
        fail(fmt::format("an offset and a length within a function (at most {:#x})", kMaxOffset));
      items->push_back({off, bytes, {}, 0});
    } else if (w[0] == "call") {
      uint64_t target_off = 0;
      if (walk == nullptr) fail("a 'walk' line before 'call'");
      if (w.size() != 4 || !parse_u64(w[1], &off, 16) || !parse_u64(w[3], &target_off, 16))
        fail("'call OFFSET TARGET TARGET_OFFSET' (hex offsets)");
      items->push_back({off, 0, w[2], target_off});
    } else {
      if (w.size() != 3 || !parse_u64(w[0], &off, 16) || !parse_u64(w[1], &bytes) || bytes == 0)
        fail("'OFFSET BYTES SYMBOL' (hex offset, bytes > 0)");
      if (off > kMaxOffset || bytes > kMaxOffset)
        fail(fmt::format("an offset and a length within a function (at most {:#x})", kMaxOffset));
      p.hot[w[2]].emplace_back(off, bytes);
    }
  }
  if (p.hot.empty()) throw LayoutError(fmt::format("{}: no ranges", what));
  for (auto& [sym, ranges] : p.hot) std::sort(ranges.begin(), ranges.end());
  return p;
}

std::multimap<std::string, std::string> load_owners(std::istream& in, const std::string& what) {
  std::multimap<std::string, std::string> m;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto w = words(line);
    if (w.empty()) continue;
    if (w.size() != 2)
      throw LayoutError(fmt::format("{}:{}: expected 'symbol owner', got '{}'", what, n, line));
    if (!is_layout_owner(w[1]))
      throw LayoutError(fmt::format("{}:{}: expected an owner ({}), got '{}'", what, n,
                                    fmt::join(layout_owners(), ", "), w[1]));
    m.emplace(w[0], w[1]);
  }
  return m;
}

std::vector<std::string> load_order(std::istream& in) {
  std::vector<std::string> order;
  for (std::string line; std::getline(in, line);)
    for (auto& w : words(line.substr(0, line.find('#')))) order.push_back(std::move(w));
  return order;
}

std::string read_text_file(const std::filesystem::path& file, size_t max_bytes) {
  // Looked at before it is opened: a FIFO would hold the open up, and a
  // device such as /dev/zero would be read for ever.
  if (const std::string why = support::input_problem(file); why == "no such file")
    throw LayoutError(fmt::format("{}: cannot read the file: no such file", file.string()));
  else if (why.starts_with("is "))
    throw LayoutError(fmt::format("{}: {}; expected a text file", file.string(), why));
  else if (!why.empty())
    throw LayoutError(fmt::format("{}: cannot read the file: {}", file.string(), why));
  // gzread reads a file that is not compressed as it is.
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(gzopen(file.c_str(), "rb"), gzclose);
  if (!gz) throw LayoutError(fmt::format("{}: cannot read the file", file.string()));
  // zlib's message, without the file name it starts with.
  auto zlib_error = [&]() {
    int err = 0;
    std::string msg = gzerror(gz.get(), &err);
    if (const std::string name = file.string() + ": "; msg.starts_with(name))
      msg.erase(0, name.size());
    return err == Z_OK ? std::string() : msg;
  };
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(gz.get(), buf, sizeof buf);
    if (n < 0)
      throw LayoutError(fmt::format("{}: cannot read the file: {}", file.string(), zlib_error()));
    if (n == 0) {
      // gzread ends a compressed file cut short as if it were whole, and
      // says so only here.
      if (const std::string msg = zlib_error(); !msg.empty())
        throw LayoutError(fmt::format("{}: cannot read the file: {} (expected a whole gzip file)",
                                      file.string(), msg));
      break;
    }
    text.append(buf, static_cast<size_t>(n));
    if (text.starts_with("\177ELF"))
      throw LayoutError(fmt::format(
          "{}: a binary, not a text map: give its symbol map (`simloop measure native --harness "
          "BINARY -n 10 -o X.csv` writes X.csv.LAYOUT.nm: nm's symbols and the PLT)",
          file.string()));
    if (text.size() > max_bytes)
      throw LayoutError(
          fmt::format("{}: longer than {} bytes; expected a text map", file.string(), max_bytes));
  }
  return text;
}

LinkedLayout load_build(const BuildFiles& f) {
  // Every error names the file it is about, for the caller to say which
  // of the build's keys or options gave it.
  auto read = [](BuildFile which, const std::filesystem::path& file) {
    try {
      return read_text_file(file);
    } catch (const LayoutError& e) {
      throw BuildFileError(which, e.what());
    }
  };
  std::multimap<std::string, std::string> owners;
  {
    std::istringstream in(read(BuildFile::owners, f.owners));
    try {
      owners = load_owners(in, f.owners.string());
    } catch (const LayoutError& e) {
      throw BuildFileError(BuildFile::owners, e.what());  // names the file and line
    }
  }
  std::vector<NmSymbol> symbols;
  std::vector<std::string> notes;
  {
    std::istringstream nm(read(BuildFile::nm, f.nm));
    try {
      symbols = parse_nm(nm, f.nm.string());
    } catch (const LayoutError& e) {
      throw BuildFileError(BuildFile::nm, e.what());  // names the file and line
    }
  }
  if (!f.order.empty() && f.map.empty())
    throw BuildFileError(
        BuildFile::order,
        fmt::format("{}: an order needs the build's link map: it says how functions move",
                    f.order.string()));
  if (!f.map.empty()) {
    std::istringstream map_text(read(BuildFile::map, f.map));
    LinkMap map;
    try {
      map = parse_lld_map(map_text, f.map.string());
    } catch (const LayoutError& e) {
      throw BuildFileError(BuildFile::map, e.what());  // names the map and its line
    }
    std::vector<std::string> order;
    if (!f.order.empty()) {
      std::istringstream in(read(BuildFile::order, f.order));
      order = load_order(in);
      try {
        if (std::string w = check_order(order, symbols); !w.empty())
          notes.push_back(fmt::format("{}: {}", f.order.string(), w));
      } catch (const LayoutError& e) {
        throw BuildFileError(BuildFile::order, fmt::format("{}: {}", f.order.string(), e.what()));
      }
    }
    try {
      symbols = relink_symbols(symbols, map, place_sections(map, symbols, order));
    } catch (const LayoutError& e) {
      throw BuildFileError(BuildFile::map, fmt::format("{}: {}", f.map.string(), e.what()));
    }
  }
  std::optional<CodeProfile> profile;
  if (!f.profile.empty()) {
    std::istringstream in(read(BuildFile::profile, f.profile));
    try {
      profile = load_profile(in, f.profile.string());
    } catch (const LayoutError& e) {
      throw BuildFileError(BuildFile::profile, e.what());  // names the file and line
    }
  }
  {
    std::set<std::string> named;
    for (const auto& [sym, owner] : owners) named.insert(sym);
    if (profile)
      for (const auto& [sym, ranges] : profile->hot) named.insert(sym);
    for (const auto& w : nm_warnings(symbols, named))
      notes.push_back(fmt::format("{}: {}", f.nm.string(), w));
  }
  LinkedLayout linked;
  try {
    linked = layout_from_nm(symbols, owners, f.hot_fraction, profile ? &profile->hot : nullptr,
                            profile ? &profile->walks : nullptr);
  } catch (const LayoutError& e) {
    // Owners are checked as they are read: what is left is a profile that
    // does not fit the build's symbols.
    if (profile)
      throw BuildFileError(BuildFile::profile, fmt::format("{}: {} (nm {})", f.profile.string(),
                                                           e.what(), f.nm.string()));
    throw BuildFileError(BuildFile::nm, fmt::format("{}: {}", f.nm.string(), e.what()));
  }
  if (linked.by_owner.empty())
    throw BuildFileError(BuildFile::nm,
                         fmt::format("{}: no symbol of {} is in this build (or ran): is it a "
                                     "simloop-harness build?",
                                     f.nm.string(), f.owners.string()));
  linked.notes = std::move(notes);
  return linked;
}

}  // namespace simloop::models

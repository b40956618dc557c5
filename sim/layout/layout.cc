#include "sim/layout/layout.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <sstream>

#include "models/code.h"
#include "sim/stack/fn_tables.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"

namespace simloop::models {

namespace {

bool pow2(uint64_t v) {
  return v != 0 && std::has_single_bit(v);
}

uint64_t align_up(uint64_t v, uint64_t align) {
  return align <= 1 ? v : (v + align - 1) / align * align;
}

// Where a node is, and the one shape of a message about it (sim/config's,
// shared with the experiment and sweep readers).
using Loc = config::YamlLoc;
constexpr auto loc_of = config::yaml_loc;
constexpr auto shown = config::yaml_shape;

[[noreturn]] void fail(const Loc& loc, const std::string& key, const std::string& msg) {
  throw LayoutError(config::located(loc, key.empty() ? "layout" : key, msg));
}

uint64_t parse_u64(const YAML::Node& n, const Loc& loc, const std::string& key) {
  const std::string expected = "expected a non-negative integer (decimal or 0x hex), got ";
  if (!n.IsScalar()) fail(loc, key, expected + shown(n));
  const std::string& s = n.Scalar();
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  uint64_t v = 0;
  if (!support::parse_u64(s, &v, hex ? 16 : 10)) fail(loc, key, expected + shown(n));
  return v;
}

std::string parse_text(const YAML::Node& n, const Loc& loc, const std::string& key) {
  if (!n.IsScalar() || n.Scalar().empty()) fail(loc, key, "expected a name, got " + shown(n));
  return n.Scalar();
}

// Walks a map's keys, refusing any not in `allowed`.
template <class F>
void each_key(const YAML::Node& map, const std::string& file, const std::string& where,
              const std::vector<std::string>& allowed, F&& f) {
  if (!map.IsMap()) fail(loc_of(file, map), where, "expected a map of keys, got " + shown(map));
  for (const auto& kv : map) {
    const Loc kloc = loc_of(file, kv.first);
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    const std::string path = where.empty() ? key : where + "." + key;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      fail(kloc, path,
           fmt::format("unknown key '{}' (allowed: {})", key, fmt::join(allowed, ", ")));
    f(key, kv.second, loc_of(file, kv.second), path);
  }
}

// Problems with one object's functions, or "" when it is consistent. Shared
// by the YAML loader (which adds a position) and validate().
std::string object_problem(const ObjectFile& o, size_t* bad_function) {
  if (!pow2(o.align)) return fmt::format("align must be a power of two, got {}", o.align);
  std::vector<size_t> by_offset(o.functions.size());
  for (size_t i = 0; i < by_offset.size(); ++i) {
    by_offset[i] = i;
    const HotFunction& f = o.functions[i];
    *bad_function = i;
    if (f.size == 0) return fmt::format("function {} has size 0", f.symbol);
    if (f.offset > o.size || f.size > o.size - f.offset)
      return fmt::format("function {} [{:#x}, {:#x}) lies outside its object ({:#x} bytes)",
                         f.symbol, f.offset, f.offset + f.size, o.size);
    if (f.hot_bytes > f.size)
      return fmt::format("function {}: hot bytes ({}) exceed its size ({})", f.symbol, f.hot_bytes,
                         f.size);
    if (!f.owner.empty() && !is_layout_owner(f.owner))
      return fmt::format("function {}: unknown owner '{}' (valid: {})", f.symbol, f.owner,
                         fmt::join(layout_owners(), ", "));
    if (f.owner.empty() && f.hot_bytes > 0)
      return fmt::format("function {} has hot bytes but no owner", f.symbol);
    if (!f.calls.empty() && f.owner.empty())
      return fmt::format("function {} has call sites but no owner", f.symbol);
    for (size_t c = 0; c < f.calls.size(); ++c) {
      const CallSite& cs = f.calls[c];
      if (!is_layout_owner(cs.owner))
        return fmt::format("function {}: call site {}: unknown owner '{}' (valid: {})", f.symbol, c,
                           cs.owner, fmt::join(layout_owners(), ", "));
      if (cs.owner == f.owner)
        return fmt::format("function {}: call site {} calls its own owner '{}'", f.symbol, c,
                           cs.owner);
      if (cs.at > f.hot_bytes)
        return fmt::format("function {}: call site {} at {:#x} lies past its hot bytes ({:#x})",
                           f.symbol, c, cs.at, f.hot_bytes);
      if (c > 0 && cs.at < f.calls[c - 1].at)
        return fmt::format("function {}: call sites must be listed by offset ({:#x} after {:#x})",
                           f.symbol, cs.at, f.calls[c - 1].at);
    }
  }
  std::stable_sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) {
    return o.functions[a].offset < o.functions[b].offset;
  });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const HotFunction& prev = o.functions[by_offset[k - 1]];
    const HotFunction& f = o.functions[by_offset[k]];
    if (f.offset < prev.offset + prev.size) {
      *bad_function = by_offset[k];
      return fmt::format("function {} at {:#x} overlaps {} [{:#x}, {:#x})", f.symbol, f.offset,
                         prev.symbol, prev.offset, prev.offset + prev.size);
    }
  }
  *bad_function = o.functions.size();
  return "";
}

// `calls: [{owner: udp_output, at: 0x1c0}, ...]`
std::vector<CallSite> parse_calls(const YAML::Node& v, const std::string& file,
                                  const std::string& key) {
  if (!v.IsSequence())
    fail(loc_of(file, v), key, "expected a list of {owner, at} call sites, got " + shown(v));
  std::vector<CallSite> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const YAML::Node c = v[i];
    const std::string ck = fmt::format("{}[{}]", key, i);
    CallSite cs;
    bool have_owner = false, have_at = false;
    each_key(c, file, ck, {"owner", "at"},
             [&](const std::string& k, const YAML::Node& cv, const Loc& cl, const std::string& p) {
               if (k == "owner") {
                 cs.owner = parse_text(cv, cl, p);
                 if (!is_layout_owner(cs.owner))
                   fail(cl, p,
                        fmt::format("unknown owner '{}' (valid: {})", cs.owner,
                                    fmt::join(layout_owners(), ", ")));
                 have_owner = true;
               } else {
                 cs.at = parse_u64(cv, cl, p);
                 have_at = true;
               }
             });
    if (!have_owner) fail(loc_of(file, c), ck, "missing key 'owner'");
    if (!have_at) fail(loc_of(file, c), ck, "missing key 'at'");
    out.push_back(std::move(cs));
  }
  return out;
}

ObjectFile& find_object(Layout& l, const std::string& name) {
  for (auto& o : l.objects)
    if (o.name == name) return o;
  throw LayoutError(fmt::format("layout {}: no object named '{}'", l.name, name));
}

}  // namespace

const std::vector<std::string>& layout_owners() {
  static const std::vector<std::string> owners = [] {
    std::vector<std::string> v;
    for (const net::FnTable* t : net::kFnTables)
      for (const auto& f : t->fns())
        if (std::find(v.begin(), v.end(), f.name) == v.end()) v.emplace_back(f.name);
    for (auto name : kCodeNames) v.emplace_back(name);
    return v;
  }();
  return owners;
}

bool is_stack_fn_owner(size_t i) {
  return i + code_index::count < layout_owners().size();
}

bool is_layout_owner(std::string_view owner) {
  const auto& v = layout_owners();
  return std::find(v.begin(), v.end(), owner) != v.end();
}

Layout load_layout_yaml(const std::filesystem::path& path) {
  const std::string file = path.string();
  YAML::Node doc;
  try {
    doc = config::read_yaml_file(path);
  } catch (const config::ConfigError& e) {
    throw LayoutError(e.what());
  }
  Layout l;
  l.name = path.stem().string();
  bool have_objects = false;
  int seq = 0;
  each_key(doc, file, "", {"name", "text_base", "function_align", "objects"},
           [&](const std::string& key, const YAML::Node& v, const Loc& loc, const std::string& p) {
             if (key == "name") {
               l.name = parse_text(v, loc, p);
             } else if (key == "text_base") {
               l.text_base = parse_u64(v, loc, p);
             } else if (key == "function_align") {
               l.function_align = parse_u64(v, loc, p);
               if (l.function_align != 0 && !pow2(l.function_align))
                 fail(loc, p, "expected 0 or a power of two, got " + shown(v));
             } else {
               have_objects = true;
               if (!v.IsSequence()) fail(loc, p, "expected a list of objects, got " + shown(v));
               std::set<std::string> names;
               for (size_t i = 0; i < v.size(); ++i) {
                 const YAML::Node on = v[i];
                 const std::string op = fmt::format("objects[{}]", i);
                 ObjectFile o;
                 bool have_name = false, have_size = false;
                 // Copies, not assignments: assigning a YAML::Node writes through it.
                 std::optional<YAML::Node> fns_at;
                 each_key(on, file, op, {"name", "size", "align", "functions"},
                          [&](const std::string& k, const YAML::Node& ov, const Loc& ol,
                              const std::string& okey) {
                            if (k == "name") {
                              o.name = parse_text(ov, ol, okey);
                              have_name = true;
                              if (!names.insert(o.name).second)
                                fail(ol, okey, fmt::format("object '{}' appears twice", o.name));
                            } else if (k == "size") {
                              o.size = parse_u64(ov, ol, okey);
                              have_size = true;
                            } else if (k == "align") {
                              o.align = parse_u64(ov, ol, okey);
                              if (!pow2(o.align))
                                fail(ol, okey, "expected a power of two, got " + shown(ov));
                            } else {
                              if (!ov.IsNull())
                                fns_at.emplace(ov);  // `functions:` with nothing: none
                            }
                          });
                 if (!have_name) fail(loc_of(file, on), op, "missing key 'name'");
                 if (!have_size)
                   fail(loc_of(file, on), op + " (" + o.name + ")", "missing key 'size'");
                 if (fns_at) {
                   const YAML::Node fns = *fns_at;
                   const std::string fp = op + ".functions";
                   if (!fns.IsSequence())
                     fail(loc_of(file, fns), fp, "expected a list of functions, got " + shown(fns));
                   for (size_t j = 0; j < fns.size(); ++j) {
                     const YAML::Node fn = fns[j];
                     const std::string fk = fmt::format("{}[{}]", fp, j);
                     HotFunction f;
                     f.seq = seq++;
                     bool have_sym = false, have_off = false, have_fsize = false;
                     std::optional<uint64_t> hot;
                     each_key(fn, file, fk,
                              {"symbol", "owner", "offset", "size", "hot", "order", "calls"},
                              [&](const std::string& k, const YAML::Node& fv, const Loc& fl,
                                  const std::string& fkey) {
                                if (k == "symbol") {
                                  f.symbol = parse_text(fv, fl, fkey);
                                  have_sym = true;
                                } else if (k == "owner") {
                                  f.owner = parse_text(fv, fl, fkey);
                                  if (!is_layout_owner(f.owner))
                                    fail(fl, fkey,
                                         fmt::format("unknown owner '{}' (valid: {})", f.owner,
                                                     fmt::join(layout_owners(), ", ")));
                                } else if (k == "offset") {
                                  f.offset = parse_u64(fv, fl, fkey);
                                  have_off = true;
                                } else if (k == "size") {
                                  f.size = parse_u64(fv, fl, fkey);
                                  have_fsize = true;
                                } else if (k == "order") {
                                  const uint64_t ord = parse_u64(fv, fl, fkey);
                                  if (ord > 1000000) fail(fl, fkey, "expected at most 1000000");
                                  f.order = static_cast<int>(ord);
                                } else if (k == "calls") {
                                  f.calls = parse_calls(fv, file, fkey);
                                } else {
                                  hot = parse_u64(fv, fl, fkey);
                                }
                              });
                     const Loc floc = loc_of(file, fn);
                     for (auto [have, what] :
                          {std::pair{have_sym, "symbol"}, std::pair{have_off, "offset"},
                           std::pair{have_fsize, "size"}})
                       if (!have) fail(floc, fk, fmt::format("missing key '{}'", what));
                     f.hot_bytes = hot.value_or(f.owner.empty() ? 0 : f.size);
                     o.functions.push_back(std::move(f));
                   }
                   size_t bad = 0;
                   const std::string problem = object_problem(o, &bad);
                   if (!problem.empty()) {
                     const YAML::Node at = bad < fns.size() ? fns[bad] : on;
                     fail(loc_of(file, at), bad < fns.size() ? fmt::format("{}[{}]", fp, bad) : op,
                          problem);
                   }
                 }
                 l.objects.push_back(std::move(o));
               }
             }
           });
  if (!have_objects) fail(loc_of(file, doc), "objects", "missing key 'objects'");
  return l;
}

void validate(const Layout& layout) {
  if (layout.function_align != 0 && !pow2(layout.function_align))
    throw LayoutError(fmt::format("layout {}: function_align must be 0 or a power of two, got {}",
                                  layout.name, layout.function_align));
  std::set<std::string> names;
  for (const auto& o : layout.objects) {
    if (!names.insert(o.name).second)
      throw LayoutError(fmt::format("layout {}: object '{}' appears twice", layout.name, o.name));
    size_t bad = 0;
    const std::string problem = object_problem(o, &bad);
    if (!problem.empty())
      throw LayoutError(fmt::format("layout {}: object {}: {}", layout.name, o.name, problem));
  }
}

LinkedLayout link(const Layout& layout) {
  validate(layout);
  struct Placed {
    int order, seq;
    size_t pos;  // link position, for ties
    std::string owner;
    HotRange range;
    const std::vector<CallSite>* calls;
  };
  std::vector<Placed> placed;
  LinkedLayout out;
  uint64_t cursor = layout.text_base;
  const uint64_t fa = layout.function_align;
  for (const auto& o : layout.objects) {
    const uint64_t start = align_up(cursor, std::max(o.align, fa));
    std::vector<size_t> by_offset(o.functions.size());
    for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = i;
    std::stable_sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) {
      return o.functions[a].offset < o.functions[b].offset;
    });
    // Alignment padding before a function shifts it and all that follow.
    uint64_t shift = 0;
    for (size_t i : by_offset) {
      const HotFunction& f = o.functions[i];
      const uint64_t off = fa > 0 ? align_up(f.offset + shift, fa) : f.offset;
      shift = off - f.offset;
      if (f.hot_bytes > 0 || !f.calls.empty())
        placed.push_back({f.order,
                          f.seq,
                          placed.size(),
                          f.owner,
                          {start + off, f.hot_bytes, f.symbol},
                          &f.calls});
    }
    const uint64_t end = start + o.size + shift;
    out.objects[o.name] = {start, end};
    cursor = end;
  }
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    if (a.order != b.order) return a.order < b.order;
    return a.seq != b.seq ? a.seq < b.seq : a.pos < b.pos;
  });
  // Owners with call sites run a routine: their ranges in order, each split
  // where its calls come.
  std::set<std::string> with_calls;
  for (const auto& p : placed)
    if (!p.calls->empty()) with_calls.insert(p.owner);
  const auto& owners = layout_owners();
  for (const auto& owner : with_calls) {
    Routine r;
    r.owner = owner;
    for (const auto& p : placed) {
      if (p.owner != owner) continue;
      if (r.symbol.empty()) r.symbol = p.range.symbol;
      uint64_t done = 0;
      for (const CallSite& c : *p.calls) {
        if (c.at > done) r.steps.push_back({p.range.start + done, c.at - done});
        done = std::max(done, c.at);
        CodeStep call;
        call.call =
            static_cast<int>(std::find(owners.begin(), owners.end(), c.owner) - owners.begin());
        r.steps.push_back(call);
      }
      if (p.range.bytes > done) r.steps.push_back({p.range.start + done, p.range.bytes - done});
    }
    out.entry[owner] = static_cast<int>(out.routines.size());
    out.routines.push_back(std::move(r));
  }
  for (auto& p : placed)
    if (p.range.bytes > 0) out.by_owner[p.owner].push_back(std::move(p.range));
  return out;
}

LinkedLayout merge(const LinkedLayout& a, const LinkedLayout& b) {
  LinkedLayout out = a;
  for (const auto& [name, r] : b.objects) {
    for (const auto& [other, q] : out.objects)
      if (r.first < q.second && q.first < r.second)
        throw LayoutError(fmt::format("merging layouts: object {} [{:#x}, {:#x}) overlaps {}", name,
                                      r.first, r.second, other));
    if (!out.objects.emplace(name, r).second)
      throw LayoutError(fmt::format("merging layouts: object '{}' appears in both", name));
  }
  for (const auto& [owner, ranges] : b.by_owner) {
    auto& v = out.by_owner[owner];
    v.insert(v.end(), ranges.begin(), ranges.end());
  }
  const int base = static_cast<int>(out.routines.size());
  for (Routine r : b.routines) {
    for (auto& step : r.steps)
      if (step.callee >= 0) step.callee += base;
    out.routines.push_back(std::move(r));
  }
  // An owner with call sites in one layout runs that routine: its code must
  // not also lie in the other.
  auto refuse = [](const std::string& owner) {
    throw LayoutError(fmt::format(
        "merging layouts: owner '{}' has call sites in one layout and code in the other", owner));
  };
  for (const auto& [owner, index] : a.entry)
    if (b.by_owner.count(owner) != 0 || b.entry.count(owner) != 0) refuse(owner);
  for (const auto& [owner, index] : b.entry) {
    if (a.by_owner.count(owner) != 0) refuse(owner);
    out.entry[owner] = base + index;
  }
  return out;
}

Layout pad_object(const Layout& layout, const std::string& object, uint64_t bytes,
                  std::optional<uint64_t> at_offset) {
  Layout l = layout;
  ObjectFile& o = find_object(l, object);
  const uint64_t at = at_offset.value_or(o.size);
  if (at > o.size)
    throw LayoutError(
        fmt::format("pad {}: offset {:#x} is past its end ({:#x})", object, at, o.size));
  for (const auto& f : o.functions)
    if (f.offset < at && at < f.offset + f.size)
      throw LayoutError(fmt::format("pad {}: offset {:#x} is inside function {} [{:#x}, {:#x})",
                                    object, at, f.symbol, f.offset, f.offset + f.size));
  for (auto& f : o.functions)
    if (f.offset >= at) f.offset += bytes;
  o.size += bytes;
  return l;
}

Layout move_to_end(const Layout& layout, const std::string& object) {
  Layout l = layout;
  auto it = std::find_if(l.objects.begin(), l.objects.end(),
                         [&](const ObjectFile& o) { return o.name == object; });
  if (it == l.objects.end())
    throw LayoutError(fmt::format("layout {}: no object named '{}'", l.name, object));
  std::rotate(it, it + 1, l.objects.end());
  return l;
}

Layout align_functions(const Layout& layout, uint64_t align) {
  if (align != 0 && !pow2(align))
    throw LayoutError(fmt::format("function alignment must be 0 or a power of two, got {}", align));
  Layout l = layout;
  l.function_align = align;
  return l;
}

Layout reorder(const Layout& layout, const std::vector<std::string>& order) {
  Layout l = layout;
  std::vector<ObjectFile> out;
  std::vector<bool> taken(layout.objects.size(), false);
  for (const auto& name : order) {
    auto it = std::find_if(layout.objects.begin(), layout.objects.end(),
                           [&](const ObjectFile& o) { return o.name == name; });
    if (it == layout.objects.end())
      throw LayoutError(fmt::format("reorder: layout {} has no object named '{}'", l.name, name));
    const auto i = static_cast<size_t>(it - layout.objects.begin());
    if (taken[i]) throw LayoutError(fmt::format("reorder: object '{}' named twice", name));
    taken[i] = true;
    out.push_back(*it);
  }
  for (size_t i = 0; i < layout.objects.size(); ++i)
    if (!taken[i]) out.push_back(layout.objects[i]);
  l.objects = std::move(out);
  return l;
}

std::vector<NmSymbol> parse_nm(std::istream& nm_output) {
  auto hex = [](const std::string& s, uint64_t* v) { return support::parse_u64(s, v, 16); };
  std::vector<NmSymbol> syms;
  std::vector<bool> sized;
  std::string line;
  int lineno = 0;
  while (std::getline(nm_output, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // "ADDR SIZE TYPE NAME" or "ADDR TYPE NAME"; NAME may hold spaces (nm -C).
    // nm pads a size to the address's width, which tells the two apart even
    // when a type letter is also a hex digit ('b', 'd').
    std::istringstream in(line);
    std::string a, b, c;
    in >> a >> b >> c;
    NmSymbol s;
    bool has_size = false;
    char type = 0;
    if (hex(a, &s.addr) && b.size() == a.size() && hex(b, &s.size) && c.size() == 1) {
      has_size = true;
      type = c[0];
      in >> std::ws;
    } else if (hex(a, &s.addr) && b.size() == 1 && !c.empty()) {
      type = b[0];
      s.name = c;
    } else {
      throw LayoutError(fmt::format(
          "nm output line {}: expected 'address [size] type name', got '{}'", lineno, line));
    }
    std::string rest;
    std::getline(in, rest);
    s.name += rest;
    if (s.name.empty())
      throw LayoutError(fmt::format("nm output line {}: no symbol name in '{}'", lineno, line));
    s.text = type == 'T' || type == 't' || type == 'W' || type == 'w' || type == 'i';
    syms.push_back(std::move(s));
    sized.push_back(has_size);
  }
  std::vector<size_t> order(syms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return syms[x].addr < syms[y].addr; });
  std::vector<NmSymbol> out;
  out.reserve(syms.size());
  for (size_t k = 0; k < order.size(); ++k) {
    NmSymbol s = std::move(syms[order[k]]);
    if (!sized[order[k]] || s.size == 0) {
      // No size: up to the next symbol at a higher address.
      s.size = 0;
      for (size_t j = k + 1; j < order.size() && s.size == 0; ++j)
        if (syms[order[j]].addr > s.addr) s.size = syms[order[j]].addr - s.addr;
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Expands walks into routines for layout_from_nm.
class WalkExpander {
 public:
  WalkExpander(const std::vector<NmSymbol>& syms,
               const std::multimap<std::string, std::string>& owners, const WalkProfile& walks,
               const HotProfile* profile, LinkedLayout& out)
      : owners_(owners), walks_(walks), profile_(profile), out_(out) {
    for (const auto& s : syms)
      if (s.text && s.size > 0) addr_.emplace(s.name, &s);  // the first of a repeated name
  }

  // The routine run for `owner`'s event at a call of (symbol, offset).
  int routine(const std::pair<std::string, uint64_t>& key, const std::string& owner) {
    const auto memo = memo_.find({key, owner});
    if (memo != memo_.end()) return memo->second;
    const int index = static_cast<int>(out_.routines.size());
    memo_[{key, owner}] = index;
    out_.routines.push_back({owner, key.first, {}, true});
    std::set<std::pair<std::string, uint64_t>> path = {key};
    std::vector<CodeStep> steps;
    expand(key, owner, 0, path, steps);
    out_.routines[static_cast<size_t>(index)].steps = std::move(steps);
    return index;
  }

  bool has_walk(const std::string& symbol) const {
    return addr_.count(symbol) != 0 && walks_.count({symbol, 0}) != 0;
  }

 private:
  static constexpr int kMaxDepth = 24;

  // The stack function (an owner that is a stack's function) that runs `symbol`, unless `caller`
  // is one of its owners; -1 if none.
  int fn_owner(const std::string& symbol, const std::string& caller) const {
    const auto [first, last] = owners_.equal_range(symbol);
    int fn = -1;
    for (auto it = first; it != last; ++it) {
      if (it->second == caller) return -1;
      const auto& all = layout_owners();
      const auto at =
          static_cast<size_t>(std::find(all.begin(), all.end(), it->second) - all.begin());
      if (is_stack_fn_owner(at) && fn < 0) fn = static_cast<int>(at);
    }
    return fn;
  }

  void expand(const std::pair<std::string, uint64_t>& key, const std::string& owner, int depth,
              std::set<std::pair<std::string, uint64_t>>& path, std::vector<CodeStep>& steps) {
    const auto sym = addr_.find(key.first);
    if (sym == addr_.end()) return;  // not in this build
    const NmSymbol& s = *sym->second;
    const auto w = walks_.find(key);
    if (w == walks_.end()) {
      // No walk: the symbol's hot ranges, if the profile has them.
      if (profile_ == nullptr || key.second != 0) return;
      const auto p = profile_->find(key.first);
      if (p == profile_->end()) return;
      for (const auto& [off, bytes] : p->second) add_run(s, off, bytes, steps);
      return;
    }
    for (const WalkItem& item : w->second.items) {
      if (item.target.empty()) {
        add_run(s, item.offset, item.bytes, steps);
        continue;
      }
      const std::pair<std::string, uint64_t> callee{item.target, item.target_offset};
      if (depth >= kMaxDepth || path.count(callee) != 0) continue;  // recursion
      const int fn = fn_owner(item.target, owner);
      if (fn >= 0) {
        CodeStep call;
        call.call = fn;
        call.callee = routine(callee, layout_owners()[static_cast<size_t>(fn)]);
        steps.push_back(call);
        continue;
      }
      path.insert(callee);
      expand(callee, owner, depth + 1, path, steps);
      path.erase(callee);
    }
  }

  static void add_run(const NmSymbol& s, uint64_t off, uint64_t bytes,
                      std::vector<CodeStep>& steps) {
    if (bytes == 0) return;
    if (off + bytes > s.size)
      throw LayoutError(fmt::format(
          "profile: {} has a walk range [{:#x}, {:#x}) beyond its size {:#x}: is the profile "
          "from a build of other objects?",
          s.name, off, off + bytes, s.size));
    const uint64_t start = s.addr + off;
    if (!steps.empty() && steps.back().call < 0 &&
        steps.back().start + steps.back().bytes == start) {
      steps.back().bytes += bytes;  // contiguous
      return;
    }
    steps.push_back({start, bytes});
  }

  const std::multimap<std::string, std::string>& owners_;
  const WalkProfile& walks_;
  const HotProfile* profile_;
  LinkedLayout& out_;
  std::map<std::string, const NmSymbol*> addr_;
  std::map<std::pair<std::pair<std::string, uint64_t>, std::string>, int> memo_;
};

}  // namespace

LinkedLayout layout_from_nm(std::istream& nm_output,
                            const std::multimap<std::string, std::string>& owners,
                            double hot_fraction, const HotProfile* profile,
                            const WalkProfile* walks) {
  if (!(hot_fraction > 0 && hot_fraction <= 1))
    throw LayoutError(fmt::format("hot_fraction must be in (0, 1], got {}", hot_fraction));
  for (const auto& [sym, owner] : owners)
    if (!is_layout_owner(owner))
      throw LayoutError(fmt::format("symbol {}: unknown owner '{}' (valid: {})", sym, owner,
                                    fmt::join(layout_owners(), ", ")));
  LinkedLayout out;
  const std::vector<NmSymbol> syms = parse_nm(nm_output);
  for (const NmSymbol& s : syms) {
    if (!s.text || s.size == 0) continue;
    const auto [first, last] = owners.equal_range(s.name);
    if (first == last) continue;
    // The symbol's hot ranges, the same under each of its owners.
    std::vector<HotRange> hot;
    if (profile != nullptr) {
      const auto p = profile->find(s.name);
      if (p == profile->end()) continue;  // it never ran
      for (const auto& [off, bytes] : p->second) {
        if (off + bytes > s.size)
          throw LayoutError(fmt::format(
              "profile: {} has a hot range [{:#x}, {:#x}) beyond its size {:#x}: is the profile "
              "from a build of other objects?",
              s.name, off, off + bytes, s.size));
        hot.push_back({s.addr + off, bytes, s.name});
      }
    } else {
      hot.push_back({s.addr,
                     std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(
                                               static_cast<double>(s.size) * hot_fraction))),
                     s.name});
    }
    for (auto it = first; it != last; ++it) {
      auto& ranges = out.by_owner[it->second];
      ranges.insert(ranges.end(), hot.begin(), hot.end());
    }
  }
  if (walks == nullptr || walks->empty()) return out;

  // Entry routines: for each owner, its symbols with walks that no walk of
  // another of its symbols calls (in address order; several are run one
  // after the other).
  WalkExpander expander(syms, owners, *walks, profile, out);
  std::map<std::string, std::vector<std::string>> owned;  // owner -> symbols with walks
  std::multimap<std::string, std::string> owners_of;      // symbol -> owners
  for (const NmSymbol& s : syms) {
    if (!s.text || s.size == 0 || !expander.has_walk(s.name)) continue;
    const auto [first, last] = owners.equal_range(s.name);
    for (auto it = first; it != last; ++it) {
      auto& v = owned[it->second];
      if (std::find(v.begin(), v.end(), s.name) == v.end()) v.push_back(s.name);
    }
  }
  for (const auto& [owner, symbols] : owned) {
    std::vector<std::string> roots;
    for (const auto& sym : symbols) {
      bool called = false;
      for (const auto& caller : symbols) {
        const auto w = walks->find({caller, 0});
        if (caller == sym || w == walks->end()) continue;
        for (const auto& item : w->second.items)
          if (item.target == sym && item.target_offset == 0) called = true;
      }
      if (!called) roots.push_back(sym);
    }
    if (roots.empty()) roots.push_back(symbols.front());
    if (roots.size() == 1) {
      out.entry[owner] = expander.routine({roots.front(), 0}, owner);
      continue;
    }
    Routine r{owner, roots.front(), {}, true};
    for (const auto& sym : roots) {
      const int i = expander.routine({sym, 0}, owner);
      const auto& steps = out.routines[static_cast<size_t>(i)].steps;
      r.steps.insert(r.steps.end(), steps.begin(), steps.end());
    }
    out.entry[owner] = static_cast<int>(out.routines.size());
    out.routines.push_back(std::move(r));
  }
  return out;
}

uint64_t total_hot_bytes(const LinkedLayout& linked) {
  std::vector<std::pair<uint64_t, uint64_t>> all;
  for (const auto& [owner, ranges] : linked.by_owner)
    for (const auto& r : ranges)
      if (r.bytes > 0) all.emplace_back(r.start, r.start + r.bytes);
  std::sort(all.begin(), all.end());
  uint64_t n = 0, end = 0;
  for (const auto& [a, b] : all) {
    const uint64_t from = std::max(a, end);
    if (b > from) n += b - from;
    end = std::max(end, b);
  }
  return n;
}

}  // namespace simloop::models

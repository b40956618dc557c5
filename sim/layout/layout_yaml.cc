// Layouts from YAML (configs/layouts/*.yaml): every key checked, each
// error located at its file, line and column.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <set>

#include "sim/layout/layout.h"
#include "sim/layout/layout_detail.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"

namespace simloop::models {

using detail::object_problem;
using detail::pow2;

namespace {

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

}  // namespace

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
  each_key(doc, file, "", {"name", "description", "text_base", "function_align", "objects"},
           [&](const std::string& key, const YAML::Node& v, const Loc& loc, const std::string& p) {
             if (key == "name") {
               l.name = parse_text(v, loc, p);
             } else if (key == "description") {
               (void)parse_text(v, loc, p);  // free text, for `simloop list`
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

}  // namespace simloop::models

// A layout's own rules: the owners its functions may name, and what makes
// an object's functions consistent.
#include "sim/layout/layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "sim/layout/code.h"
#include "sim/layout/layout_detail.h"
#include "sim/stack/stack_set.h"

namespace simloop::models {

const std::vector<std::string>& layout_owners() {
  static const std::vector<std::string> owners = [] {
    std::vector<std::string> v;
    for (const net::FnTable* t : stacks::fn_tables())
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

namespace detail {

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

}  // namespace detail

using detail::object_problem;
using detail::pow2;

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

namespace {

// "N function(s) ..., B B a packet" and the first few names.
std::pair<std::string, std::string> named_functions(
    const std::vector<std::pair<std::string, uint64_t>>& fns) {
  constexpr size_t kNamed = 4;
  uint64_t bytes = 0;
  std::vector<std::string> named;
  for (const auto& [sym, b] : fns) {
    bytes += b;
    if (named.size() < kNamed) named.push_back(fmt::format("{} ({} B)", sym, b));
  }
  if (fns.size() > kNamed) named.push_back(fmt::format("and {} more", fns.size() - kNamed));
  return {fmt::format("{} function(s) the profile says run, {} B a packet,", fns.size(), bytes),
          fmt::format("{}", fmt::join(named, ", "))};
}

}  // namespace

std::string unfetched_warning(const LinkedLayout& linked, const std::string& what) {
  if (linked.unfetched.empty()) return "";
  const auto [count, names] = named_functions(linked.unfetched);
  return fmt::format(
      "{}: {} are fetched by no owner's event (not in the owners file, and no walk of an owned "
      "function calls them), so the prediction leaves them out: {}",
      what, count, names);
}

std::string absent_warning(const LinkedLayout& linked, const std::string& what) {
  if (linked.absent.empty()) return "";
  const auto [count, names] = named_functions(linked.absent);
  return fmt::format(
      "{}: {} are not in this build's symbol map, so the prediction leaves them out: {}. A map "
      "from plain `nm` lacks the PLT (.plt, .iplt): give the binary itself, or the map simloop "
      "writes (`simloop measure cachegrind` and `measure native --harness` leave CSV.LAYOUT.nm "
      "beside their CSV); or is the profile of other objects?",
      what, count, names);
}

std::map<uint64_t, std::vector<LineCode>> code_by_line(const LinkedLayout& linked,
                                                       uint64_t line_bytes) {
  std::map<uint64_t, std::vector<LineCode>> lines;
  if (line_bytes == 0) return lines;
  for (const auto& [owner, ranges] : linked.by_owner)
    for (const auto& r : ranges) {
      if (r.bytes == 0) continue;
      for (uint64_t l = r.start / line_bytes; l <= (r.start + r.bytes - 1) / line_bytes; ++l) {
        auto& v = lines[l];
        LineCode c{r.symbol, owner};
        if (std::find(v.begin(), v.end(), c) == v.end()) v.push_back(std::move(c));
      }
    }
  return lines;
}

}  // namespace simloop::models

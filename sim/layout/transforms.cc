// Transforms of a layout before linking: padding an object, moving one to
// the end, aligning functions, reordering objects.
#include <fmt/format.h>

#include <algorithm>

#include "sim/layout/layout.h"
#include "sim/layout/layout_detail.h"

namespace simloop::models {

using detail::pow2;

namespace {

ObjectFile& find_object(Layout& l, const std::string& name) {
  for (auto& o : l.objects)
    if (o.name == name) return o;
  throw LayoutError(fmt::format("layout {}: no object named '{}'", l.name, name));
}

}  // namespace

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

}  // namespace simloop::models

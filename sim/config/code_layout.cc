// The code layout an experiment runs on: its layout.* files found, the
// transforms applied, the link perturbation drawn from the seed, linked.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

#include "sim/config/data_root.h"
#include "sim/config/loader_detail.h"
#include "sim/layout/build.h"

namespace simloop::config {

namespace fs = std::filesystem;

namespace {

// A comma-separated list's items, each without the spaces around it; empty
// items dropped.
std::vector<std::string> list_items(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (std::istringstream in(text); std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> parse_more_pads(const std::string& text) {
  std::vector<std::pair<std::string, uint64_t>> pads;
  for (const std::string& item : list_items(text)) {
    const size_t colon = item.rfind(':');
    std::string object = colon == std::string::npos ? "" : item.substr(0, colon);
    std::string bytes = colon == std::string::npos ? "" : item.substr(colon + 1);
    object.erase(object.find_last_not_of(' ') + 1);
    bytes.erase(0, bytes.find_first_not_of(' '));
    uint64_t n = 0;
    const bool digits = !bytes.empty() && bytes.size() <= 9 &&
                        bytes.find_first_not_of("0123456789") == std::string::npos;
    if (digits) n = std::stoull(bytes);
    if (object.empty() || !digits || n == 0 || n > (1U << 24))
      throw std::invalid_argument(fmt::format(
          "'{}': expected OBJECT:BYTES, BYTES a whole number from 1 to {}", item, 1U << 24));
    pads.emplace_back(std::move(object), n);
  }
  return pads;
}

models::Layout transform_layout(models::Layout k, const LayoutOptions& lo) {
  if (!lo.order.empty()) k = models::reorder(k, list_items(lo.order));
  if (!lo.pad_object.empty() && lo.pad_bytes > 0) {
    std::optional<uint64_t> at;
    if (lo.pad_offset >= 0) at = static_cast<uint64_t>(lo.pad_offset);
    k = models::pad_object(k, lo.pad_object, static_cast<uint64_t>(lo.pad_bytes), at);
  }
  for (const auto& [object, bytes] : parse_more_pads(lo.more_pads))
    k = models::pad_object(k, object, bytes);
  if (!lo.move_to_end.empty()) k = models::move_to_end(k, lo.move_to_end);
  if (lo.function_align > 0)
    k = models::align_functions(k, static_cast<uint64_t>(lo.function_align));
  return k;
}

fs::path find_layout(const fs::path& experiment_file, const std::string& ref) {
  return detail::resolve_ref(experiment_file, "layouts", ref,
                             detail::Loc{experiment_file.string(), 1, 1}, "layout");
}

namespace detail {

namespace {

// The layout.build key of one of a build's files.
std::string build_file_key(models::BuildFile f) {
  switch (f) {
    case models::BuildFile::nm:
      return "layout.build.nm";
    case models::BuildFile::owners:
      return "layout.build.owners";
    case models::BuildFile::profile:
      return "layout.build.profile";
    case models::BuildFile::map:
      return "layout.build.map";
    case models::BuildFile::order:
      return "layout.build.order";
  }
  return "layout.build";
}

// layout.build: a real build's maps, read as `simloop icache` and `simloop
// layout --nm` read them; none of the layout.* transforms of a YAML layout
// apply to it.
void build_code_layout_from_build(Experiment& x, const std::map<std::string, Loc>& where) {
  auto loc = [&](const std::string& key) {
    auto it = where.find(key);
    return it != where.end() ? it->second : Loc{x.source.string(), 1, 1};
  };
  const BuildLayout& b = x.layout.build;
  if (b.nm.empty()) fail(loc("layout.build"), "layout.build.nm", "expected the build's nm map");
  const LayoutOptions none;
  const std::pair<const char*, bool> exclusive[] = {
      {"layout.kernel", !x.layout.kernel.empty()},
      {"layout.user", !x.layout.user.empty()},
      {"layout.pad_object", !x.layout.pad_object.empty()},
      {"layout.more_pads", !x.layout.more_pads.empty()},
      {"layout.move_to_end", !x.layout.move_to_end.empty()},
      {"layout.function_align", x.layout.function_align != none.function_align},
      {"layout.order", !x.layout.order.empty()},
      {"variance.link_perturbation_bytes", x.variance.link_perturbation_bytes > 0},
  };
  for (const auto& [key, set] : exclusive)
    if (set)
      fail(loc(key), key,
           "does not apply with layout.build (a real build is linked as its maps say; relink "
           "it with layout.build.map and layout.build.order)");
  if (!b.order.empty() && b.map.empty())
    fail(loc("layout.build.order"), "layout.build.order",
         "needs layout.build.map: the link map says how the functions move");
  auto file = [&](const std::string& key, const std::string& ref) -> fs::path {
    if (ref.empty()) return {};
    return resolve_ref(x.source, "", ref, loc(key), key);
  };
  models::BuildFiles f;
  f.nm = file("layout.build.nm", b.nm);
  f.map = file("layout.build.map", b.map);
  f.order = file("layout.build.order", b.order);
  f.profile = file("layout.build.profile", b.profile);
  f.owners = b.owners.empty() ? data_root() / "configs" / "harness" / "owners.txt"
                              : file("layout.build.owners", b.owners);
  f.hot_fraction = b.hot_fraction;
  x.build_files = f;
  try {
    x.code = std::make_shared<const models::LinkedLayout>(models::load_build(f));
  } catch (const models::BuildFileError& e) {
    // At the key that named the file (the default owners file has none:
    // then at layout.build).
    const std::string key = build_file_key(e.file);
    fail(where.count(key) != 0 ? loc(key) : loc("layout.build"), key, e.what());
  } catch (const models::LayoutError& e) {
    fail(loc("layout.build"), "layout.build", e.what());
  }
}

}  // namespace

void build_code_layout(Experiment& x, const std::map<std::string, Loc>& where) {
  auto loc = [&](const std::string& key) {
    auto it = where.find(key);
    return it != where.end() ? it->second : Loc{x.source.string(), 1, 1};
  };
  if (!x.layout.build.nm.empty() || !x.layout.build.map.empty() || !x.layout.build.order.empty() ||
      !x.layout.build.profile.empty()) {
    build_code_layout_from_build(x, where);
    return;
  }
  if (x.layout.kernel.empty()) {
    if (!x.layout.more_pads.empty())
      fail(loc("layout.more_pads"), "layout.more_pads",
           "needs layout.kernel: it pads objects of a kernel layout");
    if (x.cache_enabled)
      fail(loc("machine.cache.enabled"), "machine.cache.enabled",
           "the cache model needs layout.kernel or layout.build.nm");
    return;
  }
  auto load = [&](const std::string& key, const std::string& ref) {
    const fs::path p = resolve_ref(x.source, "layouts", ref, loc(key), key);
    try {
      return models::load_layout_yaml(p);
    } catch (const models::LayoutError& e) {
      throw ConfigError(e.what());
    }
  };
  // layout.more_pads's own faults at its key; an object the layout lacks
  // is named there too.
  std::vector<std::pair<std::string, uint64_t>> pads;
  try {
    pads = parse_more_pads(x.layout.more_pads);
  } catch (const std::invalid_argument& e) {
    fail(loc("layout.more_pads"), "layout.more_pads", e.what());
  }
  models::Layout kernel = load("layout.kernel", x.layout.kernel);
  for (const auto& [object, bytes] : pads)
    if (std::none_of(kernel.objects.begin(), kernel.objects.end(),
                     [&o = object](const models::ObjectFile& f) { return f.name == o; }))
      fail(loc("layout.more_pads"), "layout.more_pads",
           fmt::format("no object '{}' in layout {}", object, kernel.name));
  try {
    models::Layout k = transform_layout(std::move(kernel), x.layout);
    if (x.variance.link_perturbation_bytes > 0 && !k.objects.empty()) {
      // Fixed by the seed: the same run twice is the same binary.
      std::mt19937_64 rng(x.seed ^ 0x9e3779b97f4a7c15ULL);
      const std::string obj = k.objects[rng() % k.objects.size()].name;  // k is replaced below
      const auto bytes =
          16 * (rng() % (static_cast<uint64_t>(x.variance.link_perturbation_bytes) / 16 + 1));
      if (bytes > 0) k = models::pad_object(k, obj, bytes);
      x.perturbation = fmt::format("{} bytes in {}", bytes, obj);
    }
    models::LinkedLayout linked = models::link(k);
    if (!x.layout.user.empty())
      linked = models::merge(linked, models::link(load("layout.user", x.layout.user)));
    x.code = std::make_shared<const models::LinkedLayout>(std::move(linked));
  } catch (const models::LayoutError& e) {
    fail(loc("layout.kernel"), "layout", e.what());
  }
}

}  // namespace detail

}  // namespace simloop::config

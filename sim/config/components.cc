// Machines and stacks: found by name in the config roots or by path, loaded
// as the experiment's machine.* and stack.* keys.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <system_error>
#include <tuple>

#include "sim/config/data_root.h"
#include "sim/config/host_profiles.h"
#include "sim/config/loader_detail.h"
#include "sim/support/input_file.h"
#include "sim/support/text.h"

namespace simloop::config {

namespace fs = std::filesystem;

namespace detail {

namespace {

// The names of the KIND files under each root (a machine's or stack's name
// is its file's stem), for "did you mean".
std::vector<std::string> names_in(const std::vector<fs::path>& roots, const std::string& kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& root : roots)
    for (fs::directory_iterator it(root / kind, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  return names;
}

fs::path find_ref(const fs::path& experiment, const std::string& kind, const std::string& ref,
                  const Loc& loc, const std::string& key) {
  const fs::path base = experiment.has_parent_path() ? experiment.parent_path() : fs::path(".");
  const bool is_path =
      kind.empty() || ref.find('/') != std::string::npos || fs::path(ref).extension() == ".yaml";
  std::vector<fs::path> tried;
  if (is_path) {
    // A relative path: from the experiment's directory, then the working
    // directory, then the data directory (a copied experiment that names
    // configs/machines/NAME.yaml still finds it).
    tried.push_back(fs::path(ref).is_absolute() ? fs::path(ref) : base / ref);
    if (!fs::path(ref).is_absolute())
      for (const fs::path& p : {fs::path(ref), data_root() / ref})
        if (std::none_of(tried.begin(), tried.end(), [&](const fs::path& t) {
              return t.lexically_normal() == p.lexically_normal();
            }))
          tried.push_back(p.lexically_normal());
  } else {
    for (const auto& root : config_roots(experiment))
      tried.push_back(root / kind / (ref + ".yaml"));
  }
  const std::string what = kind.empty() ? "file" : kind.substr(0, kind.size() - 1);
  if (ref.empty()) fail(loc, key, fmt::format("expected the name or path of a {}", what));
  // This machine's own profile (simloop calibrate host): found by the
  // host's fingerprint under the user's data directory, never in the
  // config roots, so that a name means the same from any experiment.
  if (!is_path && !host_profile_files(kind, ref).empty()) {
    const auto found = find_host_profile(kind, ref);
    if (found.file) return *found.file;
    fail(loc, key, found.problem);
  }
  const std::string expected = kind.empty() ? "a file" : fmt::format("a {} file", what);
  for (const auto& p : tried) {
    const std::string why = support::input_problem(p);
    if (why.empty()) return p;
    // Something there that cannot be read as a file (a directory, a device,
    // a FIFO): said as it is, not as a file that is missing.
    if (why.starts_with("is "))
      fail(loc, key, fmt::format("'{}' {}; expected {}", printable(ref), why, expected));
  }
  std::vector<std::string> names;
  for (const auto& p : tried) names.push_back(printable(p.string(), 120));
  std::string near;
  if (!is_path) near = support::suggest(ref, names_in(config_roots(experiment), kind));
  fail(loc, key,
       fmt::format("no {} named '{}'{} (looked for {})", what, printable(ref),
                   near.empty() ? "" : fmt::format("; did you mean '{}'?", near),
                   fmt::join(names, ", ")));
}

}  // namespace

fs::path resolve_ref(const fs::path& experiment, const std::string& kind, const std::string& ref,
                     const Loc& loc, const std::string& key) {
  const uint64_t id = parsed_yaml_cache_id();
  if (id == 0) return find_ref(experiment, kind, ref, loc, key);
  // Files are read once (a sweep): so are the places they are found, for
  // as long as the files are kept.
  static std::map<std::tuple<std::string, std::string, std::string>, fs::path> found;
  static uint64_t found_for = 0;
  if (found_for != id) {
    found.clear();
    found_for = id;
  }
  const auto k = std::make_tuple(experiment.string(), kind, ref);
  if (const auto it = found.find(k); it != found.end()) return it->second;
  return found[k] = find_ref(experiment, kind, ref, loc, key);
}

void apply_component(Experiment& x, const YAML::Node& node, const std::string& key,
                     const fs::path& file, bool from_set, LeaveOut* leave) {
  const std::string kind = key == "machine" ? "machines" : "stacks";
  auto where = [&](const YAML::Node& n) { return from_set ? Loc{} : loc_of(file.string(), n); };
  const Loc loc = where(node);
  auto load_ref = [&](const YAML::Node& ref) {
    if (!ref.IsScalar())
      fail(where(ref), key, "expected a name or a path, got " + scalar_text(ref));
    const fs::path p = resolve_ref(file, kind, ref.Scalar(), where(ref), key);
    const YAML::Node doc = read_yaml_file(p);
    apply_map(x, doc, key + ".", p.string());
    std::string& name = key == "machine" ? x.machine_name : x.stack_name;
    if (name.empty()) name = ref.Scalar();
  };
  std::string& chosen_by = key == "machine" ? x.machine_ref : x.stack_ref;
  if (node.IsScalar()) {
    load_ref(node);
    chosen_by = node.Scalar();
  } else if (node.IsMap() && !from_set) {
    if (node["use"]) load_ref(node["use"]);
    apply_map(x, node, key + ".", file.string(), {"use"}, leave);
    chosen_by.clear();
  } else {
    fail(loc, key,
         fmt::format("expected a name, a path{}, got {}", from_set ? "" : ", or a map of fields",
                     scalar_text(node)));
  }
}

}  // namespace detail

fs::path find_profile(const fs::path& experiment_file, const std::string& key,
                      const std::string& ref, const std::string& file, int line, int col) {
  return detail::resolve_ref(experiment_file, key == "machine" ? "machines" : "stacks", ref,
                             detail::Loc{file, line, col}, key);
}

std::vector<fs::path> config_roots(const fs::path& experiment_file) {
  const fs::path base =
      experiment_file.has_parent_path() ? experiment_file.parent_path() : fs::path(".");
  std::vector<fs::path> roots;
  for (fs::path p :
       {base / ".." / "configs", base / "configs", fs::path("configs"), data_root() / "configs"}) {
    p = p.lexically_normal();
    if (std::find(roots.begin(), roots.end(), p) == roots.end()) roots.push_back(p);
  }
  return roots;
}

}  // namespace simloop::config

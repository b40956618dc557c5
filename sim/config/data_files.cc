// Shipped files found from anywhere, and listed by kind.
#include "sim/config/data_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "sim/config/data_root.h"
#include "sim/support/host.h"
#include "sim/support/yaml_input.h"

namespace simloop::config {

namespace fs = std::filesystem;

FoundFile find_input(const fs::path& given, const fs::path& data_dir) {
  if (given.empty() || given.is_absolute()) return {given, FoundIn::as_given};
  std::error_code ec;
  if (fs::exists(given, ec)) return {given, FoundIn::working_dir};
  const fs::path shipped = data_dir / given;
  if (fs::exists(shipped, ec)) return {shipped, FoundIn::data_dir};
  return {given, FoundIn::as_given};
}

FoundFile find_input(const fs::path& given) {
  return find_input(given, data_root());
}

std::string found_in_text(const FoundFile& f, const fs::path& data_dir) {
  switch (f.in) {
    case FoundIn::working_dir:
      return "the working directory";
    case FoundIn::data_dir:
      return fmt::format("the data directory {}", data_dir.string());
    case FoundIn::as_given:
      break;
  }
  return "as given";
}

const std::vector<std::string>& shipped_kinds() {
  static const std::vector<std::string> kinds = {"experiments", "machines", "stacks", "layouts"};
  return kinds;
}

namespace {

std::vector<fs::path> yaml_files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml" && e.is_regular_file(ec)) out.push_back(e.path());
  return out;
}

std::string first_comment_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  for (int n = 0; n < 50 && std::getline(in, line); ++n) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    if (line[b] != '#') return "";
    const auto t = line.find_first_not_of("# \t", b);
    if (t != std::string::npos) return printable(line.substr(t), 200);
  }
  return "";
}

}  // namespace

std::string describe_file(const fs::path& file) {
  try {
    const YAML::Node doc = read_yaml_file(file);
    if (doc.IsMap())
      if (const YAML::Node d = doc["description"]; d && d.IsScalar())
        return printable(d.Scalar(), 200);
  } catch (const std::exception& e) {
    return fmt::format("(cannot be read: {})", printable(e.what(), 200));
  }
  return first_comment_line(file);
}

std::string machine_origin(const fs::path& file) {
  try {
    const YAML::Node doc = read_yaml_file(file);
    if (!doc.IsMap()) return "";
    auto scalar = [](const YAML::Node& n) { return n && n.IsScalar() ? n.Scalar() : ""; };
    const std::string costs = scalar(doc["costs"]), year = scalar(doc["year"]);
    support::HostFacts h;
    if (const YAML::Node host = doc["host"]; host && host.IsMap()) {
      h.cpu = scalar(host["cpu"]);
      h.kernel = scalar(host["kernel"]);
      h.caches = scalar(host["caches"]);
      h.clock_mhz = host["clock_mhz"].as<double>(0);
    }
    std::string out = costs.empty() || costs == "unknown" ? "" : costs;
    if (!year.empty() && year != "0") out += (out.empty() ? "of " : " in ") + year;
    if (!h.empty())
      out += fmt::format("{}on host {} ({})", out.empty() ? "" : " ", h.fingerprint(),
                         printable(h.summary(), 200));
    return out;
  } catch (const std::exception&) {
    return "";
  }
}

std::vector<ShippedFile> shipped_files(const fs::path& data_dir, const std::string& kind) {
  const auto& kinds = shipped_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    throw std::invalid_argument("no kind of shipped file named '" + kind + "'");
  std::vector<ShippedFile> out;
  auto add = [&](const fs::path& f, std::string name) {
    out.push_back({kind, std::move(name), f, describe_file(f)});
  };
  if (kind == "experiments") {
    const fs::path top = data_dir / "experiments";
    std::vector<fs::path> files = yaml_files_in(top);
    std::error_code ec;
    if (fs::is_directory(top, ec))
      for (const auto& e : fs::directory_iterator(top, ec))
        if (e.is_directory(ec))
          for (auto& f : yaml_files_in(e.path())) files.push_back(std::move(f));
    for (const auto& f : files) add(f, fs::relative(f, data_dir).generic_string());
  } else {
    for (const auto& f : yaml_files_in(data_dir / "configs" / kind)) add(f, f.stem().string());
  }
  std::sort(out.begin(), out.end(),
            [](const ShippedFile& a, const ShippedFile& b) { return a.name < b.name; });
  return out;
}

}  // namespace simloop::config

#include "sim/engine/undetermined.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <utility>

namespace simloop::engine {

namespace {

constexpr std::string_view kFunctions = "stack.functions.";

// The file part of "FILE:LINE:COL", shown from the working directory when
// it lies below it; "--set" stays as it is.
std::string file_of(const std::string& where) {
  namespace fs = std::filesystem;
  std::string file = where;
  for (int i = 0; i < 2; ++i)
    if (const auto colon = file.rfind(':'); colon != std::string::npos) file.resize(colon);
  if (where == "--set" || file.empty()) return where;
  const fs::path p(file);
  std::error_code ec;
  if (p.is_absolute()) {
    const fs::path rel = p.lexically_relative(fs::current_path(ec));
    if (!ec && !rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return file;
}

}  // namespace

std::string priced_function(const std::string& key) {
  return key.compare(0, kFunctions.size(), kFunctions) == 0 ? key.substr(kFunctions.size()) : "";
}

std::vector<UndeterminedUse> undetermined_uses(const config::Experiment& x,
                                               const models::PriceUses& uses) {
  std::vector<UndeterminedUse> out;
  if (x.undetermined.empty()) return out;
  for (const std::string& key : config::cost_keys(config::stack_of(x))) {
    const auto it = x.undetermined.find(key);
    if (it == x.undetermined.end()) continue;
    UndeterminedUse u{key, it->second, "calls", 0};
    if (const std::string fn = priced_function(key); !fn.empty()) {
      if (const auto id = x.stack.fns->find(fn)) u.uses = uses.calls[net::index(*id)];
    } else {
      // Every other cost key is a price of models::kPriceKeys (a test holds
      // the schema to it); one that were not is taken as used.
      u.uses = 1;
      for (size_t p = 0; p < models::kPriceCount; ++p)
        if (models::kPriceKeys[p].key == key) {
          u.uses = uses.of[p];
          u.unit = models::kPriceKeys[p].unit;
        }
    }
    if (u.uses > 0) out.push_back(std::move(u));
  }
  return out;
}

namespace {

// Which costs, how much a packet, and the profiles that leave them so.
std::string undetermined_list(const config::Experiment& x, const SimResult& r) {
  const double per = r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0;
  // By the profile (and file) that leaves them undetermined, in order.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& u : r.undetermined) {
    const bool machine = u.key.compare(0, 8, "machine.") == 0;
    const std::string profile =
        u.where == "--set" ? "--set"
                           : fmt::format("{} {} ({})", machine ? "machine" : "stack",
                                         machine ? x.machine_name : x.stack_name, file_of(u.where));
    const std::string fn = priced_function(u.key);
    const std::string item =
        r.packets > 0 ? fmt::format("{} ({} per packet: {:.4g})", fn.empty() ? u.key : fn, u.unit,
                                    u.uses * per)
                      : fmt::format("{} ({}: {:.4g})", fn.empty() ? u.key : fn, u.unit, u.uses);
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& e) { return e.first == profile; });
    if (g == groups.end()) g = groups.insert(groups.end(), {profile, {}});
    g->second.push_back(item);
  }
  std::vector<std::string> parts;
  for (const auto& [profile, items] : groups)
    parts.push_back(fmt::format("{}: {}", profile, fmt::join(items, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::string undetermined_warning(const config::Experiment& x, const SimResult& r) {
  if (r.undetermined.empty()) return "";
  return fmt::format(
      "this run used costs left undetermined (`~`), priced 0, so its cycles and rate leave "
      "them out: {}. Price one with --set {}=VALUE; run --strict refuses such a run",
      undetermined_list(x, r), r.undetermined.front().key);
}

std::string undetermined_refusal(const config::Experiment& x, const SimResult& r) {
  if (r.undetermined.empty()) return "";
  return fmt::format(
      "--strict: the run uses costs left undetermined (`~`), which it would price 0: {}. Give "
      "each a value (--set {}=VALUE) to run it; nothing was written",
      undetermined_list(x, r), r.undetermined.front().key);
}

nlohmann::json undetermined_json(const SimResult& r) {
  const double per = r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& u : r.undetermined) {
    nlohmann::json j = {{"key", u.key},
                        {"where", u.where},
                        {"unit", u.unit},
                        {"uses", u.uses},
                        {"per_packet", u.uses * per}};
    if (const std::string fn = priced_function(u.key); !fn.empty()) j["function"] = fn;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace simloop::engine

// Reading `measure kernel --split` rows into a kernel-measured stack's points
// (kernel_fit.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <tuple>

#include "models/costs.h"
#include "models/l1d_copies.h"
#include "sim/report/csv_table.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/calibrate/kernel_fit.h"

namespace simloop::measure {

namespace fs = std::filesystem;

std::string KernelPoint::label() const {
  return fmt::format("path={} payload={}{}{}{}", path, payload,
                     sendmmsg != 1 ? fmt::format(" sendmmsg={}", sendmmsg) : std::string(),
                     segments != 1 ? fmt::format(" segments={}", segments) : std::string(),
                     nft_rules > 0 ? fmt::format(" nft_rules={}", nft_rules) : std::string());
}

double KernelPoint::share(const std::string& fn) const {
  if (value.cpu_ns <= 0) return 0;
  double v = 0;
  if (fn == "syscall_entry")
    v = value.syscall_ns;
  else if (fn == "user")
    v = value.user_ns;
  else if (auto it = value.fn_ns.find(fn); it != value.fn_ns.end())
    v = it->second;
  return v / value.cpu_ns;
}

namespace {

constexpr const char* kColumns[] = {
    "repeat",        "payload",   "path",       "packets",
    "ns_per_packet", "kind",      "charged_to", "self_ns_per_packet",
    "loadavg_1m",    "cpu_model", "kernel"};

// The machine a split file was measured on: its clock and, where it says
// it, its L1 data cache, from FILE.machine.json.
std::pair<double, L1dGeometry> machine_of(const fs::path& csv) {
  const fs::path mj = csv.string() + ".machine.json";
  std::ifstream in(mj);
  if (!in)
    throw InputError(
        fmt::format("{}: cannot read it (measure kernel --split -o {} writes it beside "
                    "the rows; its cpu_mhz is the clock the fit prices cycles at)",
                    mj.string(), csv.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", mj.string(), e.what()));
  }
  if (!j.contains("cpu_mhz") || !j["cpu_mhz"].is_number() || j["cpu_mhz"].get<double>() <= 0)
    throw InputError(
        fmt::format("{}: cpu_mhz: expected a positive number (the CPU's clock)", mj.string()));
  L1dGeometry l1d;
  if (j.contains("l1d")) {
    const auto& c = j["l1d"];
    const bool ints = c.is_object() && c.contains("bytes") && c["bytes"].is_number_integer() &&
                      c.contains("ways") && c["ways"].is_number_integer();
    const int64_t bytes = ints ? c["bytes"].get<int64_t>() : 0;
    const int64_t ways = ints ? c["ways"].get<int64_t>() : 0;
    // Ways past an int are out of range: 0 has problem() say so.
    const int w = ways >= 1 && ways <= 1024 ? static_cast<int>(ways) : 0;
    const std::string why = models::L1dCopies::problem(bytes, w, models::MachineCosts{}.line_bytes);
    if (!ints || !why.empty())
      throw InputError(fmt::format(
          "{}: l1d: expected {{\"bytes\": N, \"ways\": W}}, the L1 data cache from sysfs{}",
          mj.string(), ints ? " (" + why + ")" : ""));
    l1d.bytes = bytes;
    l1d.ways = w;
  }
  return {j["cpu_mhz"].get<double>() * 1e6, l1d};
}

}  // namespace

KernelMeasured read_kernel_split(const std::vector<fs::path>& csvs, Stat stat,
                                 const std::string& stack, std::optional<KernelTotals> totals) {
  KernelMeasured m;
  m.stack = stack;
  const net::FnTable* table = stacks::find_fn_table(stack);
  if (table == nullptr) throw InputError("no stack named " + stack);
  const net::FnTable& fns = *table;
  // (path, payload, knobs) -> the point's index; (file, repeat) within each point.
  std::map<std::tuple<std::string, int, KernelKnobs>, size_t> index;
  std::map<std::pair<size_t, std::pair<size_t, int>>, size_t> repeat_of;
  for (size_t fi = 0; fi < csvs.size(); ++fi) {
    const fs::path& csv = csvs[fi];
    const auto [clock, l1d] = machine_of(csv);
    // Files that say different caches are of different machines; a file
    // that says none (measured before measure kernel wrote it) leaves the
    // cache unknown, which only --l1d needs.
    if (fi == 0 || l1d.bytes == 0) {
      m.l1d = l1d;
    } else if (m.l1d.bytes > 0 && (l1d.bytes != m.l1d.bytes || l1d.ways != m.l1d.ways)) {
      throw InputError(fmt::format(
          "{}: its L1 data cache ({} bytes, {} ways) is not that of the files before it ({} "
          "bytes, {} ways): one fit is of one machine",
          csv.string(), l1d.bytes, l1d.ways, m.l1d.bytes, m.l1d.ways));
    }
    if (m.clock_hz > 0 && std::abs(clock - m.clock_hz) > 1e-3 * m.clock_hz)
      throw InputError(
          fmt::format("{}: measured at {:.6g} MHz, the files before it at {:.6g} MHz: "
                      "one fit is of one machine",
                      csv.string(), clock / 1e6, m.clock_hz / 1e6));
    m.clock_hz = clock;
    std::string text;
    try {
      text = report::read_csv_file(csv, csv.string(), "the rows of measure kernel --split");
    } catch (const report::CsvError& e) {
      throw InputError(e.what());
    }
    try {
      report::CsvReader r(text, csv.string(), {.expected = "the rows of measure kernel --split"});
      std::map<std::string, size_t> col;
      for (const char* c : kColumns) {
        const auto at = r.column(c);
        if (!at)
          throw InputError(
              fmt::format("{}:1: column '{}' missing: expected the rows of measure "
                          "kernel --split",
                          csv.string(), c));
        col[c] = *at;
      }
      // Rows of a run without --sendmmsg have no such column: sendto().
      const auto batch_col = r.column("sendmmsg");
      // Rows of measure kernel --nft-rules say their rule count; others have none.
      const auto rules_col = r.column("nft_rules");
      // Datagrams per send: rows from before UDP GSO have no such column.
      const auto seg_col = r.column("segments");
      // The plain run's totals: rows from before it have no such columns.
      const auto plain_col = r.column("plain_cpu_ns_per_packet");
      const auto plain_user_col = r.column("plain_user_ns_per_packet");
      auto number = [&](const char* c) {
        double v = 0;
        if (!report::parse_number(r.cell(col[c]), &v))
          throw InputError(fmt::format("{}: {}: expected a number, found '{}'", r.where(), c,
                                       config::printable(r.cell(col[c]))));
        return v;
      };
      while (r.next()) {
        const std::string path = r.cell(col["path"]);
        if (path != "unconnected" && path != "connected" && path != "veth" &&
            path != "veth-connected")
          throw InputError(fmt::format(
              "{}: path: expected unconnected, connected, veth or veth-connected, found '{}'",
              r.where(), config::printable(path)));
        const int payload = static_cast<int>(number("payload"));
        const int repeat = static_cast<int>(number("repeat"));
        int rules = 0;
        if (rules_col && !r.cell(*rules_col).empty()) {
          double v = 0;
          if (!report::parse_number(r.cell(*rules_col), &v) || v < 0 || v > 1e4 || v != int(v))
            throw InputError(fmt::format("{}: nft_rules: expected a count 0 to 10000, found '{}'",
                                         r.where(), config::printable(r.cell(*rules_col))));
          rules = static_cast<int>(v);
        }
        int segments = 1;
        if (seg_col) {
          double v = 0;
          if (!report::parse_number(r.cell(*seg_col), &v) || v < 1 || v != std::floor(v))
            throw InputError(fmt::format("{}: segments: expected a whole number from 1, found '{}'",
                                         r.where(), config::printable(r.cell(*seg_col))));
          segments = static_cast<int>(v);
        }
        const std::string to = r.cell(col["charged_to"]);
        const std::string kind = r.cell(col["kind"]);
        const bool known = to.empty() || to == "syscall_entry" || to == "user" || fns.find(to);
        if (!known)
          throw InputError(
              fmt::format("{}: charged_to: '{}' is not a function of the Linux "
                          "stack (stack.kind {}), syscall_entry, user or empty",
                          r.where(), config::printable(to), stack));
        int batch = 1;
        if (batch_col) {
          double v = 0;
          if (!report::parse_number(r.cell(*batch_col), &v) || v < 1 || v != std::floor(v))
            throw InputError(fmt::format("{}: sendmmsg: expected a whole number from 1, found '{}'",
                                         r.where(), config::printable(r.cell(*batch_col))));
          batch = static_cast<int>(v);
        }
        const KernelKnobs knobs{.sendmmsg = batch, .nft_rules = rules, .segments = segments};
        auto [it, fresh] = index.try_emplace({path, payload, knobs}, m.points.size());
        if (fresh) {
          KernelPoint p;
          p.path = path;
          p.payload = payload;
          p.sendmmsg = batch;
          p.nft_rules = rules;
          p.segments = segments;
          p.where = r.where();
          m.points.push_back(std::move(p));
        }
        KernelPoint& p = m.points[it->second];
        auto [rt, new_repeat] = repeat_of.try_emplace({it->second, {fi, repeat}}, p.repeats.size());
        if (new_repeat) {
          p.repeats.emplace_back();
          KernelRepeat& fresh_rep = p.repeats.back();
          fresh_rep.wall_ns = number("ns_per_packet");
          fresh_rep.packets = static_cast<int64_t>(number("packets"));
          auto optional_ns = [&](const std::optional<size_t>& c, const char* name) {
            double v = 0;
            if (!c || r.cell(*c).empty()) return 0.0;
            if (!report::parse_number(r.cell(*c), &v) || !(v >= 0) || !std::isfinite(v))
              throw InputError(fmt::format("{}: {}: expected ns per packet, got '{}'", r.where(),
                                           name, config::printable(r.cell(*c))));
            return v;
          };
          fresh_rep.plain_cpu_ns = optional_ns(plain_col, "plain_cpu_ns_per_packet");
          fresh_rep.plain_user_ns = optional_ns(plain_user_col, "plain_user_ns_per_packet");
        }
        KernelRepeat& rep = p.repeats[rt->second];
        const double ns = number("self_ns_per_packet");
        rep.cpu_ns += ns;
        rep.perf_cpu_ns += ns;
        if (to == "syscall_entry")
          rep.syscall_ns += ns;
        else if (to == "user")
          rep.user_ns += ns;
        else if (to.empty())
          rep.other_ns += ns;
        else
          rep.fn_ns[to] += ns;
        (void)kind;
        m.loadavg = std::max(m.loadavg, number("loadavg_1m"));
        const std::string cpu = r.cell(col["cpu_model"]), kernel = r.cell(col["kernel"]);
        if (m.cpu_model.empty()) m.cpu_model = cpu, m.kernel = kernel;
        if (cpu != m.cpu_model || kernel != m.kernel)
          throw InputError(fmt::format(
              "{}: measured on {} ({}), rows before it on {} ({}): one fit "
              "is of one machine",
              r.where(), config::printable(cpu), config::printable(kernel), m.cpu_model, m.kernel));
      }
    } catch (const report::CsvError& e) {
      throw InputError(e.what());
    }
  }
  if (m.points.empty())
    throw InputError(fmt::format("{}: no rows", csvs.empty() ? "" : csvs.front().string()));
  // The totals: the plain run's where every repeat has one, perf's shares
  // kept. A fit does not mix the two time bases.
  const KernelPoint* lacking = nullptr;
  for (const auto& p : m.points)
    for (const auto& r : p.repeats)
      if (r.plain_cpu_ns <= 0 && lacking == nullptr) lacking = &p;
  const KernelTotals base =
      totals.value_or(lacking == nullptr ? KernelTotals::plain : KernelTotals::perf);
  if (base == KernelTotals::plain && lacking != nullptr)
    throw InputError(fmt::format(
        "{}: point {} has no plain_cpu_ns_per_packet (rows measured before measure kernel "
        "--split ran each slice without perf too): measure it again, or fit to perf's own "
        "totals with --totals perf",
        lacking->where, lacking->label()));
  if (base == KernelTotals::plain) {
    m.time_base = "plain";
    std::vector<double> ratios;
    for (auto& p : m.points)
      for (auto& r : p.repeats) {
        if (r.perf_cpu_ns <= 0) {
          r.cpu_ns = r.plain_cpu_ns;  // no sample to share it out: none of it is priced
          continue;
        }
        ratios.push_back(r.perf_cpu_ns / r.plain_cpu_ns);
        const double k = r.plain_cpu_ns / r.perf_cpu_ns;
        r.cpu_ns = r.plain_cpu_ns;
        r.syscall_ns *= k;
        r.user_ns *= k;
        r.other_ns *= k;
        for (auto& [fn, ns] : r.fn_ns) ns *= k;
      }
    if (!ratios.empty()) m.perf_over_plain = apply_stat(Stat::median, ratios);
  }
  // The statistic of each quantity over the repeats; a function a repeat
  // never sampled counts 0 there.
  for (auto& p : m.points) {
    auto over = [&](auto get) {
      std::vector<double> v;
      for (const auto& r : p.repeats) v.push_back(get(r));
      return apply_stat(stat, v);
    };
    p.value.wall_ns = over([](const KernelRepeat& r) { return r.wall_ns; });
    p.value.cpu_ns = over([](const KernelRepeat& r) { return r.cpu_ns; });
    p.value.perf_cpu_ns = over([](const KernelRepeat& r) { return r.perf_cpu_ns; });
    p.value.plain_cpu_ns = over([](const KernelRepeat& r) { return r.plain_cpu_ns; });
    p.value.plain_user_ns = over([](const KernelRepeat& r) { return r.plain_user_ns; });
    p.value.syscall_ns = over([](const KernelRepeat& r) { return r.syscall_ns; });
    p.value.user_ns = over([](const KernelRepeat& r) { return r.user_ns; });
    p.value.other_ns = over([](const KernelRepeat& r) { return r.other_ns; });
    std::set<std::string> names;
    for (const auto& r : p.repeats)
      for (const auto& [fn, ns] : r.fn_ns) names.insert(fn);
    for (const auto& fn : names)
      p.value.fn_ns[fn] = over([&](const KernelRepeat& r) {
        const auto it = r.fn_ns.find(fn);
        return it == r.fn_ns.end() ? 0.0 : it->second;
      });
  }
  return m;
}

}  // namespace simloop::measure

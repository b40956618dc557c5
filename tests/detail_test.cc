// Per-function detail of a run: the function view holds the same cycles as
// the stage view, I-cache misses land on the code that missed, every
// function says its part of the path, and the output reference matches the
// columns runs write.
#include "sim/engine/detail.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "models/optional_models.h"
#include "sim/engine/columns.h"
#include "sim/engine/simulation.h"
#include "sim/engine/undetermined.h"
#include "sim/layout/layout.h"
#include "sim/stack/stack_set.h"
#include "sim_child.h"
#include "stacks/poll/fns.h"

namespace simloop::engine {
namespace {

using nlohmann::json;
using testing::in_child;

const std::string kSource = SIMLOOP_SOURCE_DIR;

// The result row with the detail beside it.
json run_detail(const config::Experiment& x) {
  return in_child([&x] {
    const SimResult r = simulate(x);
    json j = detail_json(r);
    j["result"] = report::to_json(result_row(x, r));
    j["long"] = json::array();
    for (const auto& row : long_rows(x, r)) j["long"].push_back(report::to_json(row));
    return j;
  });
}

json seed_detail(const std::string& name, std::vector<std::string> sets) {
  sets.push_back("workload.packets=5000");
  return run_detail(config::load_experiment(kSource + "/experiments/" + name, sets));
}

double sum_of(const json& fns, const std::string& key) {
  double s = 0;
  for (const auto& f : fns) s += f[key].get<double>();
  return s;
}

// Both views hold every cycle: per function, the kinds add up to the run's
// cycles per packet; the cache column to cycles_cache; copies and
// misaligned accesses to the copy and unaligned stages; the idle kind to
// sleep and idle; misses by function and by set to the run's misses. On
// every destination, interrupts on and off, with ENOBUFS sleep, and with
// misaligned headers.
TEST(Detail, FunctionsHoldEveryCycleOfTheStages) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"seed/icache-baseline.yaml", {}},
      {"seed/icache-padded.yaml", {"workload.dest=broadcast"}},
      {"seed/icache-baseline.yaml", {"workload.dest=loopback", "interrupts.enabled=false"}},
      {"seed/icache-baseline.yaml", {"workload.dest=self"}},
      {"seed/icache-padded.yaml", {"workload.dest=wire", "interrupts.enabled=false"}},
      {"seed/align-copy-copydown.yaml", {}},
      {"seed/align-none-x86.yaml", {}},
      {"seed/sockaddr-misaligned.yaml", {}},
      {"seed-athlon.yaml", {"workload.dest=wire", "workload.payload=1400"}},
  };
  for (const auto& [file, sets] : cases) {
    SCOPED_TRACE(file + " " + (sets.empty() ? "" : sets[0]));
    const json j = seed_detail(file, sets);
    const json& r = j["result"];
    const json& f = j["functions"];
    const double cpp = r["cycles_per_packet"].get<double>();
    ASSERT_GT(cpp, 0);
    const double tol = 1e-9 * cpp;
    EXPECT_NEAR(sum_of(f, "cycles_per_packet"), cpp, tol);
    double kinds = 0;
    for (const char* k : {"event", "per_byte", "copy", "misaligned", "cache", "idle"})
      kinds += sum_of(f, k);
    EXPECT_NEAR(kinds, cpp, tol);
    EXPECT_NEAR(sum_of(f, "cache"), r["cycles_cache"].get<double>(), tol);
    EXPECT_NEAR(sum_of(f, "copy") + sum_of(f, "misaligned"),
                r["cycles_copy"].get<double>() + r["cycles_unaligned"].get<double>(), tol);
    EXPECT_NEAR(sum_of(f, "idle"), r["cycles_sleep"].get<double>() + r["cycles_idle"].get<double>(),
                tol);
    if (r.contains("i1_misses_per_packet")) {
      const double m = r["i1_misses_per_packet"].get<double>();
      EXPECT_NEAR(sum_of(f, "i1_misses_per_packet"), m, 1e-9 * (1 + m));
      EXPECT_NEAR(sum_of(j["icache_sets"], "misses_per_packet"), m, 1e-9 * (1 + m));
      EXPECT_NEAR(sum_of(j["icache_sets"], "stall_per_packet"), r["cycles_cache"].get<double>(),
                  tol);
    }
    // The long rows say the same, one per function and metric.
    EXPECT_EQ(j["long"].size(), f.size() * function_metrics().size());
    double long_total = 0;
    for (const auto& row : j["long"])
      if (row["metric"] == "cycles_total") long_total += row["value"].get<double>();
    EXPECT_NEAR(long_total, cpp, tol);
  }
}

config::Experiment conflict_experiment() {
  config::Experiment x;
  x.name = "test";
  x.machine = {};
  x.machine.clock_hz = 1e9;
  x.machine.syscall_entry_cycles = 1000;
  x.stack = {.fns = x.stack.fns};  // no costs, the same stack
  x.interrupts = {};
  x.workload.payload = 18;
  x.workload.packets = 10000;
  x.workload.link_bandwidth_bps = 1e12;
  x.workload.link_latency_s = 1e-6;
  x.cache_enabled = true;
  x.icache.l1 = {1024, 1, 64};
  x.icache.next_line_prefetch = false;
  x.icache.l2 = {65536, 16, 64};
  x.icache.l2_hit_cycles = 10;
  x.icache.memory_cycles = 10;
  x.layout.kernel = kSource + "/tests/data/layout_conflict.yaml";
  x.code = std::make_shared<const models::LinkedLayout>(
      models::link(models::load_layout_yaml(x.layout.kernel)));
  return x;
}

// sendto and udp_output share set 0 of a 1 KB direct-mapped cache: each
// misses once a packet, and the set names both.
TEST(Detail, ConflictMissesLandOnTheFunctionsThatConflict) {
  const json j = run_detail(conflict_experiment());
  for (const auto& f : j["functions"]) {
    const std::string name = f["function"];
    const double want = name == "sendto" || name == "udp_output" ? 1.0 : 0.0;
    EXPECT_NEAR(f["i1_misses_per_packet"].get<double>(), want, 1e-3) << name;
    EXPECT_NEAR(f["cache"].get<double>(), 10 * want, 1e-2) << name;
  }
  ASSERT_EQ(j["icache_sets"].size(), 1u);
  EXPECT_EQ(j["icache_sets"][0]["set"], 0);
  EXPECT_EQ(j["icache_sets"][0]["symbols"], json::array({"sendto", "udp_output"}));
}

// Replaying the I-cache's fetch sequences gives the same detail, bit for
// bit, as simulating every fetch.
TEST(Detail, ReplayGivesTheSameDetail) {
  for (const std::string dest : {"wire", "broadcast", "loopback"}) {
    json a = seed_detail("seed/icache-padded.yaml", {"workload.dest=" + dest});
    json b = seed_detail("seed/icache-padded.yaml",
                         {"workload.dest=" + dest, "engine.icache_replay=false"});
    EXPECT_EQ(a["functions"].dump(), b["functions"].dump()) << dest;
    EXPECT_EQ(a["icache_sets"].dump(), b["icache_sets"].dump()) << dest;
  }
}

// docs/output-reference.md is generated from the column table, and the
// table names exactly the columns runs write.
TEST(OutputReference, DocMatchesTheTable) {
  std::ifstream f(kSource + "/docs/output-reference.md");
  ASSERT_TRUE(f) << "docs/output-reference.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), output_reference_markdown())
      << "regenerate it: ./build/simloop output-reference > docs/output-reference.md";
}

std::set<std::string> documented(const std::string& where) {
  std::set<std::string> s;
  for (const auto& c : output_columns())
    if (c.where == where) s.insert(c.name);
  return s;
}

TEST(OutputReference, EveryColumnRunsWriteIsDocumentedAndNoOther) {
  // A run with the I-cache model, a perturbation and every optional model,
  // and one without: the union of their columns is every run column.
  std::vector<std::string> all_on = {"workload.packets=500"};
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    all_on.push_back(fmt::format("{}.enabled=true", M::kSection));
  });
  auto with_cache = config::load_experiment(kSource + "/experiments/seed/variance.yaml", all_on);
  // Costs left undetermined that the run uses: a function's and another.
  auto without = config::load_experiment(
      kSource + "/experiments/seed-athlon.yaml",
      {"workload.packets=500", "stack.functions.nic_txeof=~", "stack.cksum_cycles_per_byte=~"});
  json j;
  for (const auto* x : {&with_cache, &without}) {
    // One simulation per process (SimGrid keeps global state).
    const json one = in_child([x] {
      json out = json::object();
      const SimResult r = simulate(*x);
      const report::Row row = result_row(*x, r);
      for (const auto& [k, v] : row.cells()) out["run"][k] = true;
      for (const auto& lr : long_rows(*x, r)) {
        for (const auto& [k, v] : lr.cells()) out["long"][k] = true;
        out["metric"][std::get<std::string>(*lr.find("metric"))] = true;
      }
      const json d = detail_json(r);
      for (const auto& [k, v] : d["functions"][0].items()) out["functions"][k] = true;
      for (const auto& s : d["icache_sets"])
        for (const auto& [k, v] : s.items()) out["sets"][k] = true;
      for (const auto& u : undetermined_json(r))
        for (const auto& [k, v] : u.items()) out["undetermined"][k] = true;
      return out;
    });
    j.merge_patch(one);
  }
  auto keys = [](const json& o) {
    std::set<std::string> s;
    for (const auto& [k, v] : o.items()) s.insert(k);
    return s;
  };
  EXPECT_EQ(keys(j["run"]), documented("run"));
  std::set<std::string> long_cols = documented("long");
  for (const auto& c : documented("run"))
    if (keys(j["long"]).count(c) != 0) long_cols.insert(c);
  EXPECT_EQ(keys(j["long"]), long_cols);
  EXPECT_EQ(keys(j["metric"]), documented("long metric"));
  EXPECT_EQ(keys(j["functions"]), documented("json functions[]"));
  EXPECT_EQ(keys(j["sets"]), documented("json icache_sets[]"));
  EXPECT_EQ(keys(j["undetermined"]), documented("json undetermined_costs[]"));
}

// A stack with words of its own (the Linux stack's) writes its columns and
// its functions under them, each column as the reference names it on that
// stack, and no column that does not apply to it (the loop copy it does
// not have).
TEST(OutputReference, AStackWritesItsColumnsInItsOwnWords) {
  const auto x = config::load_experiment(kSource + "/experiments/linux-loopback.yaml",
                                         {"workload.packets=500"});
  const net::FnTable& fns = *x.stack.fns;
  ASSERT_FALSE(fns.stage_names().empty());
  const json j = run_detail(x);
  std::set<std::string> run_doc, written;
  for (const auto& c : output_columns())
    if (c.where == "run") run_doc.insert(c.named(fns));
  for (const auto& [k, v] : j["result"].items()) {
    written.insert(k);
    EXPECT_EQ(run_doc.count(k), 1U)
        << k << " is not a column the reference names on " << fns.stack();
  }
  EXPECT_EQ(written.count("copy"), 0U);
  const std::string doc = output_reference_markdown();
  for (const net::StageName& n : fns.stage_names()) {
    if (n.word.empty()) continue;
    const std::string own = fmt::format("cycles_{}", n.word);
    EXPECT_EQ(written.count(own), 1U) << own;
    EXPECT_EQ(written.count(fmt::format("cycles_{}", n.stage)), 0U) << n.stage;
    EXPECT_NE(doc.find(fmt::format("{}: `{}`", fns.stack(), own)), std::string::npos) << own;
  }
  for (const net::OwnWord& w : fns.words().drops) {
    EXPECT_EQ(written.count(fmt::format("drop_{}", w.word)), 1U) << w.word;
    EXPECT_EQ(written.count(fmt::format("drop_{}", w.of)), 0U) << w.of;
  }
  std::set<std::string> functions;
  for (const auto& f : j["functions"]) functions.insert(f["function"].get<std::string>());
  for (const net::OwnWord& w : fns.words().helpers) {
    EXPECT_EQ(functions.count(std::string(w.word)), 1U) << w.word;
    EXPECT_EQ(functions.count(std::string(w.of)), 0U) << w.of;
  }
}

// Every function of every stack's table (the poll stack's too: it is built
// into simloop-poll only) and every other row of the function ledger says
// what part of a packet's path it does, so explain can line two stacks up.
TEST(Detail, EveryFunctionOfEveryStackHasAPathRole) {
  std::vector<const net::FnTable*> tables = stacks::fn_tables();
  tables.push_back(&net::poll::kFnTable);
  ASSERT_GE(tables.size(), 3u);
  for (const net::FnTable* t : tables) {
    ASSERT_GT(t->size(), 0u) << t->stack();
    for (const net::FnInfo& f : t->fns())
      EXPECT_NE(f.path_role, net::PathRole::unset) << t->stack() << ": " << f.name;
    for (size_t f : models::ledger_fns(*t)) {
      const net::PathRole r = models::ledger_fn_role(*t, f);
      EXPECT_NE(r, net::PathRole::unset) << t->stack() << ": " << models::ledger_fn_name(*t, f);
      EXPECT_LT(r, net::PathRole::count) << t->stack() << ": " << models::ledger_fn_name(*t, f);
    }
  }
  // Each role prints under a name of its own.
  std::set<std::string_view> names;
  for (size_t r = 0; r < net::kPathRoleCount; ++r)
    names.insert(net::path_role_name(static_cast<net::PathRole>(r)));
  EXPECT_EQ(names.size(), net::kPathRoleCount);
  EXPECT_EQ(names.count(""), 0u);
}

}  // namespace
}  // namespace simloop::engine

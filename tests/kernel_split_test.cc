// measure kernel --split's reading of perf: the symbol table, where each
// sample's time is charged, and perf script's text, held to a fixture.
#include "sim/tools/measure/kernel_split.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/stack/stack_set.h"
#include "sim/support/input_error.h"

namespace simloop::measure {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = SIMLOOP_SOURCE_DIR;

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("simloop-kernel-split-" + name);
  std::ofstream(p) << text;
  return p;
}

SymbolMap shipped_map() {
  return load_symbol_map(kSource / "configs/stacks/linux-perf-symbols.yaml");
}

std::vector<Frame> chain(std::initializer_list<const char*> kernel_syms) {
  std::vector<Frame> c;
  uint64_t a = 0xffffffff81000000;
  for (const char* s : kernel_syms) c.emplace_back(a += 0x100, s);
  return c;
}

TEST(KernelSplit, ShippedTableNamesOnlyLinuxFunctions) {
  const SymbolMap m = shipped_map();
  EXPECT_EQ(m.stack, "linux");
  EXPECT_EQ(m.function_of.at("udp_sendmsg"), "udp_sendmsg");
  EXPECT_EQ(m.function_of.at("ip_route_output_key_hash_rcu"), "ip_route_output_flow");
  EXPECT_EQ(m.function_of.at("veth_xmit"), "veth_xmit");
  // The FIB lookup serves the output and the input route: unmapped.
  EXPECT_FALSE(m.function_of.count("fib_table_lookup"));
  EXPECT_TRUE(m.syscall_entry.count("do_syscall_64"));
  EXPECT_TRUE(m.hypervisor.count("pvm_irq_enable"));
  // Shared helpers are left unmapped on purpose: charged to their caller.
  EXPECT_FALSE(m.function_of.count("fdget"));
}

TEST(KernelSplit, UnknownFunctionIsLocatedWithTheNearestName) {
  const fs::path p = write_temp("bad-fn.yaml", "functions:\n  udp_sendmsgg: [udp_sendmsg]\n");
  try {
    load_symbol_map(p);
    FAIL() << "accepted an unknown function";
  } catch (const config::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(p.string() + ":2:3"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'udp_sendmsg'"), std::string::npos) << what;
  }
}

TEST(KernelSplit, TheTableNamesAStackMeasuredOnTheKernel) {
  EXPECT_EQ(stacks::measured_on(net::Measured::kernel), std::vector<std::string>{"linux"});
  EXPECT_EQ(stacks::perf_symbols("linux"), "configs/stacks/linux-perf-symbols.yaml");
  EXPECT_EQ(stacks::perf_symbols("bsd"), "");
  // Without `stack`, the list's first stack measured on the kernel.
  EXPECT_EQ(load_symbol_map(write_temp("none.yaml", "functions: {}\n")).stack, "linux");
  const fs::path p = write_temp("bsd.yaml", "stack: bsd\nfunctions:\n  udp_output: [x]\n");
  try {
    load_symbol_map(p);
    FAIL() << "accepted a stack not measured on the kernel";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string() + ":1:8: stack: expected a stack measured"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelSplit, ASymbolListedTwiceIsRefused) {
  const fs::path p = write_temp(
      "twice.yaml", "functions:\n  udp_sendmsg: [udp_sendmsg]\n  ip_output: [udp_sendmsg]\n");
  EXPECT_THROW(load_symbol_map(p), config::ConfigError);
  const fs::path q = write_temp("key.yaml", "function: {}\n");
  EXPECT_THROW(load_symbol_map(q), config::ConfigError);
}

TEST(KernelSplit, ChargesFunctionsHelpersEntryUserAndHypervisor) {
  const SymbolMap m = shipped_map();
  Charge c = charge(m, chain({"udp_sendmsg", "__sys_sendto"}));
  EXPECT_EQ(c.kind, ChargeKind::function);
  EXPECT_EQ(c.charged_to, "udp_sendmsg");
  // A compiler's suffix does not hide the symbol.
  c = charge(m, chain({"ip_route_output_key_hash.constprop.0", "udp_sendmsg"}));
  EXPECT_EQ(c.kind, ChargeKind::function);
  EXPECT_EQ(c.name, "ip_route_output_flow");
  // A helper two functions share goes to whichever called it.
  c = charge(m, chain({"fib_table_lookup", "ip_route_output_key_hash_rcu", "udp_sendmsg"}));
  EXPECT_EQ(c.charged_to, "ip_route_output_flow");
  c = charge(m, chain({"fib_table_lookup", "ip_route_input_slow", "ip_rcv_finish_core"}));
  EXPECT_EQ(c.charged_to, "ip_route_input_noref");
  // An unmapped helper is listed under its own name, charged to its caller.
  c = charge(m, chain({"fdget", "__sys_recvfrom", "do_syscall_64"}));
  EXPECT_EQ(c.kind, ChargeKind::unmapped);
  EXPECT_EQ(c.name, "fdget");
  EXPECT_EQ(c.charged_to, "__sys_recvfrom");
  // A hypervisor frame stands for the code before it: its nearest caller.
  c = charge(m, chain({"pvm_irq_enable", "__raw_callee_save_pvm_irq_enable", "do_syscall_64"}));
  EXPECT_TRUE(c.via_hypervisor);
  EXPECT_EQ(c.kind, ChargeKind::syscall_entry);
  c = charge(m, {{0x98aa2, "sendto"}});
  EXPECT_EQ(c.kind, ChargeKind::user);
  // Nothing named above an unmapped symbol: kept, with no caller.
  c = charge(m, chain({"some_helper"}));
  EXPECT_EQ(c.kind, ChargeKind::unmapped);
  EXPECT_EQ(c.charged_to, "");
}

TEST(KernelSplit, SamplesGoToTheWindowTheyFellIn) {
  const SymbolMap m = shipped_map();
  // Two slices: unconnected 18 B from 100 s + 0..1000 ns (10 packets), and
  // connected 18 B from +2000..+3000 ns (5 packets).
  const int64_t t0 = 100'000'000'000;
  const std::vector<KernelWindow> windows = {
      {0, 18, KernelPath::unconnected, t0, t0 + 1000, 10, {}},
      {0, 18, KernelPath::connected, t0 + 2000, t0 + 3000, 5, {}},
  };
  std::ifstream in(kSource / "tests/data/kernel_split/script.txt");
  ASSERT_TRUE(in);
  KernelSplit split;
  split.period_ns = 100;
  add_perf_samples(in, "script.txt", windows, m, split);
  EXPECT_EQ(split.outside_samples, 1);  // +1500 ns: between the slices
  const SplitGroup& u = split.groups.at({0, KernelPath::unconnected, 18, KernelKnobs{}});
  EXPECT_EQ(u.packets, 10);
  EXPECT_EQ(u.window_ns, 1000);
  EXPECT_EQ(u.samples, 4);
  EXPECT_EQ(u.hypervisor_samples, 1);
  EXPECT_EQ((u.charged.at({ChargeKind::syscall_entry, "do_syscall_64", "syscall_entry"})), 1);
  EXPECT_EQ((u.charged.at({ChargeKind::unmapped, "fdget", "__sys_sendto"})), 1);
  EXPECT_EQ((u.charged.at({ChargeKind::function, "udp_sendmsg", "udp_sendmsg"})), 1);
  EXPECT_EQ((u.charged.at({ChargeKind::unmapped, "fib_table_lookup", "ip_route_output_flow"})), 1);
  const SplitGroup& c = split.groups.at({0, KernelPath::connected, 18, KernelKnobs{}});
  EXPECT_EQ(c.samples, 3);
  EXPECT_EQ((c.charged.at({ChargeKind::user, "main", "user"})), 1);
  EXPECT_EQ((c.charged.at({ChargeKind::unmapped, "memcg_some_helper", ""})), 1);
  // A chain of hypervisor frames alone: kept, named by its last frame.
  EXPECT_EQ(c.hypervisor_samples, 1);

  // Every sample is in a row: none dropped.
  int64_t in_rows = 0;
  for (const auto& r : split_rows(split, MachineInfo{}, 0))
    in_rows += std::get<int64_t>(*r.find("samples"));
  EXPECT_EQ(in_rows + split.outside_samples, 8);
}

TEST(KernelSplit, UnreadableScriptNamesItsLine) {
  const SymbolMap m = shipped_map();
  std::istringstream in(" 2417 100.000000100: \n\tnot-an-address sym\n");
  KernelSplit split;
  try {
    add_perf_samples(in, "perf script", {}, m, split);
    FAIL() << "accepted a frame without an address";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("perf script:2:"), std::string::npos) << e.what();
  }
  std::istringstream bad_time("2417 yesterday:\n");
  EXPECT_THROW(add_perf_samples(bad_time, "perf script", {}, m, split), std::runtime_error);
}

}  // namespace
}  // namespace simloop::measure

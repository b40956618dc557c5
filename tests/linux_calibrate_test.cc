// Calibration of the simulated Linux stack from measure kernel --split rows:
// the counts it divides by come from the simulated stack on the same path,
// the fit gives back costs it was made from, and bad rows name their line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/stack/linux/fns.h"
#include "sim/support/host.h"
#include "sim/tools/calibrate/kernel_fit.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {
namespace {

namespace fs = std::filesystem;

size_t at(const char* name) {
  return net::index(*net::lnx::fn_table().find(name));
}

// The L1d as a host's caches text says it (sysfs's, as HostFacts holds it).
TEST(L1dCopies, TheHostsCachesTextGivesItsL1d) {
  const auto l1d = support::l1d_in("L1d 48K 12-way, L1i 64K 16-way, L2 2048K 16-way");
  EXPECT_EQ(l1d.bytes, 48 * 1024);
  EXPECT_EQ(l1d.ways, 12);
  EXPECT_EQ(support::l1d_in("L1i 32K 8-way, L1d 1M 16-way").bytes, 1 << 20);
  EXPECT_EQ(support::l1d_in("L1i 32K 8-way, L2 1024K 8-way").bytes, 0);  // none said
  EXPECT_EQ(support::l1d_in("L1d 32K").ways, 0);                         // no ways
  EXPECT_EQ(support::l1d_in("").bytes, 0);
}

TEST(LinuxCalibrate, CountsComeFromTheSimulatedStackOnEachPath) {
  const stacks::CallCounts u = stack_counts("linux", "unconnected", 1000);
  const stacks::CallCounts c = stack_counts("linux", "connected", 1000);
  EXPECT_DOUBLE_EQ(u.calls[at("ip_route_output_flow")], 1.0);
  EXPECT_DOUBLE_EQ(c.calls[at("ip_route_output_flow")], 0.0);  // the socket keeps its route
  for (const auto* f : {&u, &c}) {
    EXPECT_DOUBLE_EQ(f->calls[at("__sys_sendto")], 1.0);
    EXPECT_DOUBLE_EQ(f->calls[at("__sys_recvfrom")], 1.0);
    EXPECT_DOUBLE_EQ(f->syscalls, 2.0);
    // The payload copied in by __ip_append_data and out by copy_linear_skb,
    // inlined into udp_recvmsg (whose time perf shows for it).
    EXPECT_DOUBLE_EQ(f->copy_bytes[at("__ip_append_data")], 1000.0);
    EXPECT_DOUBLE_EQ(f->copy_bytes[at("copy_linear_skb")], 1000.0);
    EXPECT_DOUBLE_EQ(f->to_user_bytes[at("copy_linear_skb")], 1000.0);  // out to the reader
    EXPECT_DOUBLE_EQ(f->to_user_bytes[at("__ip_append_data")], 0.0);
    EXPECT_EQ(f->parent[at("copy_linear_skb")], static_cast<int>(at("udp_recvmsg")));
    EXPECT_DOUBLE_EQ(f->calls[at("udp_rmem_release")], 1.0);  // one datagram a read
    EXPECT_DOUBLE_EQ(f->calls[at("skb_copy_datagram_iter")], 0.0);
  }
  // In page frags, out by walking them; a new page per datagram above 32 KiB.
  const stacks::CallCounts paged = stack_counts("linux", "unconnected", 40000);
  EXPECT_DOUBLE_EQ(paged.copy_bytes[at("__ip_append_data")], 40000.0);
  EXPECT_DOUBLE_EQ(paged.copy_bytes[at("skb_copy_datagram_iter")], 40000.0);
  EXPECT_DOUBLE_EQ(paged.to_user_bytes[at("skb_copy_datagram_iter")], 40000.0);
  EXPECT_EQ(paged.parent[at("skb_copy_datagram_iter")], static_cast<int>(at("udp_recvmsg")));
  EXPECT_DOUBLE_EQ(paged.calls[at("copy_linear_skb")], 0.0);
  EXPECT_DOUBLE_EQ(paged.calls[at("skb_page_frag_refill")], 2.0);
  EXPECT_DOUBLE_EQ(paged.calls[at("alloc_pages")], 1.0);
  EXPECT_DOUBLE_EQ(paged.calls[at("__folio_put")], 1.0);
  EXPECT_THROW(stack_counts("linux", "sideways", 18), InputError);
}

// A native run counts datagrams, as the simulation does: a UDP GSO send
// of 16 segments is 16 packets, every one delivered (simloop speed
// compares the two per packet).
TEST(LinuxCalibrate, NativeRunCountsTheDatagramsOfAGsoSend) {
  stacks::StackOptionSet own;
  const auto& keys = stacks::keys();
  const auto k = std::find_if(keys.begin(), keys.end(), [](const stacks::StackKey& x) {
    return x.path == "options.linux.udp_segment";
  });
  ASSERT_NE(k, keys.end());
  k->set(own, stacks::KeyValue{16});
  NativeOptions opt;
  opt.payload = 200;
  opt.packets = 10;
  opt.warmup = 4;
  const auto r = run_native(opt, "linux", net::HostOptions{}, own).front();
  EXPECT_TRUE(r.fault.empty()) << r.fault;
  EXPECT_EQ(r.packets, 160);
  EXPECT_EQ(r.delivered, 160);
  EXPECT_EQ(r.delivered_bytes, 160 * 200);
}

class LinuxCalibrateFiles : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("linux-calibrate-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  // A split file priced by known costs: every function `fixed` cycles a
  // call, 0.5 cycles per copied byte (and `to_user` more per byte copied
  // out to the reader), at 2 GHz.
  // With `perf_over` above 0, perf's times are that much over the truth
  // and the rows carry the plain run's columns (the true total; user time
  // `plain_user` ns), as measure kernel --split writes them.
  fs::path synthetic(double fixed, const std::string& extra_row = "", double perf_over = 0,
                     double plain_user = 0, double to_user = 0) {
    const fs::path csv = dir / "split.csv";
    std::ofstream o(csv);
    o << "source,repeat,payload,dest,path,packets,ns_per_packet,kind,name,charged_to,samples,"
         "self_ns_per_packet,share,period_ns,loadavg_1m,cpu_model,kernel"
      << (perf_over > 0 ? ",plain_cpu_ns_per_packet,plain_user_ns_per_packet" : "") << "\n";
    for (const char* path : {"unconnected", "connected"})
      for (int payload : {18, 1000}) {
        const stacks::CallCounts f = stack_counts("linux", path, payload);
        std::vector<std::pair<std::string, double>> ns;  // (function, true ns)
        for (size_t i = 0; i < net::lnx::fn_table().size(); ++i) {
          // neigh_hh_output is left out: inlined, as on the measured kernel.
          if (f.calls[i] == 0 || i == at("neigh_hh_output")) continue;
          double cycles = f.calls[i] * fixed + f.copy_bytes[i] * 0.5 + f.to_user_bytes[i] * to_user;
          if (i == at("ip_finish_output2"))  // its inlined callee's time
            cycles += f.calls[at("neigh_hh_output")] * fixed;
          ns.emplace_back(net::lnx::fn_table().name(net::fn_at(i)), cycles / 2);
        }
        double total = 400;
        for (const auto& [name, v] : ns) total += v;
        const double k = perf_over > 0 ? perf_over : 1;
        const std::string plain =
            perf_over > 0 ? "," + std::to_string(total) + "," + std::to_string(plain_user) : "";
        for (const auto& [name, v] : ns)
          o << "kernel,0," << payload << ",loopback," << path << ",1000,9000,function," << name
            << "," << name << ",1," << v * k << ",0.1,100000,0.5,CPU,Linux" << plain << "\n";
        o << "kernel,0," << payload << ",loopback," << path
          << ",1000,9000,syscall_entry,do_syscall_64,syscall_entry,1," << 400 * k
          << ",0.1,100000,0.5,CPU,Linux" << plain << "\n";
      }
    o << extra_row;
    std::ofstream(csv.string() + ".machine.json") << R"({"cpu_mhz": 2000})";
    return csv;
  }
};

TEST_F(LinuxCalibrateFiles, TheFitGivesBackTheCostsTheRowsWereMadeFrom) {
  const auto m = read_kernel_split({synthetic(100)}, Stat::median, "linux");
  const KernelFit fit = fit_kernel(m, parse_split({"path=unconnected"}), Stat::median);
  EXPECT_NEAR(fit.value("fixed:udp_sendmsg"), 100, 1e-6);
  EXPECT_NEAR(fit.value("fixed:__ip_append_data"), 100, 1e-6);
  EXPECT_NEAR(fit.value("copy.cycles_per_byte"), 0.5, 1e-9);
  EXPECT_NEAR(fit.value("copy.to_user_extra_cycles_per_byte"), 0, 1e-9);
  EXPECT_NEAR(fit.syscall_cycles, 400.0, 1e-6);  // 400 ns = 800 cycles over two calls
  EXPECT_EQ(fit.inlined_into.at("neigh_hh_output"), "ip_finish_output2");
  // The held-out connected path is predicted exactly: only the counts differ.
  for (const auto& p : m.points) EXPECT_NEAR(predict_kernel(fit, p).cpu_ns, p.value.cpu_ns, 1e-6);
}

// A copy out to the reader slower than the copy in is told apart: the
// copy in is __ip_append_data's alone, the copy out the receive's.
TEST_F(LinuxCalibrateFiles, TheCopyOutIsFittedApartFromTheCopyIn) {
  const auto m = read_kernel_split({synthetic(100, "", 0, 0, 0.25)}, Stat::median, "linux");
  const KernelFit fit = fit_kernel(m, parse_split({"path=unconnected"}), Stat::median);
  EXPECT_NEAR(fit.value("copy.cycles_per_byte"), 0.5, 1e-6);
  EXPECT_NEAR(fit.value("copy.to_user_extra_cycles_per_byte"), 0.25, 1e-6);
  EXPECT_NEAR(fit.value("fixed:copy_linear_skb"), 100, 1e-3);
  for (const auto& p : m.points) EXPECT_NEAR(predict_kernel(fit, p).cpu_ns, p.value.cpu_ns, 1e-6);
}

// Rows that say their L1 data cache (FILE.machine.json's l1d): the bytes a
// copy moves through lines the cache no longer held get a price of their
// own, told apart from the copy rate by payloads that fit it and payloads
// that do not, and the profile carries the cache.
TEST_F(LinuxCalibrateFiles, CopiesThatOutgrowTheL1DataCachePayTheirOwnExtra) {
  const L1dGeometry l1d{8192, 4};
  const fs::path csv = dir / "l1d.csv";
  std::ofstream o(csv);
  o << "source,repeat,payload,dest,path,packets,ns_per_packet,kind,name,charged_to,samples,"
       "self_ns_per_packet,share,period_ns,loadavg_1m,cpu_model,kernel\n";
  for (const char* path : {"unconnected", "connected"})
    for (int payload : {18, 1000, 4000, 12000}) {
      const stacks::CallCounts f = stack_counts("linux", path, payload, 256, {}, l1d);
      if (payload == 1000) {
        EXPECT_EQ(*std::max_element(f.l1d_miss_bytes.begin(), f.l1d_miss_bytes.end()), 0);
      }
      if (payload == 12000) {
        EXPECT_GT(f.l1d_miss_bytes[at("__ip_append_data")], payload);
      }
      for (size_t i = 0; i < net::lnx::fn_table().size(); ++i) {
        if (f.calls[i] == 0 || i == at("neigh_hh_output")) continue;
        double cycles = f.calls[i] * 100 + f.copy_bytes[i] * 0.5 + f.l1d_miss_bytes[i] * 0.75;
        if (i == at("ip_finish_output2")) cycles += f.calls[at("neigh_hh_output")] * 100;
        o << "kernel,0," << payload << ",loopback," << path << ",1000,9000,function,"
          << net::lnx::fn_table().name(net::fn_at(i)) << ","
          << net::lnx::fn_table().name(net::fn_at(i)) << ",1," << cycles / 2
          << ",0.1,100000,0.5,CPU,Linux\n";
      }
      o << "kernel,0," << payload << ",loopback," << path
        << ",1000,9000,syscall_entry,do_syscall_64,syscall_entry,1,400,0.1,100000,0.5,CPU,"
           "Linux\n";
    }
  o.close();
  std::ofstream(csv.string() + ".machine.json")
      << R"({"cpu_mhz": 2000, "l1d": {"bytes": 8192, "ways": 4}})";
  const auto m = read_kernel_split({csv}, Stat::median, "linux");
  EXPECT_EQ(m.l1d.bytes, 8192);
  EXPECT_EQ(m.l1d.ways, 4);
  const KernelFit fit = fit_kernel(m, parse_split({"path=unconnected"}), Stat::median);
  EXPECT_NEAR(fit.value("copy.cycles_per_byte"), 0.5, 1e-6);
  EXPECT_NEAR(fit.value("copy.l1d_miss_extra_cycles_per_byte"), 0.75, 1e-6);
  for (const auto& p : m.points) EXPECT_NEAR(predict_kernel(fit, p).cpu_ns, p.value.cpu_ns, 1e-3);
  write_kernel_profile(fit, dir / "out", "l1d");
  std::ifstream in(dir / "out" / "l1d-machine.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(yaml.find("l1d_bytes: 8192"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("l1d_ways: 4"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("l1d_miss_extra_cycles_per_byte: 0.7500"), std::string::npos) << yaml;

  // Without the cache said, the column is not there, and the fit cannot
  // give back the rows (the misses land elsewhere).
  std::ofstream(csv.string() + ".machine.json") << R"({"cpu_mhz": 2000})";
  const auto plain = read_kernel_split({csv}, Stat::median, "linux");
  const KernelFit one_rate = fit_kernel(plain, parse_split({"path=unconnected"}), Stat::median);
  EXPECT_EQ(std::count(one_rate.names.begin(), one_rate.names.end(),
                       "copy.l1d_miss_extra_cycles_per_byte"),
            0);
  EXPECT_GT(std::abs(one_rate.value("copy.cycles_per_byte") - 0.5), 0.01);

  std::ofstream(csv.string() + ".machine.json") << R"({"cpu_mhz": 2000, "l1d": {"bytes": -1}})";
  try {
    read_kernel_split({csv}, Stat::median, "linux");
    FAIL() << "a bad l1d was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("l1d.csv.machine.json: l1d: expected"), std::string::npos)
        << e.what();
  }
}

// perf's own time is left out where the rows have the plain run's: the fit
// gives back the true costs from rows whose perf times are 20 % high, and
// perf's totals only when asked for (or when no row has the plain run's).
TEST_F(LinuxCalibrateFiles, TotalsComeFromThePlainRunAndSharesFromPerf) {
  const auto split = parse_split({"path=unconnected"});
  const auto m = read_kernel_split({synthetic(100, "", 1.2)}, Stat::median, "linux");
  EXPECT_EQ(m.time_base, "plain");
  EXPECT_NEAR(m.perf_over_plain, 1.2, 1e-6);
  const KernelFit fit = fit_kernel(m, split, Stat::median);
  EXPECT_NEAR(fit.value("fixed:udp_sendmsg"), 100, 1e-3);
  EXPECT_NEAR(fit.value("copy.cycles_per_byte"), 0.5, 1e-6);
  EXPECT_NEAR(fit.syscall_cycles, 400.0, 1e-3);
  for (const auto& p : m.points) EXPECT_NEAR(p.value.perf_cpu_ns / p.value.cpu_ns, 1.2, 1e-6);

  const auto perf =
      read_kernel_split({synthetic(100, "", 1.2)}, Stat::median, "linux", KernelTotals::perf);
  EXPECT_EQ(perf.time_base, "perf");
  EXPECT_NEAR(fit_kernel(perf, split, Stat::median).value("fixed:udp_sendmsg"), 120, 1e-3);

  const auto old = read_kernel_split({synthetic(100)}, Stat::median, "linux");
  EXPECT_EQ(old.time_base, "perf");
  try {
    read_kernel_split({synthetic(100)}, Stat::median, "linux", KernelTotals::plain);
    FAIL() << "plain totals asked of rows without them";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("plain_cpu_ns_per_packet"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--totals perf"), std::string::npos) << e.what();
  }
}

TEST_F(LinuxCalibrateFiles, AFunctionNotInTheTableNamesItsLine) {
  const fs::path csv = synthetic(
      100,
      "kernel,0,18,loopback,unconnected,1000,9000,function,x,udp_sendmsgg,1,5,0.1,100000,0.5,"
      "CPU,Linux\n");
  std::ifstream in(csv);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto last_line = std::count(text.begin(), text.end(), '\n');  // the extra row's
  try {
    read_kernel_split({csv}, Stat::median, "linux");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("split.csv:" + std::to_string(last_line) + ":"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("charged_to: 'udp_sendmsgg'"), std::string::npos)
        << e.what();
  }
}

// Rows of measure kernel --nft-rules: each rule count is a point of its own,
// counted on a stack with that many rules, and the per-rule function the
// kernel inlines into nft_do_chain gets its own price from its caller's
// time (neigh_hh_output, called as often as its caller, stays at 0).
TEST_F(LinuxCalibrateFiles, RuleCountsArePointsAndTheRuleIsPricedFromItsCaller) {
  const fs::path csv = dir / "nft.csv";
  std::ofstream o(csv);
  o << "source,repeat,payload,dest,path,nft_rules,packets,ns_per_packet,kind,name,charged_to,"
       "samples,self_ns_per_packet,share,period_ns,loadavg_1m,cpu_model,kernel\n";
  const std::map<std::string, double> own = {{"nf_hook_slow", 40}, {"nft_do_chain", 70}};
  for (int rules : {0, 10, 50, 100}) {
    const stacks::CallCounts f =
        stack_counts("linux", "unconnected", 18, 256, KernelKnobs{.nft_rules = rules});
    EXPECT_EQ(f.calls[at("nft_rule_eval")], rules);
    EXPECT_EQ(f.calls[at("nft_do_chain")], rules > 0 ? 1 : 0);
    for (size_t i = 0; i < net::lnx::fn_table().size(); ++i) {
      const std::string name(net::lnx::fn_table().name(net::fn_at(i)));
      if (f.calls[i] == 0 || name == "neigh_hh_output" || name == "nft_rule_eval") continue;
      const auto it = own.find(name);
      double cycles = f.calls[i] * (it == own.end() ? 100 : it->second) + f.copy_bytes[i] * 0.5;
      if (name == "ip_finish_output2") cycles += f.calls[at("neigh_hh_output")] * 100;
      if (name == "nft_do_chain") cycles += f.calls[at("nft_rule_eval")] * 12;
      o << "kernel,0,18,loopback,unconnected," << rules << ",1000,9000,function," << name << ","
        << name << ",1," << cycles / 2 << ",0.1,100000,0.5,CPU,Linux\n";
    }
  }
  o.close();
  std::ofstream(csv.string() + ".machine.json") << R"({"cpu_mhz": 2000})";
  const auto m = read_kernel_split({csv}, Stat::median, "linux");
  ASSERT_EQ(m.points.size(), 4u);
  const KernelFit fit = fit_kernel(m, parse_split({"nft_rules=0,10,100"}), Stat::median);
  EXPECT_NEAR(fit.value("fixed:nf_hook_slow"), 40, 1e-6);
  EXPECT_NEAR(fit.value("fixed:nft_do_chain"), 70, 1e-6);
  EXPECT_NEAR(fit.value("fixed:nft_rule_eval"), 12, 1e-6);
  EXPECT_EQ(fit.inlined_into.at("nft_rule_eval"), "nft_do_chain");
  EXPECT_EQ(fit.value("fixed:neigh_hh_output"), 0);
  // The held-out count (50 rules) is predicted exactly.
  for (const auto& p : m.points) EXPECT_NEAR(predict_kernel(fit, p).cpu_ns, p.value.cpu_ns, 1e-6);
}

}  // namespace
}  // namespace simloop::measure

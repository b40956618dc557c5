// Experiment files: shipped ones load, and each kind of bad input gives its
// own message naming the file, line, column and key.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/config/data_files.h"
#include "sim/config/experiment.h"
#include "sim/stack/bsd/fns.h"
#include "sim/support/yaml_input.h"

namespace simloop::config {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = SIMLOOP_SOURCE_DIR;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("simloop-config-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }
  // The error message of loading `text`, or "" if it loads.
  std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
    const fs::path p = write("exp.yaml", text);
    try {
      load_experiment(p, sets);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
  std::string at(int line, int col) const {
    return (dir_ / "exp.yaml").string() + ":" + std::to_string(line) + ":" + std::to_string(col) +
           ":";
  }

  fs::path dir_;
};

constexpr const char* kHead = "machine: athlon-xp-2700\nstack: freebsd6\n";

TEST_F(ConfigTest, ShippedExperimentsLoad) {
  for (const char* f : {"experiments/seed-athlon.yaml", "experiments/netmap-2012.yaml"}) {
    const Experiment x = load_experiment(kSource / f);
    EXPECT_GT(x.machine.clock_hz, 1e9) << f;
    EXPECT_GT(x.stack.fn_cycles[static_cast<size_t>(net::bsd::Fn::ip_output)], 0) << f;
  }
  const Experiment x = load_experiment(kSource / "experiments/seed-athlon.yaml");
  EXPECT_DOUBLE_EQ(x.machine.clock_hz, 2166e6);
  EXPECT_EQ(x.machine_name, "athlon-xp-2700");
  EXPECT_EQ(x.workload.dest, Dest::wire);
}

// freebsd6-warm is freebsd6 with every cost scaled by one factor (its header
// says why); a cost edited in one file and not the other breaks that.
// Loading over a loaded base (a sweep's points, a run's seed) is loading
// the file with every override: the same configuration, the same derived
// code layout, or the same refusal, for every shipped experiment.
TEST_F(ConfigTest, LoadingOverABaseIsLoadingTheFile) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"seed=7"},
      {"workload.dest=self", "workload.payload=64"},
      {"options.align=copy-down", "workload.dest=broadcast"},
      {"workload.dest=loopback", "interrupts.enabled=false"},
      {"machine.cache.enabled=false"},
      {"variance.link_perturbation_bytes=256", "seed=3"},
      {"variance.link_perturbation_bytes=0"},  // no more than the base's
      {"workload.payload=9000"},               // over the MTU on a path with one
      {"stack.kind=linux"},                    // a stack profile of the other kind
      {"options.linux.gso=true"},              // a key of the other stack
      {"machine=athlon-xp-2700"},              // a component: the long way
      {"workload.payload=-1"},                 // out of range
  };
  std::vector<fs::path> files;
  for (const char* dir : {"experiments", "experiments/seed"})
    for (const auto& e : fs::directory_iterator(kSource / dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
  ASSERT_GT(files.size(), 10u);
  size_t loaded = 0, refused = 0;
  for (const auto& f : files) {
    for (const auto& base_sets :
         {std::vector<std::string>{}, std::vector<std::string>{"workload.packets=500"},
          std::vector<std::string>{"variance.link_perturbation_bytes=128"}}) {
      Experiment base;
      try {
        base = load_experiment(f, base_sets);
      } catch (const ConfigError&) {
        continue;
      }
      for (const auto& sets : cases) {
        std::vector<std::string> all = base_sets;
        all.insert(all.end(), sets.begin(), sets.end());
        std::string want, got;
        Experiment a, b;
        try {
          a = load_experiment(f, all);
        } catch (const ConfigError& e) {
          want = e.what();
        }
        try {
          b = load_over(base, base_sets, sets);
        } catch (const ConfigError& e) {
          got = e.what();
        }
        const std::string what =
            f.filename().string() + " " + fmt::format("{}", fmt::join(all, " "));
        ASSERT_EQ(got, want) << what;
        if (!want.empty()) {
          ++refused;
          continue;
        }
        ++loaded;
        EXPECT_EQ(to_json(b), to_json(a)) << what;
        ASSERT_EQ(b.code == nullptr, a.code == nullptr) << what;
        if (a.code) {
          EXPECT_EQ(b.code->objects, a.code->objects) << what;
          EXPECT_EQ(b.code->routines, a.code->routines) << what;
        }
        EXPECT_EQ(b.perturbation, a.perturbation) << what;
        EXPECT_EQ(b.build_files.nm, a.build_files.nm) << what;
      }
    }
  }
  EXPECT_GT(loaded, 50u);
  EXPECT_GT(refused, 20u);
}

// A --set value means what the same text means in a file: accepted as the
// same value, or refused with the same words after the location.
TEST_F(ConfigTest, ASetValueIsReadAsTheFileReadsIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"workload.payload", "18"},
      {"workload.payload", "0x12"},
      {"workload.payload", "1e2"},
      {"workload.payload", "-5"},
      {"workload.payload", "-1"},
      {"workload.payload", "null"},
      {"workload.payload", "~"},
      {"workload.payload", "'18'"},
      {"workload.payload", "+18"},
      {"workload.payload", "18.0"},
      {"workload.payload", "1_000"},
      {"workload.payload", ".5"},
      {"workload.enobufs_sleep_s", "2.4e-3"},
      {"workload.enobufs_sleep_s", ".inf"},
      {"workload.enobufs_sleep_s", "-.5"},
      {"options.align", "copy-down"},
      {"options.align", "Copy-Down"},
      {"workload.receive", "true"},
      {"workload.receive", "yes"},
      {"workload.receive", "True"},
      {"workload.receive", "1"},
      {"workload.dest", "self"},
      {"workload.dest", "[self]"},
      {"description", "a-b_c.d+e"},
  };
  for (const auto& [key, value] : cases) {
    const auto dot = key.find('.');
    const std::string nested =
        dot == std::string::npos
            ? key + ": " + value + "\n"
            : key.substr(0, dot) + ":\n  " + key.substr(dot + 1) + ": " + value + "\n";
    const std::string in_file = error_of(std::string(kHead) + nested);
    const std::string by_set = error_of(kHead, {key + "=" + value});
    // The message after its location (file:line:col: or --set KEY:).
    auto words = [&](const std::string& m) {
      const auto at = m.find(key + ": ");
      return at == std::string::npos ? m : m.substr(at);
    };
    EXPECT_EQ(words(by_set), words(in_file)) << key << "=" << value;
    if (in_file.empty() && by_set.empty()) {
      const auto a = to_json(load_experiment(write("f.yaml", std::string(kHead) + nested)));
      const auto b = to_json(load_experiment(write("s.yaml", kHead), {key + "=" + value}));
      EXPECT_EQ(a, b) << key << "=" << value;
    }
  }
}

TEST_F(ConfigTest, WarmStackIsOneScalingOfFreebsd6) {
  const fs::path p = write("exp.yaml", "machine: athlon-xp-2700\nstack: freebsd6\n");
  const fs::path q = write("warm.yaml", "machine: athlon-xp-2700\nstack: freebsd6-warm\n");
  const Experiment cold = load_experiment(p);
  const Experiment warm = load_experiment(q);
  const auto& c = cold.stack;
  const auto& w = warm.stack;
  std::vector<std::pair<double, double>> pairs = {{c.mbuf_alloc_cycles, w.mbuf_alloc_cycles},
                                                  {c.cluster_alloc_cycles, w.cluster_alloc_cycles},
                                                  {c.mbuf_free_cycles, w.mbuf_free_cycles},
                                                  {c.cluster_free_cycles, w.cluster_free_cycles}};
  for (size_t i = 0; i < c.fn_cycles.size(); ++i)
    pairs.emplace_back(c.fn_cycles[i], w.fn_cycles[i]);
  const double k = w.fn_cycles[static_cast<size_t>(net::bsd::Fn::udp_output)] /
                   c.fn_cycles[static_cast<size_t>(net::bsd::Fn::udp_output)];
  EXPECT_GT(k, 0.5);
  EXPECT_LT(k, 1.0);
  for (const auto& [cv, wv] : pairs)
    EXPECT_NEAR(wv, k * cv, 0.5 + 0.005 * cv) << cv << " -> " << wv;
  EXPECT_NEAR(w.cksum_cycles_per_byte, k * c.cksum_cycles_per_byte, 0.01);
}

// The seed's I-cache experiments take the cache from the machine file, so
// one place holds the Athlon's geometry and refill cost.
TEST_F(ConfigTest, SeedCacheExperimentsUseTheMachinesCache) {
  for (const char* f :
       {"icache-baseline", "icache-padded", "icache-moved", "padding-sweep", "variance"}) {
    const Experiment x = load_experiment(kSource / "experiments/seed" / (std::string(f) + ".yaml"));
    EXPECT_TRUE(x.cache_enabled) << f;
    EXPECT_EQ(x.icache.l1.size_bytes, 65536) << f;
    EXPECT_EQ(x.icache.l2.assoc, 16) << f;
    EXPECT_GT(x.icache.l1_refill_cycles, 0) << f;
    EXPECT_EQ(x.stack_name, "freebsd6-warm") << f;
  }
}

TEST_F(ConfigTest, UnknownKeySuggestsTheNearestOne) {
  const std::string e = error_of(std::string(kHead) + "workload:\n  paylod: 18\n");
  EXPECT_NE(e.find(at(4, 3)), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'paylod'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'payload'"), std::string::npos) << e;
}

TEST_F(ConfigTest, WrongType) {
  const std::string e = error_of(std::string(kHead) + "workload:\n  payload: abc\n");
  EXPECT_NE(e.find(at(4, 12)), std::string::npos) << e;
  EXPECT_NE(e.find("workload.payload: expected an integer"), std::string::npos) << e;
  EXPECT_NE(
      error_of(std::string(kHead) + "workload:\n  payload: 1.5\n").find("expected an integer"),
      std::string::npos);
  EXPECT_NE(error_of(std::string(kHead) + "interrupts:\n  enabled: maybe\n")
                .find("expected true or false"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHead) + "workload: 5\n").find("expected a map"),
            std::string::npos);
}

TEST_F(ConfigTest, OutOfRange) {
  const std::string e = error_of(std::string(kHead) + "workload:\n  payload: 99999\n");
  EXPECT_NE(e.find(at(4, 12)), std::string::npos) << e;
  EXPECT_NE(e.find("in [0, 65507]"), std::string::npos) << e;
}

TEST_F(ConfigTest, BadChoice) {
  const std::string e = error_of(std::string(kHead) + "options:\n  align: sometimes\n");
  EXPECT_NE(e.find(at(4, 10)), std::string::npos) << e;
  EXPECT_NE(e.find("expected one of none, copy-down, strict, copy-down-unsafe"), std::string::npos)
      << e;
}

TEST_F(ConfigTest, MissingReference) {
  const std::string e = error_of("machine: no-such-cpu\nstack: freebsd6\n");
  EXPECT_NE(e.find(at(1, 10)), std::string::npos) << e;
  EXPECT_NE(e.find("no machine named 'no-such-cpu'"), std::string::npos) << e;
}

TEST_F(ConfigTest, MissingRequiredKey) {
  const std::string e = error_of("machine: athlon-xp-2700\n");
  EXPECT_NE(e.find("missing required key 'stack'"), std::string::npos) << e;
}

TEST_F(ConfigTest, YamlSyntaxError) {
  const std::string e = error_of(std::string(kHead) + "workload:\n  payload: [1\n");
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
  EXPECT_NE(e.find((dir_ / "exp.yaml").string() + ":"), std::string::npos) << e;
}

TEST_F(ConfigTest, ErrorInAReferencedFileNamesThatFile) {
  const fs::path m = write("cpu.yaml", "clock_hz: 1e9\nsyscal:\n  entry_cycles: 5\n");
  const std::string e = error_of("machine: cpu.yaml\nstack: freebsd6\n");
  EXPECT_NE(e.find(m.string() + ":2:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'syscall'"), std::string::npos) << e;
}

TEST_F(ConfigTest, ExperimentOverridesItsMachine) {
  const fs::path p =
      write("exp.yaml", "machine:\n  use: athlon-xp-2700\n  clock_hz: 3e9\nstack: freebsd6\n");
  const Experiment x = load_experiment(p);
  EXPECT_DOUBLE_EQ(x.machine.clock_hz, 3e9);
  EXPECT_DOUBLE_EQ(x.machine.syscall_entry_cycles, 400);  // from the named machine
}

TEST_F(ConfigTest, SetOverridesAndItsErrors) {
  const fs::path p = write("exp.yaml", kHead);
  const Experiment x = load_experiment(p, {"workload.payload=64", "stack.functions.ip_output=7"});
  EXPECT_EQ(x.workload.payload, 64);
  EXPECT_DOUBLE_EQ(x.stack.fn_cycles[static_cast<size_t>(net::bsd::Fn::ip_output)], 7);
  EXPECT_NE(error_of(kHead, {"workload.paylod=3"}).find("--set workload.paylod: no such key"),
            std::string::npos);
  EXPECT_NE(error_of(kHead, {"workload=3"}).find("is a section"), std::string::npos);
  EXPECT_NE(
      error_of(kHead, {"workload.payload=-1"}).find("--set workload.payload: expected an integer"),
      std::string::npos);
  EXPECT_NE(error_of(kHead, {"nonsense"}).find("expected path.to.key=value"), std::string::npos);
  // A quoted value is a string, not the number it spells.
  for (const char* quoted : {"workload.payload=\"18\"", "workload.payload='18'"}) {
    const std::string e = error_of(kHead, {quoted});
    EXPECT_NE(e.find("--set workload.payload: expected an integer"), std::string::npos) << e;
    EXPECT_NE(e.find("got the quoted string '18'"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(kHead, {"machine.clock_hz=\"2.4e9\""}).find("got the quoted string"),
            std::string::npos);
  EXPECT_EQ(load_experiment(p, {"workload.payload=18"}).workload.payload, 18);
}

TEST_F(ConfigTest, InconsistentValuesNameTheKey) {
  const std::string e = error_of(std::string(kHead) + "workload:\n  payload: 1600\n");
  EXPECT_NE(e.find(at(4, 3)), std::string::npos) << e;
  EXPECT_NE(e.find("exceed options.ether_mtu"), std::string::npos) << e;
  EXPECT_EQ(error_of(std::string(kHead) + "workload:\n  payload: 1600\n  dest: loopback\n"), "");
}

TEST_F(ConfigTest, ResolvedJsonHasEveryKey) {
  const Experiment x = load_experiment(kSource / "experiments/seed-athlon.yaml");
  const auto j = to_json(x);
  EXPECT_EQ(j["machine"]["clock_hz"], 2166e6);
  EXPECT_EQ(j["workload"]["dest"], "wire");
  EXPECT_EQ(j["stack"]["functions"]["udp_output"], 1100);
}

// ---- bounded input: every limit of the YAML reader is enforced ----

TEST_F(ConfigTest, RecursiveAliasIsRefusedWhereItIsUsed) {
  const std::string e = error_of(std::string(kHead) + "sweep: &r\n  grid: *r\n");
  EXPECT_NE(e.find(at(4, 3) + " grid: a recursive alias"), std::string::npos) << e;
  // Through a list too, and in a referenced file.
  EXPECT_NE(error_of(std::string(kHead) + "x: &l [1, *l]\n").find("a recursive alias"),
            std::string::npos);
  write("cpu.yaml", "clock_hz: &c {a: *c}\n");
  const std::string m = error_of("machine: cpu.yaml\nstack: freebsd6\n");
  EXPECT_NE(m.find((dir_ / "cpu.yaml").string() + ":1:"), std::string::npos) << m;
  EXPECT_NE(m.find("a recursive alias"), std::string::npos) << m;
}

// An alias bomb: 2^41 nodes when expanded, 42 when parsed.
std::string alias_bomb(int levels) {
  std::string s = "bomb:\n  l0: &l0 [1, 2]\n";
  for (int i = 1; i <= levels; ++i)
    s += "  l" + std::to_string(i) + ": &l" + std::to_string(i) + " {a: *l" +
         std::to_string(i - 1) + ", b: *l" + std::to_string(i - 1) + "}\n";
  return s;
}

TEST_F(ConfigTest, AliasExpansionIsBoundedByTheNodeLimit) {
  // Refused by counting, not by running out of memory: the limit is the
  // number of nodes a full walk visits.
  const std::string e = error_of(std::string(kHead) + alias_bomb(40));
  EXPECT_NE(e.find(fmt::format("more than {} nodes", kYamlLimits.max_nodes)), std::string::npos)
      << e;
  EXPECT_NE(e.find((dir_ / "exp.yaml").string() + ":"), std::string::npos) << e;
  // Under the limit, aliases are fine: 2^10 leaves expand to ~10^4 nodes.
  const YamlLimits small{1 << 20, 50000, 64};
  EXPECT_NO_THROW(parse_yaml_text(alias_bomb(10), "t.yaml", small));
  const YamlLimits tiny{1 << 20, 1000, 64};
  EXPECT_THROW(parse_yaml_text(alias_bomb(10), "t.yaml", tiny), ConfigError);
}

TEST_F(ConfigTest, ALargeFileWithoutAliasesIsNotCalledABomb) {
  std::string big = "big:\n";
  for (int i = 0; i < 600; ++i) big += "  k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  const YamlLimits small{1 << 20, 1000, 64};
  try {
    parse_yaml_text(big, "big.yaml", small);
    FAIL() << "1200 nodes passed a limit of 1000";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("more than 1000 nodes (keys, values and list items)"), std::string::npos) << m;
    EXPECT_EQ(m.find("alias"), std::string::npos) << m;
  }
  try {
    parse_yaml_text(alias_bomb(10), "t.yaml", small);
    FAIL() << "the bomb passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("alias copies"), std::string::npos) << e.what();
  }
}

TEST_F(ConfigTest, NestingIsBoundedByTheDepthLimit) {
  std::string deep;
  std::string indent;
  for (int i = 0; i < kYamlLimits.max_depth + 1; ++i) {
    deep += indent + "d" + std::to_string(i) + ":\n";
    indent += "  ";
  }
  deep += indent + "x: 1\n";
  const std::string e = error_of(std::string(kHead) + deep);
  EXPECT_NE(e.find(fmt::format("nest deeper than {} levels", kYamlLimits.max_depth)),
            std::string::npos)
      << e;
  // Flow nesting deeper than the parser's own guard: a message, not "bad file".
  const std::string flow =
      std::string(kHead) + "x: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  const std::string f = error_of(flow);
  EXPECT_NE(f.find("nest deeper than"), std::string::npos) << f;
  EXPECT_NE(f.find(at(3, 1).substr(0, at(3, 1).size() - 2)), std::string::npos) << f;
}

TEST_F(ConfigTest, FileSizeIsBounded) {
  std::string big = kHead;
  big += "# " + std::string(kYamlLimits.max_bytes, 'x') + "\n";
  const std::string e = error_of(big);
  EXPECT_NE(e.find(fmt::format("goes on past {} bytes", kYamlLimits.max_bytes)), std::string::npos)
      << e;
  EXPECT_NE(e.find(at(3, kYamlLimits.max_bytes - std::string(kHead).size() + 1)), std::string::npos)
      << e;
}

TEST_F(ConfigTest, WhatIsNotAFileIsRefusedByName) {
  const std::string e = [&] {
    try {
      load_experiment(dir_);
    } catch (const ConfigError& err) {
      return std::string(err.what());
    }
    return std::string();
  }();
  EXPECT_EQ(e, dir_.string() + ": is a directory; expected a YAML file");
  EXPECT_THROW(load_experiment(dir_ / std::string(300, 'n')), ConfigError);
  EXPECT_THROW(load_experiment("/dev/null/x"), ConfigError);
}

// ---- one meaning per file ----

TEST_F(ConfigTest, DuplicateKeysNameBothLines) {
  const std::string e = error_of(std::string(kHead) + "machine: i7-870\n");
  EXPECT_NE(e.find(at(3, 1) + " machine: the key appears twice in this map, at line 1 and here"),
            std::string::npos)
      << e;
  const std::string f =
      error_of(std::string(kHead) + "workload:\n  payload: 18\n  dest: wire\n  payload: 64\n");
  EXPECT_NE(f.find(at(6, 3) + " payload: the key appears twice in this map, at line 4"),
            std::string::npos)
      << f;
  // The same key in two different maps is fine.
  EXPECT_EQ(error_of(std::string(kHead) + "workload: {payload: 18}\noptions: {align: none}\n"), "");
}

TEST_F(ConfigTest, ASecondDocumentIsAnError) {
  const std::string e = error_of(std::string(kHead) + "---\nname: other\n");
  EXPECT_NE(e.find(at(3, 1) + " a second YAML document"), std::string::npos) << e;
  const std::string f = error_of(std::string(kHead) + "---\n");
  EXPECT_NE(f.find(at(3, 1) + " a second YAML document"), std::string::npos) << f;
}

// yaml-cpp's LoadAll reads empty documents forever after a stray ','
// (found by the experiment fuzz target): a syntax error here, in no time.
TEST_F(ConfigTest, AStrayCommaIsASyntaxErrorNotAHang) {
  const std::string e = error_of("# a comment\n, x\nmachine: athlon-xp-2700\n");
  EXPECT_NE(e.find(at(2, 1) + " YAML syntax error: ',' outside a flow collection"),
            std::string::npos)
      << e;
  const std::string f = error_of(std::string(kHead) + "]\n");
  EXPECT_NE(f.find("YAML syntax error"), std::string::npos) << f;
}

TEST_F(ConfigTest, EmptyAndCommentOnlyFilesAreLocated) {
  for (const char* text : {"", "# nothing\n\n  # at all\n", "\n\n"}) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(at(1, 1) + " the file holds no YAML document"), std::string::npos) << e;
  }
  const std::string l = error_of("- a\n- b\n");
  EXPECT_NE(l.find(at(1, 1) + " experiment: expected a map of keys at the top level, got a list"),
            std::string::npos)
      << l;
}

TEST_F(ConfigTest, BinaryInputIsNeverEchoed) {
  const std::string e = error_of(std::string(kHead) + "name: \x01\x02\x7f\n");
  EXPECT_NE(e.find(at(3, 7) + " byte 0x01 is not UTF-8 text"), std::string::npos) << e;
  const std::string l = error_of(std::string(kHead) + "description: caf\xe9\n");
  EXPECT_NE(l.find("byte 0xe9 is not UTF-8 text"), std::string::npos) << l;
  EXPECT_EQ(printable("a\x01\xff"
                      "b"),
            "a\\x01\\xffb");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(printable(std::string(100, 'x'), 10), std::string(10, 'x') + "... (100 bytes)");
}

TEST_F(ConfigTest, AReferencedFileIsNotCopiedIntoTheError) {
  const std::string big = std::string(5000, 'y') + "\n";
  const fs::path p = write("notes.txt", big);
  const std::string e = error_of(std::string(kHead) + "machine.cache.enabled: true\n",
                                 {"layout.kernel=" + p.string(), "machine.cache.enabled=true"});
  EXPECT_NE(e.find(p.string() + ":1:1:"), std::string::npos) << e;
  EXPECT_LT(e.size(), 600u) << e;
}

// ---- names are data ----

TEST_F(ConfigTest, NamesAreValidated) {
  EXPECT_EQ(error_of(std::string(kHead) + "name: seed-athlon_2.v1\n"), "");
  for (const char* bad : {"../../../x", "/abs/path", "a/b", "''", ".hidden", "-dash", "a b"}) {
    const std::string e = error_of(std::string(kHead) + "name: " + bad + "\n");
    EXPECT_NE(e.find(at(3, 7) + " name: "), std::string::npos) << bad << ": " << e;
  }
  const std::string l = error_of(std::string(kHead) + "name: " + std::string(101, 'n') + "\n");
  EXPECT_NE(l.find("expected at most 100 characters"), std::string::npos) << l;
  EXPECT_NE(error_of(kHead, {"name=/tmp/x"}).find("--set name: "), std::string::npos);
}

TEST_F(ConfigTest, LongReferenceNamesAreRefusedNotThrownByTheFilesystem) {
  const std::string e = error_of("machine: " + std::string(300, 'm') + "\nstack: freebsd6\n");
  EXPECT_NE(e.find(at(1, 10) + " machine: no machine named"), std::string::npos) << e;
  EXPECT_NE(error_of(kHead, {"stack=" + std::string(300, 's')}).find("--set stack: no stack"),
            std::string::npos);
}

// ---- --set ----

TEST_F(ConfigTest, SetChoosesAMachineOrStackByName) {
  const fs::path p = write("exp.yaml", kHead);
  const Experiment x = load_experiment(p, {"stack=freebsd6-warm", "machine=i7-870"});
  EXPECT_EQ(x.stack_name, "freebsd6-warm");
  EXPECT_EQ(x.machine_name, "i7-870");
  const Experiment y = load_experiment(p);
  EXPECT_NE(x.machine.clock_hz, y.machine.clock_hz);
  // --set keys apply on top of the chosen machine.
  const Experiment z = load_experiment(p, {"machine=i7-870", "machine.clock_hz=1.5e9"});
  EXPECT_DOUBLE_EQ(z.machine.clock_hz, 1.5e9);
  EXPECT_DOUBLE_EQ(z.machine.syscall_entry_cycles, x.machine.syscall_entry_cycles);
  const std::string e = error_of(kHead, {"machine={clock_hz: 1e9}"});
  EXPECT_NE(e.find("--set machine: expected a name, a path, got a map"), std::string::npos) << e;
}

TEST_F(ConfigTest, SetPathsGetDidYouMean) {
  const std::string e = error_of(kHead, {"workload.paylod=3"});
  EXPECT_NE(e.find("did you mean 'workload.payload'?"), std::string::npos) << e;
  const std::string s = error_of(kHead, {"interrupts.moderation=3"});
  EXPECT_NE(s.find("is a section; set one of its keys (interrupts.moderation.{"), std::string::npos)
      << s;
  // Checked before any file is read: named even when the file is bad too.
  EXPECT_NE(error_of("not: [valid\n", {"workload.paylod=3"}).find("--set workload.paylod"),
            std::string::npos);
}

// ---- check refuses what run would ----

TEST_F(ConfigTest, CacheGeometryIsCheckedAtLoad) {
  const std::string g = error_of(std::string(kHead) + "layout: {kernel: freebsd6-i386-synthetic}\n",
                                 {"machine.cache.enabled=true", "machine.cache.l1.size_bytes=100"});
  EXPECT_NE(g.find("--set machine.cache.l1.size_bytes: l1.size_bytes must be a power of two"),
            std::string::npos)
      << g;
  // The same cache off is not checked: it is not used.
  EXPECT_EQ(error_of(std::string(kHead) + "layout: {kernel: freebsd6-i386-synthetic}\n",
                     {"machine.cache.l1.size_bytes=100"}),
            "");
}

// docs/config-reference.md is generated from the schema; they must agree.
// A relative path is taken from the working directory when it is there, else
// from the data directory; an absolute one, or one found nowhere, as given.
// A sweep reads its files once: every point, and every run forked from it,
// sees the machine as the sweep first read it, so an edit mid-sweep cannot
// make a point run another configuration than its hash stands for. Without
// the cache, the edit is seen at once.
TEST_F(ConfigTest, WhileCachedAFileEditedAfterItsFirstReadIsNotReadAgain) {
  const std::string machine = "name: m\nclock_hz: 1.5e9\n";
  write("m.yaml", machine);
  const fs::path exp = write("exp.yaml", "machine: m.yaml\nstack: freebsd6\n");
  cache_parsed_yaml(true);
  EXPECT_NE(parsed_yaml_cache_id(), 0u);
  EXPECT_DOUBLE_EQ(load_experiment(exp).machine.clock_hz, 1.5e9);
  write("m.yaml", "name: m\nclock_hz: 3.0e9\n");
  EXPECT_DOUBLE_EQ(load_experiment(exp).machine.clock_hz, 1.5e9);
  EXPECT_DOUBLE_EQ(load_experiment(exp, {"workload.payload=100"}).machine.clock_hz, 1.5e9);
  // Off empties it: the file as it is now.
  cache_parsed_yaml(false);
  EXPECT_EQ(parsed_yaml_cache_id(), 0u);
  EXPECT_DOUBLE_EQ(load_experiment(exp).machine.clock_hz, 3.0e9);
  write("m.yaml", machine);
  EXPECT_DOUBLE_EQ(load_experiment(exp).machine.clock_hz, 1.5e9);
  // Turned on again: kept anew (where files were found too).
  cache_parsed_yaml(true);
  const uint64_t first = parsed_yaml_cache_id();
  cache_parsed_yaml(true);
  EXPECT_EQ(parsed_yaml_cache_id(), first);
  cache_parsed_yaml(false);
  cache_parsed_yaml(true);
  EXPECT_NE(parsed_yaml_cache_id(), first);
  EXPECT_DOUBLE_EQ(load_experiment(exp).machine.clock_hz, 1.5e9);
  cache_parsed_yaml(false);
}

TEST_F(ConfigTest, RelativeInputsAreFoundInTheWorkingThenTheDataDirectory) {
  const fs::path data = dir_ / "data";
  fs::create_directories(data / "experiments");
  std::ofstream(data / "experiments" / "x.yaml") << "name: x\n";
  const fs::path cwd = dir_ / "work";
  fs::create_directories(cwd / "experiments");
  const fs::path old = fs::current_path();
  fs::current_path(cwd);
  const FoundFile shipped = find_input("experiments/x.yaml", data);
  std::ofstream("experiments/x.yaml") << "name: mine\n";
  const FoundFile own = find_input("experiments/x.yaml", data);
  const FoundFile none = find_input("experiments/y.yaml", data);
  const FoundFile abs = find_input(data / "experiments" / "x.yaml", data);
  fs::current_path(old);
  EXPECT_EQ(shipped.in, FoundIn::data_dir);
  EXPECT_EQ(shipped.path, data / "experiments" / "x.yaml");
  EXPECT_EQ(found_in_text(shipped, data), "the data directory " + data.string());
  EXPECT_EQ(own.in, FoundIn::working_dir);
  EXPECT_EQ(own.path, fs::path("experiments/x.yaml"));
  EXPECT_EQ(none.in, FoundIn::as_given);
  EXPECT_EQ(none.path, fs::path("experiments/y.yaml"));
  EXPECT_EQ(abs.in, FoundIn::as_given);
}

// An experiment copied out of the tree still finds what it names by a
// relative path, from the working directory or the data directory.
TEST_F(ConfigTest, ARelativeReferenceIsFoundFromTheWorkingOrDataDirectory) {
  const fs::path exp = write("copied.yaml",
                             "machine: configs/machines/i7-870.yaml\n"
                             "stack: configs/stacks/freebsd-head-2012.yaml\n");
  const fs::path old = fs::current_path();
  fs::current_path(dir_);  // no configs/ here: the data directory's (the source tree)
  std::string error;
  try {
    const Experiment x = load_experiment(exp);
    EXPECT_NEAR(x.machine.clock_hz, 2.93e9, 1e7);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  fs::current_path(old);
  EXPECT_EQ(error, "");
}

// A cost may be left undetermined: `~` (YAML's null) prices it 0 and marks
// it with where it was so marked; a number given later determines it; the
// resolved configuration holds it as null, and loads back the same.
TEST_F(ConfigTest, ACostLeftUndeterminedIsMarkedWhereItIsGiven) {
  const Experiment x = load_experiment(
      write("exp.yaml",
            "machine: {use: athlon-xp-2700, copy: {unaligned_cycles_per_byte: ~}}\n"
            "stack:\n  use: freebsd6\n  functions:\n    nic_txeof: ~\n    looutput: null\n"));
  const auto txeof = static_cast<size_t>(net::bsd::Fn::nic_txeof);
  EXPECT_EQ(x.stack.fn_cycles[txeof], 0);
  EXPECT_EQ(x.machine.copy_unaligned_cycles_per_byte, 0);
  ASSERT_EQ(x.undetermined.size(), 3U);
  EXPECT_EQ(x.undetermined.at("stack.functions.nic_txeof"), (dir_ / "exp.yaml").string() + ":5:16");
  EXPECT_TRUE(x.undetermined.count("stack.functions.looutput"));
  EXPECT_TRUE(x.undetermined.count("machine.copy.unaligned_cycles_per_byte"));
  EXPECT_TRUE(get_value(x, "stack.functions.nic_txeof").is_null());
  EXPECT_TRUE(to_json(x)["machine"]["copy"]["unaligned_cycles_per_byte"].is_null());
  EXPECT_EQ(to_json(x)["stack"]["functions"]["ip_output"], 1000);
  // --set determines one, or leaves another undetermined.
  const Experiment y = load_experiment(
      dir_ / "exp.yaml", {"stack.functions.nic_txeof=150", "stack.functions.ip_output=~"});
  EXPECT_EQ(y.stack.fn_cycles[txeof], 150);
  EXPECT_FALSE(y.undetermined.count("stack.functions.nic_txeof"));
  EXPECT_EQ(y.undetermined.at("stack.functions.ip_output"), "--set");
  // The resolved configuration loads back as it was (a sweep's stored base).
  const fs::path back = write("back.yaml", to_json(x).dump(2));
  EXPECT_EQ(to_json(load_experiment(back)), to_json(x));
  // Only a cost may be left undetermined.
  EXPECT_NE(error_of(std::string(kHead) + "workload: {payload: ~}\n")
                .find("workload.payload: expected an integer"),
            std::string::npos);
  Experiment z;
  set_undetermined(z, "stack.cksum_cycles_per_byte");
  EXPECT_TRUE(z.undetermined.count("stack.cksum_cycles_per_byte"));
  EXPECT_THROW(set_undetermined(z, "workload.payload"), ConfigError);
}

// Every cost a profile can leave undetermined is one a run counts its uses
// of, so that a run that uses it says so: a function's, or a price of
// models::kPriceKeys.
TEST(UndeterminedCosts, EveryCostKeyIsCountedByTheRun) {
  for (const std::string stack : {"bsd", "linux"})
    for (const auto& key : cost_keys(stack)) {
      if (key.rfind("stack.functions.", 0) == 0) continue;
      EXPECT_TRUE(std::any_of(models::kPriceKeys.begin(), models::kPriceKeys.end(),
                              [&](const models::PriceKey& p) { return p.key == key; }))
          << key << " is a cost no run counts the uses of (models::kPriceKeys)";
    }
  for (const auto& p : models::kPriceKeys)
    EXPECT_EQ(key_type(std::string(p.key)), KeyType::number) << p.key;
}

// simloop list: every shipped file of a kind, named as a user writes it,
// with its one-line description.
TEST(ShippedFiles, EachKindListsItsFilesWithTheirDescriptions) {
  auto names = [](const std::vector<ShippedFile>& fs_) {
    std::map<std::string, std::string> m;
    for (const auto& f : fs_) m[f.name] = f.description;
    return m;
  };
  const auto exps = names(shipped_files(kSource, "experiments"));
  ASSERT_EQ(exps.count("experiments/seed-athlon.yaml"), 1u);
  EXPECT_EQ(exps.at("experiments/seed-athlon.yaml"),
            "ttcp tiny UDP transmit on the 2006 Athlon XP 2700+ (the default experiment)");
  EXPECT_EQ(exps.count("experiments/seed/icache-baseline.yaml"), 1u);
  for (const auto& [n, d] : exps) {
    EXPECT_EQ(n.find("/results/"), std::string::npos) << n << ": written by runs, not shipped";
    EXPECT_FALSE(d.empty()) << n;
  }
  const auto machines = names(shipped_files(kSource, "machines"));
  EXPECT_EQ(machines.at("athlon-xp-2700"), "AMD Athlon XP 2700+, 2166 MHz, i386 FreeBSD 6 era");
  const auto stacks = names(shipped_files(kSource, "stacks"));
  EXPECT_EQ(stacks.at("freebsd6"), "FreeBSD 6 UDP send path, per-function estimates");
  const auto layouts = names(shipped_files(kSource, "layouts"));
  ASSERT_EQ(layouts.count("freebsd6-i386-synthetic"), 1u);
  for (const auto& [n, d] : layouts) EXPECT_FALSE(d.empty()) << n;
  EXPECT_THROW(shipped_files(kSource, "plots"), std::invalid_argument);
}

TEST(ConfigReference, DocumentMatchesSchema) {
  std::ifstream f(kSource / "docs/config-reference.md");
  ASSERT_TRUE(f) << "docs/config-reference.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), reference_markdown())
      << "regenerate it: ./build/simloop config-reference > docs/config-reference.md";
}

}  // namespace
}  // namespace simloop::config

namespace simloop::config {
namespace {

// A stack profile names its stack (stack.kind); that choice decides which
// function and option keys exist, wherever in the file it is written.
class StackKindTest : public ConfigTest {
 protected:
  std::string linux_head() const {
    return fmt::format("machine: athlon-xp-2700\nstack: {}\n",
                       (kSource / "tests/data/stacks/linux-test.yaml").string());
  }
};

TEST_F(StackKindTest, ALinuxProfileRunsTheLinuxStackWithItsOwnPrices) {
  const Experiment x = load_experiment(write("exp.yaml", linux_head()));
  EXPECT_EQ(stack_of(x), "linux");
  EXPECT_EQ(x.stack.fns->stack(), "linux");
  const auto sendmsg = x.stack.fns->find("udp_sendmsg");
  ASSERT_TRUE(sendmsg.has_value());
  EXPECT_DOUBLE_EQ(x.stack.fn_cycles[net::index(*sendmsg)], 120);
  // ip_output is a function of both stacks: the key prices the Linux one.
  EXPECT_DOUBLE_EQ(get_value(x, "stack.functions.ip_output").get<double>(),
                   x.stack.fn_cycles[net::index(*x.stack.fns->find("ip_output"))]);
  // The resolved configuration has the Linux stack's keys and none of the BSD stack's.
  const auto j = to_json(x);
  EXPECT_EQ(j["stack"]["kind"], "linux");
  EXPECT_TRUE(j["stack"]["functions"].contains("udp_sendmsg"));
  EXPECT_FALSE(j["stack"]["functions"].contains("sosend_dgram"));
  EXPECT_FALSE(j["stack"].contains("alloc"));
  EXPECT_FALSE(j["options"].contains("netisr_maxlen"));
  EXPECT_TRUE(j["options"]["linux"].contains("sndbuf"));
  const Experiment b = load_experiment(write("b.yaml", kHead));
  EXPECT_FALSE(to_json(b)["stack"]["functions"].contains("udp_sendmsg"));
  EXPECT_FALSE(to_json(b)["options"].contains("linux"));
}

TEST_F(StackKindTest, KindWrittenAfterTheFunctionsStillComesFirst) {
  const Experiment x = load_experiment(
      write("exp.yaml",
            "machine: athlon-xp-2700\nstack:\n  functions:\n    udp_sendmsg: 77\n  kind: linux\n"));
  EXPECT_EQ(stack_of(x), "linux");
  EXPECT_DOUBLE_EQ(get_value(x, "stack.functions.udp_sendmsg").get<double>(), 77);
}

TEST_F(StackKindTest, KeysOfTheOtherStackAreRefusedWithTheirLocation) {
  EXPECT_EQ(error_of(linux_head() + "options:\n  netisr_maxlen: 5\n"),
            at(4, 3) +
                " options.netisr_maxlen: applies to the bsd stack only; this experiment runs the "
                "linux stack (stack.kind of its stack profile)");
  EXPECT_NE(error_of(std::string(kHead) + "options:\n  linux:\n    sndbuf: 5\n")
                .find("options.linux.sndbuf: applies to the linux stack only"),
            std::string::npos);
  EXPECT_NE(error_of(kHead, {"stack.functions.udp_sendmsg=5"})
                .find("applies to the linux stack only; this experiment runs the bsd stack"),
            std::string::npos);
  EXPECT_NE(error_of(kHead, {"workload.connected=true"}).find("linux stack only"),
            std::string::npos);
  // A profile that prices BSD functions cannot become a Linux one.
  EXPECT_NE(error_of(kHead, {"stack.kind=linux"})
                .find("already prices the functions of the bsd stack; name a linux stack profile"),
            std::string::npos);
  EXPECT_NE(
      error_of("machine: athlon-xp-2700\nstack: {kind: unix}\n").find("expected one of bsd, linux"),
      std::string::npos);
}

// --set stack= switches the stack as one value: the file's keys the chosen
// stack does not take are left out, each with a note naming where the file
// sets it; a --set of such a key stays an error, as does such a key in a
// file that names the stack itself.
TEST_F(StackKindTest, ChoosingTheOtherStackLeavesOutTheFilesKeysOfTheFirst) {
  const std::string linux_stack = (kSource / "tests/data/stacks/linux-test.yaml").string();
  const fs::path bsd = write("bsd.yaml", std::string(kHead) + "options:\n  copy: m_dup\n");
  const Experiment x = load_experiment(bsd, {"stack=" + linux_stack});
  EXPECT_EQ(stack_of(x), "linux");
  ASSERT_EQ(x.notes.size(), 1u);
  EXPECT_EQ(x.notes[0], bsd.string() + ":4:3: options.copy: left out: stack=" + linux_stack +
                            " runs the linux stack, which does not take it (a key of the bsd "
                            "stack)");
  EXPECT_TRUE(load_experiment(bsd).notes.empty());
  EXPECT_NE(error_of(std::string(kHead), {"stack=" + linux_stack, "options.copy=m_dup"})
                .find("--set options.copy: applies to the bsd stack only"),
            std::string::npos);
  // And back: a Linux experiment's own options give way to the BSD stack.
  const fs::path lnx = write("lnx.yaml", linux_head() +
                                             "options:\n  linux:\n    sndbuf: 65536\n"
                                             "workload:\n  connected: true\n  payload: 64\n");
  const Experiment b = load_experiment(lnx, {"stack=freebsd6"});
  EXPECT_EQ(stack_of(b), "bsd");
  EXPECT_EQ(b.workload.payload, 64);
  ASSERT_EQ(b.notes.size(), 2u);
  EXPECT_NE(b.notes[0].find("options.linux.sndbuf: left out: stack=freebsd6 runs the bsd stack"),
            std::string::npos)
      << b.notes[0];
  EXPECT_NE(b.notes[1].find("workload.connected: left out"), std::string::npos) << b.notes[1];
  // What a sweep's point does: over a base loaded once.
  const Experiment o = load_over(load_experiment(bsd), {}, {"stack=" + linux_stack});
  EXPECT_EQ(stack_of(o), "linux");
  EXPECT_EQ(o.notes, x.notes);
  // A map of the file's machine gives way to the machine --set chose, said.
  const Experiment m = load_experiment(
      write("m.yaml", "machine:\n  use: athlon-xp-2700\n  clock_hz: 2e9\nstack: freebsd6\n"),
      {"machine=i7-870"});
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("machine: left out: machine=i7-870 replaces the experiment's "
                            "machine map, and its clock_hz with it"),
            std::string::npos)
      << m.notes[0];
  EXPECT_EQ(m.machine.clock_hz, load_experiment(bsd, {"machine=i7-870"}).machine.clock_hz);
}

// --unset leaves out what the experiment file sets, as if not written; it
// names only keys the file sets, and never the machine or the stack.
TEST_F(StackKindTest, UnsetLeavesOutAKeyOfTheFile) {
  const fs::path p = write("exp.yaml", std::string(kHead) +
                                           "options:\n  copy: m_dup\n  align: copy-down\n"
                                           "machine.x: 1\n");
  // (a stray key, to show that an unset section takes everything under it)
  const fs::path q =
      write("q.yaml", std::string(kHead) + "options:\n  copy: m_dup\n  align: copy-down\n");
  const Experiment plain = load_experiment(write("plain.yaml", kHead));
  const Experiment x = load_experiment(q, {}, {"options.copy"});
  EXPECT_EQ(get_value(x, "options.copy"), get_value(plain, "options.copy"));
  EXPECT_EQ(get_value(x, "options.align"), "copy-down");
  const Experiment y = load_experiment(q, {}, {"options"});
  EXPECT_EQ(to_json(y)["options"], to_json(plain)["options"]);
  // A --set still applies after it.
  EXPECT_EQ(get_value(load_experiment(q, {"options.copy=m_dup"}, {"options.copy"}), "options.copy"),
            "m_dup");
  // Kept by a load over it.
  EXPECT_EQ(get_value(load_over(x, {}, {"stack=freebsd6-warm"}), "options.copy"),
            get_value(plain, "options.copy"));
  auto error = [&](const fs::path& f, const std::string& key) {
    try {
      load_experiment(f, {}, {key});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(q, "workload.payload"),
            "--unset workload.payload: " + q.string() + " does not set it");
  EXPECT_NE(error(q, "machine.clock_hz")
                .find("does not set it (its value is the machine profile athlon-xp-2700's; --set "
                      "machine.clock_hz=VALUE overrides it)"),
            std::string::npos);
  EXPECT_EQ(error(q, "stack"),
            "--unset stack: an experiment needs a stack; choose another with --set stack=NAME");
  EXPECT_NE(error(q, "options.cpy").find("--unset options.cpy: no such key; did you mean"),
            std::string::npos);
  EXPECT_NE(error(p, "options").find("machine.x"), std::string::npos)
      << "the rest of the file is still checked";
  // A key of the file's machine map.
  const fs::path m =
      write("m.yaml", "machine:\n  use: athlon-xp-2700\n  clock_hz: 2e9\nstack: freebsd6\n");
  EXPECT_EQ(load_experiment(m, {}, {"machine.clock_hz"}).machine.clock_hz, plain.machine.clock_hz);
}

TEST_F(StackKindTest, CostKeysAreTheStacksOwn) {
  const auto bsd = cost_keys("bsd");
  const auto lnx = cost_keys("linux");
  auto has = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  EXPECT_TRUE(has(bsd, "stack.functions.sosend_dgram"));
  EXPECT_FALSE(has(bsd, "stack.functions.udp_sendmsg"));
  EXPECT_TRUE(has(bsd, "stack.alloc.mbuf_cycles"));
  EXPECT_TRUE(has(lnx, "stack.functions.udp_sendmsg"));
  EXPECT_TRUE(has(lnx, "stack.functions.ip_output"));
  EXPECT_FALSE(has(lnx, "stack.functions.sosend_dgram"));
  EXPECT_FALSE(has(lnx, "stack.alloc.mbuf_cycles"));
  EXPECT_TRUE(has(lnx, "stack.cksum_cycles_per_byte"));
  EXPECT_EQ(cost_keys(), bsd);
}

// Linux sends its own addresses through lo: self takes payloads past the
// Ethernet MTU there, wire does not.
TEST_F(StackKindTest, TheLinuxPayloadLimitFollowsItsRoutes) {
  EXPECT_EQ(error_of(linux_head() + "workload: {dest: self, payload: 4000}\n"), "");
  EXPECT_NE(error_of(linux_head() + "workload: {dest: wire, payload: 4000}\n").find("ether_mtu"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHead) + "workload: {dest: self, payload: 4000}\n"), "");
}

}  // namespace
}  // namespace simloop::config

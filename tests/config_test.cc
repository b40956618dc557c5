// Experiment files: shipped ones load, and each kind of bad input gives its
// own message naming the file, line, column and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/experiment.h"

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
    EXPECT_GT(x.stack.fn_cycles[static_cast<size_t>(net::Fn::ip_output)], 0) << f;
  }
  const Experiment x = load_experiment(kSource / "experiments/seed-athlon.yaml");
  EXPECT_DOUBLE_EQ(x.machine.clock_hz, 2166e6);
  EXPECT_EQ(x.machine_name, "athlon-xp-2700");
  EXPECT_EQ(x.workload.dest, Dest::wire);
}

// freebsd6-warm is freebsd6 with every cost scaled by one factor (its header
// says why); a cost edited in one file and not the other breaks that.
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
  const double k = w.fn_cycles[static_cast<size_t>(net::Fn::udp_output)] /
                   c.fn_cycles[static_cast<size_t>(net::Fn::udp_output)];
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
  EXPECT_NE(e.find("in [0, 9188]"), std::string::npos) << e;
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
  EXPECT_DOUBLE_EQ(x.stack.fn_cycles[static_cast<size_t>(net::Fn::ip_output)], 7);
  EXPECT_NE(error_of(kHead, {"workload.paylod=3"}).find("--set workload.paylod: no such key"),
            std::string::npos);
  EXPECT_NE(error_of(kHead, {"workload=3"}).find("is a section"), std::string::npos);
  EXPECT_NE(
      error_of(kHead, {"workload.payload=-1"}).find("--set workload.payload: expected an integer"),
      std::string::npos);
  EXPECT_NE(error_of(kHead, {"nonsense"}).find("expected path.to.key=value"), std::string::npos);
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

// docs/config-reference.md is generated from the schema; they must agree.
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

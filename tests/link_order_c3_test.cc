// C3 (Pettis-Hansen clustering, as hfsort orders functions) on a call graph
// made here: each function, most run first, joins its heaviest caller's
// cluster while the cluster stays within the size given; clusters go by
// density (bytes run over bytes held), densest first.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/tools/measure/link_order.h"

namespace simloop::measure {
namespace {

struct Fn {
  std::string name;
  uint64_t bytes;  // its section
  uint64_t hot;    // of them, run per call
};

// A build of `fns` one section each, in this order, and one path whose
// profile runs each function's first `hot` bytes once a packet and calls
// along `calls` (caller, callee). The function named loop is the
// sender's loop (a walk of 0 calls per packet).
OrderProblem problem(const std::vector<Fn>& fns,
                     const std::vector<std::pair<std::string, std::string>>& calls) {
  OrderProblem pb;
  uint64_t addr = 0x1000;
  pb.map.text_addr = addr;
  for (const auto& f : fns) {
    pb.symbols.push_back({.addr = addr, .size = f.bytes, .text = true, .name = f.name});
    pb.map.text.push_back(
        {.addr = addr, .size = f.bytes, .align = 16, .input = "x.o:(.text." + f.name + ")"});
    addr += f.bytes;
  }
  pb.map.text_size = addr - pb.map.text_addr;
  OrderPath path;
  path.name = "p";
  for (const auto& f : fns) {
    path.profile.hot[f.name] = {{0, f.hot}};
    models::Walk w;
    w.calls_per_packet = f.name == "loop" ? 0 : 1;
    w.items.push_back({.offset = 0, .bytes = f.hot, .target = "", .target_offset = 0});
    for (const auto& [from, to] : calls)
      if (from == f.name)
        w.items.push_back({.offset = 0, .bytes = 0, .target = to, .target_offset = 0});
    path.profile.walks[{f.name, 0}] = w;
  }
  pb.paths.push_back(path);
  return pb;
}

// loop -> a -> b, loop -> c -> d; every function runs once a packet.
const std::vector<std::pair<std::string, std::string>> kCalls = {
    {"loop", "a"}, {"a", "b"}, {"loop", "c"}, {"c", "d"}};

TEST(LinkOrderC3, CalleesFollowTheirHeaviestCallerInOneCluster) {
  // Laid out apart (a and b at the two ends), each run whole.
  const auto pb = problem(
      {{"b", 512, 512}, {"c", 256, 256}, {"loop", 64, 64}, {"d", 128, 128}, {"a", 1024, 1024}},
      kCalls);
  EXPECT_EQ(c3_order(pb), (std::vector<std::string>{"loop", "a", "b", "c", "d"}));
}

TEST(LinkOrderC3, AClusterStopsAtItsSizeAndTheDensestGoesFirst) {
  // Up to 1200 bytes: loop and a fill one cluster (1088 bytes), c does not
  // fit beside them and takes d (384), b (mostly cold) stays alone. The
  // densest cluster leads: c's (every byte runs), then loop's (576 of 1088
  // bytes run), then b's (64 of 512).
  const auto pb = problem(
      {{"loop", 64, 64}, {"a", 1024, 512}, {"b", 512, 64}, {"c", 256, 256}, {"d", 128, 128}},
      kCalls);
  EXPECT_EQ(c3_order(pb, 1200), (std::vector<std::string>{"c", "d", "loop", "a", "b"}));
  // With room for all, one cluster in the order the callers took them.
  EXPECT_EQ(c3_order(pb, 1 << 20), (std::vector<std::string>{"loop", "a", "c", "d", "b"}));
}

TEST(LinkOrderC3, FunctionsThatNeverRunAreLeftOut) {
  auto pb = problem({{"loop", 64, 64}, {"a", 256, 256}, {"cold", 4096, 1}}, {{"loop", "a"}});
  pb.paths[0].profile.hot.erase("cold");
  pb.paths[0].profile.walks.erase({"cold", 0});
  EXPECT_EQ(c3_order(pb), (std::vector<std::string>{"loop", "a"}));
}

}  // namespace
}  // namespace simloop::measure

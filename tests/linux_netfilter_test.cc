// The LOCAL_OUT hook of the Linux stack (sim/stack/linux/netfilter.h): a
// chain of N rules is evaluated once per rule for every datagram sent, none
// of the measured ruleset's rules matches traffic to 127.0.0.1, a matching
// drop rule takes the datagram (the sender's EPERM, the skb freed), and no
// rules is no hook at all.
#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <vector>

#include "sim/stack/linux/stack.h"

namespace simloop::net::lnx {
namespace {

constexpr uint16_t kPort = 5001;

struct Rig {
  static Options With(int rules) {
    Options o;
    o.nft_rules = rules;
    return o;
  }
  explicit Rig(int rules) : st(probe, With(rules)) {
    rx = st.socket();
    tx = st.socket();
    EXPECT_EQ(st.bind(rx, 0, kPort), 0);
  }
  // Sends `n` datagrams to 127.0.0.1 and reads back what arrives.
  int SendRecv(int n, int payload = 18) {
    std::vector<uint8_t> buf(static_cast<size_t>(payload), 0x5a), in(65536);
    int delivered = 0;
    for (int i = 0; i < n; ++i) {
      last_err = st.sendto(tx, buf.data(), payload, kLoopAddr, kPort);
      st.netisr_run();
      int got = 0;
      while (st.recvfrom(rx, in.data(), static_cast<int>(in.size()), &got) == 0) ++delivered;
    }
    return delivered;
  }
  uint64_t Calls(Fn f) const { return probe.entered[index(id(f))]; }
  CountingProbe probe;
  Stack<CountingProbe> st;
  int rx = -1, tx = -1, last_err = 0;
};

TEST(LinuxNetfilter, EveryRuleIsEvaluatedPerDatagramAndNoneMatches) {
  for (int rules : {1, 7, 100}) {
    Rig r(rules);
    const int n = 25;
    EXPECT_EQ(r.SendRecv(n, 300), n) << rules;
    EXPECT_EQ(r.Calls(Fn::nf_hook_slow), static_cast<uint64_t>(n));
    EXPECT_EQ(r.Calls(Fn::nft_do_chain), static_cast<uint64_t>(n));
    EXPECT_EQ(r.Calls(Fn::nft_rule_eval), static_cast<uint64_t>(n) * rules);
    EXPECT_EQ(r.st.nft_chain().evaluations, static_cast<uint64_t>(n) * rules);
    for (const NftRule& rule : r.st.nft_chain().rules) EXPECT_EQ(rule.packets, 0u);
    EXPECT_EQ(r.st.nft_chain().dropped, 0u);
  }
}

TEST(LinuxNetfilter, NoRulesIsNoHook) {
  Rig r(0);
  EXPECT_EQ(r.SendRecv(10), 10);
  EXPECT_EQ(r.Calls(Fn::nf_hook_slow), 0u);
  EXPECT_EQ(r.Calls(Fn::nft_do_chain), 0u);
  EXPECT_EQ(r.Calls(Fn::nft_rule_eval), 0u);
  EXPECT_TRUE(r.st.nft_chain().rules.empty());
}

TEST(LinuxNetfilter, AMatchingDropRuleDropsAndCounts) {
  Rig r(5);
  // Rule 2 now matches 127.0.0.1 and drops: rules 3 and 4 are never reached.
  NftRule& drop = r.st.nft_chain().rules[2];
  drop.value = kLoopAddr;
  drop.verdict = NftVerdict::drop;
  EXPECT_EQ(r.SendRecv(4, 64), 0);
  EXPECT_EQ(r.last_err, EPERM);
  EXPECT_EQ(r.st.nft_chain().dropped, 4u);
  EXPECT_EQ(drop.packets, 4u);
  EXPECT_EQ(drop.bytes, 4u * (20 + 8 + 64));
  EXPECT_EQ(r.Calls(Fn::nft_rule_eval), 4u * 3);
  EXPECT_EQ(r.Calls(Fn::ip_output), 0u);
  // Every dropped skb went back to its cache.
  EXPECT_EQ(r.st.pool().skbuff_cache().stats().in_use, 0u);
  EXPECT_EQ(r.probe.skb_allocs, r.probe.skb_frees);
  // A counter-only rule that matches counts and lets the datagram on.
  Rig c(3);
  c.st.nft_chain().rules[1].value = kLoopAddr;
  EXPECT_EQ(c.SendRecv(6), 6);
  EXPECT_EQ(c.st.nft_chain().rules[1].packets, 6u);
  EXPECT_EQ(c.Calls(Fn::nft_rule_eval), 6u * 3);
}

TEST(LinuxNetfilter, TheMeasuredRulesetsAddresses) {
  EXPECT_EQ(nft_rule_daddr(0), ip_addr(198, 18, 0, 0));
  EXPECT_EQ(nft_rule_daddr(257), ip_addr(198, 18, 1, 1));
  EXPECT_EQ(nft_rule_daddr(kMaxNftRules - 1), ip_addr(198, 18, 39, 15));
  EXPECT_THROW(Rig(-1), std::invalid_argument);
  EXPECT_THROW(Rig(kMaxNftRules + 1), std::invalid_argument);
}

}  // namespace
}  // namespace simloop::net::lnx

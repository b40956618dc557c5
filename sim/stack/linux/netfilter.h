// nftables in the Linux stack's output path: one base chain on the IPv4
// LOCAL_OUT hook (a `type filter hook output` chain), its rules evaluated
// against each sent datagram's IP header. Functional only: which rules ran
// and what they decided; the stack reports the calls (nf_hook_slow,
// nft_do_chain, nft_rule_eval) to its probe.
//
// A rule here is what `ip daddr A.B.C.D counter` (or `... drop`) compiles
// to in the kernel: a payload load of `len` bytes at `offset` from the
// network header, compared for equality with `value`; on a match its
// counter counts the packet and its verdict applies (continue to the next
// rule, or drop). A chain whose rules all fail to match accepts (policy
// accept). Simplified: equality on at most 4 header bytes, no sets, no
// jumps, no other hooks.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/stack/net/inet.h"

namespace simloop::net::lnx {

enum class NftVerdict : uint8_t { next, drop };  // NFT_CONTINUE, NF_DROP

struct NftRule {
  uint8_t offset = 16;  // from the network header: 16 is the IPv4 destination
  uint8_t len = 4;      // bytes compared, 1 to 4
  uint32_t value = 0;   // the bytes as they stand in the header, big-endian
  NftVerdict verdict = NftVerdict::next;
  uint64_t packets = 0, bytes = 0;  // the rule's counter
};

struct NftChain {
  std::vector<NftRule> rules;  // empty: no table, the hook not registered
  uint64_t evaluations = 0;    // rules evaluated, over all packets
  uint64_t dropped = 0;        // packets a drop verdict took
};

// The rule counts a chain may hold (options.linux.nft_rules).
inline constexpr int kMaxNftRules = 10000;

// The destination of rule k of the ruleset `measure kernel --nft-rules`
// loads: 198.18.(k / 256).(k % 256), in the benchmarking range
// (198.18.0.0/15), which no test traffic is sent to, so no rule matches and
// every one is evaluated.
constexpr uint32_t nft_rule_daddr(int k) {
  return ip_addr(198, 18, static_cast<uint8_t>(k / 256), static_cast<uint8_t>(k % 256));
}

// That ruleset's chain: n rules `ip daddr nft_rule_daddr(k) counter`.
inline NftChain nft_output_chain(int n) {
  if (n < 0 || n > kMaxNftRules)
    throw std::invalid_argument("linux stack: nft_rules must be 0 to " +
                                std::to_string(kMaxNftRules));
  NftChain c;
  c.rules.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) c.rules[static_cast<size_t>(k)].value = nft_rule_daddr(k);
  return c;
}

// One rule against the IP header at `nh` (`avail` bytes of it readable):
// whether it matches (a load past the header never does).
inline bool nft_rule_matches(const NftRule& r, const uint8_t* nh, unsigned avail) {
  if (r.len == 0 || r.len > 4 || r.offset + r.len > avail) return false;
  uint32_t v = 0;
  for (unsigned i = 0; i < r.len; ++i) v = (v << 8) | nh[r.offset + i];
  const uint32_t want = r.len == 4 ? r.value : r.value & ((1u << (8 * r.len)) - 1);
  return v == want;
}

}  // namespace simloop::net::lnx

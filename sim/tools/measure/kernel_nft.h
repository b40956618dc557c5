// measure kernel --nft-rules: the kernel loop with nftables rules on the
// output path, each rule count in a network namespace of its own.
//
// Every namespace is made by unshare(CLONE_NEWNET) in the measuring thread
// and held by a descriptor of it and by the sockets made in it: none outlives
// the process, whatever ends it (an error, Ctrl-C, SIGKILL), and nothing is
// ever set on the host's own namespace. In each, `lo` is brought up and,
// unless the count is 0 (no table at all: the path without the knob), a table
// `ip simloop_nft` with one chain on the output hook is loaded with `nft -f -`:
// rule k is `ip daddr 198.18.(k/256).(k%256) counter`, which no datagram of
// the loop (to 127.0.0.1) matches, so each datagram is tested against every
// rule and accepted by the chain's policy.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace simloop::measure {

// What failed in making the namespaces or loading their rules.
struct NftError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The rule counts --nft-rules takes.
inline constexpr int kMaxMeasuredNftRules = 10000;

// Why --nft-rules cannot run here, or "": not root, or no `nft` program.
std::string nft_unavailable(const std::string& nft = "nft");

// The ruleset text `nft -f -` is given for `n` rules (n >= 1).
std::string nft_ruleset(int n);

class NftNamespaces {
 public:
  // One namespace per count, set up (rules loaded, lo up) before any timing.
  // Throws NftError saying what failed; the calling thread is back
  // in its own namespace whatever happens.
  explicit NftNamespaces(const std::vector<int>& counts, const std::string& nft = "nft");
  ~NftNamespaces();
  NftNamespaces(const NftNamespaces&) = delete;
  NftNamespaces& operator=(const NftNamespaces&) = delete;

  // Moves the calling thread into count `n`'s namespace (sockets made now
  // belong to it), and back to where it started.
  void enter(int n) const;
  void leave() const;

 private:
  int home_ = -1;          // the thread's own namespace
  std::map<int, int> ns_;  // count -> the namespace's descriptor
};

}  // namespace simloop::measure

// Branch target prediction for the calls and returns of the stack's code.
//
// The taken branches the probe sees are calls: into each stack function
// (enter) and from a function into a helper (a copy, a checksum, a buffer
// allocation or free), and the returns that end them. A call is predicted
// by a direct-mapped branch target buffer: its site (caller, callee) is
// looked up at an index hashed from it, and a site not held mispredicts and
// takes the entry. A return is predicted by a return stack of `ras_depth`
// entries that wraps around: a return whose call was pushed more than
// `ras_depth` calls deep had its entry overwritten, and mispredicts. Each
// misprediction stalls the CPU for `mispredict_cycles`, charged to its own
// stage (branch) and, in the function ledger, to the function called, as a
// stall (CostKind::cache).
//
// What it simplifies: a site stands for the call instruction (a real buffer
// is indexed by its address, so code layout moves conflicts around), and
// conditional branches inside functions are not modelled: only the call
// graph a packet walks and how deep it nests.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/cycle_account.h"
#include "models/model_spec.h"
#include "sim/layout/code.h"
#include "sim/stack/net/probe.h"

namespace simloop::models {

struct BranchConfig {
  bool enabled = false;
  int btb_entries = 512;  // a power of two
  int ras_depth = 16;
  double mispredict_cycles = 20;
};

// The predictor itself, free of any account. Callers and callees are owner
// slots (sim/layout/code.h); kOutside is the code that enters the stack.
class BranchPredictor {
 public:
  static constexpr uint32_t kOutside = kCodeCount;
  // Throws std::invalid_argument unless btb_entries is a power of two and
  // ras_depth >= 1.
  BranchPredictor(int btb_entries, int ras_depth);
  // A call from `caller` to `callee`; whether it was predicted.
  bool call(uint32_t caller, uint32_t callee);
  // The return from the innermost call; whether it was predicted.
  bool ret();
  // The innermost function called and not yet returned from (kOutside: none).
  uint32_t current() const { return frames_.empty() ? kOutside : frames_.back().callee; }
  uint64_t branches() const { return branches_; }
  uint64_t mispredicts() const { return mispredicts_; }

 private:
  struct Frame {
    uint32_t callee;
    bool overwritten;  // its return stack entry was reused by a deeper call
  };
  std::vector<uint32_t> btb_;  // site + 1 per entry (0: empty)
  std::vector<Frame> frames_;  // the calls not yet returned from, outermost first
  size_t ras_depth_;
  uint32_t bits_;  // log2 of the entries
  uint64_t branches_ = 0, mispredicts_ = 0;
};

// The probe component: predicts each call and return of the stack's code
// and charges the mispredictions to `acct`.
class BranchTargets : public net::NullProbe {
 public:
  using Config = BranchConfig;
  static constexpr std::string_view kSection = "machine.branch";
  static constexpr std::string_view kDoc =
      "The branch target model: calls into the stack's functions and helpers predicted by a "
      "direct-mapped branch target buffer, returns by a return stack (models/branch_targets.h).";
  static constexpr Stage kStage = Stage::branch;
  static constexpr std::string_view kStageDoc =
      "branch target misprediction stalls (only when the branch model, machine.branch, is on)";
  static constexpr std::array<KeySpec<Config>, 4> kKeys = {{
      {"enabled", "Charge mispredicted calls and returns (to the branch stage).",
       &at<&Config::enabled>},
      {"btb_entries", "Call sites the branch target buffer holds, direct-mapped.",
       &at<&Config::btb_entries>, 1, 65536, true},
      {"ras_depth", "Entries of the return stack: deeper calls' returns mispredict.",
       &at<&Config::ras_depth>, 1, 256},
      {"mispredict_cycles", "Stall per misprediction (the pipeline refill).",
       &at<&Config::mispredict_cycles>, 0, 1e4},
  }};
  static constexpr std::array<ColumnSpec, 1> kColumns = {{
      {"branch_mispredicts_per_packet", "mispredictions per packet",
       "mispredicted calls and returns per packet (only when the branch model is on)"},
  }};

  BranchTargets(CycleAccount& acct, const BranchConfig& config)
      : acct_(acct), bp_(config.btb_entries, config.ras_depth), cycles_(config.mispredict_cycles) {}

  void enter(net::FnId fn) { call(static_cast<uint32_t>(slot(fn))); }
  void leave(net::FnId /*fn*/) { ret(); }
  void copy(net::CopyKind /*kind*/, const void* /*src*/, const void* /*dst*/, size_t /*len*/) {
    helper(Code::copy);
  }
  void cksum(const void* /*addr*/, size_t /*len*/) { helper(Code::cksum); }
  void alloc(net::Obj /*obj*/, const void* /*addr*/) { helper(Code::mbuf_alloc); }
  void free(net::Obj /*obj*/, const void* /*addr*/) { helper(Code::mbuf_free); }

  const BranchPredictor& predictor() const { return bp_; }
  std::array<double, 1> columns(double per_packet) const {
    return {static_cast<double>(bp_.mispredicts()) * per_packet};
  }

 private:
  void call(uint32_t callee) {
    if (!bp_.call(bp_.current(), callee)) charge(callee);
  }
  void ret() {
    const uint32_t callee = bp_.current();
    if (!bp_.ret() && callee != BranchPredictor::kOutside) charge(callee);
  }
  // A helper is called by the innermost function and returns at once.
  void helper(Code c) {
    call(static_cast<uint32_t>(slot(c)));
    ret();
  }
  void charge(uint32_t payer) { acct_.charge(kStage, payer, CostKind::cache, cycles_); }

  CycleAccount& acct_;
  BranchPredictor bp_;
  double cycles_;
};

}  // namespace simloop::models

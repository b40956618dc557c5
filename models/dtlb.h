// A data TLB: a charge for each data page the stack touches that the TLB
// does not hold. The pages are those of the data in the stack's probe
// events: both sides of a copy, the bytes checksummed, each header field
// read or written, and the buffer under each allocation and free (the
// zone's free list lives in its items). The TLB is fully associative with
// least-recently-used replacement; each miss stalls the CPU for a fixed
// number of cycles (the page walk), charged to its own stage (tlb) and, in
// the function ledger, to whoever touched the page (as the account charges
// helpers: the innermost stack function), as a stall (CostKind::cache).
//
// With pages as small as cache lines it is as well a fully associative
// data cache with one miss cost.
//
// The stack's buffers are on pages of their own (zones are mapped, the
// ttcp buffers page-aligned), so which pages an event touches does not
// depend on where the process put them, for pages up to 4096 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/cycle_account.h"
#include "models/model_spec.h"
#include "sim/stack/net/probe.h"

namespace simloop::models {

struct DtlbConfig {
  bool enabled = false;
  int entries = 32;           // pages held
  int64_t page_bytes = 4096;  // a power of two, 64 to 4096
  double miss_cycles = 20;    // stall per miss
};

// The TLB itself, free of any account.
class Tlb {
 public:
  // Throws std::invalid_argument unless entries >= 1 and page_bytes is a
  // power of two.
  Tlb(int entries, int64_t page_bytes);
  // Touches the pages of [addr, addr + len) (none if len is 0); returns
  // how many missed.
  int touch(uintptr_t addr, size_t len);
  uint64_t accesses() const { return accesses_; }  // pages looked up
  uint64_t misses() const { return misses_; }

 private:
  bool lookup(uint64_t page);
  std::vector<uint64_t> pages_;  // most recently used first
  size_t entries_;
  int shift_;
  uint64_t accesses_ = 0, misses_ = 0;
};

// The probe component: touches the TLB at each data event and charges the
// misses to `acct`.
class DataTlb : public net::NullProbe {
 public:
  using Config = DtlbConfig;
  static constexpr std::string_view kSection = "machine.dtlb";
  static constexpr std::string_view kDoc =
      "The data TLB model: a stall for each data page the stack touches that it does not hold "
      "(models/dtlb.h).";
  static constexpr Stage kStage = Stage::tlb;
  static constexpr std::string_view kStageDoc =
      "data TLB miss stalls (only when the data TLB model, machine.dtlb, is on)";
  static constexpr std::array<KeySpec<Config>, 4> kKeys = {{
      {"enabled", "Charge data TLB misses (to the tlb stage).", &at<&Config::enabled>},
      {"entries", "Pages held, fully associative, least recently used out.", &at<&Config::entries>,
       1, 4096},
      {"page_bytes", "Page size in bytes, a power of two (as small as a line: a data cache).",
       &at<&Config::page_bytes>, 64, 4096, true},
      {"miss_cycles", "Stall per miss (the page walk).", &at<&Config::miss_cycles>, 0, 1e5},
  }};
  static constexpr std::array<ColumnSpec, 1> kColumns = {{
      {"dtlb_misses_per_packet", "misses per packet",
       "data TLB misses per packet (only when the data TLB model is on)"},
  }};

  DataTlb(CycleAccount& acct, const DtlbConfig& config)
      : acct_(acct), tlb_(config.entries, config.page_bytes), miss_cycles_(config.miss_cycles) {}

  void copy(net::CopyKind /*kind*/, const void* src, const void* dst, size_t len) {
    const int m = tlb_.touch(addr(src), len) + tlb_.touch(addr(dst), len);
    charge(acct_.caller(Code::copy), m);
  }
  void cksum(const void* a, size_t len) {
    charge(acct_.caller(Code::cksum), tlb_.touch(addr(a), len));
  }
  void alloc(net::Obj /*obj*/, const void* a) {
    charge(acct_.caller(Code::mbuf_alloc), tlb_.touch(addr(a), 1));
  }
  void free(net::Obj /*obj*/, const void* a) {
    charge(acct_.caller(Code::mbuf_free), tlb_.touch(addr(a), 1));
  }
  void header(net::FnId fn, const void* a, unsigned size, bool /*write*/) {
    charge(static_cast<size_t>(fn), tlb_.touch(addr(a), size));
  }

  const Tlb& tlb() const { return tlb_; }
  std::array<double, 1> columns(double per_packet) const {
    return {static_cast<double>(tlb_.misses()) * per_packet};
  }

 private:
  static uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  void charge(size_t payer, int misses) {
    if (misses > 0) acct_.charge(kStage, payer, CostKind::cache, misses * miss_cycles_);
  }

  CycleAccount& acct_;
  Tlb tlb_;
  double miss_cycles_;
};

}  // namespace simloop::models

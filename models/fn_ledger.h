// Cycles by stack function and by kind of cost: the second view of a run,
// beside the stage view of models/cycle_account.h. Both views hold every
// cycle of the run, so each sums to the same total.
//
// Who pays: a function's own per-call cost goes to it; what helpers do on
// its behalf (copies, checksums, buffer allocation and free) goes to the
// innermost stack function that called them (to the helper itself only
// when no stack function is running); a misaligned header access goes to
// the function that made it. I-cache stalls go to the code that missed:
// each missed line to the owners with hot code in it (split evenly when a
// line holds several).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/costs.h"
#include "models/icache.h"
#include "sim/layout/code.h"
#include "sim/layout/layout.h"
#include "sim/stack/net/fn_table.h"

namespace simloop::models {

enum class CostKind : uint8_t {
  event,       // a fixed cost per event: a call, a system call, an allocation, a handler
  per_byte,    // checksummed bytes
  copy,        // bytes copied (setup and per byte, at the aligned rate)
  misaligned,  // misaligned header accesses, and the extra of copies off 4-byte alignment
  cache,       // I-cache miss stalls
  idle,        // the CPU idle (ENOBUFS sleep, or time nothing explains)
  count
};
inline constexpr size_t kCostKindCount = static_cast<size_t>(CostKind::count);
std::string_view cost_kind_name(CostKind k);

// Functions of the ledger: the owner slots (sim/layout/code.h: the stack's
// functions, system call entry and exit, the sender's loop, the helpers),
// then three that are not code of the stack.
inline constexpr size_t kLedgerOwners = kCodeCount;
inline constexpr size_t kInterruptHandler = kLedgerOwners;  // the handler's own cycles
inline constexpr size_t kSleepFn = kLedgerOwners + 1;       // ENOBUFS sleep
inline constexpr size_t kIdleFn = kLedgerOwners + 2;        // time nothing explains
inline constexpr size_t kLedgerFns = kLedgerOwners + 3;
// The name of ledger function `fn` for a stack with table `fns` (empty: a
// slot that stack does not use); a helper as the stack calls it.
std::string_view ledger_fn_name(const net::FnTable& fns, size_t fn);
// The part of the path ledger function `fn` does (sim/layout/code.h's
// owners; the interrupt handler is the device's, sleep and idle are idle).
net::PathRole ledger_fn_role(const net::FnTable& fns, size_t fn);
// The ledger functions in use with `fns`, in order.
std::vector<size_t> ledger_fns(const net::FnTable& fns);

struct FnLedger {
  const net::FnTable* fns = &kNoFns;  // whose functions the slots are
  std::array<std::array<double, kCostKindCount>, kLedgerFns> cycles{};
  std::array<double, kLedgerFns> l1i_misses{};
  void add(size_t fn, CostKind k, double c) { cycles[fn][static_cast<size_t>(k)] += c; }
  double total() const;
  double fn_total(size_t fn) const;
};

// One L1 I-cache set that missed during the run.
struct SetMisses {
  int64_t set = 0;
  double misses = 0, stall = 0;
  std::vector<std::string> symbols;  // every hot symbol with code in this set
};

// Spreads the I-cache's per-line misses (ICache::tally_lines) over the
// owners of `code` (a stack with table `fns`) into `ledger` (cache column,
// misses) and returns the
// sets that missed, with their symbols, by set number.
std::vector<SetMisses> attribute_icache(const ICache& cache, const LinkedLayout& code,
                                        const net::FnTable& fns, FnLedger& ledger);

}  // namespace simloop::models

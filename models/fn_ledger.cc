#include "models/fn_ledger.h"

#include <algorithm>
#include <map>
#include <set>

namespace simloop::models {

std::string_view cost_kind_name(CostKind k) {
  static constexpr std::array<std::string_view, kCostKindCount> names = {
      "event", "per_byte", "copy", "misaligned", "cache", "idle"};
  return names.at(static_cast<size_t>(k));
}

std::string_view ledger_fn_name(const net::FnTable& fns, size_t fn) {
  // The code around the stack's functions, as the stack calls it.
  if (fn < kLedgerOwners)
    return fn < kCodeBase ? owner_name(fns, fn) : fns.helper_word(owner_name(fns, fn));
  static constexpr std::array<std::string_view, 3> extra = {"interrupt_handler", "sleep", "idle"};
  return extra.at(fn - kLedgerOwners);
}

net::PathRole ledger_fn_role(const net::FnTable& fns, size_t fn) {
  if (fn < kLedgerOwners) return owner_path_role(fns, fn);
  return fn == kInterruptHandler ? net::PathRole::device : net::PathRole::idle;
}

std::vector<size_t> ledger_fns(const net::FnTable& fns) {
  std::vector<size_t> v = owner_slots(fns);
  for (size_t f = kLedgerOwners; f < kLedgerFns; ++f) v.push_back(f);
  return v;
}

double FnLedger::total() const {
  double t = 0;
  for (size_t f = 0; f < kLedgerFns; ++f) t += fn_total(f);
  return t;
}

double FnLedger::fn_total(size_t fn) const {
  double t = 0;
  for (double c : cycles.at(fn)) t += c;
  return t;
}

std::vector<SetMisses> attribute_icache(const ICache& cache, const LinkedLayout& code,
                                        const net::FnTable& fns, FnLedger& ledger) {
  const auto line_bytes = static_cast<uint64_t>(cache.line_bytes());
  // Line -> this stack's owners and symbols with hot code in it.
  const auto by_line = code_by_line(code, line_bytes);
  std::map<int64_t, SetMisses> sets;
  std::map<int64_t, std::set<std::string>> symbols_of;
  for (const auto& [line, m] : cache.line_misses()) {
    std::vector<size_t> os;
    const int64_t set = cache.l1_set_of(line * line_bytes);
    if (auto it = by_line.find(line); it != by_line.end())
      for (const LineCode& c : it->second) {
        const auto o = owner_slot(fns, c.owner);
        if (!o || !owner_in_use(fns, *o)) continue;
        if (std::find(os.begin(), os.end(), *o) == os.end()) os.push_back(*o);
        // Only lines that missed name their code: a set's other lines may
        // hold code this path never runs.
        symbols_of[set].insert(c.symbol);
      }
    // Every fetched line is some owner's code; a line that is not (none
    // today) is charged to the sender's loop rather than lost.
    if (os.empty()) os.push_back(slot(Code::user_loop));
    const double share = 1.0 / static_cast<double>(os.size());
    for (size_t o : os) {
      ledger.add(o, CostKind::cache, m.stall * share);
      ledger.l1i_misses[o] += static_cast<double>(m.misses) * share;
    }
    auto& s = sets[set];
    s.set = set;
    s.misses += static_cast<double>(m.misses);
    s.stall += m.stall;
  }
  std::vector<SetMisses> out;
  for (auto& [set, s] : sets) {
    const auto& syms = symbols_of[set];
    s.symbols.assign(syms.begin(), syms.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace simloop::models

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
  if (fn < kLedgerOwners) return owner_name(fns, fn);
  static constexpr std::array<std::string_view, 3> extra = {"interrupt_handler", "sleep", "idle"};
  return extra.at(fn - kLedgerOwners);
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
  // Line -> owners with hot code in it; set -> symbols.
  std::map<uint64_t, std::vector<size_t>> owners_of;
  std::map<int64_t, std::set<std::string>> symbols_of;
  for (size_t o : owner_slots(fns)) {
    auto it = code.by_owner.find(std::string(owner_name(fns, o)));
    if (it == code.by_owner.end()) continue;
    for (const auto& r : it->second) {
      if (r.bytes == 0) continue;
      for (uint64_t l = r.start / line_bytes; l <= (r.start + r.bytes - 1) / line_bytes; ++l) {
        auto& v = owners_of[l];
        if (std::find(v.begin(), v.end(), o) == v.end()) v.push_back(o);
        symbols_of[cache.l1_set_of(l * line_bytes)].insert(r.symbol);
      }
    }
  }
  std::map<int64_t, SetMisses> sets;
  for (const auto& [line, m] : cache.line_misses()) {
    auto it = owners_of.find(line);
    // Every fetched line is some owner's code; a line that is not (none
    // today) is charged to the sender's loop rather than lost.
    const std::vector<size_t> fallback = {slot(Code::user_loop)};
    const auto& os = it != owners_of.end() ? it->second : fallback;
    const double share = 1.0 / static_cast<double>(os.size());
    for (size_t o : os) {
      ledger.add(o, CostKind::cache, m.stall * share);
      ledger.l1i_misses[o] += static_cast<double>(m.misses) * share;
    }
    const int64_t set = cache.l1_set_of(line * line_bytes);
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

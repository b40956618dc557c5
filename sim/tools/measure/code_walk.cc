#include "sim/tools/measure/code_walk.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "sim/support/text.h"

namespace simloop::measure {

namespace {

using support::parse_u64;
using support::words;

}  // namespace

CallgrindFlow parse_callgrind_flow(std::istream& in, const std::string& what,
                                   const std::string& object) {
  CallgrindFlow out;
  // Whether a named object is `object`: the same file, however named.
  std::error_code ec;
  const std::filesystem::path want =
      object.empty() ? std::filesystem::path() : std::filesystem::weakly_canonical(object, ec);
  // Each name looked up on the file system once: a file names its objects
  // again at every function's costs.
  std::map<std::string, bool, std::less<>> seen;
  auto is_object = [&](std::string_view name) {
    // "???": where valgrind puts code of no file, the PLT stubs among it.
    if (object.empty() || name == "???") return true;
    if (const auto it = seen.find(name); it != seen.end()) return it->second;
    std::error_code e;
    const bool same = std::filesystem::weakly_canonical(std::string(name), e) == want && !e;
    seen.emplace(std::string(name), same);
    return same;
  };
  bool in_object = true;      // the costs that follow are the object's (ob=)
  bool callee_object = true;  // the next call's target is in it (cob=)
  enum class Pending { none, call, jump };
  Pending pending = Pending::none;
  uint64_t pending_count = 0, pending_target = 0;
  bool positions_instr = false;
  int lineno = 0;
  auto bad = [&](const std::string& line, const char* expected) {
    throw std::runtime_error(
        fmt::format("{}:{}: expected {}, got '{}'", what, lineno, expected, line));
  };
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.starts_with("positions:")) {
      if (words(line.substr(10)) != std::vector<std::string>{"instr"})
        throw std::runtime_error(
            fmt::format("{}:{}: positions '{}': run callgrind with --dump-instr=yes --dump-line=no",
                        what, lineno, line.substr(10)));
      positions_instr = true;
      continue;
    }
    if (line.starts_with("ob=")) {
      in_object = is_object(line.substr(3));
      callee_object = in_object;
      continue;
    }
    if (line.starts_with("cob=")) {
      callee_object = is_object(line.substr(4));
      continue;
    }
    if (line.starts_with("calls=") || line.starts_with("jump=") || line.starts_with("jcnd=")) {
      // "calls=COUNT TARGET", "jump=COUNT TARGET", "jcnd=TAKEN/EXECUTED TARGET"; the
      // next line is the source position (with a call's inclusive cost).
      const auto eq = line.find('=');
      const auto w = words(line.substr(eq + 1));
      std::string count = w.empty() ? std::string() : w[0];
      if (line[0] == 'j' && line[1] == 'c') count = count.substr(0, count.find('/'));
      if (w.size() < 2 || !parse_u64(count, &pending_count) ||
          !parse_u64(w[1], &pending_target, 16))
        bad(line, "'calls=COUNT TARGET' or a jump (written with --compress-pos=no)");
      pending = line[0] == 'c' ? Pending::call : Pending::jump;
      continue;
    }
    if (!line.starts_with("0x")) continue;
    const auto w = words(line);
    uint64_t addr = 0;
    if (w.empty() || !parse_u64(w[0], &addr, 16)) bad(line, "'ADDRESS COUNT'");
    if (pending != Pending::none) {
      if (pending == Pending::call) {
        if (in_object && callee_object) out.calls[{addr, pending_target}] += pending_count;
        callee_object = in_object;  // a cob= names one call's target
      } else if (in_object) {
        out.jumps[{addr, pending_target}] += pending_count;
      }
      pending = Pending::none;
      continue;
    }
    uint64_t ir = 0;
    if (w.size() < 2 || !parse_u64(w[1], &ir))
      bad(line, "'ADDRESS COUNT' (written with --compress-pos=no)");
    if (in_object)
      out.instr[addr] += ir;
    else
      out.elsewhere += ir;
  }
  if (!positions_instr)
    throw std::runtime_error(fmt::format("{}: no 'positions: instr' line", what));
  return out;
}

std::vector<uint64_t> parse_objdump_starts(std::istream& objdump_output) {
  std::vector<uint64_t> starts;
  for (std::string line; std::getline(objdump_output, line);) {
    // "  4721a0:\tjmp ..." (an instruction) as against "00000000004721a0 <sym>:".
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || first == 0) continue;
    const auto colon = line.find(':', first);
    if (colon == std::string::npos || colon + 1 >= line.size() || line[colon + 1] != '\t') continue;
    uint64_t a = 0;
    if (parse_u64(std::string_view(line).substr(first, colon - first), &a, 16)) starts.push_back(a);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

namespace {

using Edge = std::pair<uint64_t, uint64_t>;
struct EdgeHash {
  size_t operator()(const Edge& e) const { return std::hash<uint64_t>()(e.first * 31 + e.second); }
};

// Per-packet figures: (hi - lo) / packets, only where positive (an address
// that ran less in the longer run took an address-dependent path).
template <class K, class M>
std::map<K, double> per_packet(const M& lo, const M& hi, double packets) {
  std::map<K, double> out;
  for (const auto& [k, v] : hi) {
    const auto l = lo.find(k);
    const double d =
        (static_cast<double>(v) - (l == lo.end() ? 0.0 : static_cast<double>(l->second))) / packets;
    if (d > 0) out[k] = d;
  }
  return out;
}

class WalkBuilder {
 public:
  WalkBuilder(const CallgrindFlow& lo, const CallgrindFlow& hi, int64_t packets,
              const std::vector<models::NmSymbol>& symbols, const std::vector<uint64_t>& starts,
              double min_per_packet)
      : starts_(starts), min_(min_per_packet) {
    const double n = static_cast<double>(std::max<int64_t>(packets, 1));
    instr_ = per_packet<uint64_t>(lo.instr, hi.instr, n);
    for (const auto& [e, v] : per_packet<Edge>(lo.jumps, hi.jumps, n)) {
      jumps_from_[e.first].emplace_back(e.second, v);
      jumps_into_[e.second] += v;
    }
    for (const auto& [e, v] : per_packet<Edge>(lo.calls, hi.calls, n)) {
      calls_from_[e.first].emplace_back(e.second, v);
      entries_[e.second] += v;
    }
    for (const auto& s : symbols)
      if (s.text && s.size > 0) text_.push_back(&s);  // in address order
  }

  models::WalkProfile build() {
    models::WalkProfile out;
    // Executed instructions by symbol.
    std::map<const models::NmSymbol*, std::vector<uint64_t>> by_symbol;
    for (const auto& [a, c] : instr_)
      if (const auto* s = symbol_of(a)) by_symbol[s].push_back(a);
    for (const auto& [sym, addrs] : by_symbol) {
      std::vector<std::pair<uint64_t, double>> entries;
      for (auto it = entries_.lower_bound(sym->addr);
           it != entries_.end() && it->first < sym->addr + sym->size; ++it)
        if (it->second >= 0.01) entries.push_back(*it);
      // Hot instructions off the walk belong to it only if it is the
      // symbol's one routine (a PLT section has one per entry).
      const bool one = entries.size() == 1;
      for (const auto& [t, e] : entries) {
        const std::vector<uint64_t> off_walk = one ? addrs : std::vector<uint64_t>();
        std::set<uint64_t> ran;
        models::Walk& w = out[{sym->name, t - sym->addr}];
        w = walk(*sym, t, e, off_walk, false, nullptr, &ran);
        w.per_call = per_call(*sym, t, e, off_walk, ran);
      }
      const bool any_entry = !entries.empty();
      if (!any_entry) {
        models::Walk w = resident(*sym, addrs);
        if (!w.items.empty()) out[{sym->name, 0}] = std::move(w);
      }
    }
    return out;
  }

 private:
  static constexpr int64_t kMaxInstructions = 200000;  // per walk

  const models::NmSymbol* symbol_of(uint64_t a) const {
    auto it = std::upper_bound(text_.begin(), text_.end(), a,
                               [](uint64_t x, const auto* s) { return x < s->addr; });
    if (it == text_.begin()) return nullptr;
    const models::NmSymbol* s = *(it - 1);
    return a < s->addr + s->size ? s : nullptr;
  }
  uint64_t length(uint64_t a) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), a);
    if (it == starts_.end() || it == starts_.begin() || *(it - 1) != a) return 1;
    return *it - a;
  }
  double get(const std::map<uint64_t, double>& m, uint64_t a) const {
    const auto it = m.find(a);
    return it == m.end() ? 0 : it->second;
  }
  // Runs of the fall-through into `next`: what reaches it that no jump or
  // call does.
  double fall_into(uint64_t next) const {
    return std::max(0.0, get(instr_, next) - get(jumps_into_, next) - get(entries_, next));
  }

  void add_run(models::Walk& w, const models::NmSymbol& s, uint64_t a) const {
    const uint64_t off = a - s.addr;
    const uint64_t len = std::min(length(a), s.size - off);
    if (!w.items.empty() && w.items.back().target.empty() &&
        w.items.back().offset + w.items.back().bytes == off) {
      w.items.back().bytes += len;
      return;
    }
    w.items.push_back({off, len, {}, 0});
  }
  void add_call(models::Walk& w, const models::NmSymbol& s, uint64_t site, uint64_t target) const {
    const models::NmSymbol* t = symbol_of(target);
    if (t == nullptr) return;
    w.items.push_back({site - s.addr, 0, t->name, target - t->addr});
  }

  // What is left of each edge, in calls' worth.
  struct Left {
    std::unordered_map<Edge, double, EdgeHash> jump, call;
    std::unordered_map<uint64_t, double> fall;
  };

  // With `cycle`, the walk ends where it comes back to `entry`: one turn of
  // a loop that starts there. With `shared`, it is the walk of one of
  // `calls` calls: it takes what is left there, counted in whole calls, and
  // each edge at most its share of the calls (rounded up, so that a loop's
  // turns are shared among them), and leaves the rest for the next call's
  // walk; `ran` then receives the instructions it ran.
  models::Walk walk(const models::NmSymbol& s, uint64_t entry, double calls,
                    const std::vector<uint64_t>& addrs, bool cycle = false, Left* shared = nullptr,
                    std::set<uint64_t>* ran = nullptr) const {
    models::Walk w;
    w.calls_per_packet = calls;
    const auto in_s = [&](uint64_t a) { return a >= s.addr && a < s.addr + s.size; };
    Left own;
    Left& left = shared != nullptr ? *shared : own;
    const double unit = shared != nullptr ? 1.0 : calls;
    auto& jump_left = left.jump;
    auto& call_left = left.call;
    auto& fall_left = left.fall;
    std::set<uint64_t> visited;
    // A call's own walk: what it took of each edge.
    std::unordered_map<Edge, double, EdgeHash> took_jump, took_call;
    std::unordered_map<uint64_t, double> took_fall;
    auto share = [&](double left, double per_packet, double took) {
      return shared == nullptr ? left : std::min(left, std::ceil(per_packet / calls - 1e-9) - took);
    };
    uint64_t a = entry;
    for (int64_t n = 0; n < kMaxInstructions; ++n) {
      if (cycle && n > 0 && a == entry) break;
      add_run(w, s, a);
      visited.insert(a);
      if (const auto c = calls_from_.find(a); c != calls_from_.end()) {
        // The callee with the most calls left from here.
        double best = -1;
        uint64_t target = 0;
        for (const auto& [t, v] : c->second) {
          const double got =
              share(call_left.try_emplace({a, t}, v / unit).first->second, v, took_call[{a, t}]);
          if (got > best) {
            best = got;
            target = t;
          }
        }
        call_left[{a, target}] -= 1;
        took_call[{a, target}] += 1;
        add_call(w, s, a, target);
      }
      // The successor with the most left: a jump or the fall-through. Of
      // two with as much left, the one already run: a loop goes round again
      // before it is left (leaving forfeits what its body has left).
      double best = 0.499;  // half a call's worth, at least
      uint64_t next = 0;
      bool found = false, out_of_s = false, best_seen = false;
      auto consider = [&](uint64_t t, double left) {
        const bool seen = visited.count(t) != 0;
        if (left > best + 1e-6 || (left > best - 1e-6 && seen && !best_seen)) {
          best = std::max(best, left);
          best_seen = seen;
          next = t;
          found = true;
          out_of_s = !in_s(t);
        }
      };
      const uint64_t fall = a + length(a);
      if (in_s(fall) && instr_.count(fall) != 0)
        consider(fall, share(fall_left.try_emplace(fall, fall_into(fall) / unit).first->second,
                             fall_into(fall), took_fall[fall]));
      if (const auto j = jumps_from_.find(a); j != jumps_from_.end())
        for (const auto& [t, v] : j->second)
          consider(t, share(jump_left.try_emplace({a, t}, v / unit).first->second, v,
                            took_jump[{a, t}]));
      if (!found) break;
      if (next == fall && !jump_left.count({a, next})) {
        fall_left[fall] -= 1;
        took_fall[fall] += 1;
      } else {
        jump_left[{a, next}] -= 1;
        took_jump[{a, next}] += 1;
      }
      if (out_of_s) {
        add_call(w, s, a, next);  // a jump to another function: a tail call
        break;
      }
      a = next;
    }
    if (ran != nullptr) ran->insert(visited.begin(), visited.end());
    // Hot instructions the walk did not reach (other calls take other paths).
    for (uint64_t x : addrs)
      if (!visited.count(x) && get(instr_, x) >= min_) {
        add_run(w, s, x);
        add_hot_calls(w, s, x);
      }
    return w;
  }

  // A routine called K times a packet (K from 2 to kMaxPerCall) along
  // different paths: one walk for each call, each taking its share of what
  // is left (a harness's second recvfrom a packet finds the queue empty),
  // the longest first. Hot instructions `addrs` that no call's
  // walk reaches follow the first's, in address order, as they follow the
  // one walk. None (empty) where the calls are not a whole number a packet,
  // where they all run alike, or where together they miss an instruction
  // the one walk runs (`all`, what it ran).
  static constexpr int kMaxPerCall = 8;
  std::vector<std::vector<models::WalkItem>> per_call(const models::NmSymbol& s, uint64_t entry,
                                                      double calls,
                                                      const std::vector<uint64_t>& addrs,
                                                      const std::set<uint64_t>& all) const {
    const long k = std::lround(calls);
    if (k < 2 || k > kMaxPerCall || std::abs(calls - static_cast<double>(k)) > 0.05) return {};
    Left left;
    std::set<uint64_t> ran;
    std::vector<models::Walk> each;
    for (long i = 0; i < k; ++i)
      each.push_back(walk(s, entry, static_cast<double>(k), {}, false, &left, &ran));
    if (!std::includes(ran.begin(), ran.end(), all.begin(), all.end())) return {};
    for (uint64_t x : addrs)
      if (!ran.count(x) && get(instr_, x) >= min_) {
        add_run(each.front(), s, x);
        add_hot_calls(each.front(), s, x);
      }
    std::vector<std::vector<models::WalkItem>> out;
    for (auto& w : each) out.push_back(std::move(w.items));
    if (std::all_of(out.begin(), out.end(), [&](const auto& w) { return w == out.front(); }))
      return {};
    // Which call ran which path is not in the counts. The calls that run
    // most come first: a loop that calls until there is nothing left to do
    // (recvfrom until the queue is empty) makes its shortest call last.
    auto bytes = [](const std::vector<models::WalkItem>& v) {
      uint64_t b = 0;
      for (const auto& i : v) b += i.bytes;
      return b;
    };
    std::stable_sort(out.begin(), out.end(),
                     [&](const auto& x, const auto& y) { return bytes(x) > bytes(y); });
    return out;
  }

  // A call site on no walk: its most frequent callee, once for each time it
  // runs per packet.
  void add_hot_calls(models::Walk& w, const models::NmSymbol& s, uint64_t a) const {
    const auto c = calls_from_.find(a);
    if (c == calls_from_.end()) return;
    double best = 0;
    uint64_t target = 0;
    for (const auto& [t, v] : c->second)
      if (v > best) {
        best = v;
        target = t;
      }
    if (best < min_) return;
    for (long k = 0; k < std::max(1L, std::lround(best)) && k < 64; ++k) add_call(w, s, a, target);
  }

  // A routine that runs throughout (the loop around the packets): one
  // packet's turn of it, as it runs. The turn starts at its first
  // instruction that runs once a packet and follows the jumps taken, each as
  // often per packet as it is taken (a walk of one call a packet), until it
  // comes back there; where the turn starts does not matter, as the packets
  // repeat it. What the turn does not reach follows in address order.
  models::Walk resident(const models::NmSymbol& s, const std::vector<uint64_t>& addrs) const {
    const auto once = [&](uint64_t a) {
      const double n = get(instr_, a);
      return n >= std::max(min_, 0.5) && n < 1.5;
    };
    const auto first = std::find_if(addrs.begin(), addrs.end(), once);
    if (first == addrs.end()) {
      // No instruction runs once a packet: its hot code in address order.
      models::Walk w;
      for (uint64_t a : addrs)
        if (get(instr_, a) >= min_) {
          add_run(w, s, a);
          add_hot_calls(w, s, a);
        }
      return w;
    }
    models::Walk w = walk(s, *first, 1.0, addrs, true);
    w.calls_per_packet = 0;  // not called per packet: the loop around them
    return w;
  }

  const std::vector<uint64_t>& starts_;
  double min_;
  std::map<uint64_t, double> instr_, jumps_into_, entries_;
  std::map<uint64_t, std::vector<std::pair<uint64_t, double>>> jumps_from_, calls_from_;
  std::vector<const models::NmSymbol*> text_;
};

}  // namespace

models::WalkProfile walk_profile(const CallgrindFlow& lo, const CallgrindFlow& hi, int64_t packets,
                                 const std::vector<models::NmSymbol>& symbols,
                                 const std::vector<uint64_t>& instruction_starts,
                                 double min_per_packet) {
  return WalkBuilder(lo, hi, packets, symbols, instruction_starts, min_per_packet).build();
}

std::string format_walks(const models::WalkProfile& walks) {
  std::string out;
  auto items = [&](const std::vector<models::WalkItem>& v) {
    for (const auto& item : v) {
      if (item.target.empty())
        out += fmt::format("run {:#x} {}\n", item.offset, item.bytes);
      else
        out += fmt::format("call {:#x} {} {:#x}\n", item.offset, item.target, item.target_offset);
    }
  };
  for (const auto& [key, w] : walks) {
    out += fmt::format("walk {} {:#x} {:.4g}\n", key.first, key.second, w.calls_per_packet);
    items(w.items);
    for (size_t k = 0; k < w.per_call.size(); ++k) {
      out += fmt::format("per-call {}\n", k + 1);
      items(w.per_call[k]);
    }
  }
  return out;
}

}  // namespace simloop::measure

#include "sim/stack/stack_set.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "sim/stack/stacks.h"
#include "sim/stack/workload/driver.h"

namespace simloop::stacks {

const std::vector<const net::FnTable*>& fn_tables() {
  static const std::vector<const net::FnTable*> tables = [] {
    std::vector<const net::FnTable*> v;
    for_each_stack([&]<class K>(std::type_identity<K>) { v.push_back(&K::fns()); });
    return v;
  }();
  return tables;
}

const net::FnTable* find_fn_table(std::string_view name) {
  for (const net::FnTable* t : fn_tables())
    if (t->stack() == name) return t;
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> descriptions() {
  std::vector<std::pair<std::string, std::string>> v;
  for_each_stack([&]<class K>(std::type_identity<K>) {
    v.emplace_back(std::string(K::kName), std::string(K::kDoc));
  });
  return v;
}

StackOptionSet::StackOptionSet() {
  for_each_stack([&]<class K>(std::type_identity<K>) {
    own_.emplace_back(K::kName, std::any(typename K::Own{}));
  });
}

std::any& StackOptionSet::of(std::string_view stack) {
  for (auto& [name, own] : own_)
    if (name == stack) return own;
  throw std::out_of_range("no stack named " + std::string(stack));
}

const std::any& StackOptionSet::of(std::string_view stack) const {
  return const_cast<StackOptionSet*>(this)->of(stack);
}

const std::vector<StackSection>& sections() {
  static const std::vector<StackSection> v = [] {
    std::vector<StackSection> s;
    for_each_stack([&]<class K>(std::type_identity<K>) {
      s.push_back({std::string(K::kName), std::string(K::kSection), std::string(K::kSectionDoc)});
    });
    return s;
  }();
  return v;
}

namespace {

template <class K>
void add_keys(std::vector<StackKey>& out) {
  using Own = typename K::Own;
  static const Own defaults{};
  for (const net::OptionKey<Own>& k : K::kKeys) {
    StackKey key;
    key.stack = K::kName;
    key.path = std::string(K::kSection) + "." + std::string(k.name);
    key.doc = k.doc;
    key.lo = k.lo;
    key.hi = k.hi;
    std::visit(
        [&]<class F>(F field) {
          using T = typename support::FieldType<F, Own>::type;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int> ||
                        std::is_same_v<T, double>) {
            key.type = KeyValue(std::in_place_type<T>, field(const_cast<Own&>(defaults)));
            key.get = [field](const StackOptionSet& s) -> KeyValue {
              return field(const_cast<Own&>(s.get<Own>(K::kName)));
            };
            key.set = [field](StackOptionSet& s, const KeyValue& v) {
              field(s.get<Own>(K::kName)) = std::get<T>(v);
            };
          } else {
            throw std::logic_error(key.path + ": a stack's own key is a bool, int or double field");
          }
        },
        k.field);
    out.push_back(std::move(key));
  }
}

// Whether `path` is `shared` or a key under it.
bool under(std::string_view path, std::string_view shared) {
  return path == shared ||
         (path.size() > shared.size() && path.starts_with(shared) && path[shared.size()] == '.');
}

}  // namespace

const std::vector<StackKey>& keys() {
  static const std::vector<StackKey> v = [] {
    std::vector<StackKey> k;
    for_each_stack([&]<class K>(std::type_identity<K>) { add_keys<K>(k); });
    return k;
  }();
  return v;
}

std::vector<std::string> stacks_honouring(std::string_view path) {
  size_t all = 0;
  std::vector<std::string> honour;
  for_each_stack([&]<class K>(std::type_identity<K>) {
    ++all;
    if (std::any_of(K::kSharedKeys.begin(), K::kSharedKeys.end(),
                    [&](std::string_view s) { return under(path, s); }))
      honour.emplace_back(K::kName);
  });
  if (honour.size() == all) honour.clear();
  return honour;
}

net::KeyProblem problem(std::string_view stack, const net::HostOptions& host,
                        const StackOptionSet& own, workload::Dest dest, int payload) {
  net::KeyProblem p;
  with_stack(stack, [&]<class K>(std::type_identity<K>) {
    p = K::problem(host, own.get<typename K::Own>(K::kName), dest, payload);
  });
  return p;
}

std::vector<std::string> measured_on(net::Measured m) {
  std::vector<std::string> v;
  for_each_stack([&]<class K>(std::type_identity<K>) {
    if (K::kMeasured == m) v.emplace_back(K::kName);
  });
  return v;
}

std::string perf_symbols(std::string_view stack) {
  std::string file;
  with_stack(stack, [&]<class K>(std::type_identity<K>) {
    if constexpr (requires { K::kPerfSymbols; }) file = K::kPerfSymbols;
  });
  return file;
}

namespace {

// Counts what each function of the stack does per packet while `on`; who
// called whom is followed always.
struct CountProbe : net::NullProbe {
  bool on = false;
  CallCounts f;
  std::array<net::FnId, 32> stack{};
  size_t depth = 0;

  CountProbe() { f.parent.fill(-1); }
  int top() const {
    return depth == 0 ? -1 : static_cast<int>(net::index(stack[std::min(depth, stack.size()) - 1]));
  }
  void enter(net::FnId fn) {
    const size_t i = net::index(fn);
    if (on) {
      ++f.calls[i];
      if (f.parent[i] < 0) f.parent[i] = top();
    }
    if (depth < stack.size()) stack[depth] = fn;
    ++depth;
  }
  void leave(net::FnId /*fn*/) {
    if (depth > 0) --depth;
  }
  const L1dMissed* l1d_missed = nullptr;
  void copy(net::CopyKind kind, const void* s, const void* d, size_t len) {
    const double missed = l1d_missed != nullptr && *l1d_missed ? (*l1d_missed)(s, d, len) : 0;
    if (!on || depth == 0) return;
    const auto i = static_cast<size_t>(top());
    f.l1d_miss_bytes[i] += missed;
    f.copy_bytes[i] += static_cast<double>(len);
    if (kind == net::CopyKind::to_user) f.to_user_bytes[i] += static_cast<double>(len);
    if (((reinterpret_cast<uintptr_t>(s) | reinterpret_cast<uintptr_t>(d)) & 3) != 0)
      f.unaligned_bytes[i] += static_cast<double>(len);
  }
  void cksum(const void* /*p*/, size_t len) {
    if (on && depth > 0) f.cksum_bytes[static_cast<size_t>(top())] += static_cast<double>(len);
  }
};

template <class K>
CallCounts count_calls_of(const typename K::Options& options, const workload::DriveOptions& drive,
                          int packets, const L1dMissed& l1d_missed) {
  CountProbe probe;
  probe.l1d_missed = &l1d_missed;
  struct Syscalls : workload::NoHooks {
    CountProbe* p;
    void syscall_enter() { p->f.syscalls += p->on ? 1 : 0; }
    void receive_enter() { p->f.syscalls += p->on ? 1 : 0; }
  } hooks{{}, &probe};
  workload::Driver<CountProbe, typename K::template Stack<CountProbe>> drv(probe, drive, options);
  if (std::string why = drv.start(hooks); !why.empty()) {
    probe.f.stop = CallCounts::Stop::start;
    probe.f.why = std::move(why);
    return probe.f;
  }
  const uint64_t delivered = drv.stack().counters().delivered;
  probe.on = true;
  // `packets` counts datagrams: a GSO send carries several.
  const int segments = drv.segments();
  const int sends = (packets + segments - 1) / segments;
  const auto datagrams = static_cast<uint64_t>(sends) * static_cast<uint64_t>(segments);
  for (int i = 0; i < sends; ++i)
    if (const workload::Step step = drv.send(hooks); !step.ok()) {
      probe.f.stop = CallCounts::Stop::send;
      probe.f.why = drv.why(step);
      return probe.f;
    }
  if (drv.stack().counters().delivered - delivered != datagrams) {
    probe.f.stop = CallCounts::Stop::lost;
    return probe.f;
  }
  CallCounts f = probe.f;
  const double per = 1.0 / static_cast<double>(datagrams);
  for (auto* a : {&f.calls, &f.copy_bytes, &f.unaligned_bytes, &f.cksum_bytes, &f.to_user_bytes,
                  &f.l1d_miss_bytes})
    for (double& v : *a) v *= per;
  f.syscalls *= per;
  return f;
}

}  // namespace

CallCounts count_calls(std::string_view stack, const net::HostOptions& host,
                       const StackOptionSet& own, const workload::DriveOptions& drive, int packets,
                       const L1dMissed& l1d_missed) {
  CallCounts c;
  if (!with_stack(stack, [&]<class K>(std::type_identity<K>) {
        c = count_calls_of<K>(K::options(host, own.get<typename K::Own>(K::kName)), drive, packets,
                              l1d_missed);
      }))
    throw std::out_of_range("no stack named " + std::string(stack));
  return c;
}

}  // namespace simloop::stacks

#include "sim/stack/stack_set.h"

#include <algorithm>
#include <stdexcept>

#include "sim/stack/stacks.h"

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

}  // namespace simloop::stacks

// The stacks as the layers above use them without naming one: their
// function tables, their own options and keys, and what each refuses of an
// experiment. Made from the list in stacks.h (stack_set.cc).
#pragma once

#include <any>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sim/stack/net/fn_table.h"
#include "sim/stack/net/host.h"
#include "sim/stack/net/stack_kind.h"
#include "sim/stack/workload/dest.h"

namespace simloop::stacks {

// Every stack's function table, in list order (the first stack's is the
// default).
const std::vector<const net::FnTable*>& fn_tables();
// The table of the stack named `name`, or nullptr.
const net::FnTable* find_fn_table(std::string_view name);
// Each stack's name and what it is, in list order.
std::vector<std::pair<std::string, std::string>> descriptions();

// Every stack's own options (its kind's Own), each stack's defaults to
// start with.
class StackOptionSet {
 public:
  StackOptionSet();
  std::any& of(std::string_view stack);
  const std::any& of(std::string_view stack) const;
  template <class Own>
  Own& get(std::string_view stack) {
    return std::any_cast<Own&>(of(stack));
  }
  template <class Own>
  const Own& get(std::string_view stack) const {
    return std::any_cast<const Own&>(of(stack));
  }

 private:
  std::vector<std::pair<std::string_view, std::any>> own_;
};

// One key of a stack's own options, `<section>.<name>`.
using KeyValue = std::variant<bool, int, double>;
struct StackKey {
  std::string stack, path, doc;
  KeyValue type;  // which alternative the key holds (its default value)
  double lo = 0, hi = 0;
  std::function<KeyValue(const StackOptionSet&)> get;
  std::function<void(StackOptionSet&, const KeyValue&)> set;
};
struct StackSection {
  std::string stack, path, doc;
};
// Each stack's section and keys, in list order.
const std::vector<StackSection>& sections();
const std::vector<StackKey>& keys();

// The stacks a key shared between stacks applies to: those that list it
// (itself or a section above it) among their kSharedKeys; empty when it
// applies to every stack (none lists it, or all do).
std::vector<std::string> stacks_honouring(std::string_view path);

// Why stack `stack` cannot send `payload` bytes to `dest` with these
// options, and the key to name (empty if it can).
net::KeyProblem problem(std::string_view stack, const net::HostOptions& host,
                        const StackOptionSet& own, workload::Dest dest, int payload);

}  // namespace simloop::stacks

// The stacks this program has: the one list that the configuration, the
// engine and the native runs are made from (net/stack_kind.h says what each
// declares). A stack joins by its line here. Included only by the units
// that go over the list (stack_set.cc, the engine's simulation, the native
// runs), so that a build with more stacks compiles those units alone.
// Which of them the native harness is built from is said in harness.h.
//
// A build may add stacks of its own: with SIMLOOP_EXTRA_STACKS defined, the
// header "extra_stacks.h" on its include path declares
// `using ExtraStacks = net::StackList<...>;` in namespace simloop::stacks.
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>

#include "sim/stack/bsd/kind.h"
#include "sim/stack/linux/kind.h"
#include "sim/stack/net/stack_kind.h"

#ifdef SIMLOOP_EXTRA_STACKS
#include "extra_stacks.h"
#endif

namespace simloop::stacks {

#ifndef SIMLOOP_EXTRA_STACKS
using ExtraStacks = net::StackList<>;
#endif

template <class A, class B>
struct Join;
template <class... A, class... B>
struct Join<net::StackList<A...>, net::StackList<B...>> {
  using type = net::StackList<A..., B...>;
};

// The BSD stack first: the layout owners' indices of its functions stay
// what they were before a second stack came.
using Stacks = Join<net::StackList<net::bsd::Kind, net::lnx::Kind>, ExtraStacks>::type;

namespace detail {
template <class L>
struct ForEach;
template <class... K>
struct ForEach<net::StackList<K...>> {
  template <class F>
  static void run(F&& f) {
    (f(std::type_identity<K>{}), ...);
  }
};
}  // namespace detail

// Calls f(std::type_identity<K>{}) for each stack kind K, in list order.
template <class F>
void for_each_stack(F&& f) {
  detail::ForEach<Stacks>::run(std::forward<F>(f));
}

// Calls f(std::type_identity<K>{}) for the kind named `name`; false if
// there is none.
template <class F>
bool with_stack(std::string_view name, F&& f) {
  bool found = false;
  for_each_stack([&]<class K>(std::type_identity<K> k) {
    if (!found && K::kName == name) {
      found = true;
      f(k);
    }
  });
  return found;
}

}  // namespace simloop::stacks

// How a part of the program declares its configuration keys, beside the
// plain struct they set: a table of KeySpec<C>, in the order the keys are
// documented. The configuration's schema (sim/config/schema.cc) turns each
// table into keys under the section it is registered at, so a struct's keys
// are written once, where the struct is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace simloop::support {

// The field `c.*A.*B...` of a struct, as a plain function: `&at<&C::a, &A::b>`
// names a key's field, also inside a nested struct.
template <class M>
struct MemberOf;
template <class T, class C>
struct MemberOf<T C::*> {
  using type = C;
};
template <auto First, auto... Rest>
constexpr auto& at(typename MemberOf<decltype(First)>::type& c) {
  // clang-format off
  return ((c.*First) .* ... .* Rest);
  // clang-format on
}

// The type of the field an alternative F of KeySpec<C>::field sets; void
// for a section or a choice.
template <class F, class C>
struct FieldType {
  using type = void;
};
template <class T, class C>
struct FieldType<T& (*)(C&), C> {
  using type = T;
};

// A key that takes one of a list of names: the names, in the order they are
// documented, and how a name (always one of them) is stored and read back.
template <class C>
struct Choice {
  std::vector<std::string> (*names)();
  void (*set)(C&, std::string_view);
  std::string_view (*get)(const C&);
};

// One key, `<section>.<name>`, of struct C. A key with no field (monostate)
// opens a section (`name` under the table's own section), with `doc` as
// its doc.
template <class C>
struct KeySpec {
  std::string_view name;
  std::string_view doc;
  std::variant<std::monostate, bool& (*)(C&), int& (*)(C&), int64_t& (*)(C&), double& (*)(C&),
               std::string& (*)(C&), Choice<C>>
      field = {};
  double lo = 0, hi = 0;      // integers and numbers: the range allowed
  bool power_of_two = false;  // integers: only powers of two
  bool cost = false;          // a price of the timing model that calibration fits
};

}  // namespace simloop::support

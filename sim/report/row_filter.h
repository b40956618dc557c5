// Conditions on result rows, as `--where` takes them: KEY=VALUE (or ==),
// KEY!=VALUE, and KEY<N, KEY<=N, KEY>N, KEY>=N. Numbers compare as numbers
// (512 equals 512.0), other values as text; a range needs a number.
#pragma once

#include <stdexcept>
#include <string>

namespace simloop::report {

struct RowCondition {
  std::string key;
  std::string op;  // "==", "!=", "<", "<=", ">", ">="
  std::string value;
};

// Why an expression is not a condition.
struct ConditionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Parses one expression ("payload>=512"); blanks around the key and the
// value are dropped, '=' is '=='. Throws ConditionError saying what is wrong:
// no operator, no key, no value, an operator where the value should start
// (payload=>5), a range against a value that is not a number.
RowCondition parse_condition(const std::string& text);

// Whether a cell satisfies the condition: numerically when both are numbers;
// else == and != compare the text, and a range holds for no cell that is not
// a number.
bool holds(const RowCondition& c, const std::string& cell);

// The operators, as a message lists them.
inline constexpr const char* kConditionForms =
    "KEY=VALUE, KEY!=VALUE, KEY<N, KEY<=N, KEY>N or KEY>=N";

}  // namespace simloop::report

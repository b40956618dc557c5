#include "sim/report/row_filter.h"

#include <string_view>

#include "sim/report/csv_table.h"

namespace simloop::report {

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

bool is_op_char(char c) {
  return c == '=' || c == '!' || c == '<' || c == '>';
}

}  // namespace

RowCondition parse_condition(const std::string& text) {
  const size_t at = text.find_first_of("=!<>");
  if (at == std::string::npos)
    throw ConditionError(std::string("no comparison: expected ") + kConditionForms);
  const std::string_view rest = std::string_view(text).substr(at);
  std::string_view found;
  for (const std::string_view o : {"==", "!=", "<=", ">=", "<", ">", "="}) {
    if (rest.starts_with(o)) {
      found = o;
      break;
    }
  }
  if (found.empty())  // a lone '!'
    throw ConditionError(std::string("'!' is not a comparison: expected ") + kConditionForms);
  const size_t len = found.size();
  const std::string op(found == "=" ? std::string_view("==") : found);
  RowCondition c{trim(text.substr(0, at)), op, trim(text.substr(at + len))};
  if (c.key.empty())
    throw ConditionError(std::string("no column before '") + op + "': expected " + kConditionForms);
  if (c.value.empty())
    throw ConditionError(std::string("nothing to compare with after '") + op + "'");
  if (is_op_char(c.value.front()))
    throw ConditionError("'" + text.substr(at, len + 1) + "' is not a comparison: expected " +
                         kConditionForms);
  double v = 0;
  if (op != "==" && op != "!=" && !parse_number(c.value, &v))
    throw ConditionError("'" + c.value + "' is not a number: " + op + " compares numbers");
  return c;
}

bool holds(const RowCondition& c, const std::string& cell) {
  double a = 0, b = 0;
  if (parse_number(trim(cell), &a) && parse_number(c.value, &b)) {
    if (c.op == "==") return a == b;
    if (c.op == "!=") return a != b;
    if (c.op == "<") return a < b;
    if (c.op == "<=") return a <= b;
    if (c.op == ">") return a > b;
    return a >= b;
  }
  if (c.op == "==") return cell == c.value;
  if (c.op == "!=") return cell != c.value;
  return false;
}

}  // namespace simloop::report

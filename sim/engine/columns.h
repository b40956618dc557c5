// Every output column of simloop's results, with its unit and meaning: the
// one table docs/output-reference.md is generated from (`simloop
// output-reference`), and that a test holds to the columns runs really write.
#pragma once

#include <string>
#include <vector>

namespace simloop::engine {

struct Column {
  std::string name;
  std::string unit;     // "" for labels and counts without a unit
  std::string where;    // run | sweep | long | json-functions | json-sets
  std::string meaning;  // one paragraph; when the column is present, if not always
};

// In order: the run's CSV/JSON result row, the columns a sweep adds, the
// long CSV, the JSON's per-function and per-set fields. Columns named after
// an enumeration (cycles_<stage>, drop_<where>, cycles_<kind>) are listed
// one by one.
const std::vector<Column>& output_columns();

// The reference page (Markdown).
std::string output_reference_markdown();

}  // namespace simloop::engine

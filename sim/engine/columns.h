// Every output column of simloop's results, with its unit and meaning: the
// one table docs/output-reference.md is generated from (`simloop
// output-reference`), and that a test holds to the columns runs really write.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"
#include "sim/report/table.h"
#include "sim/stack/net/fn_table.h"

namespace simloop::engine {

// A run column's value from the experiment and its result, or nothing
// where the column does not apply to the run (the I-cache's with it off).
using RunValue =
    std::function<std::optional<report::Value>(const config::Experiment&, const SimResult&)>;

// A column's name on a stack whose own words name it differently
// (cycles_<stage>, drop_<where>: net::StackWords).
using StackName = std::function<std::string(const net::FnTable&)>;

struct Column {
  std::string name;       // its default name: every stack without a word of its own writes it
  std::string unit;       // "" for labels and counts without a unit
  std::string where;      // run | sweep | long | json-functions | json-sets
  std::string meaning;    // one paragraph; when the column is present, if not always
  RunValue value;         // the run's columns only: what result_row writes
  bool identity = false;  // a run column the experiment alone gives (identity_row)
  StackName name_on;      // its name on a stack, if stacks name it their own way

  // The column's name on the stack of table `fns`.
  std::string named(const net::FnTable& fns) const { return name_on ? name_on(fns) : name; }
};

// In order: the run's CSV/JSON result row, the columns a sweep adds, the
// long CSV, the JSON's per-function and per-set fields. Columns named after
// an enumeration (cycles_<stage>, drop_<where>, cycles_<kind>) are listed
// one by one, under the name outputs give them by default (Column::named
// gives a stack's).
const std::vector<Column>& output_columns();

// A run's row: each run column that applies, with its value, in order;
// identity_row holds only the columns the experiment alone gives (what
// names the run: source, experiment, machine, stack, payload, ...).
report::Row result_row(const config::Experiment& x, const SimResult& r);
report::Row identity_row(const config::Experiment& x);

// The reference page (Markdown).
std::string output_reference_markdown();

}  // namespace simloop::engine

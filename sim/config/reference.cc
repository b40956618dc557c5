// docs/config-reference.md, generated from the schema (simloop
// config-reference), with the sweep section's reference after the keys.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/config/schema.h"
#include "sim/stack/stack_set.h"

namespace simloop::config {

using namespace detail;

namespace {

constexpr const char* kSweepReference = R"(
## Sweeps

`simloop sweep EXPERIMENT.yaml` runs the experiment once per point of its
`sweep:` section (which `simloop run` ignores), each point in its own process.
Swept keys are the keys of the table above, by their full path (the same as
`--set`), and `machine` and `stack`, whose values name a machine or stack
profile (a name or a path, as in the experiment); a point is applied as
`--set` overrides of the experiment. `name` and `output.*` cannot be swept.

A point that chooses another stack than the experiment's runs it as one
value: the experiment file's keys the chosen stack does not take (`options.copy`
on the linux stack, `options.linux.*` on the bsd stack) are left out, each
noted once when the sweep starts; a swept key or a `--set` of a key the
point's stack does not take is an error. A swept machine or stack replaces
the experiment's map of that profile's fields (noted); set a field of every
swept profile with a sweep key of its own (`machine.cache.enabled: [true]`),
which goes over the chosen profile.

```yaml
sweep:
  grid:                          # cartesian product; the first key varies slowest
    workload.payload: [18, 64, 256, 1024]
    options.align: [none, copy-down]
  zip:                           # lock-step: all lists the same length
    machine.clock_hz: [1.0e9, 2.0e9]
    stack.functions.ip_output: [300, 150]
  filter:                        # a point is kept if every condition holds
    - "workload.payload <= 1000"
    - "options.align != strict"
  repeats: 3                     # runs per point, each with its own seed
```

| key | meaning |
|---|---|
| `grid` | map of key to values; every combination is a point |
| `zip` | map of key to values of equal length, taken in lock-step; with `grid` it is one more axis of the product, varying fastest |
| `filter` | list of conditions `KEY OP VALUE`, OP one of `<`, `<=`, `>`, `>=`, `==`, `!=`; KEY a swept key; numbers compare as numbers, anything else as strings (`==`, `!=` only) |
| `repeats` | integer >= 1 (default 1): runs per point |

Values of a key are a list, or a range:

- `{start: 18, stop: 1418, step: 100}`: start, start + step, ... up to and including stop;
- `{start: 16, stop: 1024, num: 7, scale: log}`: num log-spaced values from start to stop, both included (`scale: linear`, the default, spaces them evenly);
- integer keys round range values to integers and drop repeats.

A sweep has at most 10,000,000 points after its filter, and a key at most 1,000,000 values. Each filter condition names one key, so it removes values of that key and the points stay a product. Sweeps of up to 20,000 points have every point's configuration loaded and checked before the first run; larger ones check every value, and a point the loader refuses (a combination of values, such as a payload too large for a swept MTU) is recorded with status `error` when it runs.

A study of two stacks, each on the machine its prices were made for, five runs a point:

```yaml
sweep:
  zip:
    machine: [athlon-xp-2700, linux-epyc-machine]
    stack: [freebsd6, linux-epyc-stack]
  grid:
    workload.payload: [18, 256, 1024]
  repeats: 5
```

A key that one stack takes and the other does not (`options.copy`, BSD's) goes in the zip with `stack`, with `~` at the points of the stack that does not take it: `~` leaves the key as the experiment has it, or out where the point's stack does not take it, and its results leave the key's cell empty. In a grid beside a `stack` axis such a key is refused, since each point of the other stack would run once per value:

```yaml
sweep:
  zip:
    stack: [freebsd6, freebsd6, linux-epyc-stack]
    options.copy: [m_copy, m_dup, ~]
```

Each run's seed is derived from the experiment's seed (`seed` itself cannot be swept), the point's settings and the repeat number: the 64-bit FNV-1a hash of the text `SEED|key=value;key=value|REPEAT`, mixed by one splitmix64 step and reduced modulo 2^52. A point keeps its seeds when other values are added to the sweep.

A point's hash (`point_hash`, what `--resume` and `merge` match rows by) is the 64-bit FNV-1a hash of `BASE|key=value;...`: BASE is the hash of the base's resolved configuration without `output.*` and `description`, and the settings are those that differ from the base's value, sorted by key. Swept keys are set last, over the resolved base, so two points with one hash have one configuration; a key swept anew keeps the rows of its base value. The base's value of `machine` and `stack` is the name the experiment gives (none when it gives a map), so adding `stack: [freebsd6, linux-epyc-stack]` to a study of `stack: freebsd6` keeps its rows.
)";

}  // namespace

std::string reference_markdown() {
  const Experiment defaults;
  std::string out =
      "# Experiment configuration reference\n\n"
      "Generated by `simloop config-reference` from the schema that validates every file; a test "
      "keeps this page and the schema in step.\n\n"
      "An experiment file holds the keys below. `machine` and `stack` are either a name (a file "
      "in `configs/machines/` or `configs/stacks/`), a path to such a file, or a map of their "
      "keys, optionally with `use: NAME` to start from a named file and override some keys. "
      "Machine and stack files hold the keys of their section without the prefix. Any key can "
      "also be set on the command line with `--set path.to.key=value`.\n\n"
      "A cost (a key whose allowed values end in \"or `~`\": a price of the stack's events, "
      "which `simloop calibrate` fits) may be `~`, YAML's null: undetermined, no measurement "
      "fixes it. It is priced 0, and a run that uses it warns once on standard error, naming "
      "each such cost, how much a packet used it and the profile that leaves it so, and lists "
      "them under `undetermined_costs` in its JSON; `simloop run --strict` refuses the run "
      "(exit status 2, nothing written), and `simloop explain` shows them per function. A "
      "number given later (`--set stack.functions.NAME=120`) determines it.\n\n";
  for (const auto& sec : schema().sections()) out += fmt::format("- `{}`: {}\n", sec.path, sec.doc);
  out += "\n| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (const auto& path : schema().order()) {
    const Field& f = *schema().field(path);
    // A key of one stack shows its default on that stack.
    Experiment of_stack;
    if (!f.stacks.empty()) of_stack.stack.fns = stacks::find_fn_table(f.stacks.front());
    const std::string only = f.stacks.size() < stacks::fn_tables().size()
                                 ? fmt::format(" ({} stack only)", fmt::join(f.stacks, " and "))
                                 : "";
    std::string allowed;
    if (f.kind == Kind::choice)
      allowed = fmt::format("{}", fmt::join(f.choices, ", "));
    else if (f.kind == Kind::integer || f.kind == Kind::number)
      allowed = range_text(f.lo, f.hi) + (f.cost ? " or `~`" : "");
    out += fmt::format("| `{}` | {} | `{}` | {} | {}{} |\n", path, kind_name(f.kind),
                       f.get(f.stacks.empty() ? defaults : of_stack).dump(), allowed, f.doc,
                       f.stacks.empty() ? "" : only);
  }
  out += kSweepReference;
  return out;
}

}  // namespace simloop::config

// The CSV of measured runs that calibrate and compare read
// (docs/measured-data.md): simloop's own `measure native` and `measure
// kernel` rows, or a table of another tool with its columns mapped.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/tools/calibrate/points.h"

namespace simloop::measure {

// Canonical column names and what a measured file calls them
// ("kpps=Throughput"); columns to skip.
struct ColumnMap {
  std::map<std::string, std::string> rename;  // canonical -> the file's name
  std::set<std::string> ignore;               // the file's names
  // Which clock the rates are read in: wall time (ns_per_packet and the
  // other rates, null_syscall_ns) or this thread's CPU time
  // (cpu_ns_per_packet, null_syscall_cpu_ns), which other programs on the
  // machine do not inflate.
  bool cpu_time = false;
};
// Throws InputError on a spec that is not CANONICAL=NAME or names no
// canonical column.
ColumnMap parse_columns(const std::vector<std::string>& specs,
                        const std::vector<std::string>& ignore = {});
// The canonical columns a measured CSV may have, with what they mean.
const std::vector<std::pair<std::string, std::string>>& canonical_columns();

// Reads measured CSVs. Rows with a fault are left out. Missing required
// columns, columns nobody knows, empty or malformed cells are InputErrors
// naming the file (and line) and the column. Points are in order of first
// appearance.
std::vector<Point> read_points(const std::vector<std::filesystem::path>& csvs, Stat stat,
                               const ColumnMap& columns = {});

}  // namespace simloop::measure

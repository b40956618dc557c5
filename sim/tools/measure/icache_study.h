// What `simloop icache` finds: the I-cache model's misses per packet for
// native harness builds (or the symbol maps they left), each put beside the
// misses cachegrind counted for the same build, path and I1 geometry, and
// how well the two agree for each geometry.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/fetch_plan.h"
#include "models/icache.h"
#include "sim/report/table.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

struct ICacheStudyOptions {
  NativeOptions opt;  // the harness's path, with a payload that fits it (not a program's)
  // Harness builds, or the symbol maps they left (LAYOUT.nm, LAYOUT.nm.gz);
  // none: the builds beside simloop (harnesses_or_default).
  std::vector<std::string> builds;
  std::vector<models::CacheGeometry> i1;
  models::FetchMode fetch = models::FetchMode::call_sites;
  // A last level behind I1, and its geometry as given: cachegrind rows are
  // compared only where their ll column says the same.
  std::optional<models::CacheGeometry> ll;
  std::string ll_spec;
  std::string owners;  // the "symbol owner" file
  // A program's profile: without owners given, its loops own its code (as
  // `simloop layout` takes them); given, they must name a user_loop.
  bool owners_given = true;
  std::string profile;  // hot ranges and walks; empty: `hot_fraction` of each symbol
  double hot_fraction = 1.0;
  // Files of `simloop measure cachegrind` rows (a row of a later file
  // replaces one of an earlier for the same layout and geometry); none: no
  // comparison.
  std::vector<std::string> measured;
  double noise = 0.01;  // misses per packet two layouts must differ by to be ordered
  // Each build's warnings (owners it lacks, code never fetched), as they
  // come: a later build may still fail.
  std::function<void(const std::string&)> warn = [](const std::string&) {};
};

struct ICacheStudy {
  // The command a program's profile names: the builds are that program's,
  // each figure per iteration of its loop. "" for a harness's path.
  std::string program;
  std::vector<report::Row> rows;  // one per build and I1 geometry, in that order
  // Where cachegrind counted some build: per I1 geometry, the errors and
  // the rank agreement as a row and as a line of words.
  std::vector<report::Row> summary;
  std::vector<std::string> summary_lines;
  std::string ll_line;  // the last level's errors; empty if no row measured it
};

// Throws config::ConfigError on bad input (a file that cannot be read, a
// line or cell that is wrong, a build with none of the owned symbols), and
// std::runtime_error if the harness's path faults or nm fails on a build.
ICacheStudy icache_study(const ICacheStudyOptions& o);

}  // namespace simloop::measure

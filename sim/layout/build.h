// A real build's code layout, from the files `simloop icache` and `simloop
// layout` read: the build's symbol map (`nm -S --defined-only -n`), which
// code runs each symbol (an owners file), the hot ranges and walks of a
// callgrind profile (`simloop measure profile`), and optionally the build's
// ld.lld link map with a function order to place its sections in, as
// --symbol-ordering-file would. One reader of each, for the commands and for
// an experiment's layout.build alike.
#pragma once

#include <filesystem>
#include <istream>
#include <map>
#include <string>

#include "sim/layout/layout.h"

namespace simloop::models {

// What `simloop measure profile` writes: the hot ranges, and the walks of
// every routine (sim/tools/measure/code_walk.h).
struct CodeProfile {
  HotProfile hot;
  WalkProfile walks;
};

// A profile as text ("offset bytes symbol" lines, hex offsets, '#'
// comments, then "walk"/"run"/"call" lines); throws LayoutError naming
// `what` and the line.
CodeProfile load_profile(std::istream& in, const std::string& what);

// "symbol owner" lines ('#' comments): symbol -> owner, a symbol under
// several owners once for each. Throws LayoutError "WHAT:LINE: ..." for a
// line that is not two words or names no owner of layout_owners().
std::multimap<std::string, std::string> load_owners(std::istream& in, const std::string& what);

// Function names, whitespace-separated ('#' comments), as ld.lld's
// --symbol-ordering-file takes them.
std::vector<std::string> load_order(std::istream& in);

// A whole text file, gzip-compressed or not (the repository keeps large
// maps compressed). Throws LayoutError "FILE: cannot read ..." if it cannot
// be read (a compressed file cut short included) or is over `max_bytes`.
std::string read_text_file(const std::filesystem::path& file, size_t max_bytes = 256u << 20);

// The files of a build, to say which one an error is about.
enum class BuildFile { nm, owners, profile, map, order };

// An error of one of a build's files: its message names the file (and the
// line, where there is one); `file` says which it is.
struct BuildFileError : LayoutError {
  BuildFileError(BuildFile f, const std::string& msg) : LayoutError(msg), file(f) {}
  BuildFile file;
};

struct BuildFiles {
  std::filesystem::path nm;       // required
  std::filesystem::path owners;   // required
  std::filesystem::path profile;  // empty: whole symbols, times hot_fraction
  std::filesystem::path map;      // empty: the build as nm says it is linked
  std::filesystem::path order;    // needs map: the build relinked in this order
  double hot_fraction = 1.0;
};

// The build's linked layout (layout_from_nm): its symbols, moved with their
// sections to where `order` places them if a map and an order are given.
// Throws BuildFileError naming the file at fault (the nm map if no symbol of
// the owners file is in the build).
LinkedLayout load_build(const BuildFiles& files);

}  // namespace simloop::models

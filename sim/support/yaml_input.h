// Reading YAML input that may be hostile: one document, of bounded size,
// depth and alias expansion, each key once, no bytes that are not text.
//
// yaml-cpp keeps an alias as a second reference to its anchor's node, so a
// document can refer to itself (`a: &r {b: *r}`) or grow exponentially
// when walked (`{a: *p, b: *p}` nested forty times), and it keeps the last
// of two equal keys silently. read_yaml_file and parse_yaml_text refuse all
// of these before anyone walks the nodes, so callers may walk them freely.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/support/input_error.h"

namespace simloop::config {

struct YamlLimits {
  size_t max_bytes = size_t{4} << 20;  // the file
  size_t max_nodes = 200000;           // nodes visited, every alias expanded
  int max_depth = 64;                  // maps and lists inside each other
};

// The limits every file is read with.
inline constexpr YamlLimits kYamlLimits{};

// Reads and checks one YAML file. Throws ConfigError "FILE:LINE:COL: what"
// (or "FILE: what" when there is no position: a directory, an unreadable
// file) when the file is not a regular file, is larger than the limit,
// holds bytes that are not UTF-8 text, fails to parse, is empty or holds
// only comments, holds more than one document, repeats a key in a map,
// nests deeper than the limit, refers to itself through an alias, or
// expands past the node limit through aliases.
YAML::Node read_yaml_file(const std::filesystem::path& file, const YamlLimits& limits = {});
// While on, files are read once: read_yaml_file keeps what it parsed and
// gives the same nodes again, not a copy, without reading the file anew.
// For a process (a sweep) that reads the same files for every point and
// forks runs that read them again: every point sees the files as the sweep
// first read them, so a file edited mid-sweep does not change the
// configuration its point hashes stand for. Callers must not change the
// nodes. Off (the default) empties it.
void cache_parsed_yaml(bool on);
// 0 while off; while on, a number of its own for each time it was turned
// on, so that what is kept beside it (where files were found) is kept for
// as long as the files are.
uint64_t parsed_yaml_cache_id();
// The same for text read from elsewhere; `name` stands for the file.
YAML::Node parse_yaml_text(std::string_view text, const std::string& name,
                           const YamlLimits& limits = {});

// Throws ConfigError "NAME:LINE:COL: byte 0xNN is not UTF-8 text: expected
// EXPECTED" at the first byte that is not printable UTF-8 text (tabs and
// line ends are text).
void check_text(std::string_view text, const std::string& name, const std::string& expected);

// Text from input, fit to be quoted in a message: bytes that are not
// printable UTF-8 shown as \xNN, and at most `max_chars` characters kept
// (then "..." and the full length).
std::string printable(std::string_view text, size_t max_chars = 60);

// Where a value came from: a position in a file (1-based), or no file for
// a value given on the command line (--set).
struct YamlLoc {
  std::string file;  // empty: the command line
  int line = 0, col = 0;
};
YamlLoc yaml_loc(const std::string& file, const YAML::Node& n);

// The one shape of every located message: "FILE:LINE:COL: KEY: MESSAGE", or
// "--set KEY: MESSAGE" without a file. Key and message are quoted through
// printable() (a YAML escape can make a control byte).
std::string located(const YamlLoc& loc, const std::string& key, const std::string& msg);

// A node as a message shows what was found: 'text', a map, a list, nothing.
std::string yaml_shape(const YAML::Node& n);

}  // namespace simloop::config

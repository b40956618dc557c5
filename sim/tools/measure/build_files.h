// The files of a real build (nm map, profile, owners, link map, order) as
// `simloop icache` and `simloop layout` read them: gzip-compressed or not,
// as layout.build reads them (models::read_text_file). Each throws
// config::ConfigError naming the file (and the line, where there is one).
#pragma once

#include <map>
#include <set>
#include <string>

namespace simloop::measure {

std::string read_build_file(const std::string& file);

// A build's symbol map: the file as read_build_file reads it, or, where the
// file is a binary (ELF), its map as nm_output makes one (nm's symbols and
// the PLT sections nm does not list).
std::string read_nm_map(const std::string& file);

// A file of "symbol owner" lines ('#' comments): what runs each function of
// a binary, for models::layout_from_nm.
std::multimap<std::string, std::string> read_owners(const std::string& file);

// What runs a program's code: with `owners_given`, the file's (which must
// name the loop as user_loop: an iteration runs nothing else); otherwise
// each of its profiles' `loops` as user_loop, which owns all it calls
// (none: refused, naming `profile`). Throws config::ConfigError.
std::multimap<std::string, std::string> program_owners(const std::set<std::string>& loops,
                                                       const std::string& owners_file,
                                                       bool owners_given,
                                                       const std::string& profile);

}  // namespace simloop::measure

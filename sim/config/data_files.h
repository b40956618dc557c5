// simloop's shipped files as a user reaches them from anywhere: a relative
// path looked up in the working directory first, then in the data directory
// (data_root.h); and the list of what is shipped, by kind, with each file's
// one-line description.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace simloop::config {

// Where a path given by the user was found.
enum class FoundIn {
  as_given,     // an absolute path, or a relative one found nowhere (left for
                // the reader to refuse, naming it as given)
  working_dir,  // relative to the working directory
  data_dir,     // relative to the data directory
};

struct FoundFile {
  std::filesystem::path path;  // the path to open
  FoundIn in = FoundIn::as_given;
};

// A relative path that exists under the working directory is taken from
// there; else one that exists under `data_dir` from there; else (and an
// absolute path always) as given.
FoundFile find_input(const std::filesystem::path& given, const std::filesystem::path& data_dir);
// The same against data_root().
FoundFile find_input(const std::filesystem::path& given);

// "the working directory", "the data directory DIR" or "as given".
std::string found_in_text(const FoundFile& f, const std::filesystem::path& data_dir);

// One shipped file of a kind.
struct ShippedFile {
  std::string kind;  // "experiments", "machines", "stacks" or "layouts"
  std::string name;  // what a user writes: experiments/seed-athlon.yaml, athlon-xp-2700
  std::filesystem::path path;
  std::string description;  // its `description`, else its first comment line
};

// The kinds `simloop list` knows, in the order it prints them.
const std::vector<std::string>& shipped_kinds();

// The shipped files of `kind` under `data_dir`, sorted by name: experiments
// are experiments/*.yaml and experiments/*/*.yaml (not the results/ that
// runs write), named by their path from data_dir; machines, stacks and
// layouts are configs/KIND/*.yaml, named as an experiment names them. An
// unknown kind throws std::invalid_argument.
std::vector<ShippedFile> shipped_files(const std::filesystem::path& data_dir,
                                       const std::string& kind);

// How a machine file's costs were made, and on what host: "measured in
// 2025 on host 1a2b3c4d5e6f (AMD EPYC, 2596 MHz, Linux ...)", "estimated
// (2006)"; "" for a file that says neither. Never throws.
std::string machine_origin(const std::filesystem::path& file);

// A file's one-line description: its top-level `description` if it has one,
// else its first comment line, else "". Never throws: a file that cannot be
// read says so in place of a description.
std::string describe_file(const std::filesystem::path& file);

}  // namespace simloop::config

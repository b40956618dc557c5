// Small text helpers shared by the readers: "did you mean" suggestions and
// the numbers and words of line-oriented tool output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace simloop::support {

// Levenshtein distance: insertions, deletions and substitutions.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, if at most `max_distance` edits away
// (else ""); the first of equally near ones.
std::string closest(std::string_view word, const std::vector<std::string>& candidates,
                    size_t max_distance);

// What a misspelt or shortened name most likely meant, for "did you mean":
// the nearest candidate within a quarter of the word's length in edits (at
// least 2), else the one candidate that holds the word whole; else "".
std::string suggest(std::string_view word, const std::vector<std::string>& candidates);

// 64-bit FNV-1a; `h` continues a hash of text before.
inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
uint64_t fnv1a(std::string_view text, uint64_t h = kFnvOffset);

// `s` as a YAML double-quoted scalar (JSON's string form, which YAML reads):
// whatever a CPU's or a kernel's name holds.
std::string yaml_quoted(std::string_view s);

// The whole of `s` as an unsigned number in `base` (16 takes an optional
// 0x or 0X); false for anything else, empty included.
bool parse_u64(std::string_view s, uint64_t* v, int base = 10);

// `s` with every `from` (not empty) replaced by `to`, left to right.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to);

// The whitespace-separated words of `s`.
std::vector<std::string> words(std::string_view s);

// A place in a text: line and column, 1-based, counted in bytes.
struct TextPos {
  int line = 1, col = 1;
};
// Where the byte at offset `at` of `text` is.
TextPos text_position(std::string_view text, size_t at);
// Where a JSON parser stopped, from the 1-based count of the bytes it read
// (nlohmann::json::parse_error::byte): the last byte it read.
TextPos json_error_position(std::string_view text, size_t bytes_read);

}  // namespace simloop::support

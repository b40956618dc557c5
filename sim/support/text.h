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

// The whole of `s` as an unsigned number in `base` (16 takes an optional
// 0x); false for anything else, empty included.
bool parse_u64(std::string_view s, uint64_t* v, int base = 10);

// The whitespace-separated words of `s`.
std::vector<std::string> words(std::string_view s);

}  // namespace simloop::support

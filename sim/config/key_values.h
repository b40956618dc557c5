// The values a configuration key takes, for a user picking one (shell
// completion); the schema's own answer, beside key_type and closest_key
// (experiment.h).
#pragma once

#include <string>
#include <vector>

namespace simloop::config {

// The values a key takes when it takes one of a few: a choice's, or true
// and false; else none.
std::vector<std::string> key_values(const std::string& path);

}  // namespace simloop::config

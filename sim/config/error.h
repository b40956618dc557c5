// The error of bad input: its message names the file, line and column (or
// --set and the key), the key, and what was expected.
#pragma once

#include <stdexcept>

namespace simloop::config {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace simloop::config

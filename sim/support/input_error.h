// The error of bad input: its message names the file, line and column (or
// --set and the key), the key, and what was expected. Here, below the
// configuration it is named for, because every reader of input throws it.
#pragma once

#include <stdexcept>

namespace simloop::config {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace simloop::config

// Reading an input file of bounded size: the one way simloop takes in a
// whole file it was given (experiments and the YAML they name, result and
// fit files, measured CSVs).
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace simloop::support {

// A file that cannot be read as input; the message names it.
struct InputFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What kind of file a mode is, for messages: "" for an ordinary file, else
// "a directory", "a character device", "a FIFO", "a block device" or "a
// socket" (inputs and outputs name what they refuse alike).
const char* file_kind(unsigned mode);

// Why `path` is not an ordinary file to read, links followed: "" when it
// is one, else "no such file", "is a directory", "is a character device",
// "is a FIFO", "is a block device", "is a socket" or the system's reason.
// Every input is looked at so before it is opened: opening a FIFO with no
// writer, or reading /dev/zero, would never end.
std::string input_problem(const std::filesystem::path& path);

// Reads the file at `path`, named `name` in messages, up to one byte past
// `max_bytes`, whatever the file claims its size is: a text longer than
// `max_bytes` means the file goes on past the limit, which the caller
// words. Throws InputFileError "NAME: cannot read the file[: REASON]",
// "NAME: is a directory; expected WHAT" or "NAME: is not a regular file
// (a FIFO); expected WHAT".
std::string read_input_file(const std::filesystem::path& path, const std::string& name,
                            const std::string& what, size_t max_bytes);

}  // namespace simloop::support

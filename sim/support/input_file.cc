#include "sim/support/input_file.h"

#include <fstream>
#include <system_error>

namespace simloop::support {

namespace fs = std::filesystem;

std::string read_input_file(const fs::path& path, const std::string& name, const std::string& what,
                            size_t max_bytes) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw InputFileError(name + ": cannot read the file: " + (ec ? ec.message() : "no such file"));
  if (fs::is_directory(st)) throw InputFileError(name + ": is a directory; expected " + what);
  if (!fs::is_regular_file(st))
    throw InputFileError(name + ": is not a regular file; expected " + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(name + ": cannot read the file");
  std::string text;
  char buf[65536];
  while (text.size() <= max_bytes && in.read(buf, sizeof buf).gcount() > 0)
    text.append(buf, static_cast<size_t>(in.gcount()));
  if (in.bad()) throw InputFileError(name + ": cannot read the file");
  return text;
}

}  // namespace simloop::support

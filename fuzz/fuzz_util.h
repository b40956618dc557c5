// What the fuzz targets share: a scratch directory for inputs that are
// files, and the error contract every refusal must keep.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <string_view>

namespace simloop::fuzz {

// A directory of this process's own, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string t = (std::filesystem::temp_directory_path() / "simloop-fuzz-XXXXXX").string();
      if (mkdtemp(t.data()) == nullptr) {
        std::perror("mkdtemp");
        std::abort();
      }
      path = t;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// Writes `data` to a file of the scratch directory and returns its path.
inline std::filesystem::path scratch_file(const char* name, const uint8_t* data, size_t size) {
  const auto p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p;
}

[[noreturn]] inline void broken(const std::string& why, std::string_view detail) {
  std::fprintf(stderr, "error contract broken: %s\n---\n%.*s\n---\n", why.c_str(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// A refusal keeps the contract if it is located ("FILE:LINE:COL: ...",
// "FILE: ..." for a file as a whole, or "--set KEY: ...") and short and
// printable: no raw input bytes, no whole file copied into it.
inline void check_refusal(std::string_view msg) {
  if (msg.empty()) broken("an empty message", msg);
  if (msg.size() > 4096) broken("a message of more than 4096 bytes", msg.substr(0, 600));
  for (const char c : msg) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) broken("a control byte in the message", msg);
  }
  static const std::regex located(R"(^(--set .+: |[^:]+:[0-9]+:[0-9]+: |[^:]+: ).+)");
  if (!std::regex_search(msg.begin(), msg.end(), located)) broken("no location", msg);
  if (msg.rfind("--set ", 0) == 0) return;
  // The location is a file that exists (or was named on the command line).
  const std::string file(msg.substr(0, msg.find(':')));
  std::error_code ec;
  if (!std::filesystem::exists(file, ec) && file.find("...") == std::string::npos)
    broken("the location names no file", msg);
}

}  // namespace simloop::fuzz

// Where simloop's shipped files are (configs/, experiments/, plots/): the
// directory SIMLOOP_DATA_DIR names; else share/simloop beside the directory
// of the running binary, as `cmake --install` lays it out (PREFIX/bin/simloop
// and PREFIX/share/simloop); else the source tree the binary was built from.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef SIMLOOP_SOURCE_DIR
#define SIMLOOP_SOURCE_DIR "."
#endif

namespace simloop::config {

inline std::filesystem::path data_root() {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("SIMLOOP_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path share = exe.parent_path().parent_path() / "share" / "simloop";
    if (fs::is_directory(share / "configs", ec)) return share;
  }
  return SIMLOOP_SOURCE_DIR;
}

}  // namespace simloop::config

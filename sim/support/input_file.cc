#include "sim/support/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace simloop::support {

namespace fs = std::filesystem;

namespace {

std::string kind_problem(mode_t mode) {
  const std::string kind = file_kind(mode);
  return kind.empty() ? kind : "is " + kind;
}

// "NAME: is a directory; expected WHAT", or the other kinds as not regular.
[[noreturn]] void refuse(const std::string& name, const std::string& why, const std::string& what) {
  if (why == "is a directory") throw InputFileError(name + ": is a directory; expected " + what);
  if (why == "no such file") throw InputFileError(name + ": cannot read the file: no such file");
  if (why.starts_with("is "))
    throw InputFileError(name + ": is not a regular file (" + why.substr(3) + "); expected " +
                         what);
  throw InputFileError(name + ": cannot read the file: " + why);
}

}  // namespace

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not an ordinary file";
}

std::string input_problem(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "no such file" : std::strerror(errno);
  return kind_problem(st.st_mode);
}

std::string read_input_file(const fs::path& path, const std::string& name, const std::string& what,
                            size_t max_bytes) {
  if (const std::string why = input_problem(path); !why.empty()) refuse(name, why, what);
  // O_NONBLOCK: what was looked at above may have been replaced by a FIFO,
  // whose open must not wait for a writer; fstat below refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputFileError(name + ": cannot read the file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(name, kind_problem(st.st_mode), what);
  }
  std::string text;
  char buf[65536];
  while (text.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw InputFileError(name + ": cannot read the file: " + std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace simloop::support

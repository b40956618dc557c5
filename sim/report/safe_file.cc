#include "sim/report/safe_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sim/report/table.h"
#include "sim/support/input_file.h"

namespace simloop::report {

namespace fs = std::filesystem;

std::string errno_text(int e) {
  return fmt::format("{} ({})", std::strerror(e), e == ENOSPC ? "ENOSPC" : std::to_string(e));
}

int write_fully(int fd, std::string_view text) {
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    off += static_cast<size_t>(w);
  }
  return 0;
}

namespace {

[[noreturn]] void throw_link(const fs::path& path) {
  throw LinkError(
      fmt::format("{}: is a symbolic link; simloop does not write through links", path.string()));
}

// A new file of an unpredictable name `<dir>/<prefix>XXXXXX<suffix>`,
// created O_EXCL (never through a link), mode 0666 less the umask as an
// ordinary open would give. Returns its descriptor and sets `path`.
int make_temp(const fs::path& dir, const std::string& prefix, const std::string& suffix,
              fs::path& path) {
  std::string name = (dir / (prefix + "XXXXXX" + suffix)).string();
  const int fd = ::mkostemps(name.data(), static_cast<int>(suffix.size()), O_CLOEXEC);
  if (fd < 0) return -1;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) {
    // The file stays 0600: private, and still usable.
  }
  path = name;
  return fd;
}

}  // namespace

int own_descriptor(const fs::path& path) {
  const std::string s = path.string();
  if (s == "/dev/stdout") return STDOUT_FILENO;
  if (s == "/dev/stderr") return STDERR_FILENO;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!s.starts_with(prefix)) continue;
    const std::string_view digits = std::string_view(s).substr(prefix.size());
    if (digits.empty() || digits.size() > 6) return -1;
    int fd = 0;
    for (const char c : digits) {
      if (c < '0' || c > '9') return -1;
      fd = fd * 10 + (c - '0');
    }
    return fd;
  }
  return -1;
}

OutputKind output_kind(const fs::path& path) {
  if (const int fd = own_descriptor(path); fd >= 0) {
    if (::fcntl(fd, F_GETFD) < 0)
      throw OutputRefused(fmt::format("{}: descriptor {} is not open", path.string(), fd));
    return OutputKind::stream;
  }
  struct stat st {};
  // Nothing there (or a directory on the way that is missing or not one,
  // which making the directory reports): a new file.
  if (::lstat(path.c_str(), &st) != 0) return OutputKind::file;
  if (S_ISLNK(st.st_mode)) throw_link(path);
  if (S_ISREG(st.st_mode)) return OutputKind::file;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return OutputKind::stream;
  throw OutputRefused(
      fmt::format("{}: is {}; simloop writes only ordinary files, character devices and FIFOs",
                  path.string(), support::file_kind(st.st_mode)));
}

void refuse_link(const fs::path& path) {
  (void)output_kind(path);
}

bool is_stream(const fs::path& path) {
  return output_kind(path) == OutputKind::stream;
}

void require_ordinary(const fs::path& path, std::string_view what) {
  if (output_kind(path) == OutputKind::file) return;
  throw OutputRefused(fmt::format("{}: is not a regular file; {}", path.string(), what));
}

namespace {

// A stream output opened for writing: our own descriptor duplicated, or the
// device or FIFO opened in place (never created, truncated or followed).
int open_stream(const fs::path& path) {
  if (const int own = own_descriptor(path); own >= 0) {
    const int fd = ::fcntl(own, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
      throw WriteError(fmt::format("{}: cannot write: {}", path.string(), errno_text(errno)));
    return fd;
  }
  constexpr int kFlags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
  int fd = ::open(path.c_str(), kFlags | O_NONBLOCK);
  if (fd < 0 && errno == ENXIO) {
    // A FIFO no one reads yet: wait for its reader, as any writer would,
    // and say so rather than seem to hang.
    std::fprintf(stderr, "[info] %s: a FIFO with no reader yet; waiting for one\n", path.c_str());
    fd = ::open(path.c_str(), kFlags);
  }
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP) throw_link(path);
    throw WriteError(fmt::format("{}: cannot write: {}", path.string(), errno_text(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    ::close(fd);  // replaced between the look and the open
    throw OutputRefused(fmt::format("{}: changed while it was opened; not written", path.string()));
  }
  // Writes wait for the reader, as a blocking write does.
  if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

}  // namespace

int open_no_follow(const fs::path& path, int flags, mode_t mode) {
  const auto refuse = [&](mode_t m) {
    throw OutputRefused(
        fmt::format("{}: is {}; expected an ordinary file (simloop keeps and "
                    "reads back what it writes here)",
                    path.string(), support::file_kind(m)));
  };
  if (struct stat st{}; ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISLNK(st.st_mode)) throw_link(path);
    refuse(st.st_mode);
  }
  // O_NONBLOCK: a FIFO put here since the look must not hold the open up
  // (it is refused below); on an ordinary file it changes nothing.
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
  if (fd < 0 && errno == ELOOP) {
    const int e = errno;
    refuse_link(path);  // ELOOP for other reasons (a loop in the directories) is not ours
    errno = e;
  }
  if (struct stat st{}; fd >= 0 && ::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(st.st_mode);
  }
  return fd;
}

AtomicFile::AtomicFile(const fs::path& path) : path_(path) {
  if (output_kind(path) == OutputKind::stream) {
    fd_ = open_stream(path);
    return;
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    // A file where a directory must be is the user's to fix (exit 2); a
    // full disk or a read-only place is a failure to write (exit 4).
    for (fs::path d = dir; !d.empty(); d = d.parent_path()) {
      std::error_code e2;
      const auto st = fs::status(d, e2);
      if (fs::exists(st)) {
        if (!fs::is_directory(st))
          throw OutputRefused(fmt::format("{}: is not a directory; {} cannot be written in it",
                                          d.string(), path.string()));
        break;
      }
      if (d == d.parent_path()) break;
    }
    throw WriteError(
        fmt::format("{}: cannot create the directory: {}", dir.string(), errno_text(ec.value())));
  }
  refuse_link(path);
  // Appended in steps: GCC 12 warns falsely (-Wrestrict) on "." + s + ".".
  std::string prefix = ".";
  prefix += path.filename().string();
  prefix += '.';
  fd_ = make_temp(dir, prefix, ".tmp", tmp_);
  if (fd_ < 0)
    throw WriteError(fmt::format("{}: cannot write: {}", path.string(), errno_text(errno)));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !streamed()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(int e) {
  ::close(fd_);
  fd_ = -1;
  if (!streamed()) ::unlink(tmp_.c_str());
  throw WriteError(fmt::format("{}: cannot write: {}", path_.string(), errno_text(e)));
}

void AtomicFile::write(std::string_view text) {
  if (fd_ < 0) throw WriteError(path_.string() + ": written after it was closed");
  buf_ += text;
  bytes_ += text.size();
  if (buf_.size() >= kBuffer) flush();
}

void AtomicFile::flush() {
  if (const int e = write_fully(fd_, buf_); e != 0) fail(e);
  buf_.clear();
}

void AtomicFile::sync() {
  if (synced_) return;
  if (fd_ < 0) throw WriteError(path_.string() + ": committed after it was closed");
  flush();
  // A device or a pipe has nothing to fsync (EINVAL): closing it is all.
  int e = !streamed() && ::fsync(fd_) != 0 ? errno : 0;
  if (::close(fd_) != 0 && e == 0) e = errno;
  fd_ = -1;
  if (e != 0) {
    if (!streamed()) ::unlink(tmp_.c_str());
    throw WriteError(fmt::format("{}: cannot write: {}", path_.string(), errno_text(e)));
  }
  synced_ = true;
}

void AtomicFile::commit() {
  sync();
  if (streamed()) {
    committed_ = true;
    return;
  }
  // What was looked at when this began may have been replaced since: only
  // nothing or an ordinary file is ever renamed over.
  if (struct stat st{};
      ::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    ::unlink(tmp_.c_str());
    throw OutputRefused(
        fmt::format("{}: is {} now; not replaced", path_.string(), support::file_kind(st.st_mode)));
  }
  // rename() replaces a link planted meanwhile; it never writes through it.
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw WriteError(fmt::format("{}: cannot write: {}", path_.string(), errno_text(e)));
  }
  committed_ = true;
}

void write_files_atomic(const fs::path& dir,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  // The directories this call makes, deepest first, to take back on failure.
  std::vector<fs::path> made;
  for (fs::path d = dir.empty() ? fs::path(".") : dir; !d.empty(); d = d.parent_path()) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(d, ec))) break;
    made.push_back(d);
    if (d == d.parent_path()) break;
  }
  try {
    std::vector<std::unique_ptr<AtomicFile>> staged;
    for (const auto& [name, text] : files) {
      staged.push_back(std::make_unique<AtomicFile>(dir / name));
      staged.back()->write(text);
    }
    for (auto& f : staged) f->sync();
    for (auto& f : staged) f->commit();
  } catch (...) {
    for (const auto& d : made) {
      std::error_code ec;
      fs::remove(d, ec);  // only if empty: nothing of anyone else's goes
    }
    throw;
  }
}

void write_file_atomic(const fs::path& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

bool write_beside(const fs::path& main, std::string_view suffix, std::string_view text) {
  if (is_stream(main)) return false;
  fs::path p = main;
  p += std::string(suffix);
  write_file_atomic(p, text);
  return true;
}

TempFile::TempFile(const fs::path& dir, const std::string& prefix, const std::string& suffix,
                   std::string_view text) {
  const int fd = make_temp(dir, prefix, suffix, path_);
  if (fd < 0)
    throw WriteError(
        fmt::format("{}: cannot create a temporary file: {}", dir.string(), errno_text(errno)));
  int e = write_fully(fd, text);
  if (::close(fd) != 0 && e == 0) e = errno;
  if (e != 0) {
    ::unlink(path_.c_str());
    throw WriteError(fmt::format("{}: cannot write: {}", path_.string(), errno_text(e)));
  }
}

TempFile::~TempFile() {
  ::unlink(path_.c_str());
}

// Declared in table.h; here so that the table code (built into the static
// measurement harness too) does no file output.
void write_rows(const std::filesystem::path& path, const std::vector<Row>& rows) {
  if (path.extension() == ".json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(to_json(r));
    write_file_atomic(path, j.dump(2) + "\n");
  } else {
    write_file_atomic(path, to_csv(rows));
  }
}

}  // namespace simloop::report

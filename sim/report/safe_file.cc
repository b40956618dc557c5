#include "sim/report/safe_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/report/table.h"

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

void refuse_link(const fs::path& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) throw_link(path);
}

int open_no_follow(const fs::path& path, int flags, mode_t mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0 && errno == ELOOP) {
    const int e = errno;
    refuse_link(path);  // ELOOP for other reasons (a loop in the directories) is not ours
    errno = e;
  }
  return fd;
}

AtomicFile::AtomicFile(const fs::path& path) : path_(path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw WriteError(
        fmt::format("{}: cannot create the directory: {}", dir.string(), errno_text(ec.value())));
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
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(int e) {
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
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
  int e = ::fsync(fd_) != 0 ? errno : 0;
  if (::close(fd_) != 0 && e == 0) e = errno;
  fd_ = -1;
  if (e != 0) {
    ::unlink(tmp_.c_str());
    throw WriteError(fmt::format("{}: cannot write: {}", path_.string(), errno_text(e)));
  }
  synced_ = true;
}

void AtomicFile::commit() {
  sync();
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

// Files simloop creates, replaces or appends to. None is ever written
// through a symbolic link: a link where an output goes is refused (a link
// planted there would make simloop write over whatever it points to), every
// open adds O_NOFOLLOW, and a file replaced whole is written to a temporary
// file of an unpredictable name (mkstemp) in its own directory, fsync'ed and
// renamed into place, so a reader never sees half a file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace simloop::report {

// An output path that is a symbolic link: bad input (exit status 2).
struct LinkError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An output that could not be written (a full disk, a read-only or missing
// directory, ...): not bad input, and not a result. The message names the
// file and the system's reason (e.g. "No space left on device (ENOSPC)");
// simloop exits with status kWriteFailedStatus.
struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
inline constexpr int kWriteFailedStatus = 4;

// Throws LinkError naming `path` if it is a symbolic link.
void refuse_link(const std::filesystem::path& path);

// "No space left on device (ENOSPC)": an errno value for a message.
std::string errno_text(int e);
// Writes all of `text` to `fd`; returns 0 or the errno of the failure (a
// write that stores nothing counts as ENOSPC: the file system is full).
int write_fully(int fd, std::string_view text);

// open(2) of `path` with O_NOFOLLOW and O_CLOEXEC added to `flags`. A
// symbolic link throws LinkError; any other failure returns -1 with errno set.
int open_no_follow(const std::filesystem::path& path, int flags, mode_t mode = 0644);

// Writes `text` to `path` whole or not at all (see above); makes the
// directory. Throws LinkError if `path` is a symbolic link, else
// WriteError naming the path and the cause (e.g. ENOSPC).
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// A file written piece by piece and put in place whole, as
// write_file_atomic does in one go: until commit() nothing is at `path`, and
// destroyed uncommitted (an error, an exception) the temporary goes away.
// Writes are buffered, so memory stays bounded however much is written.
// Throws LinkError if `path` is a symbolic link, WriteError on any failure.
class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(std::string_view text);
  void sync();    // flushed and fsync'ed: what is left for commit() is the rename
  void commit();  // flushed, fsync'ed and renamed into place
  uint64_t bytes() const { return bytes_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  void flush();
  [[noreturn]] void fail(int e);
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  std::string buf_;
  uint64_t bytes_ = 0;
  bool committed_ = false;
  bool synced_ = false;
};

// Files that belong together (a calibrated machine, stack and experiment):
// `dir` is made, every file is written and fsync'ed to a temporary first,
// and only then are they renamed into place, so a full disk or a link where
// one goes leaves none of them (and no directory this call made) behind.
// Throws as write_file_atomic does.
void write_files_atomic(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::string>>& files);

// A temporary file of an unpredictable name in `dir` (mkstemps), holding
// `text`, named `<prefix>XXXXXX<suffix>`; removed when this goes away.
class TempFile {
 public:
  TempFile(const std::filesystem::path& dir, const std::string& prefix, const std::string& suffix,
           std::string_view text);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace simloop::report

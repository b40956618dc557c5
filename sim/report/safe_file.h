// Files simloop creates, replaces or appends to. None is ever written
// through a symbolic link: a link where an output goes is refused (a link
// planted there would make simloop write over whatever it points to), every
// open adds O_NOFOLLOW, and a file replaced whole is written to a temporary
// file of an unpredictable name (mkstemp) in its own directory, fsync'ed and
// renamed into place, so a reader never sees half a file.
//
// Only an ordinary file (or nothing) is ever renamed over or removed.
// simloop often runs as root, where a rename over /dev/null would leave the
// system an ordinary file in its place: a character device or a FIFO named
// as an output is written in place, as a stream (so `--trace /dev/stdout |
// gzip` works), and anything else (a directory, a block device, a socket)
// is refused. /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name
// this process's own descriptors (they are links into /proc): they are
// written as streams through the descriptor, whatever it is open on.
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

// An output path simloop will not write: bad input (exit status 2). The
// message names the path and why.
struct OutputRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An output path that is a symbolic link.
struct LinkError : OutputRefused {
  using OutputRefused::OutputRefused;
};

// An output that could not be written (a full disk, a read-only or missing
// directory, ...): not bad input, and not a result. The message names the
// file and the system's reason (e.g. "No space left on device (ENOSPC)");
// simloop exits with status kWriteFailedStatus.
struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
inline constexpr int kWriteFailedStatus = 4;

// How an output is written.
enum class OutputKind {
  file,    // nothing there yet, or an ordinary file: a temporary renamed into place
  stream,  // a character device, a FIFO or one of our descriptors: written in place
};
// What `path` names now, as an output. Throws LinkError for a symbolic link
// (other than the names of our own descriptors above) and OutputRefused for
// a directory, a block device or a socket, naming the path and its kind.
OutputKind output_kind(const std::filesystem::path& path);
// Checks `path` as output_kind does (refused before a run, not after it).
void refuse_link(const std::filesystem::path& path);
// Refuses (OutputRefused) anything at `path` but nothing or an ordinary
// file: for the files simloop reads back (a sweep's results, manifest and
// lock), which a stream cannot be. `what` says why, for the message.
void require_ordinary(const std::filesystem::path& path, std::string_view what);
// The descriptor a name of our own descriptors stands for
// (/dev/stdout -> 1), or -1 for any other path.
int own_descriptor(const std::filesystem::path& path);

// "No space left on device (ENOSPC)": an errno value for a message.
std::string errno_text(int e);
// Writes all of `text` to `fd`; returns 0 or the errno of the failure (a
// write that stores nothing counts as ENOSPC: the file system is full).
int write_fully(int fd, std::string_view text);

// open(2) of an ordinary file at `path` (or a new one, with O_CREAT), with
// O_NOFOLLOW and O_CLOEXEC added to `flags`. A symbolic link throws
// LinkError, anything else that is not an ordinary file OutputRefused
// (never opened, so a FIFO cannot hold it up); any other failure returns -1
// with errno set.
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
  // Written in place (a device, a FIFO, our standard output): there is no
  // temporary, and what was written before a failure has been seen.
  bool streamed() const { return tmp_.empty(); }

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

// True when `path` would be written as a stream: files named after it (a
// `.machine.json` beside a CSV) then have nowhere of their own to go.
bool is_stream(const std::filesystem::path& path);

// Writes `text` to `main` with `suffix` added, a file that goes with the
// output `main` (its `.machine.json`), as write_file_atomic does; when
// `main` is a stream, writes nothing and returns false (the file would sit
// beside a device, in /dev).
bool write_beside(const std::filesystem::path& main, std::string_view suffix,
                  std::string_view text);

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

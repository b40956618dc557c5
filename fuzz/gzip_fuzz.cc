// The reader of whole text files, gzip-compressed or not (read_text_file,
// which reads the build files of layout.build and `simloop layout`). Any
// file is text of at most the bound given, or a LayoutError "FILE: ...";
// a compressed file is held to the bound on the text it expands to, so a
// small file that expands to much more is refused early. The text read is
// the file itself, or what zlib's own inflate makes of a whole gzip member.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "sim/layout/build.h"

namespace {

namespace m = simloop::models;

void check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  std::fprintf(stderr, "gzip_fuzz.cc:%d: check failed\n", line);
  std::abort();
}

constexpr size_t kMax = 4096;

enum class Inflated { whole, bad, too_long, other };

// `in` as one gzip member that ends with the input (whole), a stream zlib
// refuses (bad), one whose text goes past `kMax` bytes (too_long), or
// anything else: more members after it, trailing bytes, a stream cut short
// (other).
Inflated inflate_once(std::string_view in, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) std::abort();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  out->assign(kMax + 1, '\0');
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  int rc = Z_OK;
  while (rc == Z_OK && z.avail_out > 0 && z.avail_in > 0) rc = inflate(&z, Z_NO_FLUSH);
  out->resize(out->size() - z.avail_out);
  inflateEnd(&z);
  if (rc == Z_STREAM_END) return z.avail_in == 0 ? Inflated::whole : Inflated::other;
  if (rc == Z_DATA_ERROR) return Inflated::bad;
  if (out->size() > kMax) return Inflated::too_long;
  return Inflated::other;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // A new file each time: a file cut short and written again is flushed to
  // disk when closed (ext4's auto_da_alloc), which made runs wait on it.
  std::error_code ec;
  std::filesystem::remove(simloop::fuzz::scratch_dir() / "map.txt.gz", ec);
  const auto file = simloop::fuzz::scratch_file("map.txt.gz", data, size);
  const bool gzip = in.size() >= 2 && in[0] == '\x1f' && in[1] == '\x8b';
  std::string text;
  bool read = false;
  try {
    text = m::read_text_file(file, kMax);
    read = true;
  } catch (const m::LayoutError& e) {
    const std::string_view msg = e.what();
    if (msg.rfind(file.string() + ": ", 0) != 0)
      simloop::fuzz::broken("a message that does not name the file", msg);
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  if (read) check(text.size() <= kMax && !text.starts_with("\177ELF"));
  if (!gzip) {
    // Not compressed: the file as it is, unless too long or a binary.
    const bool fits = in.size() <= kMax && !in.starts_with("\177ELF");
    check(read == fits);
    if (read) check(text == in);
    return 0;
  }
  std::string expected;
  switch (inflate_once(in, &expected)) {
    case Inflated::whole:
      check(read == (expected.size() <= kMax && !expected.starts_with("\177ELF")));
      if (read) check(text == expected);
      break;
    case Inflated::bad:
    case Inflated::too_long:
      check(!read);
      break;
    case Inflated::other:
      break;
  }
  return 0;
}

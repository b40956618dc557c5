// The native harness as a program of its own (simloop-harness*, built in
// several code layouts): timed natively, and under valgrind for cachegrind's
// cache counts per packet and callgrind's instruction counts, a profile of
// which code bytes run.
//
// Start-up, argument parsing and the first packets cost the same in any run,
// so every per-packet figure is a difference of two runs that differ only in
// the number of packets: (count(hi) - count(lo)) / (hi - lo).
#pragma once

#include <array>
#include <cstdint>
#include <istream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/icache.h"
#include "sim/layout/build.h"
#include "sim/layout/layout.h"
#include "sim/report/table.h"
#include "sim/tools/measure/code_walk.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

// "SIZE,ASSOC,LINE" as valgrind's --I1/--D1/--LL take it; throws
// std::invalid_argument naming what is wrong.
models::CacheGeometry parse_geometry(const std::string& spec);
std::string geometry_spec(const models::CacheGeometry& g);

// The totals of a cachegrind output file (--cachegrind-out-file): event name
// -> count, from its "events:" and "summary:" lines. Throws
// std::runtime_error naming `what` and the line if either is missing or
// malformed.
std::map<std::string, uint64_t> parse_cachegrind(std::istream& in, const std::string& what);

// Instructions executed at each address, from a callgrind output file written
// with --dump-instr=yes --dump-line=no --compress-pos=no. Call lines (the
// inclusive cost of a call, after "calls=") are not counted. Throws
// std::runtime_error naming `what` and the line on a malformed cost line.
std::map<uint64_t, uint64_t> parse_callgrind_instr(std::istream& in, const std::string& what);

// Which bytes of each function run per packet: the instructions executed at
// least `min_per_packet` times per packet on average (from the difference of
// two instruction-count maps over `packets` packets), grouped into ranges of
// their function (instructions less than 16 bytes apart join one range). A
// range ends where its last instruction does, given the instruction starts
// (parse_objdump_starts); without them, one byte after its start.
// Addresses outside every text symbol are skipped.
models::HotProfile hot_profile(const std::map<uint64_t, uint64_t>& lo,
                               const std::map<uint64_t, uint64_t>& hi, int64_t packets,
                               const std::vector<models::NmSymbol>& symbols,
                               double min_per_packet = 0.5,
                               const std::vector<uint64_t>* instruction_starts = nullptr);

// What `simloop measure profile` writes (sim/layout/build.h).
using models::CodeProfile;

// A profile as text ("offset bytes symbol" lines, hex offsets, '#' comments,
// then the walks) and back; load throws models::LayoutError naming `what`
// and the line. load_hot_profile keeps only the hot ranges.
std::string format_hot_profile(const models::HotProfile& p, const std::string& header);
std::string format_profile(const CodeProfile& p, const std::string& header);
using models::load_profile;
models::HotProfile load_hot_profile(std::istream& in, const std::string& what);

struct HarnessSpec {
  std::string path;   // a simloop-harness build, or the program of `command`
  NativeOptions opt;  // payload and path (packets and warm-up are set per run)
  int64_t packets_lo = 2000, packets_hi = 12000;
  // A program of the user's instead of a harness: its command line, with
  // kCountWord in the words where its count of iterations (its "packets")
  // goes; `path` is its first word and `opt` is not used.
  std::vector<std::string> command;
};
inline constexpr std::string_view kCountWord = "{n}";
// A program's profile says so in its head: "# program: COMMAND LINE".
inline constexpr std::string_view kProgramHead = "program: ";
// The command line a program's profile names in its head; "" for a
// harness's profile (or one made by hand).
std::string profiled_program(const std::string& profile_text);
// A program's loops: the functions of its profile that run every iteration
// without being called each time.
std::set<std::string> program_loops(const CodeProfile& p);
// A program's command, checked: its first word an existing file, and the
// count's placeholder in some word (or else two runs would be the same).
// Throws config::ConfigError saying what is wrong.
HarnessSpec program_spec(const std::vector<std::string>& command, int64_t lo, int64_t hi);
// The command line as one line, for headers and messages.
std::string command_line(const std::vector<std::string>& command);
// The harness's layout name: "base" for simloop-harness, NAME for
// simloop-harness-NAME, else the file name.
std::string harness_layout_name(const std::string& path);

// Where harness builds are looked for, for the simloop program at `exe`, in
// order: its own directory (the build tree builds them beside it), then
// PREFIX/LIBEXECDIR/simloop (`cmake --install` puts simloop in PREFIX/bin and
// its harness builds there, off PATH).
std::vector<std::string> harness_dirs(const std::string& exe);
// The harness builds (simloop-harness, simloop-harness-NAME) in the first of
// those directories that holds any, the base build first; none: empty.
std::vector<std::string> find_harnesses(const std::string& exe);
// `given`, or if it is empty the harness builds found for this simloop
// (find_harnesses of /proc/self/exe). Throws config::ConfigError saying
// where they were looked for if there are none.
std::vector<std::string> harnesses_or_default(const std::vector<std::string>& given);

// `nm -S --defined-only -n` of `binary`, as text, and a line for each PLT
// section (".plt", ".iplt", ...; from `objdump -h`), which nm does not list
// but code calls through. Throws std::runtime_error if nm or objdump fails.
std::string nm_output(const std::string& binary);

// The start address of every instruction of `binary` (objdump -d).
std::vector<uint64_t> instruction_starts(const std::string& binary);

// One native run of the harness program (`packets` timed): its CSV rows, with
// the build's layout name and path added. Throws std::runtime_error if it
// fails or prints no row.
std::vector<report::Row> run_harness_native(const HarnessSpec& h, int64_t packets);

struct CachegrindResult {
  models::CacheGeometry i1, d1, ll;
  double instructions = 0, i1_misses = 0, d1_misses = 0, ll_misses = 0;  // per packet
  double ll_i_misses = 0;  // of ll_misses, those of instruction fetches
};
// Two cachegrind runs. Throws std::runtime_error (with valgrind's last
// words) if valgrind is missing or a run fails.
CachegrindResult run_cachegrind(const HarnessSpec& h, const models::CacheGeometry& i1,
                                const models::CacheGeometry& d1, const models::CacheGeometry& ll);
report::Row cachegrind_row(const HarnessSpec& h, const CachegrindResult& r);
// The path's fields beyond payload, dest, align and copy, as a row of
// cachegrind names them where a run sets them (native rows' names: misalign
// is the sockaddr's): (column, path field). A row without the column ran at
// the field's default.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 3>
    kCachegrindPathColumns = {{{"misalign", "sockaddr_misalign"},
                               {"service", "service"},
                               {"buffer_misalign", "buffer_misalign"}}};

// Two callgrind runs, made into a profile against the harness's own symbols.
// `outside` (if given): the share of the instructions a packet runs that
// lie outside the binary's code symbols (a shared library's, for a
// program linked dynamically), which the profile leaves out.
CodeProfile run_profile(const HarnessSpec& h, double min_per_packet = 0.5,
                        double* outside = nullptr);

}  // namespace simloop::measure

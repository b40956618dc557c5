// Code layout: which addresses the hot code of each stack function occupies.
//
// Which bytes of code run for a packet is a property of the code and the path
// taken; which cache sets they fall in is a property of the layout. A Layout
// keeps the first (objects, their hot functions, each function's hot byte
// count) apart from the second (link order, alignment, padding), so the same
// hot path can be re-linked under any transform and fed to an I-cache.
//
// YAML format (configs/layouts/*.yaml, see docs/layouts.md):
//
//   name: example                 # optional; defaults to the file's stem
//   text_base: 0xc0400000         # address of the first object
//   function_align: 0             # optional; 0 keeps offsets, else a power of two
//   objects:                      # in link order
//     - name: locore.o            # unique within the layout
//       size: 8192                # bytes of .text
//       align: 16                 # optional (16); a power of two
//       functions:                # optional; the functions that matter
//         - {symbol: Xint0x80_syscall, owner: syscall_entry, offset: 0, size: 256, hot: 160}
//
// Integers are decimal or 0x-prefixed hex. A function's hot code is its first
// `hot` bytes (default: its whole size); `owner` names what runs it: a probe
// stack function's name (its net::FnTable, e.g. "ip_output"), one of "syscall_entry",
// "syscall_exit", "user_loop", or a helper that runs at a probe event of its
// own: "header_access" (each header load or store), "cksum", "mbuf_alloc",
// "mbuf_free", "copy" (each bulk copy). A function without an owner
// is never executed but still takes part in function alignment. Functions of
// one object must not overlap and must lie inside it; they may be listed in
// any order, and the order they are listed in the file is the order in which
// an owner's ranges run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace simloop::models {

struct LayoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every valid owner, by index: the names of every stack's functions
// (stacks::fn_tables(), each name once, in table order), then the code around
// them (models::Code, code.h). A layout may name functions of any stack; a
// run uses those of its own (code.h, owner_slot()).
const std::vector<std::string>& layout_owners();
// Whether owner `i` of layout_owners() is a stack's function.
bool is_stack_fn_owner(size_t i);
bool is_layout_owner(std::string_view owner);

// A call from a function's hot code to the code another owner's event runs:
// the caller's hot bytes before `at` run first, then the callee, then the
// rest of the caller.
struct CallSite {
  uint64_t at = 0;    // offset in the function, at most its hot bytes
  std::string owner;  // whose event comes here (a layout owner)
  bool operator==(const CallSite&) const = default;
};

struct HotFunction {
  std::string symbol;
  std::string owner;  // empty: never executed
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t hot_bytes = 0;
  // Execution order among an owner's ranges: by `order`, then by `seq` (the
  // file order when loaded); ties run in link order.
  int seq = 0;
  int order = 0;
  std::vector<CallSite> calls;  // by `at`
};

struct ObjectFile {
  std::string name;
  uint64_t size = 0;
  uint64_t align = 16;
  std::vector<HotFunction> functions;
};

struct Layout {
  std::string name;
  uint64_t text_base = 0;
  uint64_t function_align = 0;  // 0: keep offsets
  std::vector<ObjectFile> objects;
};

struct HotRange {
  uint64_t start;
  uint64_t bytes;
  std::string symbol;
  bool operator==(const HotRange&) const = default;
};

// One step of the code a routine runs: a range of bytes, or a call site
// where the event of another owner comes.
struct CodeStep {
  uint64_t start = 0, bytes = 0;  // a range (call < 0)
  int call = -1;                  // a call site: the owner's index in layout_owners()
  int callee = -1;                // the routine run there (index in LinkedLayout::routines);
                                  // -1: the owner's entry routine
  bool operator==(const CodeStep&) const = default;
};

// What one run of a piece of code fetches, in order. A routine built from an
// execution profile is `complete`: it holds every byte its code runs, helpers
// included, so the helpers' own events fetch nothing while it runs.
struct Routine {
  std::string owner, symbol;
  std::vector<CodeStep> steps;
  bool complete = false;
  bool operator==(const Routine&) const = default;
};

// After linking: absolute addresses.
struct LinkedLayout {
  // owner -> hot ranges, in execution order.
  std::map<std::string, std::vector<HotRange>> by_owner;
  // object -> [start, end).
  std::map<std::string, std::pair<uint64_t, uint64_t>> objects;
  // Owners whose code has call sites (or comes from a profile of walks): the
  // routine their event runs. Other owners run their by_owner ranges.
  std::vector<Routine> routines;
  std::map<std::string, int> entry;  // owner -> index in routines
  // Functions of this build a profile says run, that no owner's event
  // fetches (no owner, and no walk of an owned function calls them), with
  // their hot bytes, most first: code the prediction leaves out.
  std::vector<std::pair<std::string, uint64_t>> unfetched;
  // Functions a profile says run that this build's symbol map does not
  // have, with their hot bytes, most first: a map from plain `nm` lacks the
  // PLT (.plt, .iplt), a profile of other objects names other functions.
  std::vector<std::pair<std::string, uint64_t>> absent;
  // What is odd in the build's files, for the log (each names its file):
  // overlapping code, one name at two addresses, order names not in it.
  std::vector<std::string> notes;
};

// "" if every function the profile says runs is fetched; else one sentence
// naming what the prediction leaves out (the first few, and their bytes),
// for a warning about `what` (a build or a file).
std::string unfetched_warning(const LinkedLayout& linked, const std::string& what);
// The same for `absent`.
std::string absent_warning(const LinkedLayout& linked, const std::string& what);

// The hot code in one cache line: a symbol and the owner that runs it.
struct LineCode {
  std::string symbol, owner;
  bool operator==(const LineCode&) const = default;
};
// Cache line (address / line_bytes) -> the hot code in it, each (symbol,
// owner) once, by owner then execution order. The one lookup of who holds a
// line, for a run's I-cache detail and for simloop layout alike: both name
// only the lines a run fetched, so code that never runs is never named.
std::map<uint64_t, std::vector<LineCode>> code_by_line(const LinkedLayout& linked,
                                                       uint64_t line_bytes);

// Throws LayoutError "file:line:col: key: message" for YAML syntax errors,
// unknown keys, wrong types, bad alignments, duplicate objects, functions
// outside their object or overlapping, and unknown owners.
Layout load_layout_yaml(const std::filesystem::path& file);

// Checks what load_layout_yaml checks, for layouts built in code; throws
// LayoutError naming the object and function.
void validate(const Layout& layout);

// Objects in order from text_base, each start aligned up to its align. With
// function_align > 0 every function start within an object is aligned up to
// it, shifting later functions and growing the object as needed; the object
// itself is then aligned to at least function_align. Validates first.
LinkedLayout link(const Layout& layout);

// Two linked layouts as one address space (a kernel and a user program);
// throws LayoutError if an object name repeats or objects overlap.
LinkedLayout merge(const LinkedLayout& a, const LinkedLayout& b);

// Transforms return a new Layout, so they can be swept. Unknown object names
// and impossible requests throw LayoutError.
//
// Inserts `bytes` never-executed bytes inside `object` at `at_offset`
// (default: its end); functions at or after that offset move by `bytes`. An
// offset strictly inside a function is refused.
Layout pad_object(const Layout& layout, const std::string& object, uint64_t bytes,
                  std::optional<uint64_t> at_offset = {});
Layout move_to_end(const Layout& layout, const std::string& object);
// Sets the function alignment (0 or a power of two) used by link().
Layout align_functions(const Layout& layout, uint64_t align);
// The named objects first, in this order; the rest after, in their old order.
Layout reorder(const Layout& layout, const std::vector<std::string>& order);

// One symbol of `nm -S --defined-only -n` output.
struct NmSymbol {
  uint64_t addr = 0;
  uint64_t size = 0;  // a symbol printed without a size extends to the next one's address
  bool text = false;  // code: types T, t, W, w, i
  std::string name;
};
// In address order. Throws LayoutError "WHAT:LINE: ..." for a line that is
// not "address [size] type name", or whose symbol runs past 2^64.
std::vector<NmSymbol> parse_nm(std::istream& nm_output, const std::string& what = "nm output");
// What is odd about the symbols of a build that `names` (the owned and
// profiled functions) rely on, for the log: code that overlaps other code
// without being its alias, and one name at two addresses. (A real build
// has both among code nothing names: constant-propagated clones of one
// static function, linker-made symbols.)
std::vector<std::string> nm_warnings(const std::vector<NmSymbol>& symbols,
                                     const std::set<std::string>& names);

// Which bytes of each function run for a packet, relative to the function's
// start: symbol -> [offset, offset + bytes) ranges in address order. It comes
// from an execution profile of one build and holds for every build of the
// same objects, whatever their link addresses.
using HotProfile = std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>>;

// What one call of a routine runs, in execution order, from an execution
// profile: runs of instructions and the calls between them, relative to the
// routine's symbol. Like HotProfile it holds for every build of the same
// objects.
struct WalkItem {
  uint64_t offset = 0, bytes = 0;  // a run of instructions (target empty)
  std::string target;              // or a call: the routine at target + target_offset
  uint64_t target_offset = 0;
  bool operator==(const WalkItem&) const = default;
};
struct Walk {
  // Calls per packet; 0: the routine runs throughout (a loop around the
  // packets), and the walk is one packet's turn of it, as it runs.
  double calls_per_packet = 0;
  std::vector<WalkItem> items;
  // A routine called several times a packet along different paths: what
  // the first, second, ... call of a packet runs (empty: each runs `items`).
  std::vector<std::vector<WalkItem>> per_call;
  bool operator==(const Walk&) const = default;
};
// (symbol, entry offset) -> walk.
using WalkProfile = std::map<std::pair<std::string, uint64_t>, Walk>;

// From a real binary's `nm -S --defined-only -n` output. `owners` maps symbol
// name -> owner; other symbols are ignored, as are non-text symbols. Without
// a profile each matched symbol becomes one hot range of its size times
// hot_fraction (at least one byte); with one, its hot ranges are the
// profile's (none if the profile does not list it). Ranges of an owner are in
// address order. `objects` is left empty: nm does not say which object a
// symbol came from.
//
// With walks, each owner whose symbols have walks also gets an entry routine
// (LinkedLayout::entry): the walk of its symbol that no other of its symbols
// calls, with every callee expanded in place except the symbols of another
// stack function (is_stack_fn_owner()), which become call sites of
// that owner's event. Such routines are complete (Routine::complete).
LinkedLayout layout_from_nm(std::istream& nm_output,
                            const std::multimap<std::string, std::string>& owners,
                            double hot_fraction = 1.0, const HotProfile* profile = nullptr,
                            const WalkProfile* walks = nullptr);

// Distinct hot bytes: the union of every owner's ranges (a range shared by
// several owners counts once).
uint64_t total_hot_bytes(const LinkedLayout& linked);

}  // namespace simloop::models

// Walks: what one call of each routine of a program runs, in order, rebuilt
// from callgrind's per-instruction counts, jumps and calls
// (--dump-instr=yes --collect-jumps=yes). They let the I-cache model fetch a
// caller's code up to a call, the callee, then the rest of the caller, each
// range as often as it runs (models/fetch_plan.h).
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/layout/layout.h"

namespace simloop::measure {

// A callgrind output file's flow, by address.
struct CallgrindFlow {
  std::map<uint64_t, uint64_t> instr;                       // address -> executions
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> jumps;  // (from, to) -> times taken
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> calls;  // (call site, target) -> calls
  uint64_t elsewhere = 0;  // instructions run in other objects than `object` (below)
};

// Reads a callgrind output file written with --dump-instr=yes --dump-line=no
// --compress-pos=no (jumps need --collect-jumps=yes). With `object` (a
// file's path), only the costs, jumps and calls of that object (and of
// valgrind's "???", code of no file such as PLT stubs) are kept:
// callgrind gives each object's addresses from its own base, so a shared
// library's can fall on a position-independent program's own; the
// instructions of the others are counted in `elsewhere`. Throws
// std::runtime_error naming `what` and the line on a malformed line.
CallgrindFlow parse_callgrind_flow(std::istream& in, const std::string& what,
                                   const std::string& object = "");

// Instruction start addresses from `objdump -d --no-show-raw-insn -w`, in
// order: an instruction's length is the distance to the next start.
std::vector<uint64_t> parse_objdump_starts(std::istream& objdump_output);

// The walks of every routine that runs per packet, from two flows that
// differ by `packets` packets. A routine starts at a call target (a
// function, or an entry of a PLT section, which `symbols` must then hold as
// a symbol of its own); its walk follows, from the entry, the jump or
// fall-through with the most of its per-call count left until none has half
// a call's worth, so loops unroll as often as they run. Instructions that run
// at least `min_per_packet` times a packet but not on the walk are appended
// in address order. A function that is never called per packet but runs
// (the loop around the packets) gets one packet's turn of it, from its
// first instruction that runs once a packet along the jumps taken
// (calls_per_packet 0). A routine called K times a packet along different
// paths also gets a walk for each call (Walk::per_call), the longest first.
models::WalkProfile walk_profile(const CallgrindFlow& lo, const CallgrindFlow& hi, int64_t packets,
                                 const std::vector<models::NmSymbol>& symbols,
                                 const std::vector<uint64_t>& instruction_starts,
                                 double min_per_packet = 0.5);

// Walks as profile text ("walk SYMBOL ENTRY CALLS_PER_PACKET", then "run
// OFFSET BYTES" and "call OFFSET TARGET TARGET_OFFSET" lines, hex offsets).
std::string format_walks(const models::WalkProfile& walks);

}  // namespace simloop::measure

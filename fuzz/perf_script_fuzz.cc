// The reader of `perf script -F tid,time,ip,sym --ns` output that `measure
// kernel --split` charges to the Linux stack's functions (add_perf_samples),
// with the shipped symbol table and a few timed slices. Any text is read or
// refused with a std::runtime_error "perf script:LINE: ..."; a text read
// has each of its samples counted once: in a slice's group, outside every
// slice, or without a call chain.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "sim/tools/measure/kernel_split.h"

namespace {

namespace ms = simloop::measure;

void check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  std::fprintf(stderr, "perf_script_fuzz.cc:%d: check failed\n", line);
  std::abort();
}

const ms::SymbolMap& symbols() {
  static const ms::SymbolMap map =
      ms::load_symbol_map(SIMLOOP_SOURCE_DIR "/configs/stacks/linux-perf-symbols.yaml");
  return map;
}

// Slices of 100 s + 0..1000 ns, +2000..3000 ns, and 200..300 s.
const std::vector<ms::KernelWindow>& windows() {
  static const std::vector<ms::KernelWindow> w = {
      {0, 18, ms::KernelPath::unconnected, 100'000'000'000, 100'000'001'000, 10, {}},
      {0, 18, ms::KernelPath::connected, 100'000'002'000, 100'000'003'000, 5, {}},
      {1, 1024, ms::KernelPath::unconnected, 200'000'000'000, 300'000'000'000, 7, {}},
  };
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ms::KernelSplit split;
  split.period_ns = 100'000;
  try {
    std::istringstream in(text);
    ms::add_perf_samples(in, "perf script", windows(), symbols(), split);
  } catch (const std::runtime_error& e) {
    // (A std::range_error or std::overflow_error is one too: the message
    // tells the reader's own refusal from those.)
    const std::string_view msg = e.what();
    if (msg.rfind("perf script:", 0) != 0)
      simloop::fuzz::broken("a refusal that does not name the script's line", msg);
    // The line is quoted printable and cut short.
    if (msg.size() > 4096) simloop::fuzz::broken("a message of more than 4096 bytes", msg);
    for (const char c : msg)
      if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f')
        simloop::fuzz::broken("a control byte in the message", msg);
    return 0;
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a std::runtime_error", e.what());
  }
  // Every sample line (one not starting with a tab) is counted once.
  int64_t samples = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '\t') ++samples;
  int64_t counted = split.outside_samples + split.unresolved_samples;
  int64_t packets = 0;
  for (const auto& [key, g] : split.groups) {
    int64_t charged = 0;
    for (const auto& [what, n] : g.charged) {
      check(n > 0);
      charged += n;
    }
    check(charged == g.samples && g.hypervisor_samples <= g.samples);
    counted += g.samples;
    packets += g.packets;
  }
  check(counted == samples);
  check(split.groups.size() == 3 && packets == 22);
  // Every charge is in a row.
  int64_t in_rows = 0;
  for (const auto& r : ms::split_rows(split, ms::MachineInfo{}, 0))
    in_rows += std::get<int64_t>(*r.find("samples"));
  check(in_rows + split.outside_samples + split.unresolved_samples == samples);
  return 0;
}

// simloop-harness: the native measured run as a small program of its own.
//
// It holds only the functional stack and the sender loop, linked statically
// and in a link order that CMake fixes, so that its code layout can be
// shifted on purpose (a padding object between two object files) and read
// back with nm. `simloop measure cachegrind` runs it under valgrind; the
// I-cache model is pointed at its symbol map.
#include <CLI/CLI.hpp>
#include <iostream>

#include "sim/tools/measure/native.h"

int main(int argc, char** argv) {
  using namespace simloop;
  measure::NativeOptions opt;
  opt.warmup = 1000;
  std::string dest = "loopback", align = "none", copy = "m_copy";
  CLI::App app{
      "The native harness: sends PACKETS datagrams through the real stack and prints one CSV "
      "row (the schema of `simloop measure native`). Used by `simloop measure cachegrind`."};
  app.add_option("-l,--payload", opt.payload, "UDP payload bytes")
      ->check(CLI::Range(0, net::kMaxUdpPayload))
      ->capture_default_str();
  app.add_option("-n,--packets", opt.packets, "Timed packets")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--warmup", opt.warmup, "Untimed packets first")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--dest", dest, "loopback, broadcast, wire or self")
      ->check(CLI::IsMember(workload::dest_names()))
      ->capture_default_str();
  app.add_option("--align", align, "none, copy-down, strict or copy-down-unsafe")
      ->check(CLI::IsMember(net::align_policy_names()))
      ->capture_default_str();
  app.add_option("--copy", copy, "Simplex loop copy: m_copy or m_dup")
      ->check(CLI::IsMember(net::loop_copy_names()))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  opt.dest = *measure::parse_dest(dest);
  opt.stack.align = *net::parse_align_policy(align);
  opt.stack.loop_copy = *net::parse_loop_copy(copy);
  try {
    const auto results = measure::run_native(opt);
    std::vector<report::Row> rows;
    rows.reserve(results.size());
    for (const auto& r : results) rows.push_back(measure::native_row(opt, r));
    std::cout << report::to_csv(rows);
    return results.empty() || !results.front().fault.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "simloop-harness: " << e.what() << "\n";
    return 1;
  }
}

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
#include "sim/tools/measure/path_options.h"

int main(int argc, char** argv) {
  using namespace simloop;
  measure::NativeOptions opt;
  opt.warmup = 1000;
  CLI::App app{
      "The native harness: sends PACKETS datagrams through the real stack and prints one CSV "
      "row (the schema of `simloop measure native`). Used by `simloop measure cachegrind`."};
  app.add_option("-l,--payload", opt.payload, "UDP payload bytes")
      ->check(CLI::Range(0, workload::Path::kMaxPayload))
      ->capture_default_str();
  app.add_option("-n,--packets", opt.packets, "Timed packets")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--warmup", opt.warmup, "Untimed packets first")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  measure::add_path_options(&app, opt.path);
  CLI11_PARSE(app, argc, argv);

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

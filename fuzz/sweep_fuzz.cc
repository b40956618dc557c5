// The sweep expander: any experiment text is a list of points or a located
// refusal; every point's settings are valid values of swept keys.
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz_util.h"
#include "sim/config/experiment.h"
#include "sim/tools/sweep/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simloop;
  const auto file = fuzz::scratch_file("sweep.yaml", data, size);
  try {
    const sweep::Spec spec = sweep::load_spec(file);
    if (spec.size() == 0) fuzz::broken("a sweep of no points", "");
    // The first and last points only: a sweep may have ten million.
    for (size_t j = 0; j < spec.size() && j < 500; ++j) {
      const size_t i = j % 2 == 0 ? j / 2 : spec.size() - 1 - j / 2;
      const auto p = spec.point(i);
      if (p.index != i) fuzz::broken("a point made at another index", std::to_string(i));
      if (p.settings.size() != spec.keys.size()) fuzz::broken("a point lacks a key", "");
      for (const auto& s : p.settings) {
        try {
          config::check_value(s.key, s.value, file.string(), 1, 1);
        } catch (const config::ConfigError& e) {
          fuzz::broken("a point's value is refused by the loader", e.what());
        }
      }
      (void)sweep::run_seed(1, p, spec.repeats - 1);
    }
  } catch (const config::ConfigError& e) {
    fuzz::check_refusal(e.what());
  } catch (const std::exception& e) {
    fuzz::broken("an exception that is not a ConfigError", e.what());
  }
  return 0;
}

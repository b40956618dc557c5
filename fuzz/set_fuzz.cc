// --set parsing: each line of the input is one `--set` argument, applied to
// the default experiment. Any list is a valid experiment or a located
// refusal.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "sim/config/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simloop;
  static const std::string base = SIMLOOP_SOURCE_DIR "/experiments/seed-athlon.yaml";
  std::vector<std::string> sets;
  std::string line;
  for (size_t i = 0; i < size && sets.size() < 32; ++i) {
    if (data[i] == '\n') {
      sets.push_back(line);
      line.clear();
    } else {
      line += static_cast<char>(data[i]);
    }
  }
  if (!line.empty() && sets.size() < 32) sets.push_back(line);
  try {
    const config::Experiment x = config::load_experiment(base, sets);
    (void)config::to_json(x).dump();
  } catch (const config::ConfigError& e) {
    fuzz::check_refusal(e.what());
  } catch (const std::exception& e) {
    fuzz::broken("an exception that is not a ConfigError", e.what());
  }
  // The helpers the sweep validates values with, on the same text.
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    const std::string key = s.substr(0, eq);
    (void)config::key_type(key);
    (void)config::closest_key(key);
    if (eq == std::string::npos) continue;
    try {
      config::check_value(key, s.substr(eq + 1), base, 1, 1);
    } catch (const config::ConfigError& e) {
      fuzz::check_refusal(e.what());
    } catch (const std::exception& e) {
      fuzz::broken("check_value: an exception that is not a ConfigError", e.what());
    }
  }
  return 0;
}

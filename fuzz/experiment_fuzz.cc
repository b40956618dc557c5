// The experiment loader: any text is a validated experiment or a located
// refusal (config::ConfigError); nothing else may come out of it, and it
// must not crash, hang or grow without bound (ASan's limits and libFuzzer's
// -rss_limit_mb and -timeout say what bound).
#include <cstdint>
#include <exception>

#include "fuzz_util.h"
#include "sim/config/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simloop;
  const auto file = fuzz::scratch_file("experiment.yaml", data, size);
  try {
    const config::Experiment x = config::load_experiment(file);
    // What check prints of a valid experiment.
    (void)config::to_json(x).dump();
  } catch (const config::ConfigError& e) {
    fuzz::check_refusal(e.what());
  } catch (const std::exception& e) {
    fuzz::broken("an exception that is not a ConfigError", e.what());
  }
  return 0;
}

// Why two runs differ: the difference in kpps and cycles per packet of two
// result documents (what `simloop run` writes as <name>.json), split by
// stage, by function and kind of cost, with the I-cache sets that gained or
// lost misses. Every split sums to the total difference.
//
// kpps is clock / cycles per packet. With clocks hA, hB and cycles per
// packet cA, cB, the rate moves by
//   (hB - hA) / cB                       (the clock, if it differs)
//   - hA * dc_i / (cA * cB)  for each part i of cB - cA,
// which add up to kppsB - kppsA exactly, in any order.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace simloop::engine {

struct ExplainError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `a` and `b` are result documents; `label_*` name them in the output.
// Throws ExplainError naming the side and the missing or bad field.
nlohmann::json explain(const nlohmann::json& a, const nlohmann::json& b, const std::string& label_a,
                       const std::string& label_b);

// One screen: the `top` largest parts of each split, the rest summed.
std::string explain_table(const nlohmann::json& e, size_t top = 10);

}  // namespace simloop::engine

#include "models/branch_targets.h"

#include <bit>
#include <stdexcept>
#include <string>

namespace simloop::models {

BranchPredictor::BranchPredictor(int btb_entries, int ras_depth) {
  if (btb_entries < 1 || !std::has_single_bit(static_cast<unsigned>(btb_entries)))
    throw std::invalid_argument("branch target buffer entries must be a power of two, got " +
                                std::to_string(btb_entries));
  if (ras_depth < 1)
    throw std::invalid_argument("the return stack holds at least one entry, got " +
                                std::to_string(ras_depth));
  btb_.assign(static_cast<size_t>(btb_entries), 0);
  ras_depth_ = static_cast<size_t>(ras_depth);
  frames_.reserve(64);
  bits_ = static_cast<uint32_t>(std::countr_zero(static_cast<unsigned>(btb_entries)));
}

bool BranchPredictor::call(uint32_t caller, uint32_t callee) {
  ++branches_;
  // The return stack wraps: this call's entry takes that of the call
  // ras_depth levels out.
  if (frames_.size() >= ras_depth_) frames_[frames_.size() - ras_depth_].overwritten = true;
  frames_.push_back({callee, false});
  // A site's index: the pair hashed (Fibonacci: the product's top bits), so
  // that a buffer smaller than the call graph has conflicts that depend on
  // which sites there are, and one much larger has next to none.
  const uint32_t site = caller * (kOutside + 1) + callee;
  const uint32_t index = bits_ == 0 ? 0 : (site * 2654435761u) >> (32 - bits_);
  if (btb_[index] == site + 1) return true;
  btb_[index] = site + 1;
  ++mispredicts_;
  return false;
}

bool BranchPredictor::ret() {
  if (frames_.empty()) return true;  // a return the probe never saw called
  ++branches_;
  const bool held = !frames_.back().overwritten;
  frames_.pop_back();
  if (held) return true;
  ++mispredicts_;
  return false;
}

}  // namespace simloop::models

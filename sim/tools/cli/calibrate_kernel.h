// simloop calibrate --source STACK, for a stack measured on this machine's
// kernel (its kind's kMeasured is Measured::kernel: the Linux stack): its
// costs, function by function, from the rows of measure kernel --split.
#pragma once

#include <string>
#include <vector>

namespace simloop::cli {

struct KernelCalibrateArgs {
  std::string stack;  // the stack fitted, as --source names it
  std::vector<std::string> measured, train;
  std::string stat = "median";
  std::string dir = "out";
  std::string name;
  std::string totals;  // plain | perf | "" (plain where every row has it)
  bool l1d = false;    // price the copies' L1d misses apart (the rows' machine.json says the L1d)
};

int calibrate_kernel_cmd(const KernelCalibrateArgs& a);

}  // namespace simloop::cli

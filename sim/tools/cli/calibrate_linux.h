// simloop calibrate --source linux: the simulated Linux stack's costs,
// function by function, from the rows of measure kernel --split.
#pragma once

#include <string>
#include <vector>

namespace simloop::cli {

struct LinuxCalibrateArgs {
  std::vector<std::string> measured, train;
  std::string stat = "median";
  std::string dir = "out";
  std::string name;
};

int calibrate_linux_cmd(const LinuxCalibrateArgs& a);

}  // namespace simloop::cli

// The profile a fit becomes: a machine, a stack and an experiment that
// `simloop run` loads.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/tools/calibrate/fit.h"
#include "sim/tools/calibrate/points.h"

namespace simloop::measure {

// Writes the fit as a machine, a stack and an experiment (NAME.yaml) that
// `simloop run` loads: clock_hz 1e9, so every cost is in ns. The files are
// emitted from the schema's keys and values. `points` are the measured
// points (the kernel profile takes its null syscall from the training
// points). A parameter no training point exercises is written as `~`
// (undetermined: a run that uses it says so); one the data fix only in a
// sum with others keeps its fitted value, with a comment naming them.
// `extra` files (name, text) go with them: all are written, or none.
void write_profile(const Fit& fit, const std::vector<Point>& points,
                   const std::filesystem::path& dir, const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace simloop::measure

// What `simloop calibrate` says of a fit it made: on what it was trained,
// the costs with their intervals, the design's rank, the residuals, and the
// held-out points that lean on a cost the training data leave free.
#pragma once

#include <ostream>
#include <string_view>
#include <vector>

#include "sim/tools/calibrate/fit.h"
#include "sim/tools/calibrate/points.h"

namespace simloop::measure {

// Prints the fit of `points` (read with statistic `stat`) to `out`, and
// warns when its training points come from more than one source.
void print_fit(std::ostream& out, const Fit& fit, const std::vector<Point>& points,
               std::string_view stat);

// Warns, once per set of parameters, of the held-out points whose
// prediction needs a parameter the training data do not determine, naming
// the first few; returns how many points do.
int warn_undetermined(const Fit& fit, const std::vector<Point>& points);

}  // namespace simloop::measure

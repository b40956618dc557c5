// Calibration: fit a cost profile to a training subset of measured runs, say
// which of its parameters the data determine, and predict other points.
//
// Measured rows (from `measure native`, `measure kernel`, or a user's own
// CSV in the documented format, docs/measured-data.md) are grouped into
// points (one configuration; its repeats summarised by one statistic). A
// split names which points train the fit; every other point is held out.
//
// native: the parameters are the cost keys of the configuration schema
// (config::cost_keys()). The real stack runs each point's configuration
// under the timing model with one cost priced at 1 and all others at 0,
// which gives that cost's count per packet, in total and inside each stack
// function. A packet's predicted ns is linear in the costs, so they are
// fitted by non-negative least squares to two kinds of observation of the
// training points: the ns per packet of the plain run, and (where the rows
// have them, `measure native --split`) the self time of each function from
// the instrumented run, less the instrumentation's own cost. The split is
// what tells the functions apart: totals alone only fix sums of costs that
// every training path pays alike.
//
// kernel (any operating system's stack: this machine's `measure kernel`, or
// imported rows): ns per packet = system calls x null syscall (when
// measured) + send_fixed + send_per_byte x payload + (receiver on the same
// CPU: dest other than wire) x (recv_fixed + recv_per_byte x payload).
//
// One file per part: points.h (points, the statistic, the training split),
// measured_csv.h (the measured CSV), features.h (the two models), nnls.h
// (the solver), fit.h (the fit), profile_writer.h (the profile it writes).
#pragma once

#include "sim/tools/calibrate/features.h"
#include "sim/tools/calibrate/fit.h"
#include "sim/tools/calibrate/measured_csv.h"
#include "sim/tools/calibrate/nnls.h"
#include "sim/tools/calibrate/points.h"
#include "sim/tools/calibrate/profile_writer.h"

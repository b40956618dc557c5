// The two models a fit prices points with, as features: a point's predicted
// ns per packet is linear in the model's parameters.
//
// native: the parameters are the configuration schema's cost keys; the
// real stack runs the point's configuration with one cost priced at 1 and
// all others at 0, which gives that cost's count per packet, in total and
// inside each stack function.
//
// kernel: ns per packet = system calls x null syscall (when measured) +
// send_fixed + send_per_byte x payload + (receiver on the same CPU: dest
// other than wire) x (recv_fixed + recv_per_byte x payload).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/tools/calibrate/points.h"

namespace simloop::measure {

// A point's features: ns = known + sum_j total[j] x_j; and, per stack
// function, its self time = sum_j split[f][j] x_j (native only).
struct Features {
  double known = 0;
  std::vector<double> total;
  std::map<std::string, std::vector<double>> split;
  std::map<std::string, double> calls, child_calls;  // per function and packet (native)
};

// The native model's parameters: the schema's cost keys.
std::vector<std::string> native_params();
// Each native parameter's count per packet for the point's configuration
// (payload, dest, align, copy, misalign), in total and by function, from
// `packets` packets of the real stack driven as `measure native` drives it.
// Throws InputError on an unknown dest/align/copy.
Features native_features(const Point& p, int packets = 1000);

// The kernel model's parameters, and a point's features.
const std::vector<std::string>& kernel_params();
Features kernel_features(const Point& p);

// Costs by parameter name -> the model's ns per packet.
double predict_ns(const Features& f, const std::vector<double>& values);

}  // namespace simloop::measure

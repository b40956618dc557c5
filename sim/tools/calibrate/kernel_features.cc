#include <string>
#include <vector>

#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/calibrate/features.h"

namespace simloop::measure {

const std::vector<std::string>& kernel_params() {
  static const std::vector<std::string> p = {"send_fixed_ns", "send_per_byte_ns", "recv_fixed_ns",
                                             "recv_per_byte_ns"};
  return p;
}

namespace detail {

bool has_receiver(const Point& p) {
  return p.key("dest") != "wire";
}

}  // namespace detail

using detail::has_receiver;

Features kernel_features(const Point& p) {
  Features f;
  const bool rx = has_receiver(p);
  const double n = p.payload();
  f.total = {1.0, n, rx ? 1.0 : 0.0, rx ? n : 0.0};
  if (p.null_syscall_ns) f.known = (rx ? 2 : 1) * *p.null_syscall_ns;
  return f;
}

}  // namespace simloop::measure

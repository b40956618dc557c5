// What the calibration files share inside sim/tools/calibrate and nobody
// else uses.
#pragma once

#include <string>

#include "sim/stack/workload/path.h"
#include "sim/tools/calibrate/points.h"

namespace simloop::measure::detail {

// What a point without the key means: rows of files without the column,
// and keys dropped when they say the default.
std::string key_default(const std::string& k);

// Whether a point is one of the model's: native points for the native
// model, every other source for the kernel model.
bool of_model(const Point& p, const std::string& source);

// The kernel loop's receiver runs on the sender's CPU unless the datagram
// leaves on the wire.
bool has_receiver(const Point& p);

// A point's path: its columns, each at the path's default where it has none.
workload::Path path_of(const Point& p);

// Bytes the simulated stack copies per byte of payload on `dest`'s path
// with a receiver where there is one: the slope between two payloads.
double copied_bytes_per_payload_byte(const std::string& dest);

}  // namespace simloop::measure::detail

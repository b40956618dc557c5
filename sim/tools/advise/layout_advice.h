// The layout advice as a value: the path at the interrupt spacing its
// stalls leave, the input layout's misses, and (if searched) the
// recommended link order and padding with the objects that move. `simloop
// layout` prints it; nothing here prints or reads files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/icache.h"
#include "sim/layout/layout.h"
#include "sim/tools/advise/layout_advisor.h"

namespace simloop::models {

struct AdviceRequest {
  PathSpec path;       // the workload; packets_per_interrupt is found, not taken
  ICacheConfig cache;  // geometry and penalties
  FetchMode fetch = FetchMode::call_sites;
  LinkedLayout input;  // the layout advised on (kernel and user linked)
  // The kernel layout the search reorders and pads, with `user` linked
  // beside every candidate; no search without it (a layout from nm does not
  // say which object a symbol is in).
  std::optional<Layout> kernel;
  LinkedLayout user;
  bool search = true;
  SearchOptions search_options;  // its fetch is `fetch`
};

struct Advice {
  // The recorded path: with interrupts moderated by time, one interrupt per
  // as many packets as the interval holds at the rate the input layout's
  // stalls leave.
  PathTrace trace;
  Evaluation before;  // the input layout, with its colliding sets
  // The search, if it ran; its layout is the recommendation.
  std::optional<SearchResult> result;
  // Objects of the recommended order outside a longest run kept in the
  // kernel's relative order: the fewest to move to get there.
  std::vector<std::string> moved;
  bool changed = false;  // an order or padding with fewer stalls was found
};

Advice advise_layout(const AdviceRequest& req);

// Packets per second, in thousands, at `cycles` per packet.
double kpps(double clock_hz, double cycles);

// The objects of `now` that left their relative order in `before`: those
// outside one longest subsequence of `now` that keeps `before`'s order
// (among equally long ones, the one that ends first and, before each
// element, the earliest), in the order of `now`. Names of `now` not in
// `before` count as moved.
std::vector<std::string> moved_objects(const std::vector<std::string>& before,
                                       const std::vector<std::string>& now);

}  // namespace simloop::models

// The stacks a test build adds to sim/stack/stacks.h's list: its one line.
#pragma once

#include "tests/stacks/poll/kind.h"

namespace simloop::stacks {
using ExtraStacks = net::StackList<net::poll::Kind>;
}

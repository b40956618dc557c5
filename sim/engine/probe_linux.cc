// The Linux stack for the engine's probe, in a unit of its own for the same
// reason as the BSD stack's (probe.h).
#include "sim/engine/probe.h"

namespace simloop::net::lnx {
template class Stack<engine::Probe>;
}

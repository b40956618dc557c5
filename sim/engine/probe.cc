#include "sim/engine/probe.h"

namespace simloop::net {
template class Stack<engine::Probe>;
}

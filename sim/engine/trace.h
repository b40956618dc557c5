// A timeline of simulated time in the Chrome / Perfetto trace event format
// (JSON): what the CPU did for a window of packets.
//
// One track (thread) for the CPU. The sender's work is a stack of spans:
// the system call, the stack's functions as they nest (sendto, sosend_dgram,
// udp_output, ip_output, ether_output, the driver; on loopback the netisr's
// and the receiver's work follow inline), and inside them leaf slices named
// after the stage their cycles are charged to (category `stage`). An
// interrupt handler cuts every open span of the sender where it takes the
// CPU and reopens them where it ends. ENOBUFS sleep is a span of its own,
// cut the same way by handlers that run meanwhile. Counter tracks give the
// gauges the stack's table names (net::GaugeName: by default the NIC ring's
// occupancy, the netisr queue's length and the receiving socket's queue)
// after each packet; instant events mark drops and faults. Stages, drops
// and counters are named in the stack's own words (its table's).
//
// The engine prices a batch of packets before it executes the batch's
// cycles, and a handler may preempt the execution: the tracer keeps each
// batch's events in cycles from the batch's start, learns of the handlers
// that ran, and places everything in time when the batch has run.
//
// Every leaf slice is a stage's cycles, so over a window the slices of a
// stage add up to the run's cycles of that stage for those packets, and all
// slices together to the window's simulated time. A window that closes
// before the run ends ends with its last packet's work: a handler that runs
// after it is not drawn (it would follow a gap where the CPU ran packets the
// trace does not hold).
//
// Events go to the sink as each batch is placed, in time order, so memory
// does not grow with the window. Timestamps are whole picoseconds (written
// as microseconds with six decimals; shown in ns, displayTimeUnit), a
// slice's duration the difference of its rounded ends, so no child ever
// outlasts its parent; every event has a category.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/cycle_account.h"
#include "sim/stack/net/probe.h"

namespace simloop::engine {

struct TraceWindow {
  int64_t from = 0, to = 1000;  // packet indices [from, to)
};

class Tracer : public models::CycleListener {
 public:
  // Where the trace's text goes, piece by piece.
  using Sink = std::function<void(std::string_view)>;

  // `fns` names the stack's functions and gives their stages; `process`
  // names the trace's process (the experiment). Writes the trace's head.
  Tracer(TraceWindow window, double clock_hz, const net::FnTable& fns, const std::string& process,
         Sink sink);

  // The sender is about to send packet `index` (0-based).
  void packet(int64_t index);
  bool recording() const { return recording_; }

  // From CycleAccount and the engine, in the order the CPU does them.
  void add(models::Stage s, double cycles);
  void enter(std::string_view name, const char* cat);
  void leave();
  void instant(std::string name);
  // The stack's drop counters after a packet: a new drop is an instant.
  void drops(const std::array<uint64_t, net::kDropCount>& counts);
  // CycleListener: the cycles and the stack's functions, as charged.
  void cycles(models::Stage s, double c) override { add(s, c); }
  void entered(net::FnId fn) override {
    enter(fns_->name(fn), stage_word_[static_cast<size_t>(stage_[net::index(fn)])].c_str());
  }
  void left(net::FnId /*fn*/) override { leave(); }
  // The gauges after a packet, by net::Gauge; the trace shows those the
  // stack's table names.
  using Gauges = std::array<double, net::kGaugeCount>;
  void counters(const Gauges& values);

  // A batch of the sender starts at simulated time `t0`; it ends (after
  // its execution, any preemption included) at flush().
  void begin_batch(double t0);
  void flush_batch();
  // The sender slept from t0 to t1 (handlers that ran meanwhile cut it).
  void sleep(double t0, double t1);
  // A handler: begin before its work is priced, end once it has run.
  void begin_handler(double t0);
  void end_handler(double t1, int frames);

  // Writes the trace's tail: the sink then holds the whole trace event JSON.
  void finish();
  uint64_t events() const { return events_; }

 private:
  enum class Kind : uint8_t { begin, end, leaf, instant, counter };
  struct Mark {
    double at;  // cycles from the start of its batch or handler
    Kind kind;
    std::string name;
    const char* cat = "";
    double dur = 0;  // leaf: cycles
    Gauges values{};
  };
  struct Handler {
    double t0, t1;
    int frames;
    std::vector<Mark> marks;
  };
  bool active() const { return in_handler_ ? started_ && !finished_ : recording_; }
  std::vector<Mark>& target() { return in_handler_ ? handler_.marks : batch_; }
  double& cursor() { return in_handler_ ? handler_cursor_ : batch_cursor_; }
  void emit_handler(const Handler& h);
  void emit_mark(const Mark& m, double t);
  // Closes the sender's open spans where `h` starts, emits it, and
  // reopens them where it ends.
  void cut(const Handler& h);
  // One event to the sink; `resumed`: a span reopened after a handler cut it.
  void push(char ph, double t, double dur, std::string_view name, const char* cat,
            const Gauges& values, int frames, bool resumed = false);
  void event(int64_t ts_ps, char ph, std::string_view name, std::string_view cat,
             std::string_view rest);

  TraceWindow window_;
  double hz_;
  const net::FnTable* fns_;
  models::FnStages stage_;
  // Each stage as the stack names it (the categories of its slices and spans).
  std::array<std::string, models::kStageCount> stage_word_;
  bool recording_ = false, started_ = false, finished_ = false, in_handler_ = false;
  double batch_t0_ = 0, batch_cursor_ = 0, handler_cursor_ = 0;
  std::vector<Mark> batch_;
  Handler handler_{};
  std::vector<Handler> handlers_;  // ran since the last flush, in time order
  std::vector<std::string> open_;  // the sender's open spans (names), outermost first
  std::vector<const char*> open_cat_;
  Sink sink_;
  std::vector<const char*> written_open_;  // categories of the B events written and not ended
  uint64_t events_ = 0;
  int64_t last_ps_ = 0;
  std::string buf_;
  // Event names as JSON strings: a few hundred names (stages, functions),
  // each quoted once rather than per event.
  struct NameHash {
    using is_transparent = void;  // looked up by string_view, no string made per event
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> quoted_;
  std::array<uint64_t, net::kDropCount> drops_seen_{};
};

}  // namespace simloop::engine

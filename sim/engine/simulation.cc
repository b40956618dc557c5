#include "sim/engine/simulation.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <stdio.h>
#include <unistd.h>
#include <xbt/log.h>

#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <simgrid/s4u.hpp>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/sender_costs.h"
#include "models/wire.h"
#include "sim/engine/hopeless_sends.h"
#include "sim/engine/probe.h"
#include "sim/engine/rate_slices.h"
#include "sim/engine/trace.h"
#include "sim/engine/undetermined.h"
#include "sim/report/safe_file.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/stacks.h"
#include "sim/stack/workload/driver.h"

namespace simloop::engine {

namespace sg = simgrid::s4u;
using models::Stage;

namespace {

// SimGrid keeps configuration and platform per process: build it once.
void setup_engine(sg::Engine& e) {
  // CM02: a message takes latency + size / bandwidth, with no correction
  // factors (the default LV08 multiplies latency by 13.01).
  e.set_config("network/model:CM02");
  e.set_config("network/crosstraffic:0");
}

struct Platform {
  sg::Host* host;
  sg::Host* peer;
};

// The platform's one zone, made with the engine (make_engine): making the
// first zone starts SimGrid's CPU and network models, which a sweep then
// pays once, before it forks its runs, not in every run.
sg::NetZone*& world_zone() {
  static sg::NetZone* zone = nullptr;
  return zone;
}

Platform build_platform(double clock_hz, double bandwidth_bps, double latency_s) {
  sg::NetZone* zone = world_zone();
  // The host's speed is its clock: one flop of SimGrid is one cycle.
  sg::Host* host = zone->create_host("host", clock_hz)->seal();
  sg::Host* peer = zone->create_host("peer", 1e9)->seal();
  sg::Link* wire = zone->create_link("wire", bandwidth_bps / 8.0)->set_latency(latency_s)->seal();
  zone->add_route(host->get_netpoint(), peer->get_netpoint(), nullptr, nullptr,
                  {sg::LinkInRoute(wire)}, true);
  zone->seal();
  return {host, peer};
}

struct Frame {
  double depart;  // when its last bit leaves the NIC
  int bytes;      // on the wire, with preamble and gap
};

// The options of stack kind `K` that the experiment sets: the host's and
// its own.
template <class K>
typename K::Options stack_options(const config::Experiment& x) {
  return K::options(x.options, x.stack_options.get<typename K::Own>(K::kName));
}

// State shared by the actors of one run, on the stack of kind `K` with the
// probe `P`. Actors are cooperative: only one runs at a time, so plain
// fields need no locking.
template <class K, class P>
struct World {
  using Kind = K;
  using Probe = P;
  using S = typename K::template Stack<P>;
  explicit World(const config::Experiment& ex)
      : x(ex),
        acct(ex.machine, ex.stack),
        quiet(acct),
        icache(make_icache(ex, acct)),
        optional(make_optional(ex, acct)),
        probe(make_probe<P>(acct, quiet, icache, optional)),
        driver(probe,
               {.path = config::path_of(ex),
                .payload = ex.workload.payload,
                .receive = ex.workload.receive,
                .connected = ex.workload.connected},
               stack_options<K>(ex)),
        loop(driver.loop()),
        stack(driver.stack()),
        wire(ex.workload.link_bandwidth_bps),
        moderator(ex.interrupts.moderation_packets, ex.interrupts.moderation_interval_s) {
    // The account prices the functions of the stack that runs.
    if (ex.stack.fns != &Driver::Stack::fn_table())
      throw std::logic_error(fmt::format("stack costs are for stack '{}', the run is of '{}'",
                                         ex.stack.fns->stack(), Driver::Stack::fn_table().stack()));
  }

  const config::Experiment& x;
  models::FnLedger ledger;  // the same cycles by function
  // The models before the stack: the stack's destructor frees what is
  // still queued, and they still see it.
  models::CycleAccount acct;
  models::QuietAccount quiet;  // the account's hooks without the listener's test
  std::unique_ptr<models::ICacheProbe> icache;
  OptionalParts optional;  // the optional models that are on
  Probe probe;
  using Driver = workload::Driver<Probe, S>;
  Driver driver;  // the sender and receiver on the real stack, and the sender's buffer
  typename Driver::Loop& loop;
  typename Driver::Stack& stack;
  models::WireSerializer wire;
  models::IrqModerator moderator;
  std::deque<Frame> ring;        // frames on the NIC ring, oldest first
  std::deque<double> irq_due;    // times the NIC raises its interrupt, in order
  std::deque<double> in_flight;  // departure times of frames that may not have reached the peer
  int64_t frames_out = 0;        // frames handed to the NIC
  double t_end = 0;
  Tracer* tracer = nullptr;  // the timeline, if asked for
  int64_t batches = 0;       // the sender's batches (for the log: speed)
  int64_t executions = 0;    // the SimGrid executions they took
  RateSlices rate;           // packets sent over simulated time, for the within-run rate variation
  SimResult r;

  void charge(const models::StageCycles& c) {
    for (size_t i = 0; i < c.size(); ++i) r.cycles[i] += c[i];
  }
  // The account's cycles since the last take(), deferred stalls included.
  models::StageCycles take() {
    probe.settle();
    return acct.take();
  }
  const models::StageCycles& pending() {
    probe.settle();
    return acct.pending();
  }

  void charge_fn(models::Code c, double cycles) {
    ledger.add(static_cast<size_t>(c), models::CostKind::event, cycles);
  }
  void charge_syscall() {
    charge_fn(models::Code::syscall_entry, x.machine.syscall_entry_cycles);
    charge_fn(models::Code::syscall_exit, x.machine.syscall_exit_cycles);
  }

  // The driver's txeof: frees the first `k` frames of the ring. With the
  // harness's service loop (workload.service full or send-only) the loop
  // has already run transmit completion after each send: the frames are
  // only taken off the wire's books.
  void reap(int k) {
    if (k <= 0) return;
    if (x.workload.service == workload::Service::simulated) loop.reap(k);
    for (int i = 0; i < k; ++i) ring.pop_front();
  }

  int frames_done_by(double t) const {
    int k = 0;
    for (const auto& f : ring) {
      if (f.depart > t * (1 + 1e-12)) break;
      ++k;
    }
    return k;
  }

  // Forgets frames that have surely reached the peer by `t`: only the last
  // link latency's worth is kept, so memory stays flat.
  void trim_in_flight(double t) {
    const double lat = x.workload.link_latency_s;
    while (!in_flight.empty() && in_flight.front() + lat <= t) in_flight.pop_front();
  }
};

// ---- interrupts ----------------------------------------------------------
// The host has one CPU, which the sender and the NIC's transmit-completion
// handler share: a handler preempts the sender where its interrupt comes
// due, and the sender goes on where the handler ends. Like a real NIC's
// interrupt line, it does not queue: one handler serves every interrupt
// raised before it began. The sender prices a batch of datagrams before it
// spends the batch's cycles, and every due time in the batch is known by
// then, so one actor places the handlers in the batch's span itself and
// spends the batch's cycles and theirs in one execution: not a SimGrid
// activity, a suspension and a resumption per interrupt.

// Runs the handler of the interrupts due by `t0`, at `t0`: the driver's
// txeof for the frames that have left by then and the handler's own cycles,
// in interrupt context. Returns the cycles; the handler holds the CPU from
// t0 for that many cycles.
template <class W>
double run_handler(W& w, double t0) {
  const auto& ic = w.x.interrupts;
  while (!w.irq_due.empty() && w.irq_due.front() <= t0) w.irq_due.pop_front();
  const int k = w.frames_done_by(t0);
  w.charge(w.take());  // nothing should be pending; keep the books exact anyway
  if (w.tracer != nullptr) w.tracer->begin_handler(t0);
  w.acct.set_context(models::Context::interrupt);
  w.reap(k);
  w.acct.add(Stage::interrupt, ic.handler_cycles + ic.per_packet_cycles * k);
  w.ledger.add(models::kInterruptHandler, models::CostKind::event,
               ic.handler_cycles + ic.per_packet_cycles * k);
  w.acct.set_context(models::Context::thread);
  auto c = w.take();
  w.charge(c);
  const double cycles = models::total(c);
  const double t1 = t0 + cycles / w.x.machine.clock_hz;
  if (w.tracer != nullptr) w.tracer->end_handler(t1, k);
  ++w.r.interrupts;
  w.r.interrupt_s += t1 - t0;
  return cycles;
}

// The handlers that preempt `work` cycles of the sender that start at
// `start`: each interrupt that comes due before the sender's work is done
// runs its handler there, or where the handler before it ends. Returns
// their cycles: the sender's work then ends `work` plus them after `start`.
template <class W>
double preempting_handlers(W& w, double start, double work) {
  const double hz = w.x.machine.clock_hz;
  double handlers = 0;
  double cpu_free = start;  // where the last handler ended
  while (!w.irq_due.empty()) {
    const double t0 = std::max(w.irq_due.front(), cpu_free);
    if (t0 >= start + (work + handlers) / hz) break;  // due once the work is done
    const double c = run_handler(w, t0);
    handlers += c;
    cpu_free = t0 + c / hz;
  }
  return handlers;
}

// Runs a handler now and spends its cycles; returns them.
template <class W>
double handle_now(W& w) {
  const double c = run_handler(w, sg::Engine::get_clock());
  if (c > 0) sg::this_actor::execute(c);
  return c;
}

// Handlers due by now run before the sender goes on, one after another
// while more come due.
template <class W>
void run_due_handlers(W& w) {
  while (!w.irq_due.empty() && w.irq_due.front() <= sg::Engine::get_clock()) handle_now(w);
}

// The sender sleeps `wait` seconds: the CPU is idle but for the handlers of
// interrupts that come due meanwhile, up to and including its end (they
// preempt nothing; one that is still running when the sleep ends keeps the
// CPU until it ends). A blocked sender waits for the interrupt whose
// handler frees its space, so that handler is part of its wait. Returns the
// handlers' cycles.
template <class W>
double sleep_with_handlers(W& w, double wait) {
  const double until = sg::Engine::get_clock() + wait;
  double handlers = 0;
  while (!w.irq_due.empty() && std::max(w.irq_due.front(), sg::Engine::get_clock()) <= until) {
    if (w.irq_due.front() > sg::Engine::get_clock()) sg::this_actor::sleep_until(w.irq_due.front());
    handlers += handle_now(w);
  }
  if (sg::Engine::get_clock() < until) sg::this_actor::sleep_until(until);
  return handlers;
}

// The ttcp loop's hooks in the simulator: the sender's prices (SenderCosts),
// each also charged to its code in the function ledger, and the timeline's
// spans and counters when a trace is asked for.
template <class W>
struct EngineHooks : models::SenderCosts<typename W::Probe> {
  using SenderCosts = models::SenderCosts<typename W::Probe>;
  using SenderCosts::mc;
  using SenderCosts::syscalls;
  EngineHooks(W& world, Tracer* t)
      : SenderCosts(world.probe, world.x.machine, W::Kind::kSyscallPerSend), w(world), tr(t) {}
  W& w;
  Tracer* tr;

  void user_loop() {
    SenderCosts::user_loop();
    w.charge_fn(models::Code::user_loop, mc.user_loop_cycles);
  }
  void syscall_enter() {
    if (tr != nullptr) tr->enter("sendto()", "syscall");
    SenderCosts::syscall_enter();
    if (syscalls) w.charge_syscall();
  }
  void syscall_exit() {
    SenderCosts::syscall_exit();
    if (tr != nullptr) {
      tr->leave();
      counters();
    }
  }
  void receive_enter() {
    if (tr != nullptr) tr->enter("recvfrom()", "receive");
    SenderCosts::receive_enter();
  }
  void receive_exit() {
    SenderCosts::receive_exit();
    if (syscalls) w.charge_syscall();
    if (tr != nullptr) tr->leave();
  }
  void counters() {
    // In net::Gauge's order.
    tr->counters({static_cast<double>(w.stack.nic_pending()),
                  static_cast<double>(w.stack.netisr_pending()),
                  static_cast<double>(w.stack.rcv_queued(w.loop.receiver())),
                  static_cast<double>(w.loop.send_queued())});
  }
};

// The application: a ttcp-like sender. It runs the real stack for a batch of
// datagrams, then executes the batch's cycles in one go. A batch ends after
// the datagram during which the next interrupt is due, so that the handler,
// which preempts the sender at its exact time, reaps the ring before the
// sender sends more.
template <class W>
void sender_main(W& w) {
  const auto& x = w.x;
  const double hz = x.machine.clock_hz;
  const bool uses_ring = workload::uses_ring(x.workload.dest);
  const int frame_len = x.workload.payload + net::kUdpIpHdrLen + net::kEtherHdrLen;

  std::mt19937_64 rng(x.seed);
  for (auto& b : w.driver.payload()) b = static_cast<uint8_t>(rng());
  const bool loops_back = workload::loops_back(x.workload.dest);
  EngineHooks<W> hooks(w, w.tracer);

  const double t_start = sg::Engine::get_clock();
  const bool by_time = x.workload.duration_s > 0;
  int64_t sent = 0;

  // Why a batch ended: an interrupt came due (its handler runs, and the
  // execution goes on), it is full, the send failed for now (ENOBUFS; a
  // blocked Linux send), or the run is over.
  enum class End : uint8_t { interrupt, full, enobufs, blocked, stop };
  // One batch from `start`: sends until it ends, adds its cycles to
  // `cycles`, and says why it ended.
  auto send_batch = [&](double start, double& cycles) {
    double t = start;  // this batch's timeline, if nothing preempts it
    Tracer* const tr = w.tracer;
    if (tr != nullptr) tr->begin_batch(t);
    for (int n = 0; n < x.engine.max_batch; ++n) {
      if (by_time ? t >= t_start + x.workload.duration_s : sent >= x.workload.packets)
        return End::stop;
      if (n > 0 && !w.irq_due.empty() && w.irq_due.front() <= t) return End::interrupt;
      // The driver reclaims finished frames as it queues: always without
      // interrupts, and with them when the ring is full (as em_start does
      // when descriptors run out), so a ring that interrupts reap too
      // seldom cannot wedge the sender.
      if (uses_ring && !x.interrupts.enabled) w.reap(w.frames_done_by(t));
      // A send that would sleep for send space (Linux sleeps inside it, in
      // sock_alloc_send_pskb): the wait comes first, then the call runs once,
      // whole; only its part before the sleep (the route lookup) moves.
      if (w.driver.send_would_block()) return End::blocked;
      if (tr != nullptr) tr->packet(sent);
      const workload::Step step = w.driver.send(hooks);
      if (tr != nullptr && loops_back) hooks.counters();
      const double c = models::total(w.pending()) - cycles;
      cycles += c;
      t += c / hz;
      if (tr != nullptr) {
        tr->drops(w.stack.counters().drops);
        if (step.outcome == workload::Outcome::fault) tr->instant("alignment fault");
        if (step.outcome == workload::Outcome::enobufs) tr->instant("ENOBUFS");
      }
      if (step.outcome == workload::Outcome::enobufs) {
        ++w.r.enobufs;
        return End::enobufs;
      }
      if (step.outcome == workload::Outcome::blocked) return End::blocked;
      if (!step.ok()) {
        w.r.outcome = step.outcome == workload::Outcome::fault ? "alignment-fault" : "error";
        w.r.detail = w.driver.why(step);
        return End::stop;
      }
      sent += w.driver.segments();  // datagrams: a GSO send carries several
      if (step.sent.frame) {
        const double depart = w.wire.depart(t, frame_len);
        w.ring.push_back({depart, models::ether_wire_bytes(frame_len)});
        w.in_flight.push_back(depart);
        ++w.frames_out;
        if (x.interrupts.enabled) {
          if (auto due = w.moderator.on_completion(depart)) w.irq_due.push_back(*due);
        }
      }
    }
    return End::full;
  };

  HopelessSends hopeless;  // ENOBUFS for ever: the run stops
  for (End end = End::full; end != End::stop;) {
    run_due_handlers(w);
    // One execution holds the batches between interrupts, up to about
    // max_batch datagrams: a batch that ends where an interrupt is due only
    // makes room for the handler, which the same execution spends.
    double start = sg::Engine::get_clock();
    double execution = 0;  // cycles of its batches and handlers
    int64_t execution_packets = 0;
    do {
      const int64_t sent_before = sent;
      double batch = 0;
      end = send_batch(start, batch);
      w.charge(w.take());
      ++w.batches;
      const double handlers = preempting_handlers(w, start, batch);
      const double batch_end = start + (batch + handlers) / hz;
      if (w.tracer != nullptr) w.tracer->flush_batch();
      w.rate.add(start, batch_end, static_cast<double>(sent - sent_before));
      execution += batch + handlers;
      execution_packets += sent - sent_before;
      start = batch_end;
    } while (end == End::interrupt && execution_packets < x.engine.max_batch);
    ++w.executions;
    if (execution > 0) sg::this_actor::execute(execution);
    w.trim_in_flight(sg::Engine::get_clock());
    if (end == End::enobufs || end == End::blocked) {
      // ttcp sleeps and retries. A blocking Linux send instead sleeps until
      // a transmit completion frees send space (sock_wfree): the next
      // interrupt where they reap the ring, else the first frame's end on
      // the wire, where the sender reaps it itself. The CPU is idle
      // meanwhile, but for interrupt handlers, which then preempt nothing.
      const double t0 = sg::Engine::get_clock();
      double wait = x.workload.enobufs_sleep_s;
      if (end == End::enobufs && hopeless.failed(sent, w.ring.empty() && w.irq_due.empty())) {
        w.r.outcome = "error";
        w.r.detail = fmt::format(
            "sendto() failed with ENOBUFS {} times in a row with nothing in flight to free a "
            "buffer: the stack cannot allocate what one datagram needs",
            hopeless.count());
        break;
      }
      if (end == End::blocked && w.ring.empty() && w.irq_due.empty() &&
          w.driver.send_would_block()) {
        // Nothing in flight will ever free send space: the run cannot go on.
        w.r.outcome = "error";
        w.r.detail = "the send buffer is full and nothing in flight will free it";
        break;
      }
      if (end == End::blocked) {
        double until = w.ring.empty() ? t0 : w.ring.front().depart;
        if (x.interrupts.enabled && !w.irq_due.empty()) until = std::max(until, w.irq_due.front());
        // Never a busy loop: a completion due now still takes the
        // smallest step of simulated time.
        wait = std::max(until - t0, 1e-9);
      }
      // A blocked send sleeps inside an open sendmmsg() call: its next
      // message is not warm from the one before (stack.in_call_factor).
      if (end == End::blocked) w.driver.loop().slept(hooks);
      const double asleep = sleep_with_handlers(w, wait);
      // No interrupt was due to reap what left: the driver's own reclaim
      // (as without interrupts), so that the wait always ends with room.
      if (end == End::blocked && uses_ring && x.interrupts.enabled && w.irq_due.empty())
        w.reap(w.frames_done_by(sg::Engine::get_clock()));
      const double slept = sg::Engine::get_clock() - t0;
      if (w.tracer != nullptr) w.tracer->sleep(t0, sg::Engine::get_clock());
      w.r.sleep_s += slept;
      w.r.cycles[static_cast<size_t>(Stage::sleep)] += slept * hz - asleep;
      w.ledger.add(models::kSleepFn, models::CostKind::idle, slept * hz - asleep);
    }
  }
  // On the wire a datagram counts once its frame left the NIC (not if a full ring dropped
  // it), and the run ends when the last left: no run outruns the link. The wait is sleep.
  w.t_end = sg::Engine::get_clock();
  if (const double t0 = w.t_end, last = w.wire.busy_until(); uses_ring && last > t0) {
    double t = t0, handlers = 0;
    while (!w.irq_due.empty() && std::max(w.irq_due.front(), t) <= last) {
      const double start = std::max(w.irq_due.front(), t);
      const double c = run_handler(w, start);
      handlers += c;
      t = start + c / hz;
    }
    w.t_end = std::max(t, last);
    if (w.tracer != nullptr) w.tracer->sleep(t0, w.t_end);
    w.r.sleep_s += w.t_end - t0;
    w.r.cycles[static_cast<size_t>(Stage::sleep)] += (w.t_end - t0) * hz - handlers;
    w.ledger.add(models::kSleepFn, models::CostKind::idle, (w.t_end - t0) * hz - handlers);
    if (w.t_end - sg::Engine::get_clock() >= 1e-9) sg::this_actor::sleep_until(w.t_end);
  }
  w.r.packets = uses_ring ? w.frames_out : sent;
  w.r.elapsed_s = w.t_end - t_start;
}

// fopencookie writer: one SimGrid log line becomes one spdlog debug line.
ssize_t log_to_spdlog(void* /*cookie*/, const char* buf, size_t size) {
  std::string_view s(buf, size);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  if (!s.empty()) spdlog::debug("simgrid: {}", s);
  return static_cast<ssize_t>(size);
}

std::vector<std::string>& simgrid_config() {
  static std::vector<std::string> items;
  return items;
}

// SimGrid crashes (SIGSEGV) when it cannot open its trace file. Its
// directory is made as --trace's is; if that fails, the option is refused.
void check_trace_file(const std::string& item) {
  constexpr std::string_view kKey = "tracing/filename";
  const std::string_view s(item);
  if (s.substr(0, kKey.size()) != kKey || s.size() == kKey.size() ||
      (s[kKey.size()] != ':' && s[kKey.size()] != '='))
    return;
  const std::filesystem::path file(s.substr(kKey.size() + 1));
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  if (file.empty())
    throw std::invalid_argument(fmt::format("--cfg={}: the trace file needs a name", item));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec) || access(dir.c_str(), W_OK) != 0)
    throw std::invalid_argument(fmt::format(
        "--cfg={}: cannot write the trace file there (the directory {} cannot be made or "
        "written to)",
        item, dir.string()));
  // SimGrid opens it itself (fopen, following links): refused here instead.
  report::refuse_link(file);
}

sg::Engine& make_engine() {
  static int argc = 1;
  static char name[] = "simloop";
  static char* argv[] = {name, nullptr};
  static sg::Engine* engine = nullptr;
  if (engine == nullptr) {
    engine = new sg::Engine(&argc, argv);
    setup_engine(*engine);
    for (const auto& item : simgrid_config()) {
      check_trace_file(item);
      try {
        engine->set_config(item);
      } catch (const std::exception& e) {
        throw std::invalid_argument(
            fmt::format("--cfg={}: SimGrid refuses it: {}", item, e.what()));
      }
    }
    // After every configuration item: the models the zone starts read them.
    world_zone() = sg::create_full_zone("world");
  }
  return *engine;
}

}  // namespace

void prepare_engine() {
  route_simgrid_log_to_spdlog();
  // SimGrid installs handlers (SIGINT prints its actors and exits); the
  // process that prepares the engine keeps its own.
  std::array<struct sigaction, NSIG> saved{};
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, nullptr, &saved[static_cast<size_t>(s)]);
  make_engine();
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    ::sigaction(s, &saved[static_cast<size_t>(s)], nullptr);
  }
}

void set_simgrid_config(const std::vector<std::string>& items) {
  simgrid_config() = items;
}

void route_simgrid_log_to_spdlog() {
  static FILE* f = [] {
    cookie_io_functions_t io{nullptr, log_to_spdlog, nullptr, nullptr};
    FILE* file = fopencookie(nullptr, "w", io);
    if (file != nullptr) setvbuf(file, nullptr, _IOLBF, 0);
    return file;
  }();
  if (f == nullptr) return;
  xbt_log_appender_set(&_simgrid_log_category__root, xbt_log_appender_stream(f));
  xbt_log_layout_set(&_simgrid_log_category__root, xbt_log_layout_format_new("[%c] %m%n"));
}

namespace {

// One run on the stack of kind `K` with the probe `P`.
template <class K, class P>
SimResult simulate_on(const config::Experiment& x, Tracer* tracer) {
  const auto wall0 = std::chrono::steady_clock::now();
  sg::Engine& e = make_engine();
  const Platform p =
      build_platform(x.machine.clock_hz, x.workload.link_bandwidth_bps, x.workload.link_latency_s);
  World<K, P> w(x);
  w.r.clock_hz = x.machine.clock_hz;
  w.ledger.fns = x.stack.fns;
  w.acct.attach_ledger(&w.ledger);
  w.tracer = tracer;
  if (tracer != nullptr) w.acct.attach_listener(tracer);
  // One actor for the host's CPU: the sender, and the handlers that preempt it.
  sg::Actor::create("sender", p.host, [&w] { sender_main(w); });
  e.run();

  SimResult r = w.r;
  // Every cycle of the run belongs to a stage: what none explains is idle.
  // The engine has no idle time but ENOBUFS sleep, so this is 0 up to the
  // rounding of summing a run's cycles (a test holds every shipped
  // experiment to it); below a millionth of the run it is that rounding.
  const double run_cycles = r.elapsed_s * x.machine.clock_hz;
  const double unexplained = run_cycles - models::total(r.cycles);
  r.cycles[static_cast<size_t>(Stage::idle)] =
      std::abs(unexplained) > 1e-6 * run_cycles ? unexplained : 0;
  r.ledger = w.ledger;
  r.undetermined = undetermined_uses(x, w.acct.uses());
  r.ledger.add(models::kIdleFn, models::CostKind::idle, r.cycles[static_cast<size_t>(Stage::idle)]);
  if (w.icache)
    r.icache_sets = models::attribute_icache(w.icache->cache(), *x.code, *x.stack.fns, r.ledger);
  const auto& c = w.stack.counters();
  if (x.workload.dest == config::Dest::wire) {
    // Frames onto the wire: the run ends when the last has left.
    r.delivered = r.packets;
    r.delivered_bytes = r.delivered * x.workload.payload;
  } else {
    r.delivered = static_cast<int64_t>(c.delivered);
    r.delivered_bytes = static_cast<int64_t>(c.delivered_bytes);
  }
  if (workload::uses_ring(x.workload.dest)) {
    // The peer has every frame but those whose last bit left within one
    // link latency of the end (or had not yet left).
    int64_t on_the_way = 0;
    for (double d : w.in_flight)
      if (d + x.workload.link_latency_s > w.t_end) ++on_the_way;
    r.peer_frames = w.frames_out - on_the_way;
  }
  r.drops = c.drops;
  r.interval_kpps_cv = w.rate.cv(w.t_end - r.elapsed_s, r.elapsed_s);
  spdlog::debug("{} packets in {} batches, {} executions; {} interrupts", w.r.packets, w.batches,
                w.executions, w.r.interrupts);
  if (w.icache) {
    const auto& rc = w.icache->replay_counts();
    spdlog::debug(
        "I-cache: {} fetch sequences replayed ({} known to hold from the runs before, {} found "
        "to by comparing sets), {} simulated, the tree started over {} times; {} settles' "
        "events a batch seen before",
        rc.replayed, rc.chained, rc.compared, rc.simulated, rc.forgotten, w.icache->batch_hits());
    r.l1i_misses = static_cast<int64_t>(w.icache->cache().stats().l1_misses);
    r.l2_misses = static_cast<int64_t>(w.icache->cache().stats().l2_misses);
  }
  // The optional models' columns, from each one that is on.
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    const auto& m = std::get<std::unique_ptr<M>>(w.optional);
    if (!m) return;
    const auto values = m->columns(r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0);
    for (size_t i = 0; i < values.size(); ++i)
      r.model_columns.emplace_back(std::string(M::kColumns[i].name), values[i]);
  });
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

}  // namespace

SimResult simulate(const config::Experiment& x, Tracer* tracer) {
  // The stack the experiment's profile names (stack.kind) runs.
  SimResult r;
  if (!stacks::with_stack(config::stack_of(x), [&]<class K>(std::type_identity<K>) {
        r = with_probe(x, tracer, [&]<class P>(std::type_identity<P>) {
          return simulate_on<K, P>(x, tracer);
        });
      }))
    throw std::logic_error(fmt::format("no stack named '{}'", config::stack_of(x)));
  return r;
}

double link_transfer_time(double bandwidth_bps, double latency_s, double bytes) {
  sg::Engine& e = make_engine();
  const Platform p = build_platform(1e9, bandwidth_bps, latency_s);
  double took = -1;
  auto* box = sg::Mailbox::by_name("probe");
  sg::Actor::create("probe-sender", p.host, [box, bytes] {
    static int token = 0;
    box->put(&token, static_cast<uint64_t>(bytes));
  });
  sg::Actor::create("probe-receiver", p.peer, [box, &took] {
    const double t0 = sg::Engine::get_clock();
    box->get<int>();
    took = sg::Engine::get_clock() - t0;
  });
  e.run();
  return took;
}

}  // namespace simloop::engine

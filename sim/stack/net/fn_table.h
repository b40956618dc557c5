// A stack's functions, as everything outside the stack sees them.
//
// A stack reports function entry and exit through its probe with an FnId:
// the function's index in the stack's own FnTable. The table says what each
// function is called, which stage its cycles are charged to, what part of
// a packet's path it does (PathRole) and what role it plays to the models
// (FnRole), so the timing models, the engine, calibration, code layouts and
// explain work from the table and never name a function of one stack.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace simloop::net {

// A stack function: its index in its stack's FnTable.
enum class FnId : uint8_t {};

// How many functions one stack may report. Fixed so that per-function
// tables in the models are plain arrays (the models index them per event);
// with the code around them (sim/layout/code.h) at most 64 owners, one bit each
// in a fetch plan.
inline constexpr size_t kMaxFns = 56;

constexpr size_t index(FnId f) {
  return static_cast<size_t>(f);
}
constexpr FnId fn_at(size_t i) {
  return static_cast<FnId>(i);
}

// What a function is to the models beyond its stage.
enum class FnRole : uint8_t {
  plain,
  syscall,     // the send system call's in-kernel body: a packet's path starts here
  completion,  // transmit completion: runs in the driver or in an interrupt
               // handler, which decides its stage, and owns the frees it does
};

// What part of a packet's path a function does, in words every stack
// shares, so that functions of two stacks line up (BSD's udp_output beside
// Linux's udp_sendmsg and udp_send_skb): `simloop explain` reads a
// difference across stacks part by part. In path order; each stack's table
// gives every one of its functions one (unset is none, which no table
// keeps: see has_path_roles).
enum class PathRole : uint8_t {
  unset,
  user,        // the sender's own loop, in user space
  syscall,     // the send system call: entry, exit, its in-kernel body
  socket,      // the socket layer's send: checks, user data into the stack's buffers
  udp_output,  // the UDP header, the datagram made
  route,       // the route lookup of a send
  ip_output,   // the IP header, the output checks and hooks
  link,        // the link layer: the neighbour, the Ethernet header
  device,      // the device: queue, driver, loopback, transmit completion
  softirq,     // the deferred run over looped-back input (netisr, NET_RX)
  ip_input,    // IP's header checks and delivery of an input packet
  udp_input,   // UDP's checks, the socket lookup, the append to its queue
  receive,     // the receiver's system call and the copy to it
  buffers,     // buffer allocation and free (mbufs, sk_buffs, pages)
  helpers,     // checksum, copy and header access, wherever they are called
  idle,        // not code: ENOBUFS sleep, time nothing explains
  count
};
inline constexpr size_t kPathRoleCount = static_cast<size_t>(PathRole::count);

// The role's name in outputs ("udp output").
constexpr std::string_view path_role_name(PathRole r) {
  constexpr std::array<std::string_view, kPathRoleCount> names = {
      "unset",     "user loop", "system call", "socket",  "UDP output", "route",
      "IP output", "link",      "device",      "softirq", "IP input",   "UDP input",
      "receive",   "buffers",   "helpers",     "idle"};
  return r < PathRole::count ? names[static_cast<size_t>(r)] : std::string_view{};
}

struct FnInfo {
  std::string_view name;   // the function's name in the real stack's source
  std::string_view stage;  // the stage its own cycles are charged to (models::Stage names)
  PathRole path_role = PathRole::unset;  // what part of the path it does
  FnRole role = FnRole::plain;
};

// Whether every function of `fns` says its part of the path (a table's
// static_assert).
constexpr bool has_path_roles(std::span<const FnInfo> fns) {
  for (const FnInfo& f : fns)
    if (f.path_role == PathRole::unset || f.path_role >= PathRole::count) return false;
  return true;
}

// What a stack calls one of the stages its functions are charged to, where
// its own word differs from the stage's (models::Stage names): a label of
// at most 10 characters for breakdowns, what the stage holds on it, and the
// word the stack's outputs name the stage by (result columns cycles_<word>,
// a trace's slices, plots; letters, digits and '_'), empty where they keep
// the stage's name.
struct StageName {
  std::string_view stage;
  std::string_view label;
  std::string_view note;
  std::string_view word = {};
};

// A name of simloop's outputs that a stack says its own way (the outputs'
// names are the BSD stack's words): a drop (net::drop_name, the result
// column drop_<name>) or a helper of the code around the stack's functions
// (the function ledger's rows, sim/layout/code.h).
struct OwnWord {
  std::string_view of;    // the outputs' name
  std::string_view word;  // the stack's
};

// What a trace counts after each packet: the NIC ring's frames, the input
// queue of looped-back packets, the receiving socket's queue, and the bytes
// the sending socket holds against its send buffer (a stack whose sender
// waits for send space).
enum class Gauge : uint8_t { nic_ring, input_queue, receive_queue, send_buffer, count };
inline constexpr size_t kGaugeCount = static_cast<size_t>(Gauge::count);

// One counter of a stack's trace: the gauge, its name and its unit.
struct GaugeName {
  Gauge gauge;
  std::string_view name;
  std::string_view unit;
};

// The counters of a stack whose table names none.
inline constexpr std::array<GaugeName, 3> kDefaultGauges = {{
    {Gauge::nic_ring, "NIC ring", "frames"},
    {Gauge::input_queue, "netisr queue", "packets"},
    {Gauge::receive_queue, "socket buffer", "bytes"},
}};

// A stack's own words (all optional): for stages, drops and helpers, and
// the counters its trace shows.
struct StackWords {
  std::span<const StageName> stages = {};
  std::span<const OwnWord> drops = {};
  std::span<const OwnWord> helpers = {};
  std::span<const GaugeName> gauges = kDefaultGauges;
};

class FnTable {
 public:
  constexpr FnTable(std::string_view stack, std::span<const FnInfo> fns, StackWords words = {})
      : stack_(stack), fns_(fns), words_(words) {}
  constexpr FnTable(std::string_view stack, std::span<const FnInfo> fns,
                    std::span<const StageName> stage_names)
      : FnTable(stack, fns, StackWords{.stages = stage_names}) {}

  // The stack's name ("bsd").
  constexpr std::string_view stack() const { return stack_; }
  constexpr size_t size() const { return fns_.size(); }
  constexpr const FnInfo& operator[](FnId f) const { return fns_[index(f)]; }
  constexpr std::string_view name(FnId f) const { return fns_[index(f)].name; }
  constexpr std::span<const FnInfo> fns() const { return fns_; }

  constexpr std::optional<FnId> find(std::string_view name) const {
    for (size_t i = 0; i < fns_.size(); ++i)
      if (fns_[i].name == name) return fn_at(i);
    return std::nullopt;
  }
  constexpr PathRole path_role(FnId f) const { return fns_[index(f)].path_role; }
  // The first function with role `r`, if any.
  constexpr std::optional<FnId> with_role(FnRole r) const {
    for (size_t i = 0; i < fns_.size(); ++i)
      if (fns_[i].role == r) return fn_at(i);
    return std::nullopt;
  }
  // The first function charged to `stage`, if any.
  constexpr std::optional<FnId> first_in(std::string_view stage) const {
    for (size_t i = 0; i < fns_.size(); ++i)
      if (fns_[i].stage == stage) return fn_at(i);
    return std::nullopt;
  }
  // The stack's own name for `stage`, or nullptr where it uses the stage's.
  constexpr const StageName* stage_name(std::string_view stage) const {
    for (const StageName& n : words_.stages)
      if (n.stage == stage) return &n;
    return nullptr;
  }
  constexpr std::span<const StageName> stage_names() const { return words_.stages; }
  // The word its outputs name `stage` (a models::Stage name) by.
  constexpr std::string_view stage_word(std::string_view stage) const {
    const StageName* n = stage_name(stage);
    return n != nullptr && !n->word.empty() ? n->word : stage;
  }
  // The word its outputs name drop `drop` (net::drop_name) by.
  constexpr std::string_view drop_word(std::string_view drop) const {
    return own(words_.drops, drop);
  }
  // The word its outputs name helper `helper` (sim/layout/code.h) by.
  constexpr std::string_view helper_word(std::string_view helper) const {
    return own(words_.helpers, helper);
  }
  // The counters its trace shows, in order.
  constexpr std::span<const GaugeName> gauges() const { return words_.gauges; }
  constexpr const StackWords& words() const { return words_; }

 private:
  static constexpr std::string_view own(std::span<const OwnWord> words, std::string_view of) {
    for (const OwnWord& w : words)
      if (w.of == of) return w.word;
    return of;
  }
  std::string_view stack_;
  std::span<const FnInfo> fns_;
  StackWords words_;
};

}  // namespace simloop::net

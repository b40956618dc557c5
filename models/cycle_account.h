// Turns the stack's probe events into cycles, by stage. This is the timing
// model of the functional stack: the same events the stack really produced
// (functions run, bytes copied and where, buffers allocated, misaligned
// header accesses) are priced with a machine's and a stack's cost tables.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "models/costs.h"
#include "models/fetch_plan.h"
#include "models/fetch_replay.h"
#include "models/fn_ledger.h"
#include "models/icache.h"
#include "models/l1d_copies.h"
#include "sim/layout/code.h"
#include "sim/layout/layout.h"
#include "sim/stack/net/probe.h"

namespace simloop::models {

enum class Stage : uint8_t {
  user,       // the sender's loop
  syscall,    // entry and exit
  socket,     // sendto, sosend_dgram, m_uiotombuf
  udp,        // udp_output
  ip,         // ip_output
  ether,      // ether_output
  driver,     // hand-off to the NIC ring
  loop,       // looutput, if_simloop
  netisr,     // netisr dispatch
  input,      // ip_input, udp_input, sbappend
  receive,    // soreceive (the receiver's side)
  copy,       // bytes copied, by size and alignment
  mbuf,       // buffer allocation and free
  unaligned,  // misaligned header access penalties
  cache,      // I-cache miss stalls
  interrupt,  // interrupt handlers, stolen from the sender
  sleep,      // the CPU idle while the sender sleeps after ENOBUFS
  idle,       // the CPU idle for any other reason (time no stage explains)
  // The stages of optional models (models/optional_models.h): reported
  // only when their model is on.
  tlb,     // data TLB miss stalls (models/dtlb.h)
  branch,  // branch target mispredictions (models/branch_targets.h)
  count
};
inline constexpr size_t kStageCount = static_cast<size_t>(Stage::count);
std::string_view stage_name(Stage s);
std::optional<Stage> parse_stage(std::string_view name);
// The stage of function `fn` of a stack with table `fns` (its FnInfo::stage;
// a completion function's stage when it runs in an interrupt handler).
Stage stage_of(const net::FnTable& fns, net::FnId fn);

using FnStages = std::array<Stage, net::kMaxFns>;
// stage_of() of each function of `fns`, by FnId.
FnStages stages_of(const net::FnTable& fns);

using StageCycles = std::array<double, kStageCount>;

// Sees every cycle as it is charged (for a timeline): the stage and amount,
// and the stack's functions as they are entered and left.
struct CycleListener {
  virtual ~CycleListener() = default;
  virtual void cycles(Stage s, double c) = 0;
  virtual void entered(net::FnId fn) = 0;
  virtual void left(net::FnId fn) = 0;
};

// Where the CPU runs the stack's code: in a thread (the sender's system
// call, the driver reclaiming frames as it queues) or in an interrupt
// handler. Transmit completion is charged to the driver or the interrupt.
enum class Context : uint8_t { thread, interrupt };

static_assert(kCodeCount == kOwnerCount && static_cast<size_t>(Code::user_loop) == kUserLoopOwner);
// For each piece of code (kCodeCount of them), the address ranges of its
// hot instructions.
using CodeMap = std::vector<CodeRanges>;

inline double total(const StageCycles& c) {
  double t = 0;
  for (double x : c) t += x;
  return t;
}

// The other timing models (the I-cache, the data TLB) are probe components
// of their own beside the account (models/tee.h); they charge their stalls
// through add() or add_in_place(), and to the ledger through charge().
class CycleAccount : public net::NullProbe {
 public:
  CycleAccount(const MachineCosts& machine, const StackCosts& stack)
      : machine_(machine),
        stack_(stack),
        fn_stage_(stages_of(*stack.fns)),
        completion_(stack.fns->with_role(net::FnRole::completion).value_or(kNoFn)) {
    if (machine.copy_l1d_bytes > 0)
      l1d_.emplace(machine.copy_l1d_bytes, machine.copy_l1d_ways, machine.line_bytes);
  }

  // Every hook that may tell the listener has a `kListen` parameter: false
  // leaves the listener's test out, for a probe made for runs that have
  // none (QuietAccount below); the charges are the same.
  template <bool kListen = true>
  void enter(net::FnId fn) {
    open<kListen>(fn);
    ++uses_.calls[net::index(fn)];
    const double c = stack_.fn_cycles[net::index(fn)] * fn_scale_;
    add<kListen>(stage_in_context(fn), c);
    ledger(net::index(fn), CostKind::event, c);
  }
  // A call that finds nothing to do: none of the function's fixed cost (the
  // loop that polled pays for looking, in machine.user_loop_cycles).
  template <bool kListen = true>
  void enter_idle(net::FnId fn) {
    open<kListen>(fn);
  }
  // The stack's functions.
  const net::FnTable& fns() const { return *stack_.fns; }
  // From now on every cycle is also charged to a function (models/fn_ledger.h).
  void attach_ledger(FnLedger* ledger) { ledger_ = ledger; }
  // From now on `listener` sees every cycle as it is charged (nullptr: none).
  void attach_listener(CycleListener* listener) { listener_ = listener; }
  template <bool kListen = true>
  void leave(net::FnId fn) {
    if (kListen && listener_ != nullptr) listener_->left(fn);
    if (depth_ == completion_at_) completion_at_ = 0;
    if (depth_ > 0) --depth_;
  }
  template <bool kListen = true>
  void copy(net::CopyKind kind, const void* src, const void* dst, size_t len) {
    const auto s = reinterpret_cast<uintptr_t>(src);
    const auto d = reinterpret_cast<uintptr_t>(dst);
    double c =
        machine_.copy_setup_cycles + static_cast<double>(len) * machine_.copy_cycles_per_byte;
    uses_.add(Price::copy_setup, 1);
    uses_.add(Price::copy_per_byte, static_cast<double>(len));
    if (kind == net::CopyKind::to_user) {
      uses_.add(Price::copy_to_user_per_byte, static_cast<double>(len));
      c += static_cast<double>(len) * machine_.copy_to_user_extra_cycles_per_byte;
    }
    if (l1d_) {
      const auto missed = static_cast<double>(l1d_->copy(s, d, len));
      uses_.add(Price::copy_l1d_miss_per_byte, missed);
      c += missed * machine_.copy_l1d_miss_extra_cycles_per_byte;
    }
    ledger(caller(Code::copy), CostKind::copy, c);
    if (((s | d) & 3) != 0) {
      uses_.add(Price::copy_unaligned_per_byte, static_cast<double>(len));
      const double extra = static_cast<double>(len) * machine_.copy_unaligned_cycles_per_byte;
      c += extra;
      ledger(caller(Code::copy), CostKind::misaligned, extra);
    }
    add<kListen>(Stage::copy, c);
  }
  template <bool kListen = true>
  void cksum(const void* /*addr*/, size_t len) {
    uses_.add(Price::cksum_per_byte, static_cast<double>(len));
    add<kListen>(current_stage(), static_cast<double>(len) * stack_.cksum_cycles_per_byte);
    ledger(caller(Code::cksum), CostKind::per_byte,
           static_cast<double>(len) * stack_.cksum_cycles_per_byte);
  }
  template <bool kListen = true>
  void alloc(net::Obj obj, const void* /*addr*/) {
    // The BSD zones' prices; an sk_buff's are its functions' (__alloc_skb).
    const double c = obj == net::Obj::mbuf      ? stack_.mbuf_alloc_cycles
                     : obj == net::Obj::cluster ? stack_.cluster_alloc_cycles
                                                : 0;
    if (obj == net::Obj::mbuf) uses_.add(Price::mbuf_alloc, 1);
    if (obj == net::Obj::cluster) uses_.add(Price::cluster_alloc, 1);
    add<kListen>(Stage::mbuf, c);
    ledger(caller(Code::mbuf_alloc), CostKind::event, c);
  }
  template <bool kListen = true>
  void free(net::Obj obj, const void* /*addr*/) {
    // Frees by transmit completion belong to it (the handler or the driver).
    const Stage s = completion_at_ > 0 ? stage_in_context(completion_) : Stage::mbuf;
    const double c = obj == net::Obj::mbuf      ? stack_.mbuf_free_cycles
                     : obj == net::Obj::cluster ? stack_.cluster_free_cycles
                                                : 0;
    if (obj == net::Obj::mbuf) uses_.add(Price::mbuf_free, 1);
    if (obj == net::Obj::cluster) uses_.add(Price::cluster_free, 1);
    add<kListen>(s, c);
    ledger(caller(Code::mbuf_free), CostKind::event, c);
  }
  void header(net::FnId fn, const void* addr, unsigned size, bool /*write*/) {
    const auto a = reinterpret_cast<uintptr_t>(addr);
    if ((a & (size - 1)) == 0) [[likely]]
      return;
    misaligned_header(fn, a, size);
  }
  // Out of line: the header hook is inlined into every header access of
  // the stack, and most are aligned.
  [[gnu::noinline]] void misaligned_header(net::FnId fn, uintptr_t a, unsigned size) {
    uses_.add(Price::unaligned_access, 1);
    add(Stage::unaligned, machine_.unaligned_access_cycles);
    ledger(net::index(fn), CostKind::misaligned, machine_.unaligned_access_cycles);
    const auto line = static_cast<uintptr_t>(machine_.line_bytes);
    if (a % line + size > line) {
      uses_.add(Price::unaligned_line_cross, 1);
      add(Stage::unaligned, machine_.unaligned_line_cross_cycles);
      ledger(net::index(fn), CostKind::misaligned, machine_.unaligned_line_cross_cycles);
    }
  }

  // Code around the stack ran, priced by its caller (models/sender_costs.h):
  // counted as a use of its price.
  void run(Code c) {
    if (c == Code::user_loop) uses_.add(Price::user_loop, 1);
    if (c == Code::syscall_entry) uses_.add(Price::syscall_entry, 1);
    if (c == Code::syscall_exit) uses_.add(Price::syscall_exit, 1);
  }
  // How much the run has used each price so far.
  const PriceUses& uses() const { return uses_; }

  template <bool kListen = true>
  void add(Stage s, double cycles) {
    cycles_[static_cast<size_t>(s)] += cycles;
    if (kListen && listener_ != nullptr) listener_->cycles(s, cycles);
  }
  // Lets `add_to(double& sum)` add to stage `s`'s running sum in place (a
  // model whose stalls must sum in its own order, bit for bit); the listener
  // sees the difference.
  template <class F>
  void add_in_place(Stage s, F&& add_to) {
    double& c = cycles_[static_cast<size_t>(s)];
    const double before = c;
    add_to(c);
    if (listener_ != nullptr && c != before) listener_->cycles(s, c - before);
  }
  // Charges `cycles` to stage `s` and, in the function ledger, to `fn` (a
  // ledger function: an owner slot, sim/layout/code.h) as kind `k`.
  void charge(Stage s, size_t fn, CostKind k, double cycles) {
    add(s, cycles);
    ledger(fn, k, cycles);
  }
  // Who a helper works for: the innermost stack function, else the helper.
  size_t caller(Code helper) const {
    if (depth_ == 0) return static_cast<size_t>(helper);
    return net::index(stack_fns_[std::min(depth_, kMaxDepth) - 1]);
  }
  void set_context(Context c) {
    context_ = c;
    rescale();
  }
  // Whether the thread's work from now on is for a later message of one
  // system call (StackCosts::in_call_factor); off when the call returns.
  void in_call(bool later) {
    in_call_ = later;
    rescale();
  }
  Context context() const { return context_; }
  // Cycles charged since the last take(), by stage; then starts over.
  // Components that defer charges settle first (Tee::settle).
  StageCycles take() {
    StageCycles c = cycles_;
    cycles_ = {};
    return c;
  }
  const StageCycles& pending() const { return cycles_; }
  const MachineCosts& machine() const { return machine_; }

 private:
  static constexpr size_t kMaxDepth = 16;
  // An interrupt handler is not the call's work: it runs at full price.
  void rescale() {
    fn_scale_ = in_call_ && context_ == Context::thread ? stack_.in_call_factor : 1.0;
  }
  template <bool kListen>
  void open(net::FnId fn) {
    if (depth_ < kMaxDepth) stack_fns_[depth_] = fn;
    ++depth_;
    if (fn == completion_ && completion_at_ == 0) completion_at_ = depth_;
    if (kListen && listener_ != nullptr) listener_->entered(fn);
  }
  void ledger(size_t fn, CostKind k, double c) {
    if (ledger_ != nullptr) ledger_->add(fn, k, c);
  }
  Stage current_stage() const {
    if (depth_ == 0) return Stage::mbuf;
    return stage_in_context(stack_fns_[std::min(depth_, kMaxDepth) - 1]);
  }
  // Transmit completion's function and every function it calls (the
  // Linux stack's sk_buff frees) are its work: the handler's, or the
  // driver's when no interrupt runs it.
  Stage stage_in_context(net::FnId fn) const {
    if (completion_at_ > 0)
      return context_ == Context::interrupt ? Stage::interrupt : Stage::driver;
    return fn_stage_[net::index(fn)];
  }

  const MachineCosts& machine_;
  const StackCosts& stack_;
  FnStages fn_stage_;
  // Transmit completion's function: one compare on every entry, so no
  // std::optional (kNoFn: the stack has none).
  static constexpr net::FnId kNoFn{0xff};
  static_assert(net::kMaxFns <= 0xff);
  net::FnId completion_;
  std::array<net::FnId, kMaxDepth> stack_fns_{};
  size_t depth_ = 0;
  size_t completion_at_ = 0;  // the depth transmit completion runs at (0: not running)
  Context context_ = Context::thread;
  bool in_call_ = false;
  double fn_scale_ = 1.0;  // what enter() charges of a function's cycles
  StageCycles cycles_{};
  PriceUses uses_;
  std::optional<L1dCopies> l1d_;  // machine.copy.l1d_bytes > 0
  FnLedger* ledger_ = nullptr;
  CycleListener* listener_ = nullptr;
};

// The account as the whole probe of a run with no other model and no
// listener (no timeline): the same hooks and the same charges, in the same
// order, without the listener's test on every event. A run that has a
// listener uses the account itself.
class QuietAccount : public net::NullProbe {
 public:
  explicit QuietAccount(CycleAccount& acct) : a_(acct) {}
  void enter(net::FnId fn) { a_.enter<false>(fn); }
  void enter_idle(net::FnId fn) { a_.enter_idle<false>(fn); }
  void leave(net::FnId fn) { a_.leave<false>(fn); }
  void copy(net::CopyKind kind, const void* src, const void* dst, size_t len) {
    a_.copy<false>(kind, src, dst, len);
  }
  void cksum(const void* addr, size_t len) { a_.cksum<false>(addr, len); }
  void alloc(net::Obj obj, const void* addr) { a_.alloc<false>(obj, addr); }
  void free(net::Obj obj, const void* addr) { a_.free<false>(obj, addr); }
  void header(net::FnId fn, const void* addr, unsigned size, bool write) {
    a_.header(fn, addr, size, write);
  }
  void run(Code c) { a_.run(c); }
  void add(Stage s, double cycles) { a_.add<false>(s, cycles); }
  void in_call(bool later) { a_.in_call(later); }

 private:
  CycleAccount& a_;
};

// The code map of a linked layout for a stack with table `fns`, by owner slot.
CodeMap code_map(const LinkedLayout& linked, const net::FnTable& fns);

}  // namespace simloop::models

// models::Tee: events reach every part, in the order listed, only the parts
// that have the hook, and no part given by a null pointer.
#include "models/tee.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/cycle_account.h"
#include "models/fn_ledger.h"
#include "sim/stack/bsd/fns.h"
#include "sim/stack/workload/driver.h"

namespace {

using namespace simloop;
using models::Tee;

// Notes each event it has a hook for, with its name.
struct Notes : net::NullProbe {
  Notes(std::vector<std::string>& log, std::string name) : out(log), who(std::move(name)) {}
  std::vector<std::string>& out;
  std::string who;
  void enter(net::FnId fn) { out.push_back(who + " enter " + name(fn)); }
  void leave(net::FnId fn) { out.push_back(who + " leave " + name(fn)); }
  static std::string name(net::FnId fn) { return std::string(net::bsd::fn_table().name(fn)); }
  void copy(net::CopyKind /*k*/, const void* /*s*/, const void* /*d*/, size_t len) {
    out.push_back(who + " copy " + std::to_string(len));
  }
  void drop(net::Drop d) { out.push_back(who + " drop " + std::string(net::drop_name(d))); }
};

// Only after_enter, after_leave, run and settle: no probe base at all.
struct Late {
  std::vector<std::string>& out;
  void after_enter(net::FnId fn) {
    out.push_back("late after_enter " + std::string(net::bsd::fn_table().name(fn)));
  }
  void after_leave(net::FnId fn) {
    out.push_back("late after_leave " + std::string(net::bsd::fn_table().name(fn)));
  }
  void run(models::Code c) { out.push_back("late run " + std::to_string(static_cast<int>(c))); }
  void settle() { out.push_back("late settle"); }
};

TEST(Tee, EventsGoToEachPartInOrderAndAfterHooksFollowEveryPart) {
  std::vector<std::string> log;
  Notes a(log, "a"), b(log, "b");
  Late late{log};
  Tee<Late&, Notes&, Notes*> tee(late, a, &b);
  tee.enter(net::bsd::id(net::bsd::Fn::udp_output));
  tee.copy(net::CopyKind::uiomove, nullptr, nullptr, 18);
  tee.leave(net::bsd::id(net::bsd::Fn::udp_output));
  tee.run(models::Code::user_loop);
  tee.drop(net::Drop::nic_full);
  tee.settle();
  tee.cksum(nullptr, 4);  // nobody has the hook (Notes' is NullProbe's): nothing noted
  const std::vector<std::string> want = {
      "a enter udp_output",
      "b enter udp_output",
      "late after_enter udp_output",
      "a copy 18",
      "b copy 18",
      "a leave udp_output",
      "b leave udp_output",
      "late after_leave udp_output",
      "late run " + std::to_string(static_cast<int>(models::Code::user_loop)),
      "a drop nic_full",
      "b drop nic_full",
      "late settle"};
  EXPECT_EQ(log, want);
}

// A call that finds nothing to do: a part with enter_idle gets it, a part
// without sees an ordinary entry, and after_enter follows either way.
struct Idle : Notes {
  using Notes::Notes;
  void enter_idle(net::FnId fn) { out.push_back(who + " idle " + name(fn)); }
};

TEST(Tee, AnIdleCallIsAnEntryToAPartWithoutTheHook) {
  std::vector<std::string> log;
  Notes a(log, "a");
  Idle b(log, "b");
  Late late{log};
  Tee<Notes&, Idle&, Late&> tee(a, b, late);
  tee.enter_idle(net::bsd::id(net::bsd::Fn::netisr_dispatch));
  tee.leave(net::bsd::id(net::bsd::Fn::netisr_dispatch));
  const std::vector<std::string> want = {
      "a enter netisr_dispatch", "b idle netisr_dispatch",  "late after_enter netisr_dispatch",
      "a leave netisr_dispatch", "b leave netisr_dispatch", "late after_leave netisr_dispatch"};
  EXPECT_EQ(log, want);
}

// The native loop polls the netisr after every send and reads the socket
// until it is empty. On the wire both polls find nothing; on loopback the
// netisr has the datagram and the second read finds nothing. Each call is
// made (a probe counts it, the I-cache fetches its code), and only the
// calls that do work cost the function's fixed cycles.
TEST(Tee, AnEmptyPollCostsNoneOfTheFunctionsFixedCycles) {
  using net::bsd::Fn;
  for (const workload::Dest dest : {workload::Dest::wire, workload::Dest::loopback}) {
    SCOPED_TRACE(workload::dest_name(dest));
    models::MachineCosts m;
    models::StackCosts s{.fns = &net::bsd::kFnTable};
    s.fn_cycles[static_cast<size_t>(Fn::netisr_dispatch)] = 900;
    s.fn_cycles[static_cast<size_t>(Fn::soreceive)] = 700;
    s.fn_cycles[static_cast<size_t>(Fn::udp_output)] = 100;
    models::CycleAccount acct(m, s);
    models::FnLedger ledger;
    acct.attach_ledger(&ledger);
    net::CountingProbe count;
    using Probe = Tee<models::CycleAccount&, net::CountingProbe&>;
    Probe probe(acct, count);
    workload::Driver<Probe> d(probe, {.path = {.dest = dest}, .payload = 18}, {});
    constexpr int kPackets = 10;
    for (int i = 0; i < kPackets; ++i) ASSERT_TRUE(d.send().ok());
    auto event = [&](Fn f) {
      return ledger.cycles[static_cast<size_t>(f)][static_cast<size_t>(models::CostKind::event)];
    };
    const bool idle = dest == workload::Dest::wire;
    EXPECT_EQ(count.entered[static_cast<size_t>(Fn::netisr_dispatch)], uint64_t{kPackets});
    EXPECT_EQ(count.entered[static_cast<size_t>(Fn::soreceive)],
              uint64_t{idle ? 1u : 2u} * kPackets);
    EXPECT_DOUBLE_EQ(event(Fn::netisr_dispatch), idle ? 0.0 : 900.0 * kPackets);
    EXPECT_DOUBLE_EQ(event(Fn::soreceive), idle ? 0.0 : 700.0 * kPackets);
    EXPECT_DOUBLE_EQ(event(Fn::udp_output), 100.0 * kPackets);
  }
}

TEST(Tee, APartGivenByANullPointerIsAbsent) {
  std::vector<std::string> log;
  Notes a(log, "a");
  Tee<Notes&, Notes*> tee(a, nullptr);
  tee.enter(net::bsd::id(net::bsd::Fn::ip_output));
  tee.leave(net::bsd::id(net::bsd::Fn::ip_output));
  EXPECT_EQ(log, (std::vector<std::string>{"a enter ip_output", "a leave ip_output"}));
}

TEST(Tee, PricesAsTheAccountAloneDoes) {
  models::MachineCosts m;
  m.copy_setup_cycles = 40;
  m.copy_cycles_per_byte = 0.5;
  m.user_loop_cycles = 60;
  models::StackCosts s{.fns = &net::bsd::kFnTable};
  s.fn_cycles[static_cast<size_t>(net::bsd::Fn::udp_output)] = 100;
  s.cksum_cycles_per_byte = 1;
  models::CycleAccount alone(m, s), inside(m, s);
  std::vector<std::string> log;
  Notes n(log, "n");
  Tee<models::CycleAccount&, Notes&> tee(inside, n);
  const char buf[64] = {};
  auto run = [&](auto& probe) {
    probe.enter(net::bsd::id(net::bsd::Fn::udp_output));
    probe.copy(net::CopyKind::uiomove, buf, buf + 1, 20);  // off 4-byte alignment
    probe.cksum(buf, 28);
    probe.add(models::Stage::user, m.user_loop_cycles);
    probe.leave(net::bsd::id(net::bsd::Fn::udp_output));
  };
  run(alone);
  run(tee);
  EXPECT_EQ(alone.pending(), inside.pending());
  EXPECT_DOUBLE_EQ(models::total(inside.pending()), 100 + 40 + 10 + 28 + 60);
  EXPECT_EQ(log.size(), 3u);  // enter, copy, leave
}

}  // namespace

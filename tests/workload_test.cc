// The one Path through the stack (names, parsing, limits, the stack options
// it sets) and the one Driver of the ttcp loop (buffer, sentinels, warm-up,
// outcomes).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/stack/net/probe.h"
#include "sim/stack/workload/driver.h"
#include "sim/stack/workload/path.h"

namespace simloop::workload {
namespace {

TEST(Path, ParsesEveryFieldAndWritesThemBack) {
  const Path p = Path::parse("self/copy-down/m_dup/2/send-only/5");
  EXPECT_EQ(p.dest, Dest::self);
  EXPECT_EQ(p.align, net::AlignPolicy::copy_down);
  EXPECT_EQ(p.copy, net::LoopCopy::m_dup);
  EXPECT_EQ(p.sockaddr_misalign, 2);
  EXPECT_EQ(p.service, Service::send_only);
  EXPECT_EQ(p.buffer_misalign, 5);
  EXPECT_EQ(p.spec(), "self/copy-down/m_dup/2/send-only/5");
  EXPECT_EQ(Path::parse(p.spec()), p);
  // Fields left out are at their defaults.
  EXPECT_EQ(Path::parse("wire/none/m_copy"), Path{.dest = Dest::wire});
  EXPECT_EQ(Path{}.spec(), "loopback/none/m_copy/0/full/0");
}

TEST(Path, NamesEveryValueOfEveryField) {
  EXPECT_EQ(Path::names("dest"), dest_names());
  EXPECT_EQ(Path::names("align"), net::align_policy_names());
  EXPECT_EQ(Path::names("copy"), net::loop_copy_names());
  EXPECT_EQ(Path::names("service"), (std::vector<std::string>{"full", "send-only"}));
  EXPECT_EQ(Path::names("sockaddr_misalign").size(), 4u);
  EXPECT_EQ(Path::names("buffer_misalign").size(), 8u);
  for (auto field : Path::kFields)
    for (const auto& name : Path::names(field)) {
      Path p;
      p.set(field, name);
      EXPECT_EQ(p.get(field), name);
    }
  EXPECT_EQ(Path::option("sockaddr_misalign"), "--sockaddr-misalign");
  EXPECT_THROW(Path::names("payload"), std::logic_error);
}

TEST(Path, RefusesAnUnknownNameWithTheValidOnesAndTheNearest) {
  const std::string why = Path::problem("dest", "lopback");
  EXPECT_NE(why.find("unknown destination 'lopback'"), std::string::npos) << why;
  EXPECT_NE(why.find("loopback, broadcast, wire, self, veth"), std::string::npos) << why;
  EXPECT_NE(why.find("did you mean 'loopback'?"), std::string::npos) << why;
  EXPECT_EQ(Path::problem("align", "zzzzzzzz").find("did you mean"), std::string::npos);
  EXPECT_EQ(Path::problem("copy", "m_dup"), "");
  Path p;
  EXPECT_THROW(p.set("buffer_misalign", "8"), PathError);
  EXPECT_THROW(p.set("sockaddr_misalign", "-1"), PathError);
  // The simulated host is not a service a native run can ask for.
  EXPECT_THROW(p.set("service", "simulated"), PathError);
  EXPECT_EQ(p, Path{});
  EXPECT_THROW(Path::parse("wire/none"), PathError);
  EXPECT_THROW(Path::parse("wire/none/m_copy/0/full/0/x"), PathError);
  EXPECT_THROW(Path::parse("wire/none/m_cpy"), PathError);
}

TEST(Path, SetsTheStackOptionsItNames) {
  net::bsd::StackOptions base;
  base.nic_ring = 7;
  base.align = net::AlignPolicy::strict;
  const Path p{.dest = Dest::self, .copy = net::LoopCopy::m_dup, .sockaddr_misalign = 3};
  const net::bsd::StackOptions so = stack_options_for(p, base);
  EXPECT_EQ(so.align, net::AlignPolicy::none);
  EXPECT_EQ(so.loop_copy, net::LoopCopy::m_dup);
  EXPECT_EQ(so.sockaddr_misalign, 3);
  EXPECT_FALSE(so.useloopback);  // to itself through em0
  EXPECT_EQ(so.nic_ring, 7);
  for (Dest d : {Dest::loopback, Dest::broadcast, Dest::wire})
    EXPECT_TRUE(stack_options_for(Path{.dest = d}, base).useloopback);
}

// The largest payload a path says it carries is the largest the stack sends.
TEST(Path, MaxPayloadIsTheStacksOwnLimit) {
  struct Case {
    Dest dest;
    int ether_mtu, so_sndbuf;
  };
  for (const Case& c :
       {Case{Dest::loopback, 1500, 4000}, Case{Dest::broadcast, 1500, 9216},
        Case{Dest::wire, 9000, 9216}, Case{Dest::self, 1500, 9216}, Case{Dest::wire, 1500, 1000}}) {
    const Path path{.dest = c.dest};
    net::bsd::StackOptions so;
    so.ether_mtu = c.ether_mtu;
    so.so_sndbuf = c.so_sndbuf;
    const int max = path.max_payload(so);
    SCOPED_TRACE(path.spec() + " max " + std::to_string(max));
    EXPECT_EQ(path.payload_problem(max, so), "");
    EXPECT_NE(path.payload_problem(max + 1, so), "");
    for (const int payload : {max, max + 1}) {
      net::NullProbe probe;
      Driver<net::NullProbe> d(probe, {.path = path, .payload = payload}, so);
      const Step s = d.send();
      EXPECT_EQ(s.ok(), payload == max);
      if (payload > max) {
        EXPECT_EQ(s.outcome, Outcome::error);
        EXPECT_EQ(s.sent.err, EMSGSIZE);
        EXPECT_NE(d.why(s).find("sendto failed"), std::string::npos);
      }
    }
  }
  EXPECT_NE(Path{}.payload_problem(Path::kMaxPayload + 1, {}), "");
}

TEST(Driver, SendsTheSentinelsAroundTheWarmUpAndTheRun) {
  net::NullProbe probe;
  Driver<net::NullProbe> d(probe, {.path = {}, .payload = 18, .warmup = 25, .sentinels = true}, {});
  EXPECT_EQ(d.start(), "");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(d.send().ok());
  d.finish();
  EXPECT_EQ(d.stack().counters().sent, 1u + 25 + 100 + 1);
  EXPECT_EQ(d.stack().counters().delivered, 1u + 25 + 100 + 1);
}

TEST(Driver, PlacesThePayloadPastAPageStart) {
  for (int skip = 0; skip <= Path::kMaxBufferMisalign; ++skip) {
    net::NullProbe probe;
    Driver<net::NullProbe> d(probe, {.path = {.buffer_misalign = skip}, .payload = 1}, {});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d.payload().data()) % 4096, static_cast<uintptr_t>(skip));
    EXPECT_EQ(d.payload().size(), 1u);
  }
  net::NullProbe probe;
  EXPECT_THROW((Driver<net::NullProbe>(probe, {.path = {.buffer_misalign = 8}, .payload = 1}, {})),
               std::invalid_argument);
}

// A strict-alignment CPU faults on the deep copy's misaligned IP header: the
// run stops, says why, and sends no end sentinel.
TEST(Driver, AFaultStopsTheRun) {
  net::NullProbe probe;
  const Path path{
      .dest = Dest::broadcast, .align = net::AlignPolicy::strict, .copy = net::LoopCopy::m_dup};
  Driver<net::NullProbe> d(probe, {.path = path, .payload = 18, .sentinels = true}, {});
  EXPECT_EQ(d.start(), "");  // sendto() returns before the looped copy's input faults
  const Step s = d.send();
  EXPECT_EQ(s.outcome, Outcome::fault);
  EXPECT_NE(d.why(s).find("alignment fault"), std::string::npos) << d.why(s);
  const uint64_t sent = d.stack().counters().sent;
  d.finish();
  EXPECT_EQ(d.stack().counters().sent, sent);
}

}  // namespace
}  // namespace simloop::workload

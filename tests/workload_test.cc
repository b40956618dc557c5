// The one Path through the stack: names, parsing, limits, the stack options
// it sets.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/stack/net/probe.h"
#include "sim/stack/workload/path.h"
#include "sim/stack/workload/ttcp.h"

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
  EXPECT_NE(why.find("loopback, broadcast, wire, self"), std::string::npos) << why;
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
  net::StackOptions base;
  base.nic_ring = 7;
  base.align = net::AlignPolicy::strict;
  const Path p{.dest = Dest::self, .copy = net::LoopCopy::m_dup, .sockaddr_misalign = 3};
  const net::StackOptions so = stack_options_for(p, base);
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
    net::StackOptions so;
    so.ether_mtu = c.ether_mtu;
    so.so_sndbuf = c.so_sndbuf;
    const int max = path.max_payload(so);
    SCOPED_TRACE(path.spec() + " max " + std::to_string(max));
    EXPECT_EQ(path.payload_problem(max, so), "");
    EXPECT_NE(path.payload_problem(max + 1, so), "");
    for (const int payload : {max, max + 1}) {
      net::NullProbe probe;
      TtcpLoop<net::NullProbe> loop(probe, {path}, so);
      const PageBytes buf(static_cast<size_t>(payload));
      EXPECT_EQ(loop.send(buf.data(), payload).err, payload == max ? 0 : EMSGSIZE);
    }
  }
  EXPECT_NE(Path{}.payload_problem(Path::kMaxPayload + 1, {}), "");
}

}  // namespace
}  // namespace simloop::workload

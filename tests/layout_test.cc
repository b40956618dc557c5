#include "sim/layout/layout.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "models/cycle_account.h"
#include "models/icache.h"
#include "sim/layout/code.h"
#include "sim/stack/bsd/fns.h"
#include "sim/stack/linux/fns.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/stack_set.h"

#ifndef SIMLOOP_SOURCE_DIR
#define SIMLOOP_SOURCE_DIR "."
#endif

namespace simloop::models {
namespace {

namespace fs = std::filesystem;
using Range = std::pair<uint64_t, uint64_t>;

// Four objects whose addresses are worked out by hand below:
//   a.o  align 16  size 0x123  fa1 (sendto) at 0, fa2 (udp_output) at 0x100
//   b.o  align 64  size 0x80   fb1 (ip_output) at 0x10
//   c.o  align 4   size 0x10   no functions
//   d.o  align 16  size 0x200  fd1 (ether_output) at 0x8, fd2 (sendto) at 0x120
// Linked from 0x1000: a [0x1000, 0x1123), b [0x1140, 0x11c0),
// c [0x11c0, 0x11d0), d [0x11d0, 0x13d0).
Layout sample() {
  Layout l;
  l.name = "sample";
  l.text_base = 0x1000;
  l.objects = {
      {"a.o",
       0x123,
       16,
       {{"fa1", "sendto", 0, 0x40, 0x20, 0, 0, {}},
        {"fa2", "udp_output", 0x100, 0x23, 0x23, 1, 0, {}}}},
      {"b.o", 0x80, 64, {{"fb1", "ip_output", 0x10, 0x30, 0x30, 2, 0, {}}}},
      {"c.o", 0x10, 4, {}},
      {"d.o",
       0x200,
       16,
       {{"fd1", "ether_output", 0x8, 0x100, 0x80, 3, 0, {}},
        {"fd2", "sendto", 0x120, 0x40, 0x40, 4, 0, {}}}},
  };
  return l;
}

uint64_t start_of(const LinkedLayout& ll, const std::string& owner, size_t i = 0) {
  return ll.by_owner.at(owner).at(i).start;
}

TEST(LayoutLink, PlacesObjectsAndFunctionsAtHandComputedAddresses) {
  const LinkedLayout ll = link(sample());
  EXPECT_EQ(ll.objects.at("a.o"), Range(0x1000, 0x1123));
  EXPECT_EQ(ll.objects.at("b.o"), Range(0x1140, 0x11c0));  // 0x1123 up to 64
  EXPECT_EQ(ll.objects.at("c.o"), Range(0x11c0, 0x11d0));
  EXPECT_EQ(ll.objects.at("d.o"), Range(0x11d0, 0x13d0));
  ASSERT_EQ(ll.by_owner.at("sendto").size(), 2u);
  EXPECT_EQ(ll.by_owner.at("sendto")[0], (HotRange{0x1000, 0x20, "fa1"}));
  EXPECT_EQ(ll.by_owner.at("sendto")[1], (HotRange{0x12f0, 0x40, "fd2"}));
  EXPECT_EQ(ll.by_owner.at("udp_output")[0], (HotRange{0x1100, 0x23, "fa2"}));
  EXPECT_EQ(ll.by_owner.at("ip_output")[0], (HotRange{0x1150, 0x30, "fb1"}));
  EXPECT_EQ(ll.by_owner.at("ether_output")[0], (HotRange{0x11d8, 0x80, "fd1"}));
  EXPECT_EQ(ll.by_owner.size(), 4u);
  EXPECT_EQ(total_hot_bytes(ll), 0x20u + 0x40 + 0x23 + 0x30 + 0x80);
}

TEST(LayoutPad, AtEndShiftsLaterObjectsByPaddingRoundedToTheirAlignment) {
  const LinkedLayout ll = link(pad_object(sample(), "a.o", 0x30));
  EXPECT_EQ(ll.objects.at("a.o"), Range(0x1000, 0x1153));
  EXPECT_EQ(start_of(ll, "sendto", 0), 0x1000u);           // before the insertion
  EXPECT_EQ(start_of(ll, "udp_output"), 0x1100u);          // before the insertion
  EXPECT_EQ(ll.objects.at("b.o"), Range(0x1180, 0x1200));  // 0x30 rounded up by b's 64
  EXPECT_EQ(start_of(ll, "ip_output"), 0x1150u + 0x40);
  EXPECT_EQ(ll.objects.at("d.o"), Range(0x1210, 0x1410));
  EXPECT_EQ(start_of(ll, "ether_output"), 0x11d8u + 0x40);
  EXPECT_EQ(start_of(ll, "sendto", 1), 0x12f0u + 0x40);
}

TEST(LayoutPad, InsideObjectMovesOnlyFunctionsAtOrAfterTheOffset) {
  const LinkedLayout ll = link(pad_object(sample(), "a.o", 0x30, 0x100));
  EXPECT_EQ(start_of(ll, "sendto", 0), 0x1000u);
  EXPECT_EQ(start_of(ll, "udp_output"), 0x1130u);  // at the offset: moves
  EXPECT_EQ(ll.objects.at("b.o").first, 0x1180u);

  const LinkedLayout ld = link(pad_object(sample(), "d.o", 0x10, 0x110));
  EXPECT_EQ(start_of(ld, "ether_output"), 0x11d8u);
  EXPECT_EQ(start_of(ld, "sendto", 1), 0x1300u);
  EXPECT_EQ(ld.objects.at("d.o"), Range(0x11d0, 0x13e0));
}

TEST(LayoutPad, LaterObjectsMoveByPaddingRoundedUpOrNotAtAll) {
  const LinkedLayout base = link(sample());
  // a.o ends at 0x1123 and b.o starts at 0x1140: 0x10 more bytes fit in the
  // gap and move nothing; 0x1e do not and move everything after by 64.
  const LinkedLayout small_pad = link(pad_object(sample(), "a.o", 0x10));
  EXPECT_EQ(small_pad.objects.at("a.o"), Range(0x1000, 0x1133));
  EXPECT_EQ(small_pad.objects.at("b.o"), base.objects.at("b.o"));
  EXPECT_EQ(small_pad.objects.at("d.o"), base.objects.at("d.o"));
  EXPECT_EQ(small_pad.by_owner, base.by_owner);
  const LinkedLayout big_pad = link(pad_object(sample(), "a.o", 0x1e));
  EXPECT_EQ(big_pad.objects.at("b.o"), Range(0x1180, 0x1200));
  // 8 bytes in b.o: c.o (align 4) moves by 8, d.o (align 16) by 16.
  const LinkedLayout lb = link(pad_object(sample(), "b.o", 8));
  EXPECT_EQ(lb.objects.at("b.o"), Range(0x1140, 0x11c8));
  EXPECT_EQ(lb.objects.at("c.o"), Range(0x11c8, 0x11d8));
  EXPECT_EQ(lb.objects.at("d.o"), Range(0x11e0, 0x13e0));
  EXPECT_EQ(start_of(lb, "ether_output"), 0x11d8u + 0x10);
  EXPECT_EQ(start_of(lb, "ip_output"), 0x1150u);
  EXPECT_EQ(start_of(lb, "sendto", 0), 0x1000u);
}

TEST(LayoutPad, RefusesBadRequests) {
  EXPECT_THROW(pad_object(sample(), "x.o", 16), LayoutError);
  EXPECT_THROW(pad_object(sample(), "a.o", 16, 0x110), LayoutError);  // inside fa2
  EXPECT_THROW(pad_object(sample(), "a.o", 16, 0x124), LayoutError);  // past the end
  EXPECT_NO_THROW(pad_object(sample(), "a.o", 16, 0x123));
  EXPECT_NO_THROW(pad_object(sample(), "a.o", 16, 0x40));  // fa1's end is not inside it
}

TEST(LayoutMoveToEnd, MovesTheObjectAndPacksTheRest) {
  const LinkedLayout ll = link(move_to_end(sample(), "a.o"));
  EXPECT_EQ(ll.objects.at("b.o"), Range(0x1000, 0x1080));
  EXPECT_EQ(ll.objects.at("c.o"), Range(0x1080, 0x1090));
  EXPECT_EQ(ll.objects.at("d.o"), Range(0x1090, 0x1290));
  EXPECT_EQ(ll.objects.at("a.o"), Range(0x1290, 0x13b3));
  // Execution order is the listed order, not the address order.
  ASSERT_EQ(ll.by_owner.at("sendto").size(), 2u);
  EXPECT_EQ(ll.by_owner.at("sendto")[0], (HotRange{0x1290, 0x20, "fa1"}));
  EXPECT_EQ(ll.by_owner.at("sendto")[1], (HotRange{0x11b0, 0x40, "fd2"}));
  EXPECT_THROW(move_to_end(sample(), "nope.o"), LayoutError);
  // Moving the last object changes nothing.
  EXPECT_EQ(link(move_to_end(sample(), "d.o")).objects, link(sample()).objects);
}

TEST(LayoutAlignFunctions, AlignsEachFunctionAndGrowsObjects) {
  const LinkedLayout ll = link(align_functions(sample(), 64));
  EXPECT_EQ(ll.objects.at("a.o"), Range(0x1000, 0x1123));  // already aligned
  EXPECT_EQ(start_of(ll, "udp_output"), 0x1100u);
  EXPECT_EQ(ll.objects.at("b.o"), Range(0x1140, 0x11f0));  // fb1 0x10 -> 0x40: +0x30
  EXPECT_EQ(start_of(ll, "ip_output"), 0x1180u);
  EXPECT_EQ(ll.objects.at("c.o"), Range(0x1200, 0x1210));  // objects take the alignment too
  // d: fd1 0x8 -> 0x40 (+0x38), fd2 0x120 + 0x38 = 0x158 -> 0x180 (+0x60).
  EXPECT_EQ(ll.objects.at("d.o"), Range(0x1240, 0x14a0));
  EXPECT_EQ(start_of(ll, "ether_output"), 0x1280u);
  EXPECT_EQ(start_of(ll, "sendto", 1), 0x13c0u);
  for (const auto& [owner, ranges] : ll.by_owner)
    for (const auto& r : ranges) EXPECT_EQ(r.start % 64, 0u) << r.symbol;
  // Back to 0: the original addresses.
  EXPECT_EQ(link(align_functions(align_functions(sample(), 64), 0)).by_owner,
            link(sample()).by_owner);
  EXPECT_THROW(align_functions(sample(), 48), LayoutError);
}

TEST(LayoutReorder, NamedObjectsFirstThenTheRestInOldOrder) {
  const Layout r = reorder(sample(), {"d.o", "b.o"});
  ASSERT_EQ(r.objects.size(), 4u);
  EXPECT_EQ(r.objects[0].name, "d.o");
  EXPECT_EQ(r.objects[1].name, "b.o");
  EXPECT_EQ(r.objects[2].name, "a.o");
  EXPECT_EQ(r.objects[3].name, "c.o");
  const LinkedLayout ll = link(r);
  EXPECT_EQ(ll.objects.at("d.o"), Range(0x1000, 0x1200));
  EXPECT_EQ(ll.objects.at("b.o"), Range(0x1200, 0x1280));
  EXPECT_EQ(ll.objects.at("a.o"), Range(0x1280, 0x13a3));
  EXPECT_EQ(ll.objects.at("c.o"), Range(0x13a4, 0x13b4));
  EXPECT_EQ(start_of(ll, "ether_output"), 0x1008u);
  EXPECT_THROW(reorder(sample(), {"d.o", "zz.o"}), LayoutError);
  EXPECT_THROW(reorder(sample(), {"d.o", "d.o"}), LayoutError);
}

TEST(LayoutValidate, RejectsInconsistentLayoutsBuiltInCode) {
  Layout l = sample();
  l.objects[0].functions[1].size = 0x24;  // 0x100 + 0x24 > 0x123
  EXPECT_THROW(link(l), LayoutError);
  l = sample();
  l.objects[3].functions[1].offset = 0x100;  // overlaps fd1 [0x8, 0x108)
  EXPECT_THROW(link(l), LayoutError);
  l = sample();
  l.objects[1].functions[0].owner = "tcp_output";
  EXPECT_THROW(link(l), LayoutError);
  l = sample();
  l.objects[1].align = 24;
  EXPECT_THROW(link(l), LayoutError);
  l = sample();
  l.objects.push_back(l.objects[0]);
  EXPECT_THROW(link(l), LayoutError);
}

TEST(LayoutOwners, AreEveryStacksFunctionsThenTheCodeAroundThem) {
  const auto& o = layout_owners();
  const net::FnTable& bsd = net::bsd::fn_table();
  // Every stack's functions, each name once (ip_output is in both).
  std::set<std::string_view> names;
  for (const net::FnTable* t : stacks::fn_tables())
    for (const auto& f : t->fns()) names.insert(f.name);
  const size_t fns = names.size();
  ASSERT_EQ(o.size(), fns + code_index::count);
  EXPECT_LT(fns, bsd.size() + net::lnx::fn_table().size());
  EXPECT_EQ(o[static_cast<size_t>(net::bsd::Fn::ip_output)], "ip_output");
  EXPECT_TRUE(is_layout_owner("udp_sendmsg"));
  EXPECT_TRUE(is_layout_owner("user_loop"));
  EXPECT_TRUE(is_layout_owner("nic_txeof"));
  EXPECT_FALSE(is_layout_owner("tcp_output"));
  EXPECT_FALSE(is_layout_owner(""));
  for (size_t i = 0; i < o.size(); ++i) EXPECT_EQ(is_stack_fn_owner(i), i < fns) << o[i];
  EXPECT_EQ(o[fns], "syscall_entry");
  EXPECT_EQ(o.back(), "copy");
}

// A stack's own words name things the outputs have (a stage, a drop, a
// helper), each once, in words a column name and a trace can hold, none of
// them another stage's name; its trace counts each gauge at most once.
TEST(StackWords, NameRealThingsOnceInColumnSafeWords) {
  auto column_safe = [](std::string_view w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
    });
  };
  for (const net::FnTable* t : stacks::fn_tables()) {
    std::set<std::string_view> stages, words;
    for (const net::StageName& n : t->stage_names()) {
      EXPECT_TRUE(parse_stage(n.stage)) << t->stack() << ": " << n.stage;
      EXPECT_TRUE(stages.insert(n.stage).second) << t->stack() << ": " << n.stage;
      EXPECT_LE(n.label.size(), 10U) << n.label;
      if (n.word.empty()) continue;
      EXPECT_TRUE(column_safe(n.word)) << n.word;
      EXPECT_FALSE(parse_stage(n.word)) << t->stack() << ": " << n.word << " is another stage";
      EXPECT_TRUE(words.insert(n.word).second) << n.word;
    }
    std::set<std::string_view> drops, helpers;
    for (size_t d = 0; d < net::kDropCount; ++d) drops.insert(net::drop_name(net::Drop(d)));
    for (auto h : kCodeNames) helpers.insert(h);
    for (const net::OwnWord& w : t->words().drops) {
      EXPECT_EQ(drops.count(w.of), 1U) << w.of;
      EXPECT_TRUE(column_safe(w.word) && drops.count(w.word) == 0) << w.word;
    }
    for (const net::OwnWord& w : t->words().helpers) {
      EXPECT_EQ(helpers.count(w.of), 1U) << w.of;
      EXPECT_TRUE(column_safe(w.word) && !is_layout_owner(w.word)) << w.word;
    }
    std::set<net::Gauge> gauges;
    for (const net::GaugeName& g : t->gauges())
      EXPECT_TRUE(gauges.insert(g.gauge).second && !g.name.empty() && !g.unit.empty()) << g.name;
  }
}

TEST(OwnerSlots, AreTheStacksFunctionsByFnIdThenTheCodeAroundThemAtFixedSlots) {
  const net::FnTable& bsd = net::bsd::fn_table();
  // Every slot in use has the owner's name, and finds its way back.
  const auto slots = owner_slots(bsd);
  ASSERT_EQ(slots.size(), bsd.size() + code_index::count);
  for (size_t s : slots) {
    ASSERT_FALSE(owner_name(bsd, s).empty()) << s;
    EXPECT_EQ(owner_slot(bsd, owner_name(bsd, s)), s) << owner_name(bsd, s);
  }
  // The code around the stack sits at the same slots whatever the stack.
  static_assert(slot(Code::syscall_entry) == kCodeBase);
  static_assert(code_name(Code::mbuf_free) == "mbuf_free");
  EXPECT_EQ(owner_name(bsd, slot(Code::user_loop)), "user_loop");
  EXPECT_EQ(owner_name(bsd, slot(Code::copy)), "copy");
  EXPECT_EQ(owner_name(bsd, slot(net::bsd::id(net::bsd::Fn::ip_output))), "ip_output");
  // Slots past the stack's table are unused; a stack with no functions
  // has only the code around it.
  EXPECT_FALSE(owner_in_use(bsd, bsd.size()));
  EXPECT_TRUE(owner_name(bsd, bsd.size()).empty());
  EXPECT_EQ(owner_slots(kNoFns).size(), code_index::count);
  EXPECT_FALSE(owner_slot(kNoFns, "ip_output").has_value());
  EXPECT_EQ(owner_slot(kNoFns, "cksum"), slot(Code::cksum));
  // Every layout owner is an owner of some stack, and the Linux stack's
  // functions have their own slots by their own FnIds.
  const net::FnTable& lnx = net::lnx::fn_table();
  for (const auto& name : layout_owners())
    EXPECT_TRUE(owner_slot(bsd, name) || owner_slot(lnx, name)) << name;
  EXPECT_EQ(owner_slot(lnx, "udp_sendmsg"), slot(net::lnx::id(net::lnx::Fn::udp_sendmsg)));
  EXPECT_FALSE(owner_slot(bsd, "udp_sendmsg").has_value());
}

// YAML files written on the fly, so each error's line and column are known.
class LayoutYaml : public ::testing::Test {
 protected:
  fs::path write(const std::string& text) {
    const fs::path p = fs::temp_directory_path() /
                       ("simloop_layout_" + std::to_string(::getpid()) + "_" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml");
    std::ofstream(p) << text;
    files_.push_back(p);
    return p;
  }
  std::string error_of(const std::string& text) {
    const fs::path p = write(text);
    try {
      load_layout_yaml(p);
    } catch (const LayoutError& e) {
      const std::string msg = e.what();
      const std::string prefix = p.string() + ":";
      EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
      return msg.substr(std::min(msg.size(), prefix.size()));
    }
    return "no error";
  }
  void TearDown() override {
    for (const auto& p : files_) fs::remove(p);
  }
  std::vector<fs::path> files_;
};

constexpr const char* kGood = R"(name: tiny
text_base: 0xc0400000
function_align: 0
objects:
  - name: locore.o
    size: 8192
    align: 16
    functions:
      - {symbol: Xint0x80_syscall, owner: syscall_entry, offset: 0, size: 256, hot: 160}
      - {symbol: doreti, owner: syscall_exit, offset: 0x200, size: 128}
  - name: cold.o
    size: 100
    functions:
      - {symbol: never, offset: 0, size: 50}
)";

TEST_F(LayoutYaml, LoadsAValidFile) {
  const Layout l = load_layout_yaml(write(kGood));
  EXPECT_EQ(l.name, "tiny");
  EXPECT_EQ(l.text_base, 0xc0400000u);
  ASSERT_EQ(l.objects.size(), 2u);
  EXPECT_EQ(l.objects[0].size, 8192u);
  ASSERT_EQ(l.objects[0].functions.size(), 2u);
  const HotFunction& f = l.objects[0].functions[0];
  EXPECT_EQ(f.symbol, "Xint0x80_syscall");
  EXPECT_EQ(f.owner, "syscall_entry");
  EXPECT_EQ(f.hot_bytes, 160u);
  EXPECT_EQ(l.objects[0].functions[1].offset, 0x200u);
  EXPECT_EQ(l.objects[0].functions[1].hot_bytes, 128u);  // defaults to its size
  EXPECT_EQ(l.objects[1].align, 16u);                    // default
  EXPECT_EQ(l.objects[1].functions[0].hot_bytes, 0u);    // no owner: cold
  const LinkedLayout ll = link(l);
  EXPECT_EQ(ll.by_owner.at("syscall_exit")[0].start, 0xc0400200u);
  EXPECT_EQ(ll.objects.at("cold.o"), Range(0xc0402000, 0xc0402064));
  EXPECT_EQ(ll.by_owner.size(), 2u);
}

TEST_F(LayoutYaml, ErrorsNameFileLineColumnAndKey) {
  EXPECT_EQ(error_of("name: x\nobjects:\n  - name: a.o\n    sise: 10\n"),
            "4:5: objects[0].sise: unknown key 'sise' (allowed: name, size, align, functions)");
  EXPECT_EQ(
      error_of("objects:\n  - {name: a.o, size: big}\n"),
      "2:23: objects[0].size: expected a non-negative integer (decimal or 0x hex), got 'big'");
  EXPECT_EQ(error_of("objects:\n  - {name: a.o, size: -4}\n"),
            "2:23: objects[0].size: expected a non-negative integer (decimal or 0x hex), got '-4'");
  EXPECT_EQ(error_of("objects:\n  - {name: a.o, size: 64, align: 24}\n"),
            "2:34: objects[0].align: expected a power of two, got '24'");
  EXPECT_EQ(error_of("text_base: [1]\nobjects: []\n"),
            "1:12: text_base: expected a non-negative integer (decimal or 0x hex), got a list");
  EXPECT_EQ(error_of("objects: {a: 1}\n"), "1:10: objects: expected a list of objects, got a map");
  EXPECT_EQ(error_of("name: x\n"), "1:1: objects: missing key 'objects'");
  EXPECT_EQ(error_of("objects:\n  - {size: 4}\n"), "2:5: objects[0]: missing key 'name'");
}

TEST_F(LayoutYaml, FunctionErrors) {
  const std::string head = "objects:\n  - name: a.o\n    size: 256\n    functions:\n";
  // Outside its object: 200 + 100 > 256. Points at the function.
  const std::string e1 =
      error_of(head + "      - {symbol: f, owner: ip_output, offset: 200, size: 100}\n");
  EXPECT_EQ(e1.rfind("5:9: objects[0].functions[0]: function f [0xc8, 0x12c) lies outside", 0), 0u)
      << e1;
  // Unknown owner: points at the value.
  const std::string e2 =
      error_of(head + "      - {symbol: f, owner: tcp_output, offset: 0, size: 16}\n");
  EXPECT_EQ(
      e2.rfind("5:28: objects[0].functions[0].owner: unknown owner 'tcp_output' (valid: sendto,",
               0),
      0u)
      << e2;
  EXPECT_NE(e2.find("user_loop"), std::string::npos);
  // Overlap: points at the second function.
  const std::string e3 = error_of(head +
                                  "      - {symbol: f, owner: ip_output, offset: 0, size: 64}\n"
                                  "      - {symbol: g, owner: ip_output, offset: 32, size: 16}\n");
  EXPECT_EQ(e3.rfind("6:9: objects[0].functions[1]: function g at 0x20 overlaps f", 0), 0u) << e3;
  const std::string e4 =
      error_of(head + "      - {symbol: f, owner: ip_output, offset: 0, size: 16, hot: 17}\n");
  EXPECT_EQ(e4.rfind("5:9: objects[0].functions[0]: function f: hot bytes (17) exceed", 0), 0u)
      << e4;
  EXPECT_EQ(error_of(head + "      - {symbol: f, owner: ip_output, size: 16}\n"),
            "5:9: objects[0].functions[0]: missing key 'offset'");
  EXPECT_EQ(
      error_of(head + "      - {symbol: f, offset: 0, size: 16, cold: 1}\n"),
      "5:42: objects[0].functions[0].cold: unknown key 'cold' (allowed: symbol, owner, offset, "
      "size, hot, order, calls)");
  // Call sites: a known owner, inside the hot bytes, by offset, not the own owner.
  EXPECT_EQ(error_of(head + "      - {symbol: f, owner: ip_output, offset: 0, size: 64, hot: 32,\n"
                            "         calls: [{owner: ether_output, at: 33}]}\n"),
            "5:9: objects[0].functions[0]: function f: call site 0 at 0x21 lies past its hot "
            "bytes (0x20)");
  EXPECT_EQ(error_of(head +
                     "      - {symbol: f, owner: ip_output, offset: 0, size: 64,\n"
                     "         calls: [{owner: ether_output, at: 8}, {owner: looutput, at: 4}]}\n"),
            "5:9: objects[0].functions[0]: function f: call sites must be listed by offset (0x4 "
            "after 0x8)");
  EXPECT_EQ(error_of(head + "      - {symbol: f, owner: ip_output, offset: 0, size: 64,\n"
                            "         calls: [{owner: ip_output, at: 8}]}\n"),
            "5:9: objects[0].functions[0]: function f: call site 0 calls its own owner "
            "'ip_output'");
  EXPECT_EQ(error_of(head + "      - {symbol: f, offset: 0, size: 64, calls: [{owner: looutput, "
                            "at: 8}]}\n"),
            "5:9: objects[0].functions[0]: function f has call sites but no owner");
  EXPECT_EQ(error_of(head + "      - {symbol: f, owner: ip_output, offset: 0, size: 64,\n"
                            "         calls: [{owner: nowhere, at: 8}]}\n")
                .rfind("6:26: objects[0].functions[0].calls[0].owner: unknown owner 'nowhere'", 0),
            0u);
  EXPECT_EQ(error_of(head + "      - {symbol: f, owner: ip_output, offset: 0, size: 64,\n"
                            "         calls: [{at: 8}]}\n"),
            "6:18: objects[0].functions[0].calls[0]: missing key 'owner'");
  EXPECT_EQ(
      error_of(head + "      - {symbol: f, owner: ip_output, offset: 0, size: 64, calls: 3}\n"),
      "5:67: objects[0].functions[0].calls: expected a list of {owner, at} call sites, got "
      "'3'");
  EXPECT_EQ(error_of("objects:\n  - {name: a.o, size: 1}\n  - {name: a.o, size: 2}\n"),
            "3:12: objects[1].name: object 'a.o' appears twice");
}

TEST_F(LayoutYaml, SyntaxErrorAndMissingFile) {
  const std::string e = error_of("objects:\n  - {name: a.o, size: 1\n");
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
  EXPECT_THROW(load_layout_yaml("/nonexistent/layout.yaml"), LayoutError);
}

TEST(LayoutNm, ParsesRecordedNmOutput) {
  std::ifstream in(fs::path(SIMLOOP_SOURCE_DIR) / "tests/data/nm_sample.txt");
  ASSERT_TRUE(in) << "tests/data/nm_sample.txt";
  const std::string stack = "_ZN7simloop3net5StackINS_7measure10StageTimerEE";
  const std::multimap<std::string, std::string> owners = {
      {stack + "9ip_outputEPNS0_4MbufEPNS0_5IfnetEjjb", "ip_output"},
      {stack + "10udp_outputERNS0_6SocketEPNS0_4MbufEjt", "udp_output"},
      {stack + "12ether_outputEPNS0_5IfnetEPNS0_4MbufEjb", "ether_output"},
      {stack + "6sendtoEiPKvijt", "sendto"},
      {"frame_dummy", "user_loop"},  // no size: up to the next symbol
      {"_ZN7simloop3net5StackINS_7measure10StageTimerEE3foo", "ip_input"},  // not in the output
      {"__abi_tag", "soreceive"},  // a data symbol: ignored
  };
  const LinkedLayout ll = layout_from_nm(in, owners);
  const std::string ip_output = stack + "9ip_outputEPNS0_4MbufEPNS0_5IfnetEjjb";
  EXPECT_EQ(ll.by_owner.at("ip_output"), (std::vector<HotRange>{{0x94f40, 0x4db, ip_output}}));
  EXPECT_EQ(ll.by_owner.at("udp_output")[0].start, 0x95420u);
  EXPECT_EQ(ll.by_owner.at("udp_output")[0].bytes, 0x899u);
  EXPECT_EQ(ll.by_owner.at("ether_output")[0].start, 0x945d0u);
  EXPECT_EQ(ll.by_owner.at("sendto")[0].bytes, 0xa63u);
  EXPECT_EQ(ll.by_owner.at("user_loop")[0], (HotRange{0x1d1b0, 0x10, "frame_dummy"}));
  EXPECT_EQ(ll.by_owner.count("ip_input"), 0u);
  EXPECT_EQ(ll.by_owner.count("soreceive"), 0u);
  EXPECT_TRUE(ll.objects.empty());
  EXPECT_EQ(ll.by_owner.size(), 5u);
}

TEST(LayoutNm, ProfileRangesAndASymbolUnderTwoOwners) {
  const std::string nm =
      "0000000000401000 0000000000000080 T f\n"
      "0000000000401080 0000000000000040 W adj\n"
      "00000000004010c0 0000000000000020 T cold\n";
  const std::multimap<std::string, std::string> owners = {
      {"f", "ip_input"}, {"adj", "ip_input"}, {"adj", "udp_input"}, {"cold", "sbappend"}};
  const HotProfile profile = {{"f", {{0x0, 0x10}, {0x40, 0x8}}}, {"adj", {{0x4, 0x20}}}};
  std::istringstream in(nm);
  const LinkedLayout ll = layout_from_nm(in, owners, 1.0, &profile);
  EXPECT_EQ(ll.by_owner.at("ip_input"),
            (std::vector<HotRange>{
                {0x401000, 0x10, "f"}, {0x401040, 0x8, "f"}, {0x401084, 0x20, "adj"}}));
  EXPECT_EQ(ll.by_owner.at("udp_input"), (std::vector<HotRange>{{0x401084, 0x20, "adj"}}));
  // Not in the profile: it never ran.
  EXPECT_EQ(ll.by_owner.count("sbappend"), 0u);
  // A range past its symbol: the profile belongs to other objects.
  const HotProfile wrong = {{"adj", {{0x30, 0x20}}}};
  std::istringstream again(nm);
  EXPECT_THROW(layout_from_nm(again, owners, 1.0, &wrong), LayoutError);
}

TEST(LayoutNm, HotFractionNamesWithSpacesAndErrors) {
  std::istringstream in(
      "08048000 00000100 T main\n"
      "08048100 T helper\n"
      "08048180 00000040 t simloop::net::f(int, char const*)\n"
      "08048200 00000040 b d\n");
  const LinkedLayout ll = layout_from_nm(in,
                                         {{"main", "user_loop"},
                                          {"helper", "user_loop"},
                                          {"simloop::net::f(int, char const*)", "udp_output"},
                                          {"d", "ip_output"}},
                                         0.25);
  ASSERT_EQ(ll.by_owner.at("user_loop").size(), 2u);
  EXPECT_EQ(ll.by_owner.at("user_loop")[0], (HotRange{0x08048000, 0x40, "main"}));
  EXPECT_EQ(ll.by_owner.at("user_loop")[1], (HotRange{0x08048100, 0x20, "helper"}));
  EXPECT_EQ(ll.by_owner.at("udp_output")[0].bytes, 0x10u);
  EXPECT_EQ(ll.by_owner.count("ip_output"), 0u);  // bss

  std::istringstream bad("not an nm line\n");
  EXPECT_THROW(layout_from_nm(bad, {}), LayoutError);
  std::istringstream ok("08048000 00000100 T main\n");
  EXPECT_THROW(layout_from_nm(ok, {{"main", "no_such_owner"}}), LayoutError);
  EXPECT_THROW(layout_from_nm(ok, {}, 0.0), LayoutError);
}

TEST(LayoutMerge, CombinesKernelAndUserAndRefusesOverlap) {
  LinkedLayout k = link(sample());
  Layout u;
  u.name = "user";
  u.text_base = 0x08048000;
  u.objects = {{"ttcp.o", 0x400, 16, {{"main", "user_loop", 0x10, 0x100, 0x80, 0, 0, {}}}}};
  const LinkedLayout m = merge(k, link(u));
  EXPECT_EQ(m.by_owner.at("user_loop")[0].start, 0x08048010u);
  EXPECT_EQ(m.objects.size(), 5u);
  u.text_base = 0x1100;
  EXPECT_THROW(merge(k, link(u)), LayoutError);
}

// The shipped synthetic layouts: complete, plausible, and sensitive to a
// shift of one object the way the 2006 story describes.
class LayoutShipped : public ::testing::Test {
 protected:
  static fs::path dir() { return fs::path(SIMLOOP_SOURCE_DIR) / "configs/layouts"; }
  static Layout kernel() { return load_layout_yaml(dir() / "freebsd6-i386-synthetic.yaml"); }
  static LinkedLayout user() { return link(load_layout_yaml(dir() / "ttcp-user.yaml")); }
  static std::vector<std::string> wire_path() {
    return {"user_loop",  "syscall_entry", "sendto",       "sosend_dgram",       "m_uiotombuf",
            "udp_output", "ip_output",     "ether_output", "ether_output_frame", "syscall_exit"};
  }
  // Steady-state L1 misses of one wire packet on the Athlon's I-cache.
  static uint64_t misses_per_packet(const Layout& k) {
    const LinkedLayout ll = merge(link(k), user());
    ICache c{ICacheConfig{}};
    auto packet = [&] {
      for (const auto& owner : wire_path())
        for (const auto& r : ll.by_owner.at(owner)) c.fetch(r.start, r.bytes);
    };
    for (int i = 0; i < 3; ++i) packet();
    c.reset_stats();
    packet();
    return c.stats().l1_misses;
  }
};

TEST_F(LayoutShipped, EveryOwnerHasHotCode) {
  const LinkedLayout ll = merge(link(kernel()), user());
  // Helpers have no functions of their own here: their code is counted in
  // the hot bytes of the functions that call them.
  for (size_t i : owner_slots(net::bsd::fn_table()))
    if (i < slot(Code::header_access)) {
      const std::string name(owner_name(net::bsd::fn_table(), i));
      EXPECT_TRUE(ll.by_owner.count(name)) << name;
    }
  EXPECT_EQ(ll.by_owner.at("user_loop").front().start >> 28, 0x0u);  // user text
  EXPECT_EQ(ll.by_owner.at("ip_output").front().start >> 28, 0xcu);  // kernel text
}

TEST_F(LayoutShipped, WirePathIsTensOfKilobytesOverManyObjects) {
  const Layout k = kernel();
  const LinkedLayout ll = merge(link(k), user());
  uint64_t hot = 0;
  std::set<std::string> objects;
  for (const auto& owner : wire_path())
    for (const auto& r : ll.by_owner.at(owner)) {
      hot += r.bytes;
      for (const auto& [name, span] : ll.objects)
        if (span.first <= r.start && r.start < span.second) objects.insert(name);
    }
  EXPECT_GE(hot, 20u * 1024);
  EXPECT_LE(hot, 60u * 1024);
  EXPECT_GE(objects.size(), 20u);
  // nfs_diskless.o: never executed, linked after socket code and before the
  // network code.
  const auto nfs = ll.objects.at("nfs_diskless.o");
  for (const auto& [owner, ranges] : ll.by_owner)
    for (const auto& r : ranges) EXPECT_FALSE(nfs.first <= r.start && r.start < nfs.second);
  auto start_of_symbol = [&](const std::string& owner, const std::string& symbol) {
    for (const auto& r : ll.by_owner.at(owner))
      if (r.symbol == symbol) return r.start;
    ADD_FAILURE() << "no " << symbol << " in " << owner;
    return uint64_t{0};
  };
  EXPECT_LT(start_of_symbol("sosend_dgram", "sosend"), nfs.first);
  EXPECT_GT(start_of_symbol("ether_output", "ether_output"), nfs.second);
  for (const auto& r : ll.by_owner.at("ip_output")) EXPECT_GT(r.start, nfs.second) << r.symbol;
}

TEST_F(LayoutShipped, FiveHundredBytesInNfsDisklessCreateConflictsAndMovingItRecovers) {
  const Layout k = kernel();
  const uint64_t base = misses_per_packet(k);
  const uint64_t padded = misses_per_packet(pad_object(k, "nfs_diskless.o", 500));
  const uint64_t moved =
      misses_per_packet(move_to_end(pad_object(k, "nfs_diskless.o", 500), "nfs_diskless.o"));
  EXPECT_GE(padded, base + 25) << "base " << base << " padded " << padded;
  EXPECT_LE(moved, base + 5) << "base " << base << " moved " << moved;
  // Over a padding sweep some shifts hurt and some do not.
  int worse = 0, total = 0;
  for (uint64_t pad = 0; pad <= 8192; pad += 16, ++total)
    if (misses_per_packet(pad_object(k, "nfs_diskless.o", pad)) >= base + 10) ++worse;
  EXPECT_GT(worse, total / 20) << worse << " of " << total;
  EXPECT_LT(worse, total - total / 20) << worse << " of " << total;
  std::cout << "misses/packet: base " << base << ", +500 B " << padded << ", moved " << moved
            << "; sweep 0..8192/16: " << worse << " of " << total << " >= base + 10\n";
}

}  // namespace
}  // namespace simloop::models

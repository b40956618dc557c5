// The stacks as the layers above use them without naming one: their
// function tables, their own options and keys, and what each refuses of an
// experiment. Made from the list in stacks.h (stack_set.cc).
#pragma once

#include <any>
#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sim/stack/net/fn_table.h"
#include "sim/stack/net/host.h"
#include "sim/stack/net/stack_kind.h"
#include "sim/stack/workload/dest.h"

namespace simloop::workload {
struct DriveOptions;
}

namespace simloop::stacks {

// Every stack's function table, in list order (the first stack's is the
// default).
const std::vector<const net::FnTable*>& fn_tables();
// The table of the stack named `name`, or nullptr.
const net::FnTable* find_fn_table(std::string_view name);
// Each stack's name and what it is, in list order.
std::vector<std::pair<std::string, std::string>> descriptions();

// Every stack's own options (its kind's Own), each stack's defaults to
// start with.
class StackOptionSet {
 public:
  StackOptionSet();
  std::any& of(std::string_view stack);
  const std::any& of(std::string_view stack) const;
  template <class Own>
  Own& get(std::string_view stack) {
    return std::any_cast<Own&>(of(stack));
  }
  template <class Own>
  const Own& get(std::string_view stack) const {
    return std::any_cast<const Own&>(of(stack));
  }

 private:
  std::vector<std::pair<std::string_view, std::any>> own_;
};

// One key of a stack's own options, `<section>.<name>`.
using KeyValue = std::variant<bool, int, double>;
struct StackKey {
  std::string stack, path, doc;
  KeyValue type;  // which alternative the key holds (its default value)
  double lo = 0, hi = 0;
  std::function<KeyValue(const StackOptionSet&)> get;
  std::function<void(StackOptionSet&, const KeyValue&)> set;
};
struct StackSection {
  std::string stack, path, doc;
};
// Each stack's section and keys, in list order.
const std::vector<StackSection>& sections();
const std::vector<StackKey>& keys();

// The stacks a key shared between stacks applies to: those that list it
// (itself or a section above it) among their kSharedKeys; empty when it
// applies to every stack (none lists it, or all do).
std::vector<std::string> stacks_honouring(std::string_view path);

// Why stack `stack` cannot send `payload` bytes to `dest` with these
// options, and the key to name (empty if it can).
net::KeyProblem problem(std::string_view stack, const net::HostOptions& host,
                        const StackOptionSet& own, workload::Dest dest, int payload);

// The stacks whose costs are measured on `m` (their kinds' kMeasured), in
// list order.
std::vector<std::string> measured_on(net::Measured m);
// The table of kernel symbols that stand for stack `stack`'s functions (its
// kind's kPerfSymbols, a file of the source tree); "" if it has none.
std::string perf_symbols(std::string_view stack);

// What a stack does per packet, function by function (indices of its
// table): calls, bytes copied (and of them unaligned, either end off a
// 4-byte boundary), bytes checksummed, each function's innermost caller
// when it was first seen, and the system calls (sends and receives).
struct CallCounts {
  std::array<double, net::kMaxFns> calls{}, copy_bytes{}, unaligned_bytes{}, cksum_bytes{};
  std::array<double, net::kMaxFns> to_user_bytes{};  // of copy_bytes: out to a user's buffer
  // bytes of a copy, either end, in lines the L1 data cache no longer held
  // (0 unless count_calls is given a cache; up to twice copy_bytes)
  std::array<double, net::kMaxFns> l1d_miss_bytes{};
  std::array<int, net::kMaxFns> parent{};  // -1: none
  double syscalls = 0;
  // Where the run stopped short, and the driver's reason: at the start
  // (sentinel or warm-up), at a send, or with datagrams not delivered.
  enum class Stop : uint8_t { none, start, send, lost } stop = Stop::none;
  std::string why;
};
// Drives stack `stack` (its options from `host` and `own`) as the workload
// drives it, `drive`'s start and warm-up first, then counts `packets`
// datagrams, per packet. Throws std::out_of_range on an unknown stack.
// `l1d_missed`, if given, sees every copy from the start (the warm-up's
// too) and says how many of its bytes (either end) missed the L1 data cache.
using L1dMissed = std::function<double(const void* src, const void* dst, size_t len)>;
CallCounts count_calls(std::string_view stack, const net::HostOptions& host,
                       const StackOptionSet& own, const workload::DriveOptions& drive, int packets,
                       const L1dMissed& l1d_missed = {});

}  // namespace simloop::stacks

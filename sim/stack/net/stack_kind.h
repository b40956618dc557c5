// What a stack declares of itself so that the layers above drive it without
// naming it (sim/stack/stacks.h lists the stacks). A stack kind K,
// in the stack's own folder (kind.h), provides:
//
//   static constexpr std::string_view kName;  // stack.kind's value, its FnTable's name
//   static constexpr std::string_view kDoc;   // what it is, in a few words
//   static const FnTable& fns();              // its functions and their roles
//   template <class P> using Stack = ...;     // the stack for probe P (net::UdpStack)
//   using Options = ...;                      // what Stack<P>'s constructor takes
//   using Own = ...;                          // the options an experiment sets for it alone
//   static constexpr std::string_view kSection, kSectionDoc;  // its keys' prefix
//   static constexpr std::array<OptionKey<Own>, N> kKeys;     // `<kSection>.<name>`
//   // The keys shared between stacks that it honours (others do not apply
//   // to it): options.copy, workload.service, ...
//   static constexpr std::array<std::string_view, M> kSharedKeys;
//   // Each datagram is sent by a system call (sendto/send): the sender
//   // pays its entry and exit. A kernel-bypass stack does not.
//   static constexpr bool kSyscallPerSend;
//   static Options options(const HostOptions&, const Own&);
//   // Why the path cannot run on it ("" if it can), and the key to blame.
//   static KeyProblem problem(const HostOptions&, const Own&, Dest, int payload);
//   // With the ttcp loop's customisation point, found by argument-dependent
//   // lookup: Options stack_options_for(const workload::Path&, Options).
//   // What real system its costs are measured on (Measured below), and for
//   // Measured::kernel the table of kernel symbols perf's samples are
//   // charged to its functions by (a file of the source tree):
//   static constexpr Measured kMeasured;
//   static constexpr std::string_view kPerfSymbols;  // kernel only
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "sim/support/key_spec.h"

namespace simloop::net {

// What a stack's costs are measured on, for measure and calibrate.
//   harness: the stack itself, run natively: the native harness program
//     (stacks::HarnessKind, sim/stack/harness.h) and `measure native`;
//     `calibrate --source native` fits its costs to those rows.
//   kernel: this machine's kernel stands for it: `measure kernel --split`
//     charges perf's samples to its functions (kPerfSymbols), and
//     `calibrate --source NAME` fits its functions' costs to those rows.
//   native: only `measure native --stack NAME` runs it; nothing is fitted.
enum class Measured : uint8_t { harness, kernel, native };

// One key of a stack's own options O: `<kSection>.<name>`, in the form
// every part of the program declares its keys (support/key_spec.h): a
// boolean, int or double field, `&support::at<&O::field>`.
template <class O>
using OptionKey = support::KeySpec<O>;

// Why a stack refuses what an experiment asks of it: the key to name and
// the message (both empty when it does not).
struct KeyProblem {
  std::string key, message;
  explicit operator bool() const { return !message.empty(); }
};

// The stacks a program has, in order (the first is the default).
template <class... K>
struct StackList {};

}  // namespace simloop::net

// simloop-probe-calls: the native harness's loop (measure::run_native_loop)
// with a counting probe, for tests/probe_calls_test.py, which runs it under
// callgrind and holds the probe's entries of each stack function to the
// calls callgrind counts in the same run.
//
// It is built with no inlining (tests/CMakeLists.txt), so that every
// function of the stack is a function of the binary and each call of it is
// a call callgrind sees; the release harness inlines some of them
// (sosend_dgram and m_uiotombuf into sendto, looutput into ip_output).
//
// Prints one line per function of the stack's table, "fn NAME ENTERED", and
// the helpers' probe events, "alloc N" and "free N" (mbufs and clusters).
// --stack linux counts the Linux stack's functions the same way.
#include <CLI/CLI.hpp>
#include <iostream>

#include "sim/stack/linux/kind.h"
#include "sim/stack/linux/stack.h"
#include "sim/tools/measure/native_loop.h"
#include "sim/tools/measure/path_options.h"

namespace {

// Each function of the table, as the probe saw it entered.
template <class Table>
void print_entries(const Table& fns, const simloop::net::CountingProbe& probe) {
  for (size_t i = 0; i < fns.size(); ++i)
    std::cout << "fn " << fns.name(simloop::net::fn_at(i)) << " " << probe.entered[i] << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace simloop;
  measure::NativeOptions opt;
  opt.packets = 300;
  opt.warmup = 10;
  CLI::App app{"The native harness's loop with a counting probe: per-function entries."};
  app.add_option("-l,--payload", opt.payload, "UDP payload bytes")
      ->check(CLI::Range(0, workload::Path::kMaxPayload))
      ->capture_default_str();
  app.add_option("-n,--packets", opt.packets, "Timed packets")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--warmup", opt.warmup, "Untimed packets first")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  std::string stack = "bsd";
  app.add_option("--stack", stack, "The stack whose calls are counted")
      ->check(CLI::IsMember({"bsd", "linux"}))
      ->capture_default_str();
  measure::add_path_options(&app, opt.path);
  CLI11_PARSE(app, argc, argv);

  net::CountingProbe probe;
  measure::NativeResult r;
  if (stack == "linux") {
    using S = net::lnx::Stack<net::CountingProbe>;
    r = measure::run_native_loop<net::CountingProbe, S>(
        opt, probe, 0, net::lnx::stack_options_for(opt.path, net::lnx::Options{}));
    print_entries(S::fn_table(), probe);
  } else {
    r = measure::run_native_loop(opt, probe, 0);
    print_entries(net::bsd::Stack<net::CountingProbe>::fn_table(), probe);
  }
  std::cout << "alloc " << probe.mbuf_allocs + probe.cluster_allocs << "\n";
  std::cout << "free " << probe.mbuf_frees + probe.cluster_frees << "\n";
  std::cout << "packets " << r.packets << "\n";
  std::cout << "fault " << (r.fault.empty() ? "-" : r.fault) << "\n";
  return 0;
}

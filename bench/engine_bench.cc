// Benchmarks of the simulation around the stack: a simulated packet (plain,
// on the Linux stack, with the I-cache model, with one interrupt per frame), the I-cache model's
// fetch path alone, what a sweep pays per point beyond its simulation, and
// planning a sweep.
//
// SimGrid runs one simulation per process, so every simulation here runs in
// a forked child, as a sweep runs it. A simulated packet's time is the
// child's own time inside engine::simulate per packet (manual time), so fork
// and set-up do not count; the per-point cost is the other way round: the
// wall time of a whole 1-packet child, fork to exit, as a sweep sees it.
// Compare figures as ratios within one run: the machines are shared.

#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "models/icache.h"
#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/sweep/runner.h"

namespace {

namespace fs = std::filesystem;
using simloop::config::Experiment;
using simloop::config::load_experiment;

const fs::path kSource = SIMLOOP_SOURCE_DIR;

// Runs `body` in a forked child and returns the number it sends back, or a
// negative number if the child failed.
double in_child(const std::function<double()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::close(fds[0]);
    double v = -1;
    try {
      v = body();
    } catch (...) {
    }
    const ssize_t w = ::write(fds[1], &v, sizeof v);
    ::_exit(w == sizeof v ? 0 : 1);
  }
  ::close(fds[1]);
  double v = -1;
  if (::read(fds[0], &v, sizeof v) != sizeof v) v = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? v : -1;
}

// engine::simulate of `file` with `sets` and range(0) packets, each
// iteration one run in a child; its time is the simulation's own, and the
// counters give it per packet.
void simulated_packet(benchmark::State& state, const char* file, std::vector<std::string> sets) {
  const int64_t packets = state.range(0);
  sets.push_back("workload.packets=" + std::to_string(packets));
  const Experiment x = load_experiment(kSource / file, sets);
  double total_s = 0;
  for (auto _ : state) {
    const double s = in_child([&x] { return simloop::engine::simulate(x).wall_s; });
    if (s < 0) {
      state.SkipWithError("the simulation failed");
      return;
    }
    state.SetIterationTime(s);
    total_s += s;
  }
  const double n = static_cast<double>(packets) * static_cast<double>(state.iterations());
  state.counters["ns_per_packet"] = total_s / n * 1e9;
  state.counters["M_packets_per_s"] = n / total_s * 1e-6;
}

// 200,000 packets, each run timed by the simulation itself.
void one_run_a_packet_count(benchmark::internal::Benchmark* b) {
  b->Arg(200000)->ArgName("packets")->UseManualTime()->Unit(benchmark::kMillisecond);
}

void BM_SimulatedPacket(benchmark::State& state) {
  simulated_packet(state, "experiments/seed-athlon.yaml", {});
}
BENCHMARK(BM_SimulatedPacket)->Apply(one_run_a_packet_count);

// The Linux stack on loopback (experiments/linux-loopback.yaml: 18-byte
// datagrams to 127.0.0.1, each read by a receiver), priced per function
// from the EPYC's kernel; its native counterpart is simloop_bench's
// BM_LinuxPath/loopback.
void BM_SimulatedPacketLinux(benchmark::State& state) {
  simulated_packet(state, "experiments/linux-loopback.yaml", {});
}
BENCHMARK(BM_SimulatedPacketLinux)->Apply(one_run_a_packet_count);

// With the I-cache model on: the seed's padded layout, on the same machine
// and path as the plain run but for the cache.
void BM_SimulatedPacketICache(benchmark::State& state) {
  simulated_packet(state, "experiments/seed/icache-padded.yaml", {});
}
BENCHMARK(BM_SimulatedPacketICache)->Apply(one_run_a_packet_count);

// One interrupt per frame: no moderation, a handler every packet.
void BM_SimulatedPacketIrqPerFrame(benchmark::State& state) {
  simulated_packet(state, "experiments/seed-athlon.yaml", {"interrupts.moderation.interval_s=0"});
}
BENCHMARK(BM_SimulatedPacketIrqPerFrame)->Apply(one_run_a_packet_count);

// The I-cache model's fetch path alone, natively: a path of `range(0)` KB
// of code fetched in 256-byte runs, through the Athlon's 64 KB 2-way L1 and
// its exclusive L2. 96 KB does not fit L1 (conflict and capacity misses);
// 16 KB does (hits once warm).
void BM_ICacheFetch(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0)) * 1024;
  simloop::models::ICache cache(simloop::models::ICacheConfig{});
  constexpr uint64_t kRun = 256;
  double stalls = 0;
  for (auto _ : state) {
    for (uint64_t a = 0; a < bytes; a += kRun) stalls += cache.fetch(0x400000 + a, kRun);
    benchmark::DoNotOptimize(stalls);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["lines_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * bytes / 64), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ICacheFetch)->Arg(16)->Arg(96)->ArgName("kb");

// What a sweep pays per point beyond its simulation: fork, resolving the
// point's configuration (over the base, as a sweep's run does), a
// 1-packet simulation and the child's exit, from a process whose SimGrid
// engine is started once (engine::prepare_engine), as a sweep's is.
void BM_SweepPointFixedCost(benchmark::State& state) {
  simloop::config::cache_parsed_yaml(true);
  const fs::path file = kSource / "experiments/seed-athlon.yaml";
  const Experiment base = load_experiment(file);  // the parent's one read of the files
  simloop::engine::prepare_engine();
  int payload = 18;
  for (auto _ : state) {
    const std::vector<std::string> sets = {"workload.packets=1",
                                           "workload.payload=" + std::to_string(payload)};
    payload = payload == 1400 ? 18 : payload + 1;
    const double ok = in_child([&] {
      const Experiment x = simloop::config::load_over(base, {}, sets);
      return simloop::engine::simulate(x).packets == 1 ? 1.0 : -1.0;
    });
    if (ok < 0) {
      state.SkipWithError("the 1-packet run failed");
      return;
    }
  }
  simloop::config::cache_parsed_yaml(false);
}
BENCHMARK(BM_SweepPointFixedCost)->Unit(benchmark::kMillisecond)->UseRealTime();

// Planning a sweep of N points (a grid of payloads, alignments and
// interrupt costs): what `sweep --list`, `check` and every shard pay before
// the first run. Past sweep::kCheckedPoints no point is loaded one by one.
void BM_SweepPlan(benchmark::State& state) {
  const auto points = static_cast<int>(state.range(0));
  const fs::path dir =
      fs::temp_directory_path() / ("simloop-bench-plan-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // A file of its own per size: the planner keeps each file it parsed.
  const fs::path file = dir / ("plan-" + std::to_string(points) + ".yaml");
  if (FILE* f = std::fopen(file.c_str(), "w")) {
    std::fprintf(f,
                 "name: plan\nmachine: athlon-xp-2700\nstack: freebsd6\n"
                 "workload: {payload: 18, packets: 1, dest: wire}\n"
                 "sweep:\n  grid:\n    options.align: [none, copy-down]\n"
                 "    workload.payload: {start: 18, stop: 1017, step: 1}\n"
                 "    interrupts.per_packet_cycles: {start: 0, stop: %d, step: 1}\n",
                 points / 2000 - 1);
    std::fclose(f);
  }
  simloop::sweep::Options o;
  o.experiment = file;
  o.output_dir = dir.string();
  size_t planned = 0;
  for (auto _ : state) {
    const auto plan = simloop::sweep::make_plan(o);
    benchmark::DoNotOptimize(plan.hashes.data());
    planned = plan.size();
  }
  if (planned != static_cast<size_t>(points)) state.SkipWithError("the plan has other points");
  state.SetItemsProcessed(state.iterations() * points);
  fs::remove_all(dir);
}
BENCHMARK(BM_SweepPlan)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // SimGrid's own log through spdlog, at debug: its configuration lines
  // would fall among the benchmark's.
  simloop::engine::route_simgrid_log_to_spdlog();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

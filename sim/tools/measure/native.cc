#include "sim/tools/measure/native.h"

#include <fmt/format.h>

#include "sim/tools/measure/native_loop.h"
#include "sim/tools/measure/stage_timer.h"

namespace simloop::measure {

std::vector<NativeResult> run_native(const NativeOptions& opt) {
  std::vector<NativeResult> out;
  for (int i = 0; i < opt.repeats; ++i) {
    net::NullProbe probe;
    out.push_back(run_native_loop(opt, probe, i));
    if (opt.split) {
      // A second, instrumented run: the probe's clock reads slow it down,
      // so it gives shares of time, not the rate.
      StageTimer timer(stacks::HarnessKind::fns());
      auto timed = run_native_loop(opt, timer, i);
      const double per = timed.total_sent > 0 ? 1.0 / static_cast<double>(timed.total_sent) : 0;
      for (const auto& [name, ns] : timer.self_ns())
        out.back().stage_ns.emplace_back(name, ns * per);
      out.back().split_ns_per_packet = timed.ns_per_packet();
    }
  }
  return out;
}

report::Row& set_path_columns(report::Row& row, const NativeOptions& opt) {
  return row.set("payload", int64_t{opt.payload})
      .set("dest", opt.path.get("dest"))
      .set("align", opt.path.get("align"))
      .set("copy", opt.path.get("copy"));
}

report::Row native_row(const NativeOptions& opt, const NativeResult& r) {
  report::Row row;
  row.set("source", std::string("native")).set("repeat", int64_t{r.repeat});
  set_path_columns(row, opt)
      .set("packets", r.packets)
      .set("elapsed_s", r.elapsed_s)
      .set("kpps", r.kpps())
      .set("ns_per_packet", r.ns_per_packet())
      .set("cpu_s", r.cpu_s)
      .set("cpu_ns_per_packet", r.cpu_ns_per_packet())
      .set("delivered", r.delivered)
      .set("delivered_bytes", r.delivered_bytes)
      .set("enobufs_retries", r.enobufs_retries);
  for (size_t d = 0; d < net::kDropCount; ++d)
    row.set(fmt::format("drop_{}", net::drop_name(static_cast<net::Drop>(d))),
            static_cast<int64_t>(r.drops[d]));
  row.set("fault", r.fault);
  // Every option of the path, so that a row is a complete point.
  row.set("service", opt.path.get("service"));
  row.set("buffer_misalign", int64_t{opt.path.buffer_misalign});
  row.set("misalign", int64_t{opt.path.sockaddr_misalign});
  row.set("ether_mtu", int64_t{opt.stack.ether_mtu});
  row.set("max_linkhdr", int64_t{opt.stack.max_linkhdr});
  for (const auto& [name, ns] : r.stage_ns) row.set("stage_" + name + "_ns", ns);
  if (!r.stage_ns.empty()) row.set("split_ns_per_packet", r.split_ns_per_packet);
  return row;
}

}  // namespace simloop::measure

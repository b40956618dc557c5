#include "sim/engine/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

namespace simloop::engine {

namespace {
constexpr double kUs = 1e6;  // trace timestamps are microseconds
}

void Tracer::add(models::Stage s, double cycles) {
  if (cycles == 0) return;
  const double at = cursor();
  cursor() += cycles;
  if (!active()) return;
  auto& m = target();
  // Consecutive cycles of one stage are one slice.
  if (!m.empty() && m.back().kind == Kind::leaf && m.back().cat == models::stage_name(s).data() &&
      m.back().at + m.back().dur == at) {
    m.back().dur += cycles;
    return;
  }
  m.push_back({at,
               Kind::leaf,
               std::string(models::stage_name(s)),
               models::stage_name(s).data(),
               cycles,
               {}});
}

void Tracer::enter(std::string_view name, const char* cat) {
  if (active()) target().push_back({cursor(), Kind::begin, std::string(name), cat, 0, {}});
}

void Tracer::leave() {
  if (active()) target().push_back({cursor(), Kind::end, "", "", 0, {}});
}

void Tracer::instant(std::string name) {
  if (active()) target().push_back({cursor(), Kind::instant, std::move(name), "", 0, {}});
}

void Tracer::drops(const std::array<uint64_t, net::kDropCount>& counts) {
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] != drops_seen_[i]) {
      drops_seen_[i] = counts[i];
      instant(fmt::format("drop: {}", net::drop_name(static_cast<net::Drop>(i))));
    }
}

void Tracer::counters(int ring, int netisr, int64_t sockbuf_bytes) {
  if (active())
    target().push_back({cursor(),
                        Kind::counter,
                        "",
                        "",
                        0,
                        {static_cast<double>(ring), static_cast<double>(netisr),
                         static_cast<double>(sockbuf_bytes)}});
}

void Tracer::packet(int64_t index) {
  recording_ = index >= window_.from && index < window_.to;
  if (recording_) started_ = true;
}

void Tracer::begin_batch(double t0) {
  batch_t0_ = t0;
  batch_cursor_ = 0;
  batch_.clear();
}

void Tracer::begin_handler(double t0) {
  in_handler_ = true;
  handler_ = {t0, t0, 0, {}};
  handler_cursor_ = 0;
}

void Tracer::end_handler(double t1, int frames) {
  in_handler_ = false;
  if (!started_ || finished_) return;
  handler_.t1 = t1;
  handler_.frames = frames;
  handlers_.push_back(std::move(handler_));
}

void Tracer::push(char ph, double t, double dur, std::string name, const char* cat,
                  std::array<double, 3> values, int frames) {
  // Rounding may put an event a hair before the last one: time never runs back.
  t = std::max(t, last_t_);
  last_t_ = ph == 'X' ? t + dur : t;
  out_.push_back({ph, t, dur, std::move(name), cat, values, frames});
}

void Tracer::emit_handler(const Handler& h) {
  push('B', h.t0, 0, "interrupt", "interrupt", {}, h.frames);
  for (const auto& m : h.marks) emit_mark(m, h.t0 + m.at / hz_);
  push('E', h.t1, 0, "interrupt", "interrupt", {}, h.frames);
}

void Tracer::emit_mark(const Mark& m, double t) {
  switch (m.kind) {
    case Kind::begin:
      push('B', t, 0, m.name, m.cat, {}, 0);
      break;
    case Kind::end:
      push('E', t, 0, "", "", {}, 0);
      break;
    case Kind::leaf:
      push('X', t, m.dur / hz_, m.name, "stage", {}, 0);
      break;
    case Kind::instant:
      push('i', t, 0, m.name, "event", {}, 0);
      break;
    case Kind::counter:
      push('C', t, 0, "", "", m.values, 0);
      break;
  }
}

void Tracer::cut(const Handler& h) {
  for (size_t i = open_.size(); i-- > 0;) push('E', h.t0, 0, "", "", {}, 0);
  emit_handler(h);
  for (size_t i = 0; i < open_.size(); ++i) {
    push('B', h.t1, 0, open_[i], open_cat_[i], {}, 0);
    out_.back().resumed = true;
  }
}

void Tracer::flush_batch() {
  if (!started_ || finished_) {
    handlers_.clear();
    return;
  }
  double shift = 0;  // time handlers took so far in this batch
  size_t hi = 0;
  const double tol = 1e-12;
  auto next_before = [&](double t) {
    return hi < handlers_.size() && handlers_[hi].t0 < t - tol * std::max(1.0, t);
  };
  auto take = [&] {
    const Handler& h = handlers_[hi++];
    cut(h);
    shift += h.t1 - h.t0;
  };
  // Handlers that ran before the batch started (the sender waited for them).
  while (hi < handlers_.size() && handlers_[hi].t0 < batch_t0_ - tol * std::max(1.0, batch_t0_))
    emit_handler(handlers_[hi++]);
  for (const auto& m : batch_) {
    double t = batch_t0_ + m.at / hz_ + shift;
    while (next_before(t)) {
      take();
      t = batch_t0_ + m.at / hz_ + shift;
    }
    if (m.kind != Kind::leaf) {
      emit_mark(m, t);
      if (m.kind == Kind::begin) {
        open_.push_back(m.name);
        open_cat_.push_back(m.cat);
      } else if (m.kind == Kind::end && !open_.empty()) {
        open_.pop_back();
        open_cat_.pop_back();
      }
      continue;
    }
    // A slice a handler preempts is cut where the handler starts and goes on
    // where it ends.
    double left = m.dur / hz_;
    while (next_before(t + left)) {
      const double piece = handlers_[hi].t0 - t;
      if (piece > 0) {
        push('X', t, piece, m.name, "stage", {}, 0);
        left -= piece;
      }
      take();
      t = handlers_[hi - 1].t1;
    }
    push('X', t, left, m.name, "stage", {}, 0);
  }
  while (hi < handlers_.size()) take();
  handlers_.clear();
  if (!recording_) finished_ = true;
}

void Tracer::sleep(double t0, double t1) {
  if (!started_ || finished_) return;
  double t = t0;
  size_t hi = 0;
  for (; hi < handlers_.size() && handlers_[hi].t0 < t1; ++hi) {
    const Handler& h = handlers_[hi];
    if (h.t0 > t) push('X', t, h.t0 - t, "sleep", "stage", {}, 0);
    emit_handler(h);
    t = std::max(t, h.t1);
  }
  if (t1 > t) push('X', t, t1 - t, "sleep", "stage", {}, 0);
  handlers_.erase(handlers_.begin(), handlers_.begin() + static_cast<std::ptrdiff_t>(hi));
}

std::string Tracer::json(const std::string& process) const {
  using nlohmann::json;
  json ev = json::array();
  ev.push_back({{"ph", "M"},
                {"pid", 1},
                {"tid", 1},
                {"name", "process_name"},
                {"args", {{"name", process}}}});
  ev.push_back(
      {{"ph", "M"}, {"pid", 1}, {"tid", 1}, {"name", "thread_name"}, {"args", {{"name", "CPU"}}}});
  for (const auto& e : out_) {
    json j = {{"ph", std::string(1, e.ph)}, {"pid", 1}, {"tid", 1}, {"ts", e.ts * kUs}};
    switch (e.ph) {
      case 'B':
        j["name"] = e.name;
        j["cat"] = e.cat;
        if (e.frames > 0) j["args"] = {{"frames", e.frames}};
        if (e.resumed) j["args"] = {{"resumed", true}};
        break;
      case 'E':
        break;
      case 'X':
        j["name"] = e.name;
        j["cat"] = e.cat;
        j["dur"] = e.dur * kUs;
        break;
      case 'i':
        j["name"] = e.name;
        j["cat"] = e.cat;
        j["s"] = "t";
        break;
      case 'C':
        for (const auto& [name, key, i] :
             {std::tuple{"NIC ring", "frames", 0}, std::tuple{"netisr queue", "packets", 1},
              std::tuple{"socket buffer", "bytes", 2}}) {
          json c = j;
          c["name"] = name;
          c["args"] = {{key, e.values[static_cast<size_t>(i)]}};
          ev.push_back(std::move(c));
        }
        continue;
      default:
        break;
    }
    ev.push_back(std::move(j));
  }
  return json{{"traceEvents", std::move(ev)}, {"displayTimeUnit", "ns"}}.dump() + "\n";
}

}  // namespace simloop::engine

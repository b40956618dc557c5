#include "sim/engine/trace.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

namespace simloop::engine {

namespace {

// A JSON string literal (names come from the stack's tables and the
// experiment's name, which may hold anything).
std::string json_quoted(std::string_view s) {
  return nlohmann::json(std::string(s)).dump();
}

// Whole picoseconds as the format's microseconds: exact, six decimals. (A
// grid of nanoseconds would round each of a million slices by up to half a
// nanosecond, and a stage's slices would no longer add up to its cycles.)
std::string micros(int64_t ps) {
  return fmt::format("{}.{:06}", ps / 1000000, ps % 1000000);
}

}  // namespace

Tracer::Tracer(TraceWindow window, double clock_hz, const net::FnTable& fns,
               const std::string& process, Sink sink)
    : window_(window),
      hz_(clock_hz),
      fns_(&fns),
      stage_(models::stages_of(fns)),
      sink_(std::move(sink)) {
  for (size_t i = 0; i < models::kStageCount; ++i)
    stage_word_[i] = fns.stage_word(models::stage_name(static_cast<models::Stage>(i)));
  sink_(
      fmt::format("{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
                  "{{\"args\":{{\"name\":{}}},\"cat\":\"__metadata\",\"name\":\"process_name\","
                  "\"ph\":\"M\",\"pid\":1,\"tid\":1,\"ts\":0}},\n"
                  "{{\"args\":{{\"name\":\"CPU\"}},\"cat\":\"__metadata\",\"name\":\"thread_name\","
                  "\"ph\":\"M\",\"pid\":1,\"tid\":1,\"ts\":0}}",
                  json_quoted(process)));
}

void Tracer::finish() {
  sink_("\n]}\n");
}

void Tracer::event(int64_t ts_ps, char ph, std::string_view name, std::string_view cat,
                   std::string_view rest) {
  // Appended piece by piece: this runs for every event of a trace.
  buf_.assign(",\n{");
  buf_.append(rest).append("\"cat\":\"").append(cat).append("\",");
  if (!name.empty()) {
    constexpr size_t kMaxQuoted = 4096;  // names are few; never let the cache grow without end
    auto it = quoted_.find(name);
    if (it == quoted_.end() && quoted_.size() < kMaxQuoted)
      it = quoted_.emplace(std::string(name), json_quoted(name)).first;
    buf_.append("\"name\":")
        .append(it != quoted_.end() ? it->second : json_quoted(name))
        .append(",");
  }
  buf_.append("\"ph\":\"").push_back(ph);
  buf_.append("\",\"pid\":1,\"tid\":1,\"ts\":");
  fmt::format_to(std::back_inserter(buf_), FMT_COMPILE("{}.{:06}}}"), ts_ps / 1000000,
                 ts_ps % 1000000);
  sink_(buf_);
  ++events_;
}

void Tracer::add(models::Stage s, double cycles) {
  if (cycles == 0) return;
  const double at = cursor();
  cursor() += cycles;
  if (!active()) return;
  auto& m = target();
  const std::string& word = stage_word_[static_cast<size_t>(s)];
  // Consecutive cycles of one stage are one slice.
  if (!m.empty() && m.back().kind == Kind::leaf && m.back().cat == word.c_str() &&
      m.back().at + m.back().dur == at) {
    m.back().dur += cycles;
    return;
  }
  m.push_back({at, Kind::leaf, word, word.c_str(), cycles, {}});
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
      instant(fmt::format("drop: {}", fns_->drop_word(net::drop_name(static_cast<net::Drop>(i)))));
    }
}

void Tracer::counters(const Gauges& values) {
  if (active()) target().push_back({cursor(), Kind::counter, "", "", 0, values});
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

void Tracer::push(char ph, double t, double dur, std::string_view name, const char* cat,
                  const Gauges& values, int frames, bool resumed) {
  // Rounding may put an event a hair before the last one: time never runs back.
  const int64_t at = std::max(static_cast<int64_t>(std::llround(t * 1e12)), last_ps_);
  last_ps_ = ph == 'X' ? std::max(at, static_cast<int64_t>(std::llround((t + dur) * 1e12))) : at;
  switch (ph) {
    case 'B': {
      written_open_.push_back(cat);
      std::string args;
      if (resumed)
        args = "\"args\":{\"resumed\":true},";
      else if (frames > 0)
        args = fmt::format("\"args\":{{\"frames\":{}}},", frames);
      event(at, 'B', name, cat, args);
      break;
    }
    case 'E': {
      // The category of the span it ends: a trace reader may ask for one.
      const char* c = written_open_.empty() ? "span" : written_open_.back();
      if (!written_open_.empty()) written_open_.pop_back();
      event(at, 'E', "", c, "");
      break;
    }
    case 'X':
      event(at, 'X', name, cat, fmt::format("\"dur\":{},", micros(last_ps_ - at)));
      break;
    case 'i':
      event(at, 'i', name, cat, "\"s\":\"t\",");
      break;
    case 'C':
      for (const net::GaugeName& g : fns_->gauges())
        event(at, 'C', g.name, "counter",
              fmt::format("\"args\":{{\"{}\":{}}},", g.unit, values[static_cast<size_t>(g.gauge)]));
      break;
    default:
      break;
  }
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
  for (size_t i = 0; i < open_.size(); ++i) push('B', h.t1, 0, open_[i], open_cat_[i], {}, 0, true);
}

void Tracer::flush_batch() {
  // Before the window, after it, or a batch the window closed before: the
  // handlers that ran are not the window's.
  if (!started_ || finished_ || (batch_.empty() && !recording_)) {
    handlers_.clear();
    if (started_) finished_ = true;
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
  // What is left ran after the batch's last recorded event. While the window
  // is open that is the window's; once it has closed in this batch, it ran
  // amid packets the trace does not hold, and drawn here it would stand
  // after an idle gap that never was.
  if (recording_)
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

}  // namespace simloop::engine
